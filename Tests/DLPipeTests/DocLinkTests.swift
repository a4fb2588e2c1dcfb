import Foundation
import Testing

/// Every relative link in README.md and docs/**/*.md leads to a file that
/// exists, and a `#fragment` to a heading of that file: the docs are split
/// into guides and design notes that point at each other, and a moved
/// section would otherwise leave a reader at a dead end.
@Suite struct DocLinkTests {
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// README.md and every Markdown file under docs/, relative to the root.
    static func documents() -> [String] {
        let docs = FileManager.default.enumerator(atPath: root.appendingPathComponent("docs").path)?
            .compactMap { $0 as? String }.filter { $0.hasSuffix(".md") }.map { "docs/" + $0 } ?? []
        return ["README.md"] + docs.sorted()
    }

    /// The targets of `[text](target)` links outside code blocks and code spans.
    static func links(in text: String) -> [String] {
        var found: [String] = []
        var fenced = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            if fenced { continue }
            // Code spans hold Lua and shell, whose brackets are no links.
            let prose = line.split(separator: "`", omittingEmptySubsequences: false).enumerated()
                .filter { $0.offset % 2 == 0 }.map(\.element).joined(separator: " ")
            var rest = Substring(prose)
            while let open = rest.range(of: "](") {
                let after = rest[open.upperBound...]
                guard let close = after.firstIndex(of: ")") else { break }
                found.append(String(after[..<close]))
                rest = after[close...]
            }
        }
        return found
    }

    /// GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens.
    static func anchor(_ heading: String) -> String {
        String(heading.lowercased().compactMap { character -> Character? in
            if character == " " { return "-" }
            if character.isLetter || character.isNumber || character == "-" || character == "_" { return character }
            return nil
        })
    }

    static func anchors(of text: String) -> Set<String> {
        var fenced = false
        var found: Set<String> = []
        for line in text.split(separator: "\n") {
            if line.hasPrefix("```") { fenced.toggle(); continue }
            guard !fenced, line.hasPrefix("#") else { continue }
            found.insert(anchor(String(line.drop { $0 == "#" }.drop { $0 == " " })))
        }
        return found
    }

    /// `docs/a/../b.md` as `docs/b.md`.
    static func normalised(_ path: String) -> String {
        var parts: [Substring] = []
        for part in path.split(separator: "/") {
            if part == "." { continue }
            if part == "..", !parts.isEmpty { parts.removeLast() } else { parts.append(part) }
        }
        return parts.joined(separator: "/")
    }

    @Test func everyRelativeLinkLeadsToAFileAndHeadingThatExist() throws {
        var broken: [String] = []
        for document in Self.documents() {
            let text = try String(contentsOf: Self.root.appendingPathComponent(document), encoding: .utf8)
            let folder = (document as NSString).deletingLastPathComponent
            for link in Self.links(in: text) {
                if link.contains("://") || link.hasPrefix("mailto:") { continue }
                let parts = link.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false)
                let file = parts[0].isEmpty ? document : Self.normalised(folder.isEmpty ? String(parts[0]) : folder + "/" + parts[0])
                let path = Self.root.appendingPathComponent(file).path
                var isFolder: ObjCBool = false
                guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder) else {
                    broken.append("\(document): \(link) (no \(file))")
                    continue
                }
                guard parts.count == 2, file.hasSuffix(".md"), !isFolder.boolValue else { continue }
                let target = try String(contentsOfFile: path, encoding: .utf8)
                if !Self.anchors(of: target).contains(String(parts[1])) {
                    broken.append("\(document): \(link) (no heading #\(parts[1]) in \(file))")
                }
            }
        }
        #expect(broken.isEmpty, "\(broken.joined(separator: "\n"))")
    }

    /// The check itself: a link to a missing file and to a missing heading are found.
    @Test func theCheckFindsWhatIsBroken() {
        let text = "see [a](missing.md) and [b](cli.md#exit-codes) `[c](not-a-link)`\n```\n[d](x.md)\n```"
        #expect(Self.links(in: text) == ["missing.md", "cli.md#exit-codes"])
        #expect(Self.anchor("Exit codes") == "exit-codes")
        #expect(Self.anchor("A run, `done` and the exit code") == "a-run-done-and-the-exit-code")
        #expect(Self.normalised("docs/design/../cli.md") == "docs/cli.md")
    }
}
