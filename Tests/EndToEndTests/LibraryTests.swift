import DLPipe
import Foundation
import Testing

/// The engine as a Swift library: events, pause, resume, cancel.
@Suite struct LibraryTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("lib")
    }

    private func engine() throws -> DownloadEngine {
        var configuration = EngineConfiguration()
        configuration.directory = out
        configuration.progressInterval = 0.05
        return try DownloadEngine(configuration: configuration)
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
        #expect(bytes(at: out + "/slow.bin") == data)
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
        #expect(bytes(at: out + "/three.bin") == three)
        #expect(!listing(out).contains("two.bin"))
    }
}
