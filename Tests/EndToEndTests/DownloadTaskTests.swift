import DLPipe
import Foundation
import Testing
import TestSupport

/// `addTask`: a handle of one download with its own events and result.
@Suite struct DownloadTaskTests: LibrarySuite {
    let fixture: LibraryFixture

    init() throws {
        fixture = try LibraryFixture(label: "task")
    }

    private static func kind(_ event: DownloadEvent) -> String {
        "\(event)".components(separatedBy: "(").first ?? ""
    }

    @Test func aTaskSeesItsOwnEventsAndItsTerminalEventComesBeforeItsResult() async throws {
        let data = try server.put("one.bin", randomBytes: 300_000, seed: 1)
        try server.put("two.bin", randomBytes: 300_000, seed: 2)
        let engine = try engine()
        defer { engine.shutdown() }
        let one = engine.addTask(server.url("/files/one.bin?throttle=1000000"))
        let two = engine.addTask(server.url("/files/two.bin?throttle=1000000"))
        #expect(one.id != two.id)
        let result = try await within(seconds: 15, "one.result") { await one.result }
        guard case .finished(let file) = result else {
            Issue.record("\(result)")
            return
        }
        #expect(sameBytes(file.path, data))
        // The result came after the terminal event was in the stream: all of
        // it can be read now, and it ends there.
        let kinds = try await within(seconds: 2, "one.events") {
            var kinds: [String] = []
            for await event in one.events {
                #expect(event.download?.id == one.id, "only this download's events")
                kinds.append(Self.kind(event))
            }
            return kinds
        }
        #expect(kinds.first == "queued" && kinds.last == "finished", "\(kinds)")
        #expect(kinds.contains("response"))
        #expect(try await within(seconds: 2) { try? await one.value } == file)
        guard case .finished = try await within(seconds: 15, "two.result", { await two.result }) else {
            Issue.record("the second task did not finish")
            return
        }
    }

    @Test func cancellingTheAwaitingTaskCancelsTheDownload() async throws {
        try server.put("slow.bin", randomBytes: 400_000)
        let engine = try engine()
        defer { engine.shutdown() }
        let task = engine.addTask(server.url("/files/slow.bin?stall=100000"))
        let waiter = Task { await task.result }
        _ = try await within(seconds: 10, "a first progress event") {
            for await event in task.events { if case .progress = event { return true } }
            return false
        }
        waiter.cancel()
        #expect(try await within(seconds: 5, "the cancelled waiter") { await waiter.value } == .cancelled)
        #expect(try await within(seconds: 2) { await engine.outcome(of: task.id) } == .cancelled)
        #expect(!task.cancel(), "it ended: nothing to cancel")
        #expect(listing(out).isEmpty, "no part file")
    }

    @Test func pauseAndResumeThroughTheTask() async throws {
        let data = try server.put("slow.bin", randomBytes: 400_000)
        let engine = try engine()
        defer { engine.shutdown() }
        let task = engine.addTask(server.url("/files/slow.bin?stall=100000&stall_times=1"))
        let kinds = try await within(seconds: 20, "the task's events") {
            var kinds: [String] = []
            var paused = false
            for await event in task.events {
                kinds.append(Self.kind(event))
                if case .progress = event, !paused {
                    paused = true
                    #expect(task.pause())
                }
                if case .paused = event { #expect(task.resume()) }
            }
            return kinds
        }
        #expect(kinds.contains("paused") && kinds.last == "finished", "\(kinds)")
        #expect(try await within(seconds: 2) { try? await task.value }?.bytes == 400_000)
        #expect(sameBytes(out + "/slow.bin", data))
    }

    @Test func aTaskAddedAfterTheStopEndsAtOnce() async throws {
        try server.put("slow.bin", randomBytes: 400_000)
        let engine = try engine()
        let open = engine.addTask(server.url("/files/slow.bin?stall=100000"))
        await engine.stop()
        #expect(try await within(seconds: 2, "the open task's result") { await open.result } == .stopped)
        let late = engine.addTask(server.url("/files/slow.bin?late=1"))
        #expect(try await within(seconds: 2, "a late task's result") { await late.result } == .stopped)
        let events = try await within(seconds: 2, "a late task's events") {
            var count = 0
            for await _ in late.events { count += 1 }
            return count
        }
        #expect(events == 0)
        let thrown = try await within(seconds: 2, "late.value") { () -> DownloadOutcome? in
            do {
                _ = try await late.value
                return nil
            } catch let error as DownloadTask.NotFinished {
                return error.outcome
            } catch {
                return nil
            }
        }
        #expect(thrown == .stopped)
    }
}
