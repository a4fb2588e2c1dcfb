import Foundation
import Testing

/// examples/verified/job.lua against a copy of examples/site/release served
/// on loopback: the files its SHA256SUMS lists, checked on every re-run; a
/// rotted file is fetched again without validators and replaced, a good one
/// is kept on a 304; index.tsv (written from `placed`) names every file; a
/// file the list drops is removed.
@Suite struct VerifiedMirrorExampleTests {
    let server: FaultServer
    let root: String
    let out: String

    init() throws {
        root = try TempDir.make("release-site")
        try FileManager.default.copyItem(
            atPath: Paths.repository + "/examples/site/release", toPath: root + "/release")
        server = try FaultServer(root: root)
        out = try TempDir.make("verified-out")
    }

    private func run() async throws -> DLPipeRun {
        try await DLPipeRun.run([
            "run", Paths.repository + "/examples/verified/job.lua", "-d", out, "--json", "--no-hooks",
            "--var", "base=\(server.url("/files/release"))",
        ])
    }

    private func file(_ name: String) -> [UInt8] { bytes(at: root + "/release/" + name) }

    @Test func theMirrorIsVerifiedRepairedAndPruned() async throws {
        let first = try await run()
        #expect(first.status == 0, "\(first.stderr)")
        #expect(sameBytes(out + "/files/readme.txt", file("readme.txt")) && sameBytes(out + "/files/data.csv", file("data.csv")))
        let index = String(decoding: bytes(at: out + "/index.tsv"), as: UTF8.self)
        #expect(index == """
            files/data.csv\t\(sha256Hex(file("data.csv")))\t\(file("data.csv").count)
            files/readme.txt\t\(sha256Hex(file("readme.txt")))\t\(file("readme.txt").count)

            """, "\(index)")

        // Bit rot in data.csv: its size and time stay as placed.
        let path = out + "/files/data.csv"
        let time = try #require(FileTimes.modified(path))
        var rotted = file("data.csv")
        rotted[4] ^= 0x20
        try Data(rotted).write(to: URL(fileURLWithPath: path))
        try FileTimes.set(path, seconds: Int(time.tv_sec), nanoseconds: Int(time.tv_nsec))
        let second = try await run()
        #expect(second.status == 0, "\(second.stderr)")
        #expect(sameBytes(path, file("data.csv")), "repaired")
        let asked = try server.requests(matching: "/files/release/data.csv").last?["headers"] as? [String: String] ?? [:]
        #expect(asked["if-none-match"] == nil, "an unconditional request for the rotted file: \(asked)")
        let kept = try server.requests(matching: "/files/release/readme.txt").last?["headers"] as? [String: String] ?? [:]
        #expect(kept["if-none-match"] != nil)
        let readme = second.events("finished").first { ($0["path"] as? String)?.hasSuffix("readme.txt") == true }
        #expect(readme?["unchanged"] as? Bool == true && readme?["checked"] as? String == "validators and content")
        let warnings = second.events("warning").compactMap { $0["message"] as? String }
        #expect(warnings.count == 1 && warnings[0].hasPrefix("files/data.csv did not match"), "\(warnings)")
        #expect(second.stderr.contains("2 kept files checked, 1 replaced"), "done's counts: \(second.stderr)")

        // The release drops readme.txt: the mirror drops it too.
        let sums = String(decoding: file("SHA256SUMS"), as: UTF8.self)
        try sums.split(separator: "\n").filter { !$0.contains("readme") }.joined(separator: "\n")
            .appending("\n").write(toFile: root + "/release/SHA256SUMS", atomically: true, encoding: .utf8)
        let third = try await run()
        #expect(third.status == 0, "\(third.stderr)")
        #expect(listing(out + "/files") == ["data.csv"])
        #expect(third.events("finished").contains { ($0["path"] as? String)?.hasSuffix("data.csv") == true && $0["unchanged"] as? Bool == true })
    }
}
