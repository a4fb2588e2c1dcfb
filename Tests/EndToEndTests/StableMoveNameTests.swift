import DLPipe
import Foundation
import Testing

/// Files moved by `finished` handlers keep their names across re-runs (issue
/// 14): the same bytes for the same target make no copy, duplicates under a
/// content-hash name collapse into one file, and a name taken by someone
/// else's file gives one numbered name that stays (no X.1/X.2 swap).
@Suite struct StableMoveNameTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "stable-moves")
    }

    func run(_ extra: [String] = []) async throws -> DLPipeRun {
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"] + extra)
        #expect(run.status == 0, "\(run.stderr)")
        return run
    }

    /// The gallery's pattern, on a server without validators (every re-run is a
    /// 200): two URLs with the same bytes, one with other bytes.
    @Test(arguments: ["1", "4"])
    func contentHashNamesCollapseAndStayOverReruns(_ concurrency: String) async throws {
        try server.put("p.png", bytes: Array("same image bytes".utf8))
        try server.put("q.png", bytes: Array("same image bytes".utf8))
        try server.put("r.png", bytes: Array("another image".utf8))
        try job.write("job.lua", """
            for _, n in ipairs{ "p", "q", "r" } do dl.add(dl.var.base .. "/" .. n .. ".png?no_validators=1") end
            dl.on("finished", function(d, f)
              d.dir = "images"
              d.name = f.sha256:sub(1, 16) .. ".png"
            end)
            """)
        let same = try Self.hashName("same image bytes"), other = try Self.hashName("another image")
        for round in 1...3 {
            let result = try await run(["-j", concurrency])
            #expect(listing(out) == ["images"], "round \(round)")
            #expect(listing(out + "/images") == [same, other].sorted(), "round \(round)")
            let paths = result.events("finished").compactMap { $0["path"] as? String }.map { ($0 as NSString).lastPathComponent }
            #expect(paths.sorted() == [other, same, same].sorted(), "each download names its file: \(paths)")
        }
        #expect(try String(contentsOfFile: out + "/images/" + same, encoding: .utf8) == "same image bytes")
        #expect(try server.requests(matching: "/files/q.png").count == 3, "every round fetched again (no validators)")
    }

    /// The job's name for a file of `text`: 16 hex digits of its SHA-256.
    static func hashName(_ text: String) throws -> String {
        let file = try TempDir.make("hash") + "/f"
        try Data(text.utf8).write(to: URL(fileURLWithPath: file))
        return String(try #require(FileDigest.sha256Hex(ofFile: file)).prefix(16)) + ".png"
    }

    @Test func aNameTakenBySomeoneElsesFileGivesOneNumberedNameThatStays() async throws {
        try server.put("a.bin", bytes: Array("ours".utf8))
        try Data("theirs".utf8).write(to: URL(fileURLWithPath: out + "/x.bin"))
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.bin?no_validators=1")
            dl.on("finished", function(d, f) d.name = "x.bin" end)
            """)
        for round in 1...3 {
            _ = try await run()
            #expect(listing(out) == ["x.1.bin", "x.bin"], "round \(round)")
        }
        #expect(try String(contentsOfFile: out + "/x.bin", encoding: .utf8) == "theirs", "never replaced")
        #expect(try String(contentsOfFile: out + "/x.1.bin", encoding: .utf8) == "ours")
        // Their file with our bytes: the name is ours to share, no copy.
        try Data("ours".utf8).write(to: URL(fileURLWithPath: out + "/y.bin"))
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.bin?no_validators=1&n=2")
            dl.on("finished", function(d, f) d.name = "y.bin" end)
            """)
        _ = try await run()
        #expect(listing(out) == ["x.1.bin", "x.bin", "y.bin"])
    }
}
