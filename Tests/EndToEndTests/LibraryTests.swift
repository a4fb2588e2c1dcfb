import DLPipe
import Foundation
import Testing

/// The engine as a Swift library: events, pause, resume, cancel.
@Suite struct LibraryTests: LibrarySuite {
    let fixture: LibraryFixture

    init() throws {
        fixture = try LibraryFixture(label: "lib")
    }

    @Test func pauseThenResumeContinuesWithARangeRequest() async throws {
        let data = try server.put("slow.bin", randomBytes: 400_000)
        let engine = try engine()
        let events = engine.events()
        let id = engine.add(server.url("/files/slow.bin?stall=100000&stall_times=1"))
        var paused = false
        var finished: FinishedInfo?
        for await event in events where event.download?.id == id {
            switch event {
            case .progress where !paused:
                paused = true
                engine.pause(id)
            case .paused:
                engine.resume(id)
            case .finished(_, let info):
                finished = info
            default: break
            }
            if event.isTerminal { break }
        }
        #expect(paused)
        #expect(finished?.bytes == 400_000)
        #expect(sameBytes(out + "/slow.bin", data))
        let ranges = try server.requests(matching: "/files/slow.bin").map { ($0["headers"] as? [String: String])?["range"] }
        #expect(ranges.count == 2)
        #expect(ranges.last??.hasPrefix("bytes=") == true, "the resume asks for the rest only")
        engine.shutdown()
    }

    @Test func cancelEndsWithOneTerminalEventAndNoFiles() async throws {
        try server.put("slow.bin", randomBytes: 400_000)
        let engine = try engine()
        let events = engine.events()
        let id = engine.add(server.url("/files/slow.bin?stall=100000"))
        var terminal: [String] = []
        for await event in events where event.download?.id == id {
            if case .progress = event { engine.cancel(id) }
            if event.isTerminal { terminal.append("\(event)") }
            if event.isTerminal { break }
        }
        #expect(terminal.count == 1)
        #expect(await engine.outcome(of: id) == .cancelled)
        let (summary, _) = await engine.waitUntilDrained()
        #expect(summary.cancelled == 1)
        #expect(listing(out).isEmpty, "no part file, no final file")
        engine.shutdown()
    }

    /// Downloads still waiting in the queue (kept as bare requests until they
    /// start) can be cancelled, paused and resumed like running ones, and their
    /// outcomes are kept for `outcome(of:)`.
    @Test func queuedDownloadsAreControlledBeforeTheyStart() async throws {
        let blocker = try server.put("first.bin", randomBytes: 100_000, seed: 1)
        let later = try server.put("later.bin", randomBytes: 1000, seed: 2)
        try server.put("dropped.bin", randomBytes: 1000, seed: 3)
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.concurrency = 1
        let engine = try DownloadEngine(configuration: configuration)
        let events = engine.events()
        // One at a time, and the first takes about half a second: the other two
        // are still queued when they are controlled.
        let first = engine.add(server.url("/files/first.bin?throttle=200000"))
        let dropped = engine.add(server.url("/files/dropped.bin"))
        let paused = engine.add(server.url("/files/later.bin"))
        engine.cancel(dropped)
        engine.pause(paused)
        var seen: [DownloadID: [String]] = [:]
        for await event in events {
            guard let id = event.download?.id else { continue }
            seen[id, default: []].append("\(event)".components(separatedBy: "(").first ?? "")
            if case .paused = event, id == paused { engine.resume(paused) }
            if case .finished = event, id == paused { break }
        }
        #expect(await engine.outcome(of: dropped) == .cancelled)
        if case .finished(let info)? = await engine.outcome(of: first) { #expect(info.bytes == 100_000) } else {
            Issue.record("the first download did not finish")
        }
        #expect(sameBytes(out + "/first.bin", blocker))
        #expect(sameBytes(out + "/later.bin", later))
        #expect(!FileManager.default.fileExists(atPath: out + "/dropped.bin"))
        #expect(try server.requests(matching: "/files/dropped.bin").isEmpty, "a cancelled queued download asks nothing")
        #expect(seen[dropped]?.filter { $0 == "cancelled" }.count == 1, "\(seen[dropped] ?? [])")
        engine.shutdown()
    }

    @Test func theExampleProgramQueuesPausesResumesAndCancels() async throws {
        try server.put("one.bin", randomBytes: 300_000, seed: 1)
        try server.put("two.bin", randomBytes: 300_000, seed: 2)
        let three = try server.put("three.bin", randomBytes: 1000, seed: 3)
        let example = (Paths.binary as NSString).deletingLastPathComponent + "/dlpipe-example"
        let process = try Subprocess(example, [
            out, server.url("/files/one.bin?stall=100000&stall_times=1"), server.url("/files/two.bin?throttle=100000"),
            server.url("/files/three.bin"),
        ])
        let (status, stdout, stderr) = await withCheckedContinuation { continuation in
            Thread.detachNewThread { continuation.resume(returning: process.finish()) }
        }
        #expect(status == 0, "\(stdout)\n\(stderr)")
        #expect(stdout.contains("paused and resumed 1"))
        #expect(stdout.contains("cancelled 2"))
        #expect(sameBytes(out + "/three.bin", three))
        #expect(!listing(out).contains("two.bin"))
    }

    /// A program that uses only DLPipe links no libpq: the shared queue is
    /// DLPipeQueue's, and only what imports it pulls PostgreSQL's client in.
    @Test func theExampleProgramLinksNoPostgresClient() throws {
        let example = (Paths.binary as NSString).deletingLastPathComponent + "/dlpipe-example"
        let (status, stdout, stderr) = try Subprocess("/usr/bin/ldd", [example]).finish()
        #expect(status == 0, "\(stderr)")
        #expect(stdout.contains("libcurl"), "ldd lists the libraries: \(stdout)")
        #expect(!stdout.contains("libpq"), "\(stdout)")
        // The command line, which runs queue workers, does link it.
        let (_, cli, _) = try Subprocess("/usr/bin/ldd", [Paths.binary]).finish()
        #expect(cli.contains("libpq"))
    }
}
