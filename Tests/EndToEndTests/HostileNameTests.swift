import Foundation
import Testing

/// Where a hostile name comes from: a Content-Disposition header (raw bytes, sent
/// as they are) or the URL's path (as written; the server serves x.bin whatever
/// the path says).
enum HostileSource: Sendable, CustomTestStringConvertible {
    case header([UInt8])
    case path(String)

    static func header(_ text: String) -> HostileSource { .header(Array(text.utf8)) }

    var testDescription: String {
        switch self {
        case .header(let bytes): "header \(String(decoding: bytes, as: UTF8.self).debugDescription)"
        case .path(let path): "path \(path.prefix(80).debugDescription)"
        }
    }
}

private let long = String(repeating: "a", count: 396) + ".pdf"

/// Each hostile name, and the name expected on disk (nil: only the rules apply).
/// The unit table (NamingTests) covers the parsers; this one shows the whole
/// path, from the bytes on the wire to the file on disk and the printed lines.
private let cases: [(HostileSource, String?)] = [
    (.header("attachment; filename=\"../../etc/passwd\""), "passwd"),
    (.header("attachment; filename=\"..\\\\..\\\\windows\\\\win.ini\""), "win.ini"),
    // Single backslashes are quoted-pairs (RFC 9110): unescaped, they leave one name.
    (.header("attachment; filename=\"..\\..\\windows\\win.ini\""), "windowswin.ini"),
    (.header("attachment; filename=\"f\\oo.html\""), "foo.html"),
    (.header("attachment; filename=\"foo-%\\41.html\""), "foo-%41.html"),
    (.header("attachment; filename=\"C:\\Users\\x\\evil.bat\""), "C:Usersxevil.bat"),
    (.header("attachment; filename=\"/etc/shadow\""), "shadow"),
    (.header("attachment; filename*=UTF-8''..%2F..%2Fetc%2Fpasswd"), "passwd"),
    (.header("attachment; filename=%2e%2e%2fetc%2fpasswd"), "%2e%2e%2fetc%2fpasswd"),  // filename= is not decoded
    (.header("attachment; filename*=UTF-8''a%00b.txt"), "ab.txt"),
    (.header("attachment; filename=\"a\u{1B}[31mred.txt\""), "a[31mred.txt"),
    (.header("attachment; filename=\"\u{1B}]0;pwned\u{7}title.txt\""), "]0;pwnedtitle.txt"),
    (.header("attachment; filename*=UTF-8''%1B%5B2J%1B%5BHclear.txt"), "[2J[Hclear.txt"),
    (.header("attachment; filename=\"tab\there\u{1}\u{7F}.txt\""), "tabhere.txt"),
    (.header("attachment; filename=\"a\u{9B}31mb.txt\""), "a31mb.txt"),  // C1 CSI
    (.header("attachment; filename=\".bashrc\""), "bashrc"),
    (.header("attachment; filename=\".\""), "x.bin"),
    (.header("attachment; filename=\"..\""), "x.bin"),
    (.header("attachment; filename=\"\""), "x.bin"),
    (.header("attachment; filename=\"\(long)\""), nil),
    (.header("attachment; filename=\"\u{202E}gpj.exe\""), "gpj.exe"),
    (.header("attachment; filename=\"in\u{200B}voice\u{FEFF}\u{2028}.pdf\""), "invoice.pdf"),
    (.header("attachment; filename*=UTF-8''cafe%CC%81.txt"), "caf\u{E9}.txt"),  // NFD
    (.header("attachment; filename*=UTF-8''caf%C3%A9.txt"), "caf\u{E9}.txt"),  // NFC
    (.header("attachment; filename=\"CON\""), "CON"),
    (.header("attachment; filename=\"nul.txt\""), "nul.txt"),
    (.header("attachment; filename=\"a<b>c:d|e?f*.txt\""), "a<b>c:d|e?f*.txt"),
    (.header("attachment; filename=\"name.txt. . \""), "name.txt"),
    (.header(Array("attachment; filename=\"bad".utf8) + [0xFF, 0xFE] + Array(".txt\"".utf8)), "bad\u{FF}\u{FE}.txt"),
    (.path("/files/%2e%2e%2f%2e%2e%2fetc%2fpasswd"), "passwd"),
    (.path("/a/..%2F..%2Fsecret.txt"), "secret.txt"),
    (.path("/a/..%5C..%5Cwin.ini"), "win.ini"),
    (.path("/a\\b\\c.txt"), "c.txt"),
    (.path("/a/%00evil.txt"), "evil.txt"),
    (.path("/a/%1B%5B31mred.txt"), "[31mred.txt"),
    (.path("/a/%1B%5D0%3Bx%07y.txt"), "]0;xy.txt"),
    (.path("/a/.hidden"), "hidden"),
    // Dot segments are folded when the URL is added (RFC 3986): "/a/.." asks
    // for "/", "/a/." for "/a/", and both are named as directories.
    (.path("/a/.."), "index.html"),
    (.path("/a/."), "index.html"),
    (.path("/"), "index.html"),
    (.path("/a/" + long), nil),
    (.path("/a/%E2%80%AEgpj.exe"), "gpj.exe"),
    (.path("/a/cafe%CC%81.txt"), "caf\u{E9}.txt"),
    (.path("/a/CON"), "CON"),
    (.path("/a/name.txt.%20.%20"), "name.txt"),
    (.path("/a/%FF%FE.txt"), "\u{FF}\u{FE}.txt"),
]

