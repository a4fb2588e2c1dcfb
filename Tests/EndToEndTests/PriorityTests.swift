import Foundation
import Testing

/// `priority` orders the queue from the first free slot: the adds of a job's
/// top level all reach the queue before any transfer starts. Checked by the
/// order of the requests the server sees, with one slot (-j 1).
@Suite struct PriorityTests {
    let server: FaultServer
    let job: LuaJob

    init() throws {
        server = try FaultServer()
        job = try LuaJob()
        for name in ["a", "b", "c", "d"] { try server.put("\(name).txt", bytes: Array(name.utf8)) }
    }

    /// Priorities 1, none, 10, -5: always c (10), a (1), b (0), d (-5). Ten runs,
    /// each with its own query so that its requests can be told apart.
    @Test func oneSlotServesTheHighestPriorityFirst() async throws {
        try job.write("job.lua", """
            local base, run = dl.var.base, dl.var.run
            dl.add{ url = base .. "/a.txt?run=" .. run, priority = 1 }
            dl.add{ url = base .. "/b.txt?run=" .. run }
            dl.add{ url = base .. "/c.txt?run=" .. run, priority = 10 }
            dl.add{ url = base .. "/d.txt?run=" .. run, priority = -5 }
            """)
        for run in 1...10 {
            let out = try TempDir.make("priority")
            let result = try await DLPipeRun.run(
                ["run", job.directory + "/job.lua", "-d", out, "-j", "1", "-q",
                 "--var", "base=\(server.url("/files"))", "--var", "run=\(run)"],
                under: [], within: 30)
            #expect(result.status == 0, "\(result.stderr)")
            let order = try server.requests(matching: "/files/")
                .filter { ($0["query"] as? [String: String])?["run"] == "\(run)" }
                .compactMap { ($0["path"] as? String)?.dropFirst("/files/".count).prefix(1) }
            #expect(order.joined() == "cabd", "run \(run)")
        }
    }

    /// 5,000 adds, then one of priority 10: the engine would wake and start the
    /// first while the rest were still being queued, one command each. The
    /// urgent one is the first request, every time.
    @Test(arguments: 1...3)
    func aLateUrgentAddStillGoesFirst(_ attempt: Int) async throws {
        try job.write("many.lua", """
            for i = 1, 5000 do
              dl.add{ url = dl.var.base .. "/a.txt?n=" .. i .. "&try=\(attempt)", name = "low" .. i .. ".txt" }
            end
            dl.add{ url = dl.var.base .. "/c.txt?try=\(attempt)", name = "urgent.txt", priority = 10 }
            """)
        let out = try TempDir.make("priority")
        let process = try Subprocess(
            Paths.binary,
            ["run", job.directory + "/many.lua", "-d", out, "-j", "1", "--json", "--var", "base=\(server.url("/files"))"])
        let done = Flag()
        DispatchQueue.global().asyncAfter(deadline: .now() + 30) {
            if !done.isSet { process.signal(SIGKILL) }
        }
        // Once a download has finished, the first request is in the server's log.
        let sawFinished = await offThePool { process.waitForLine(containing: "\"event\":\"finished\"") }
        done.set()
        process.signal(SIGKILL)
        #expect(await offThePool { process.waitForExit() } == 128 + SIGKILL)
        #expect(sawFinished)
        let first = try server.requests(matching: "/files/")
            .first { ($0["query"] as? [String: String])?["try"] == "\(attempt)" }
        #expect(first?["path"] as? String == "/files/c.txt", "the first request was \(String(describing: first))")
    }
}
