@testable import DLPipeWeb
import Foundation
import Testing

/// The live page and the fleet's page share their head, styles and script
/// as one resource each, joined into both when served: no page carries a
/// copy of its own, and what is served has no marker left.
@Suite struct WebPagesTests {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    @Test func bothPagesServeTheSharedPartsAndNeitherKeepsACopy() {
        let head = text(PackageResources.shared_head_html)
        let script = text(PackageResources.shared_js)
        for (name, raw, served) in [("page.html", PackageResources.page_html, WebPages.run), ("fleet.html", PackageResources.fleet_html, WebPages.fleet)] {
            let page = text(raw), shown = text(served)
            // What only the shared resources hold: the colours, the viewport, the formats, the chart.
            for piece in [":root {", "name=\"viewport\"", "function size(n)", "function drawChart(", "function failureGroups("] {
                #expect(!page.contains(piece), "\(name) keeps its own copy of \(piece)")
                #expect(shown.components(separatedBy: piece).count == 2, "\(name) served with \(piece) once")
            }
            #expect(shown.hasPrefix(head) && shown.contains(script), "\(name)")
            #expect(!shown.contains("dlpipe:shared"), "\(name): a marker left")
        }
    }
    /// A card's value stays on one line, a long one (bytes of a total) in
    /// two slots; a worker's page has the line that points to the fleet.
    @Test func cardValuesKeepToOneLineAndAWorkersPagePointsToTheFleet() {
        let run = text(WebPages.run)
        #expect(run.contains(".card b { display: block;") && run.contains("white-space: nowrap; }"))
        #expect(run.contains(".card.long { grid-column: span 2; }") && run.contains("<div class=\"card long\">bytes<"))
        #expect(run.contains("id=\"worker-note\"") && run.contains("dlpipe web --queue "))
    }
}
