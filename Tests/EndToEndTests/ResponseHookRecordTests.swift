import Foundation
import Testing

/// A response hook asked for a fresh download saves no record until one is due
/// (a held body's, or a part file's): the downloads it let through, whether
/// their bodies ended before the verdict (held whole) or after it (part file),
/// renamed or not, end whole under their names with a record that a second run
/// knows them by.
@Suite struct ResponseHookRecordTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "hook-records")
    }

    @Test func bodiesEndingBeforeOrAfterTheVerdictAreRecordedUnderTheirNames() async throws {
        let small = try server.put("small.bin", randomBytes: 5_000, seed: 1)
        let other = try server.put("other.bin", randomBytes: 7_000, seed: 2)
        // 600 KB at 2 MB/s: the body is still coming long after the verdict, and it
        // is larger than what a transfer keeps in memory, so it needs a part file.
        let slow = try server.put("slow.bin", randomBytes: 600_000, seed: 3)
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/small.bin")
            dl.add(dl.var.base .. "/other.bin")
            dl.add(dl.var.base .. "/slow.bin?throttle=2000000")
            dl.on("response", function(d, r)
              if d.name ~= "other.bin" then d.name = "renamed-" .. d.name end
            end)
            """)
        let first = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(listing(out) == ["other.bin", "renamed-slow.bin", "renamed-small.bin"], "no part file left")
        #expect(sameBytes(out + "/renamed-small.bin", small))
        #expect(sameBytes(out + "/other.bin", other))
        #expect(sameBytes(out + "/renamed-slow.bin", slow))

        let status = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let records = (object?["downloads"] as? [[String: Any]]) ?? []
        var targets: [String: String] = [:]
        for record in records { targets[record["target"] as? String ?? "?"] = record["status"] as? String }
        #expect(targets == ["renamed-small.bin": "finished", "other.bin": "finished", "renamed-slow.bin": "finished"],
                "\(status.stdout)")

        // The records hold the validators: nothing is fetched again, nothing moves.
        let second = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(second.status == 0, "\(second.stderr)")
        let finished = second.events("finished")
        #expect(finished.count == 3 && finished.allSatisfy { $0["unchanged"] as? Bool == true }, "\(second.stdout)")
        #expect(listing(out) == ["other.bin", "renamed-slow.bin", "renamed-small.bin"])
    }
}
