import Foundation
import Testing

/// `dlpipe status` tells a run that is going on from one that was killed: a
/// run with no end whose lock is free now died (issue 20; it said "(not ended)").
@Suite struct StatusRunsTests {
    @Test func aKilledRunIsShownKilledAndALiveOneRunning() async throws {
        let server = try FaultServer()
        let out = try TempDir.make("status-runs")
        try server.put("big.bin", randomBytes: 200_000)
        let url = server.url("/files/big.bin?stall=50000")
        let live = try Subprocess(Paths.binary, ["get", url, "-d", out, "--json", "--timeout", "60"])
        live.waitForLine(containing: "\"progress\"")
        let during = try await runs(out)
        #expect(during.pid == Int(live.pid), "\(during)")
        #expect(during.statuses == ["running"], "\(during)")
        let text = try await DLPipeRun.run(["status", out])
        #expect(text.stdout.contains(", running, pid \(live.pid)"), "\(text.stdout)")
        live.signal(SIGKILL)
        live.waitForExit()
        let after = try await runs(out)
        #expect(after.pid == nil, "nobody holds the lock: \(after)")
        #expect(after.statuses == ["killed"], "\(after)")
        let killedText = try await DLPipeRun.run(["status", out])
        #expect(killedText.stdout.contains(", killed, pid \(live.pid)"), "\(killedText.stdout)")
        #expect(!killedText.stdout.contains("not ended"))
        let clean = try await DLPipeRun.run(["get", server.url("/files/big.bin"), "-d", out])
        #expect(clean.status == 0, "\(clean.stderr)")
        #expect(try await runs(out).statuses == ["ended", "killed"])
    }

    /// `running_pid` and each run's `status`, newest run first.
    private func runs(_ out: String) async throws -> (pid: Int?, statuses: [String]) {
        let status = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let runs = object?["runs"] as? [[String: Any]] ?? []
        return (object?["running_pid"] as? Int, runs.compactMap { $0["status"] as? String })
    }
}
