import Dispatch

/// A GCD queue whose blocks run on a thread named after it (`ThreadName.enter`),
/// for the engine's work off its thread: the syncfs, fdatasync and resume-hash
/// queues. Its blocks are `@Sendable`: they carry Sendable payloads and the
/// engine's inbox, never the loop.
struct NamedQueue: Sendable {
    let name: String
    private let queue: DispatchQueue

    init(_ name: String, concurrent: Bool = false) {
        precondition(name.utf8.count <= 15, "a thread name longer than Linux keeps: \(name)")
        self.name = name
        queue = DispatchQueue(label: name, attributes: concurrent ? .concurrent : [])
    }

    func async(_ work: @escaping @Sendable () -> Void) {
        let name = name
        queue.async {
            ThreadName.enter(name)
            work()
        }
    }

    /// Waits until every block queued before has run (a barrier on a
    /// concurrent queue). Runs nothing of its own, so names no thread.
    func waitForQueued() {
        queue.sync(flags: .barrier) {}
    }
}
