import Foundation
import Testing
import TestSupport

/// A handler stuck where neither the time budget's hook nor the watchdog can reach it: in
/// Swift code behind `dl.*`. Here `f.sha256` of a 1 TiB sparse file (minutes of hashing; a
/// handler may point `f.path` at any file inside the output directory). The backstop fails
/// its download with kind `hook` 5 s past the budget, naming the script's line and the call;
/// as the call still does not return, the run ends early 10 s later: exit 1, the files placed
/// so far kept, the stalled download's part file kept, and the next run resumes it.
@Suite struct HandlerBackstopTests {
    @Test func aHandlerStuckInSwiftFailsItsDownloadAndTheRunEndsEarly() async throws {
        let server = try FaultServer()
        let job = try LuaJob()
        let out = try TempDir.make("backstop")
        try server.put("victim.txt", bytes: Array("victim".utf8))
        try server.put("bystander.txt", bytes: Array("bystander".utf8))
        let big = try server.put("big.bin", randomBytes: 500_000)
        try TestFiles.create(out + "/huge.bin")
        let huge = try FileHandle(forWritingTo: URL(fileURLWithPath: out + "/huge.bin"))
        try huge.truncate(atOffset: 1 << 40)
        try huge.close()
        try job.write("job.lua", """
            dl.config{ budget = 0.5, timeout = 120 }
            dl.add(dl.var.base .. "/bystander.txt")
            dl.add{ url = dl.var.base .. "/victim.txt?delay=0.5", name = "victim.txt" }
            dl.add{ url = dl.var.base .. "/big.bin?stall=50000&stall_times=1", name = "big.bin" }
            dl.on("finished", function(d, f)
              if dl.var.stuck ~= "yes" or not d.url:match("victim") then return end
              f.path = "huge.bin"
              local digest = f.sha256
            end)
            """)
        let base = server.url("/files")
        let run = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "--json", "--var", "base=\(base)", "--var", "stuck=yes"],
            under: [], within: 120)
        let elapsed = run.seconds
        #expect(run.status == 1, "status \(run.status): \(run.stderr)")
        #expect(elapsed < 60, "ended early, not at the kill: \(elapsed) s")
        let failed = run.events("failed")
        #expect(failed.count == 1, "\(run.stdout)")
        #expect(failed.first?["kind"] as? String == "hook")
        let message = failed.first?["message"] as? String ?? ""
        #expect(message.contains("job.lua:8: a finished handler did not return within its time budget of 0.5 s"), "\(message)")
        #expect(message.contains("stuck in dl.sha256"), "\(message)")
        #expect(run.stderr.contains("the run ends early (part files are kept)"), "\(run.stderr)")
        #expect(bytes(at: out + "/bystander.txt") == Array("bystander".utf8), "a file placed before is kept")
        #expect(bytes(at: out + "/big.bin.part").count == 50_000, "the stalled download's part file is kept")

        // The state is consistent: the next run finishes everything and resumes big.bin.
        let next = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "--json", "--var", "base=\(base)"], under: [], within: 120)
        #expect(next.status == 0, "\(next.stderr)")
        #expect(sameBytes(out + "/big.bin", big))
        #expect(bytes(at: out + "/victim.txt") == Array("victim".utf8))
        let resumed = try server.requests(matching: "/files/big.bin").last?["headers"] as? [String: String] ?? [:]
        #expect(resumed["range"] == "bytes=50000-", "resumed from the part file")
    }
}
