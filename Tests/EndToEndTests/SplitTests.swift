import Foundation
import TestSupport
import Testing

/// `--split N`: one large file over several connections by byte ranges, at
/// the fault server (which counts the answers it serves at once). Its
/// `throttle` caps each connection, as a server that limits per connection
/// does: one connection needs at least size / cap seconds.
@Suite struct SplitTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("split")
    }

    private func ranges(_ prefix: String) throws -> [String] {
        try server.requests(matching: prefix).compactMap { ($0["headers"] as? [String: String])?["range"] }
    }

    @Test func segmentsArriveAtOnceIntoOneExactFile() async throws {
        let data = try server.put("big.bin", randomBytes: 8_000_000, seed: 3)
        let run = try await DLPipeRun.run([
            "get", server.url("/files/big.bin?throttle=4000000"), "-d", out, "--split", "4", "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/big.bin", data))
        #expect(listing(out) == ["big.bin"])
        // The first request learns the size and validator; three more fetch
        // the other segments, each a bounded range under If-Range.
        let asked = try server.requests(matching: "/files/big.bin")
        #expect(asked.count == 4)
        let ranged = asked.compactMap { $0["headers"] as? [String: String] }.filter { $0["range"] != nil }
        #expect(Set(ranged.compactMap { $0["range"] }) == ["bytes=2000000-3999999", "bytes=4000000-5999999", "bytes=6000000-7999999"])
        #expect(ranged.allSatisfy { $0["if-range"]?.hasPrefix("\"") == true }, "the strong ETag in every If-Range")
        #expect(server.peak(matching: "/files/big.bin") >= 2, "more than one connection at a time")
        // One download for events: one response, one finished, progress to the whole file.
        #expect(run.events("response").count == 1)
        #expect(run.events("finished").first?["bytes"] as? Int == data.count)
        #expect(run.events("progress").last?["bytes"] as? Int == data.count)
        #expect(run.events("done").first?["bytes"] as? Int == data.count, "no byte fetched twice")
    }

    @Test func perHostBoundsTheConnections() async throws {
        let data = try server.put("p.bin", randomBytes: 8_000_000, seed: 4)
        let run = try await DLPipeRun.run([
            "get", server.url("/files/p.bin?throttle=4000000"), "-d", out, "--split", "8", "--per-host", "2", "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/p.bin", data))
        // Each segment takes 0.25 s at the server: 50 ms of grace for the
        // server to notice a connection the client closed hides no third one.
        #expect(server.peak(matching: "/files/p.bin", grace: 0.05) == 2, "at most --per-host connections, and both used")
    }

    @Test func aServerWithoutRangesGetsOneConnection() async throws {
        let data = try server.put("n.bin", randomBytes: 4_000_000, seed: 5)
        let run = try await DLPipeRun.run(["get", server.url("/files/n.bin?no_range=1"), "-d", out, "--split", "4", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/n.bin", data))
        #expect(try server.requests(matching: "/files/n.bin").count == 1)
    }

    @Test func aSmallFileGetsOneConnection() async throws {
        // Under two segments of the 1 MiB minimum.
        let data = try server.put("s.bin", randomBytes: 1_500_000, seed: 6)
        let run = try await DLPipeRun.run(["get", server.url("/files/s.bin"), "-d", out, "--split", "8", "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/s.bin", data))
        #expect(try server.requests(matching: "/files/s.bin").count == 1)
    }

    @Test func aFileThatChangesBetweenSegmentsIsNeverMixed() async throws {
        // The first answer is version 1; every later one version 2, so the
        // segments' If-Range does not match and they are answered 200.
        try server.put("c.bin", randomBytes: 6_000_000, seed: 7)
        let v2 = try server.put("c.bin.v2", randomBytes: 6_000_000, seed: 8)
        let run = try await DLPipeRun.run([
            "get", server.url("/files/c.bin?swap_after=1&throttle=8000000"), "-d", out, "--split", "4", "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/c.bin", v2), "the new version, whole")
        #expect(listing(out) == ["c.bin"])
        let retried = run.events("retrying").compactMap { $0["message"] as? String }
        #expect(retried.contains { $0.contains("changed") }, "\(retried)")
    }

    @Test func aBrokenConnectionRetriesEachSegmentWhereItStood() async throws {
        // The first three answers break off after 1 MB: the first transfer's
        // and two segments'.
        let data = try server.put("r.bin", randomBytes: 8_000_000, seed: 13)
        let run = try await DLPipeRun.run([
            "get", server.url("/files/r.bin?throttle=4000000&reset=1000000&reset_times=3"), "-d", out, "--split", "4", "--json",
        ])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/r.bin", data))
        let statuses = run.events("response").compactMap { $0["status"] as? Int }
        #expect(statuses.first == 200 && statuses.dropFirst().allSatisfy { $0 == 206 }, "resumed, not restarted: \(statuses)")
    }

    @Test func aFailedSplitDownloadResumesItsSegmentsNextRun() async throws {
        // Every answer of the first run breaks off after 1 MB and it has no
        // retries: it fails, its part file full of holes. The next run finds
        // the segments in its record (a failed record keeps them too).
        let data = try server.put("f.bin", randomBytes: 8_000_000, seed: 14)
        let url = server.url("/files/f.bin?throttle=4000000&reset=1000000&reset_times=4")
        let failed = try await DLPipeRun.run(["get", url, "-d", out, "--split", "4", "--retries", "0", "--json"])
        #expect(failed.status != 0)
        #expect(listing(out) == ["f.bin.part"])
        let again = try await DLPipeRun.run(["get", url, "-d", out, "--split", "4", "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(sameBytes(out + "/f.bin", data), "byte-exact: no hole read as bytes")
        #expect(again.events("response").first?["status"] as? Int == 206, "resumed by its segments")
    }

    /// Throttled so that the other segments start before the first
    /// transfer reaches them (on an uncapped loopback it may take them over).
    @Test func sha256IsCheckedOnTheFinishedFile() async throws {
        let data = try server.put("h.bin", randomBytes: 4 << 20, seed: 9)
        let digest = sha256Hex(data)
        let good = try await DLPipeRun.run([
            "get", server.url("/files/h.bin?throttle=4000000"), "-d", out, "--split", "4", "--sha256", digest, "--json",
        ])
        #expect(good.status == 0, "\(good.stderr)")
        #expect(good.events("finished").first?["sha256"] as? String == digest)
        #expect(try ranges("/files/h.bin").count == 3, "it did split")
        let other = try TempDir.make("split-bad")
        let bad = try await DLPipeRun.run([
            "get", server.url("/files/h.bin?throttle=4000000"), "-d", other, "--split", "4", "--sha256", String(repeating: "0", count: 64),
            "--retries", "0", "--json",
        ])
        #expect(bad.status != 0)
        #expect(bad.events("failed").first?["kind"] as? String == "checksum")
        #expect(listing(other).isEmpty, "no file under the name, no part file")
        #expect(try ranges("/files/h.bin").count == 6, "the bad run split too: its digest was of the finished file")
    }

    @Test func killedAndRunAgainEachSegmentResumes() async throws {
        let data = try server.put("k.bin", randomBytes: 8_000_000, seed: 10)
        // 4 connections of 500 KB/s: 4 s for the file. Each run is killed once
        // the file holds `bytes` (progress counts every segment), past the
        // first of the once-a-second syncs that the record follows.
        let url = server.url("/files/k.bin?throttle=500000")
        var kills = 0
        for bytes in [3_000_000, 5_500_000] {
            let process = try Subprocess(Paths.binary, ["get", url, "-d", out, "--split", "4", "--json"])
            let status = await offThePool { () -> Int32 in
                while let line = process.readStdoutLine() {
                    guard line.contains("\"progress\""),
                        let event = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        let done = event["bytes"] as? Int, done >= bytes
                    else { continue }
                    break
                }
                process.signal(SIGKILL)
                return process.waitForExit()
            }
            if status == 128 + SIGKILL { kills += 1 }
        }
        #expect(kills > 0, "no run was killed")
        let final = try await DLPipeRun.run(["get", url, "-d", out, "--split", "4", "--json"])
        #expect(final.status == 0, "\(final.stderr)")
        #expect(sameBytes(out + "/k.bin", data), "byte-exact after \(kills) kills")
        #expect(listing(out) == ["k.bin"])
        // The segments resumed: ranges that start past a segment's first byte.
        let starts = Set(["0", "2000000", "4000000", "6000000"])
        let resumed = try ranges("/files/k.bin").filter { range in
            !starts.contains(String(range.dropFirst("bytes=".count).prefix { $0 != "-" }))
        }
        #expect(!resumed.isEmpty, "no segment resumed")
        // The last run fetched less than the whole file.
        #expect((final.events("done").first?["bytes"] as? Int ?? .max) < data.count)
    }

    @Test func aJobSplitsByConfigAndByAdd() async throws {
        let a = try server.put("a.bin", randomBytes: 3 << 20, seed: 11)
        let b = try server.put("b.bin", randomBytes: 3 << 20, seed: 12)
        let job = try LuaJob()
        let run = try await job.run(source: """
            dl.config{ split = 3 }
            dl.add(\(luaString(server.url("/files/a.bin?throttle=3000000"))))
            dl.add{ url = \(luaString(server.url("/files/b.bin?throttle=3000000"))), split = 2 }
            """, out: out)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/a.bin", a) && sameBytes(out + "/b.bin", b))
        #expect(try ranges("/files/a.bin").count == 2, "dl.config's split: 3 segments")
        #expect(try ranges("/files/b.bin").count == 1, "dl.add's split wins: 2 segments")
    }

    private func luaString(_ text: String) -> String { "\"" + text + "\"" }
}
