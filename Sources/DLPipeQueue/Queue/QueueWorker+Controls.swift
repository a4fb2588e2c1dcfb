import DLPipe
import Foundation

/// A handler's control of a download another worker holds (`dl.pause`,
/// `dl.resume`, `dl.cancel`). It did nothing: a `done` handler that
/// resumed a paused download ran, in half the runs of two workers, in the
/// worker that did not hold it, and the download then failed "paused and
/// never resumed". Now the control goes to the holder (a NOTIFY), which
/// applies it in its engine as its own handler's.
extension QueueWorker {
    package func forward(_ control: QueueControl, of number: Int) -> Bool {
        let sent = (try? addLink.withLock { link throws(PostgresError) in
            try link.run(patience: settings.outage) { connection throws(PostgresError) in
                try queue.forward(control, of: Int64(number), from: worker, on: connection)
            }
        }) ?? false
        if sent && control == .resume {
            // The holder's report of it comes a moment later: a `done` that
            // resumed it must not end the run meanwhile (`lookAtRun`).
            state.withLock { $0.resumesPassedOn += 1 }
        }
        return sent
    }

    /// Applies the controls other workers passed on to this one (on the
    /// listening thread). Each is the engine's own: a download this worker
    /// no longer holds is left alone, and never passed on again to itself.
    func applyPassedOn(_ received: [PostgresNotification], job: String) {
        let mine = received.compactMap { QueueSchema.parseControl($0.payload, job: job) }.filter { $0.worker == worker }
        guard !mine.isEmpty, let engine = engineBox.withLock({ $0 }) else { return }
        for (control, _, id) in mine {
            guard let download = engine.downloadID(number: Int(id)) else { continue }
            switch control {
            case .pause: engine.pause(download)
            case .resume: engine.resume(download)
            case .cancel: engine.cancel(download)
            }
        }
    }
}
