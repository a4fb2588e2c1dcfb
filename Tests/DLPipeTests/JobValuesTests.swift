import Foundation
import Testing

@testable import DLPipe

/// The values a `Job` is made of (`FileClaim`, `JobTurns`, `JobProgress`)
/// change only through their methods, and no engine file assigns a job's
/// field directly: a rule about a download's data then lives in one place.
@Suite struct JobValuesTests {
    @Test func aPartFileFoundOrOpenedIsRememberedUntilANewNameNeedsANewOne() {
        var claim = FileClaim()
        #expect(!claim.partFileMayExist)
        claim.partFile(mayExist: true)
        #expect(claim.partFileMayExist)
        claim.partFile(mayExist: false)
        #expect(!claim.partFileMayExist)
    }

    @Test func theFileOnDiskKeepsWhatTheStateRecordedUntilA304NamesAType() {
        var claim = FileClaim()
        claim.recorded(sha256: "abc", type: "text/plain")
        claim.unchanged(type: "")
        #expect(claim.knownType == "text/plain", "a 304 that names no type keeps the recorded one")
        claim.unchanged(type: "text/html")
        #expect(claim.knownType == "text/html" && claim.knownSHA256 == "abc")
        #expect(claim.conditional == nil)
        claim.revalidate(etag: "\"v1\"", lastModified: nil)
        #expect(claim.conditional?.etag == "\"v1\"" && claim.conditional?.lastModified == nil)
    }

    @Test func aRetryTimerIsLiveUntilTheNextOneIsSet() {
        var turns = JobTurns()
        let first = turns.retryTimerSet()
        let second = turns.retryTimerSet()
        #expect(first != second && turns.retryGeneration == second)
        turns.waitForTurn()
        #expect(turns.paced)
        turns.turnEnded()
        #expect(!turns.paced && !turns.slotGivenBack)
        turns.slotWentBack()
        #expect(turns.slotGivenBack)
    }

    @Test func progressReportsOnlyNewBytesAndSmoothsTheRate() {
        var progress = JobProgress()
        progress.starts(at: 10)
        progress.starts(at: 20)
        #expect(progress.startedAt == 10, "a later attempt keeps the download's clock")
        let first = progress.report(0, at: 10)
        let same = progress.report(0, at: 11)
        let moved = progress.report(1000, at: 11)
        #expect(first && !same && moved, "no bytes moved: nothing to report")
        #expect(progress.rate == 1000)
        _ = progress.report(1000 + 2000, at: 12)
        #expect(abs(progress.rate - (1000 * 0.7 + 2000 * 0.3)) < 1e-9)
        progress.received(5)
        progress.received(7)
        #expect(progress.receivedThisRun == 12)
    }

    /// The engine's files go through the values' methods (`job.claim.…(…)`),
    /// never `job.field = …`: a new direct write fails here.
    @Test func noEngineFileAssignsAJobFieldDirectly() throws {
        let engine = MergeMarkerTests.root.appendingPathComponent("Sources/DLPipe/Engine")
        let write = try Regex(#"\bjob\.[A-Za-z]+(\?\.[A-Za-z]+)?\s*(=|\+=|-=)[^=]"#)
        var found: [String] = []
        for relative in FileManager.default.enumerator(atPath: engine.path)?.compactMap({ $0 as? String }) ?? []
        where relative.hasSuffix(".swift") {
            let text = try String(contentsOf: engine.appendingPathComponent(relative), encoding: .utf8)
            for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where line.contains(write) {
                found.append("\(relative):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
            }
        }
        #expect(found.isEmpty, "\(found)")
    }
}
