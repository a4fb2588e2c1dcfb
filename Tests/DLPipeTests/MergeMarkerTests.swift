import Foundation
import Testing

/// No file of the project keeps a merge's conflict markers: a merge once left
/// them in README.md, where only a reader would have noticed.
@Suite struct MergeMarkerTests {
    /// The package's root, from this file's place in Tests/DLPipeTests.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    @Test func noFileKeepsConflictMarkers() throws {
        let kept = ["md", "swift", "lua", "py", "sh", "c", "h", "yml"]
        var found: [String] = []
        for folder in ["README.md", "docs", "Sources", "Tests", "scripts", "examples", ".ci"] {
            let top = Self.root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: top.path)?.compactMap { $0 as? String }.map { folder + "/" + $0 } ?? [folder]
            for relative in files where kept.contains((relative as NSString).pathExtension) || !relative.contains(".") {
                guard let text = try? String(contentsOf: Self.root.appendingPathComponent(relative), encoding: .utf8) else { continue }
                for line in text.split(separator: "\n", omittingEmptySubsequences: false)
                where line.hasPrefix("<<<<<<< ") || line.hasPrefix(">>>>>>> ") || line == "=======" {
                    found.append("\(relative): \(line)")
                }
            }
        }
        #expect(found.isEmpty, "\(found)")
    }
}
