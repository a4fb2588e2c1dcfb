import DLPipe
import Foundation
import Synchronization

/// A run's web view: the engine's events are folded into a `RunModel` (on
/// the engine's thread, O(1) each), and a thread of its own turns the model
/// into the `/api/run` document and the `/metrics` text twice a second. The
/// server sends the latest of those, swapped under a lock: a request never
/// waits for the engine, and the engine never waits for a request.
public final class RunView: WebSource, @unchecked Sendable {
    // @unchecked: `timer` is set once in init; the mutable state is all in Mutexes.
    private let model: Mutex<RunModel>
    private let published = Mutex<(api: [UInt8], metrics: [UInt8])>(([], []))
    /// The run's speed, one sample a second.
    private let throughput: Mutex<ThroughputSamples>
    private let header: RunHeader
    private let timer: DispatchSourceTimer
    private let start: Double

    /// A view of a run named `title` (the job file, or the command); a
    /// shared queue's worker gives the queue (its URL, password hidden) and the job's name.
    public init(title: String, command: String, queue: (url: String, job: String)? = nil) {
        start = Self.now()
        header = RunHeader(title: title, command: command, pid: Int(getpid()), startedAt: Date(), queue: queue)
        model = Mutex(RunModel(start: start))
        throughput = Mutex(ThroughputSamples(start: start))
        timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "dlpipe-web-view"))
        publish()
        var tick = 0
        timer.schedule(deadline: .now() + .milliseconds(500), repeating: .milliseconds(500))
        timer.setEventHandler { [weak self] in
            ThreadName.enter("dlpipe-webview")
            tick += 1
            self?.publish(sample: tick % 2 == 0)
        }
        timer.resume()
    }

    deinit { timer.cancel() }

    /// Folds one event; called on the engine's thread.
    public func record(_ event: DownloadEvent) {
        let now = Self.now()
        model.withLock { $0.record(event, at: now) }
    }

    /// Stops refreshing (the run ended); what was published stays.
    public func stop() {
        timer.cancel()
        publish()
    }

    public func api(_ name: String) -> [UInt8]? {
        name == "run" ? published.withLock { $0.api } : nil
    }

    public func metrics() -> [UInt8] { published.withLock { $0.metrics } }

    public var page: [UInt8] { WebPages.run }

    /// Builds both documents from a copy of the model, outside its lock.
    private func publish(sample: Bool = false) {
        let now = Self.now()
        let copy = model.withLock { $0 }
        let overall = copy.meter.overall(at: now)
        let samples = throughput.withLock { samples in
            if sample { samples.sample(received: copy.receivedBytes, at: now) }
            return samples.points
        }
        let api = RunDocument.json(header, copy, overall: overall, throughput: samples, at: now, start: start)
        let metrics = RunMetrics.text(copy, startedAt: header.startedAt)
        published.withLock { $0 = (api, Array(metrics.utf8)) }
    }

    /// Seconds on a clock that only goes forward.
    static func now() -> Double { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }
}

/// What a run's document says of the run itself.
struct RunHeader: Sendable {
    var title: String
    var command: String
    var pid: Int
    var startedAt: Date
    /// A shared queue's worker: the queue and the job, for the page to point to the fleet's view.
    var queue: (url: String, job: String)?
}
