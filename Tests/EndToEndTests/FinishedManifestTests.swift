import Foundation
import Testing

/// `--json` `finished` events carry `sha256` (when computed) and the job's
/// `meta` as JSON, so a manifest can be built outside the job.
@Suite struct FinishedManifestTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "out")
    }

    @Test func finishedEventsCarryMetaAsJSONAndTheComputedSHA256() async throws {
        let a = try server.put("a.bin", randomBytes: 5000, seed: 1)
        try server.put("b.bin", randomBytes: 6000, seed: 2)
        try server.put("c.bin", randomBytes: 7000, seed: 3)
        try job.write("job.lua", """
            dl.add{ url = "\(server.url("/files/a.bin"))", meta = { album = "summer", n = 3, tags = { "x", "y" },
                    ok = true, skip = function() end, none = dl.json.null } }
            dl.add{ url = "\(server.url("/files/b.bin"))", meta = "plain" }
            dl.add{ url = "\(server.url("/files/c.bin"))" }
            dl.on("finished", function(d, f)
              if d.meta == "plain" then return end
              local _ = f.sha256   -- computed here: the event carries it
            end)
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        var byName: [String: [String: Any]] = [:]
        for event in run.events("finished") { byName[event["name"] as? String ?? ""] = event }
        let first = byName["a.bin"]
        let meta = first?["meta"] as? [String: Any]
        #expect(meta?["album"] as? String == "summer")
        #expect(meta?["n"] as? Int == 3)
        #expect(meta?["tags"] as? [String] == ["x", "y"])
        #expect(meta?["ok"] as? Bool == true)
        #expect(meta?.keys.sorted() == ["album", "n", "ok", "tags"], "what JSON cannot hold is left out: \(String(describing: meta))")
        #expect(first?["sha256"] as? String == sha256Hex(a))
        #expect(byName["b.bin"]?["meta"] as? String == "plain")
        #expect(byName["b.bin"]?["sha256"] == nil, "not computed, not carried")
        #expect(byName["c.bin"]?["meta"] == nil)
        #expect(byName["c.bin"]?["sha256"] is String)
    }
}
