import Foundation
import Testing

/// A consumer of `--json` that does not read (a full pipe) never stalls the
/// transfers: events wait in the output writer's buffer, and all arrive in
/// order once the reader reads.
@Suite struct SlowReaderTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "slow-reader")
    }

    @Test func anUnreadStdoutDoesNotStallTheDownloads() async throws {
        let count = 300
        for i in 0..<count { try server.put("f\(i).txt", bytes: Array("file \(i)\n".utf8)) }
        // The done handler reports on stderr, which the test reads: it runs once
        // every download has ended, while nobody has read a byte of stdout.
        try job.write("job.lua", """
            for i = 0, \(count - 1) do dl.add(dl.var.base .. "/f" .. i .. ".txt") end
            dl.on("done", function(s) dl.log("all ended", s.finished, s.failed) end)
            """)
        let process = try Subprocess(Paths.binary, [
            "run", job.directory + "/job.lua", "-d", out, "--json", "--no-hooks",
            "--var", "base=\(server.url("/files"))",
        ])
        // A hang (the engine blocked on stdout) fails within seconds, not never.
        let watchdog = DispatchWorkItem { process.signal(SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 30, execute: watchdog)
        defer { watchdog.cancel() }
        let result: (ended: String?, status: Int32, stdout: String) = await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                var ended: String?
                while let line = process.readStderrLine() {
                    if line.contains("all ended") { ended = line; break }
                }
                let files = listing(out).count
                let (status, stdout, _) = process.finish()
                continuation.resume(returning: (ended.map { $0 + " files=\(files)" }, status, stdout))
            }
        }
        let endedLine = result.ended
        let ended = try #require(endedLine, "the run never ended its downloads while stdout was unread")
        #expect(ended.hasSuffix("all ended\t\(count)\t0 files=\(count)"), "\(ended)")
        #expect(result.status == 0)
        // More than a pipe holds: the events really did wait for the reader.
        #expect(result.stdout.utf8.count > 65536)
        let events = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(events.count == result.stdout.split(separator: "\n").count, "every line is whole JSON")
        #expect(events.last?["event"] as? String == "done")
        var seen: [Int: [String]] = [:]
        for event in events {
            guard let id = event["id"] as? Int, let type = event["event"] as? String, type != "progress" else { continue }
            seen[id, default: []].append(type)
        }
        #expect(seen.count == count)
        #expect(seen.values.allSatisfy { $0 == ["queued", "response", "finished"] }, "\(seen.values.first { $0 != ["queued", "response", "finished"] } ?? [])")
    }
}
