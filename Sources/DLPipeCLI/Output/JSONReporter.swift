import DLPipe
import DLPipeQueue
import Foundation
import Synchronization

/// One JSON object per event on stdout (JSON Lines), for machines. A writer
/// thread of its own writes them: the engine thread only queues (`EventWriter`).
final class JSONReporter: Reporter {
    private let writer = EventWriter.standardOutput
    /// A shared queue's worker: its `done` event says whose counts it holds
    /// (`JSONLine.done`). Set before the engine runs.
    private let queueWorker = Mutex<QueueWorker?>(nil)
    /// The figures progress events carry beside the engine's (speed and ETA
    /// over a window, the run's files and bytes), as on the terminal.
    private let meter = Mutex(ProgressMeter())
    private let warnings = RunWarnings()

    func describeDone(as worker: QueueWorker) { queueWorker.withLock { $0 = worker } }

    func handle(_ event: DownloadEvent) {
        if case .finished(let d, let f) = event, let warning = f.warning {
            writer.write(line: JSONLine.warning(d, warning))
        }
        for line in warnings.newJSON(in: event) { writer.write(line: line) }
        if case .drained(let s) = event, let worker = queueWorker.withLock({ $0 }) {
            let ran = worker.takeRanDone()
            return writer.write(line: JSONLine.done(s, worker: worker.worker, run: ran?.run ?? worker.run, job: ran?.summary))
        }
        let now = ProgressBars.now()
        let reading = meter.withLock { meter -> MeterReading? in
            meter.record(event, at: now)
            guard case .progress(let d, _) = event else { return nil }
            return MeterReading(download: meter.figures(of: d.id, at: now), overall: meter.overall(at: now))
        }
        writer.write(event, meter: reading)
    }

    func runEnded(_ ended: FollowedRun) {
        writer.write(line: JSONLine.done(
            ended.own, worker: ended.worker, run: ended.end.run, job: ended.end.job, exitCode: ended.end.exitCode))
    }

    /// Waits until every event is written, however slow the reader.
    func finish(_ summary: RunSummary) { writer.drain() }

    /// A stop does not wait for a reader that does not read: 5 s at most.
    func flushBeforeExit() { writer.drain(timeout: .now() + 5) }
}
