import Testing

@testable import DLPipe

/// A shared queue's participant changes its engine through updates that one
/// general inbox command carries (`EngineLoop.Command.participant`): each
/// update reaches the engine's side through `QueueUpdateTarget`, and through
/// nothing the queue would have to add to the engine's commands.
@Suite struct QueueUpdateTests {
    final class Recorder: QueueUpdateTarget {
        var calls: [String] = []
        func hostsDueByQueue(_ urls: [String]) { calls.append("due \(urls)") }
        func setPerHost(_ limit: Int) { calls.append("perHost \(limit)") }
        func countCancelledInQueue(_ info: DownloadInfo) { calls.append("cancelled \(info.id.rawValue)") }
    }

    @Test func eachUpdateAppliesItselfThroughTheTarget() {
        let info = DownloadInfo(id: DownloadID(7), url: "http://h/7", directory: "", attempt: 1, meta: [:])
        let updates: [any QueueUpdate] = [
            HostsDueByQueue(urls: ["http://a.test/1"]), PerHostByQueue(limit: 3), CancelledByQueue(info: info),
        ]
        let recorder = Recorder()
        for update in updates { EngineLoop.Command.participant(update).applyForTest(to: recorder) }
        #expect(recorder.calls == ["due [\"http://a.test/1\"]", "perHost 3", "cancelled 7"])
    }
}

extension EngineLoop.Command {
    /// The update a `participant` command carries, applied to `target`.
    fileprivate func applyForTest(to target: any QueueUpdateTarget) {
        guard case .participant(let update) = self else { Issue.record("not a participant command"); return }
        update.apply(to: target)
    }
}