/// Hostile names end to end: whatever the server suggests, exactly one clean
/// file lands inside the output directory, with the right bytes, the same name
/// every time, and nothing raw reaches the terminal.
@Suite struct HostileNameTests {
    /// One server for all cases (a Python start per case would dominate).
    static let server = Result { try FaultServer() }

    @Test(arguments: cases)
    func hostileNameLandsCleanInside(_ source: HostileSource, _ expected: String?) async throws {
        let server = try Self.server.get()
        let content = try server.put("x.bin", bytes: Array("the content\n".utf8))
        let url: String
        switch source {
        case .header(let bytes):
            // Every byte %-escaped: the server decodes cd= as Latin-1, so the header carries these exact bytes.
            url = server.url("/files/x.bin?cd=" + bytes.map { String(format: "%%%02X", $0) }.joined())
        case .path(let path):
            url = server.url(path + "?serve=x.bin")
        }
        let json = try await landsClean(url, json: true, content: content, expected: expected)
        let lines = try await landsClean(url, json: false, content: content, expected: expected)
        #expect(json == lines, "the same input gives the same name")
    }

    /// Runs one download into a fresh directory and checks it; the name on disk.
    private func landsClean(_ url: String, json: Bool, content: [UInt8], expected: String?) async throws -> [UInt8] {
        let parent = try TempDir.make("names")
        let out = parent + "/out"
        let run = try await DLPipeRun.run(["get", url, "-d", out] + (json ? ["--json"] : []))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(NameChecks.rawEntries(parent) == [Array("out".utf8)], "nothing beside the output directory")
        let entries = NameChecks.rawEntries(out).filter { $0 != Array(".dlpipe".utf8) }
        try #require(entries.count == 1, "exactly one entry: \(entries.map { String(decoding: $0, as: UTF8.self) })")
        let name = entries[0]
        let path = out + "/" + String(decoding: name, as: UTF8.self)
        var info = stat()
        #expect(lstat(path, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG, "a regular file")
        #expect(NameChecks.problem(name) == nil, "\(NameChecks.problem(name) ?? "")")
        if let expected { #expect(name == Array(expected.utf8), "\(String(decoding: name, as: UTF8.self).debugDescription)") }
        #expect(sameBytes(path, content))
        for text in [run.stdout, run.stderr] {
            #expect(NameChecks.outputProblem(text) == nil, "\(NameChecks.outputProblem(text) ?? "")")
        }
        if json {
            let lines = run.stdout.split(separator: "\n")
            #expect(run.events.count == lines.count && !lines.isEmpty, "every line is JSON")
        }
        return name
    }

    /// An NFD name and its NFC twin into one directory: two files, not two
    /// names that look the same.
    @Test func normalisationTwinsDoNotShareADirectoryUnnoticed() async throws {
        let server = try Self.server.get()
        // Its own file: the table's cases share this server and read x.bin meanwhile.
        try server.put("twin.bin", bytes: Array("x".utf8))
        let out = try TempDir.make("twins")
        let nfd = server.url("/files/twin.bin?cd=attachment%3B%20filename%2A%3DUTF-8%27%27cafe%25CC%2581.txt")
        let nfc = server.url("/files/twin.bin?cd=attachment%3B%20filename%2A%3DUTF-8%27%27caf%25C3%25A9.txt&v=2")
        let run = try await DLPipeRun.run(["get", nfd, nfc, "-d", out, "-j", "1"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(NameChecks.rawEntries(out).filter { $0 != Array(".dlpipe".utf8) }.sorted { $0.lexicographicallyPrecedes($1) }
            == [Array("caf\u{E9}.1.txt".utf8), Array("caf\u{E9}.txt".utf8)])
    }
}
