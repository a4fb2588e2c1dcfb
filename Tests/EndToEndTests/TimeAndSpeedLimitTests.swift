import Foundation
import Testing

/// curl's `-m/--max-time` and `-Y/--speed-limit` with `-y/--speed-time` (and
/// `max_time`, `speed_limit`, `speed_time` in `dl.config` and `dl.add`): a
/// trickle that `--timeout` never catches fails its attempt with kind
/// `timeout`, which is retried as other timeouts are (issue 36, item 8).
/// Lower bounds are exact; upper bounds are loose for a loaded machine.
@Suite struct TimeAndSpeedLimitTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "limits")
    }

    /// A body that arrives steadily at `bps` bytes a second: never a stall.
    private func trickle(_ name: String, bps: Int = 1000) throws -> String {
        _ = try server.put(name, randomBytes: 200_000)
        return server.url("/files/\(name)?throttle=\(bps)")
    }

    @Test func maxTimeEndsATrickle() async throws {
        let run = try await DLPipeRun.run(["get", try trickle("m.bin"), "-d", out, "-m", "1.5", "--retries", "0", "--json"])
        #expect(run.status == 1, "\(run.stderr)")
        let failed = run.events("failed").first ?? [:]
        #expect(failed["kind"] as? String == "timeout", "\(failed)")
        #expect((failed["message"] as? String ?? "").contains("longer than the max time of 1.5 s"), "\(failed)")
        #expect(run.seconds >= 1.5 && run.seconds < 60, "\(run.seconds) s")
    }

    @Test func speedLimitEndsATrickle() async throws {
        let run = try await DLPipeRun.run(
            ["get", try trickle("y.bin"), "-d", out, "-Y", "5K", "-y", "1", "--retries", "0", "--json"])
        #expect(run.status == 1, "\(run.stderr)")
        let failed = run.events("failed").first ?? [:]
        #expect(failed["kind"] as? String == "timeout", "\(failed)")
        #expect((failed["message"] as? String ?? "").contains("slower than 5120 bytes/s for 1 s"), "\(failed)")
        #expect(run.seconds >= 1 && run.seconds < 60, "\(run.seconds) s")
    }

    /// Limits a healthy download meets change nothing.
    @Test func aFastDownloadMeetsTheLimits() async throws {
        let data = try server.put("fast.bin", randomBytes: 2_000_000)
        let run = try await DLPipeRun.run(
            ["get", server.url("/files/fast.bin"), "-d", out, "--max-time", "60", "--speed-limit", "1000", "--speed-time", "5"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/fast.bin", data))
    }

    /// From a job: `dl.config{ max_time }` for every download, `dl.add{
    /// speed_limit, speed_time }` for one; each attempt fails and is retried.
    @Test func aJobSetsThemAndTheAttemptsAreRetried() async throws {
        let slow = try trickle("j1.bin")
        let slower = try trickle("j2.bin", bps: 500)
        let run = try await job.run(source: """
            dl.config{ max_time = 1, retries = 1 }
            dl.add{ url = "\(slow)" }
            dl.add{ url = "\(slower)", max_time = 120, speed_limit = 4000, speed_time = 1 }
            """, out: out)
        #expect(run.status == 1, "\(run.stderr)")
        let messages = run.events("failed").compactMap { $0["message"] as? String }
        #expect(run.events("failed").allSatisfy { $0["kind"] as? String == "timeout" }, "\(run.stdout)")
        #expect(messages.contains { $0.contains("j1.bin?throttle=1000 took longer than the max time of 1 s") }, "\(messages)")
        #expect(messages.contains { $0.contains("j2.bin?throttle=500 was slower than 4000 bytes/s for 1 s") }, "\(messages)")
        #expect(run.events("retrying").count == 2, "\(run.stdout)")
        #expect(try server.requests(matching: "/files/j1.bin").count == 2)
        #expect(try server.requests(matching: "/files/j2.bin").count == 2)
    }

    @Test(arguments: [
        (["-m", "0"], "--max-time wants seconds above 0"),
        (["-y", "soon"], "--speed-time wants seconds above 0"),
        (["-Y", "fast"], "--speed-limit wants bytes per second"),
    ])
    func badValuesAreUsageErrors(_ args: [String], _ words: String) async throws {
        let run = try await DLPipeRun.run(["get", server.url("/files/none.bin"), "-d", out] + args)
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.stderr.contains(words), "\(run.stderr)")
    }

    @Test func badValuesInAJobAreLoadErrors() async throws {
        for (source, words) in [
            ("dl.config{ max_time = 0 }", "dl.config: max_time wants a number of seconds above 0, at most 86400, not 0"),
            ("dl.config{ speed_limit = \"fast\" }", "dl.config: speed_limit wants bytes per second"),
            ("dl.add{ url = \"http://127.0.0.1:1/x\", speed_time = -1 }", "dl.add: speed_time wants a number of seconds above 0, at most 86400, not -1"),
        ] {
            let run = try await job.run(source: source, out: out)
            #expect(run.status == 2, "\(source): \(run.stderr)")
            #expect(run.stderr.contains(words), "\(source): \(run.stderr)")
        }
    }
}
