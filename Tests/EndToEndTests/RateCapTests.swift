import Foundation
import Testing

/// `--rate` and `dl.config{ rate }` cap the whole run: one download or many at
/// once, never faster than the cap. Checked by the clock from below only (5 MiB
/// at 1 MiB/s take at least 4.5 s; the ideal is 5 s less a tenth of a second of
/// burst); how close to the cap a run gets is measured by scripts/bench.
@Suite struct RateCapTests {
    let server: FaultServer
    let out: String
    static let cap = 1 << 20
    static let fewest = 4.5

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("rate")
    }

    /// Runs dlpipe with a deadline and returns the run and its wall-clock seconds.
    private func timed(_ arguments: [String]) async throws -> (DLPipeRun, Double) {
        let start = ContinuousClock.now
        let run = try await DLPipeRun.run(arguments, under: [], within: 40)
        let elapsed = ContinuousClock.now - start
        return (run, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    @Test func oneDownloadIsHeldToTheCap() async throws {
        let data = try server.put("five.bin", randomBytes: 5 * Self.cap)
        let (run, seconds) = try await timed(["get", server.url("/files/five.bin"), "--rate", "1M", "-d", out, "-q"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/five.bin", data))
        #expect(seconds >= Self.fewest, "5 MiB at 1 MiB/s took \(seconds) s")
    }

    /// The cap is a total: five transfers at once share it, they do not get it each.
    @Test func manyDownloadsShareOneCap() async throws {
        var files: [String: [UInt8]] = [:]
        for index in 1...5 { files["m\(index).bin"] = try server.put("m\(index).bin", randomBytes: Self.cap, seed: UInt64(index)) }
        let urls = files.keys.sorted().map { server.url("/files/\($0)") }
        let (run, seconds) = try await timed(
            ["get"] + urls + ["-j", "5", "--per-host", "5", "--rate", "1M", "-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(files.allSatisfy { sameBytes(out + "/" + $0.key, $0.value) })
        #expect(seconds >= Self.fewest, "5 x 1 MiB at 1 MiB/s took \(seconds) s")
        // At once, not one after the other: every transfer had its response
        // before the first one finished.
        let order = run.events.compactMap { $0["event"] as? String }.filter { $0 == "response" || $0 == "finished" }
        #expect(order.prefix(5).allSatisfy { $0 == "response" }, "\(order)")
    }

    @Test func jobConfigRateIsTheCap() async throws {
        for index in 1...5 { try server.put("j\(index).bin", randomBytes: Self.cap, seed: UInt64(index)) }
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.config{ rate = "1M", concurrency = 5, per_host = 5 }
            for i = 1, 5 do dl.add(dl.var.base .. "/j" .. i .. ".bin") end
            """)
        let start = ContinuousClock.now
        let run = try await DLPipeRun.run(
            ["run", job.directory + "/job.lua", "-d", out, "-q", "--var", "base=\(server.url("/files"))"],
            under: [], within: 40)
        let elapsed = ContinuousClock.now - start
        #expect(run.status == 0, "\(run.stderr)")
        #expect(listing(out) == (1...5).map { "j\($0).bin" })
        #expect(elapsed >= .milliseconds(Int(Self.fewest * 1000)), "5 x 1 MiB at dl.config{ rate = \"1M\" } took \(elapsed)")
    }

    /// Pauses for the cap are not stalls: with a 1 s timeout, five transfers
    /// that each wait their turn for several seconds still finish.
    @Test func waitingForTheCapIsNotAStall() async throws {
        for index in 1...5 { try server.put("s\(index).bin", randomBytes: 100_000, seed: UInt64(index)) }
        let urls = (1...5).map { server.url("/files/s\($0).bin") }
        let (run, seconds) = try await timed(
            ["get"] + urls + ["-j", "5", "--per-host", "5", "--rate", "100K", "--timeout", "1", "--retries", "0", "-d", out, "-q"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(seconds >= 4, "500 kB at 100 KiB/s took \(seconds) s")
    }
}
