import Foundation
import Synchronization
import Testing

@testable import DLPipe

/// The engine's work off its thread runs on threads named after its queue
/// (docs/design/engine-confinement.md): a serial queue's own thread, and the
/// GCD pool thread that runs a concurrent queue's block (`ThreadName.enter`).
/// ThreadNameTests sees the names of a whole `dlpipe run`; this sees the one
/// a GCD pool thread takes, which libdispatch may retire before that test looks.
@Suite struct NamedQueueTests {
    @Test func aSerialQueueRunsItsBlocksInOrderOnAThreadOfItsName() async {
        let queue = NamedQueue("dlpipe-test-s")
        let seen = await withCheckedContinuation { continuation in
            let names = Names()
            for _ in 0..<3 { queue.async { names.add(Self.currentName()) } }
            queue.async { continuation.resume(returning: names.all) }
        }
        queue.end()
        #expect(seen == ["dlpipe-test-s", "dlpipe-test-s", "dlpipe-test-s"])
    }

    @Test func aConcurrentQueuesPoolThreadTakesItsName() async {
        let first = NamedQueue("dlpipe-test-c1", concurrent: true)
        let second = NamedQueue("dlpipe-test-c2", concurrent: true)
        let names = await withCheckedContinuation { continuation in
            first.async {
                let one = Self.currentName()
                second.async { continuation.resume(returning: [one, Self.currentName()]) }
            }
        }
        #expect(names == ["dlpipe-test-c1", "dlpipe-test-c2"])
    }

    /// As the engine thread, when a state `sync` block runs on it.
    @Test func aThreadNamedForLifeKeepsItsNameInAPoolBlock() async {
        let queue = NamedQueue("dlpipe-test-l")
        let name = await withCheckedContinuation { continuation in
            queue.async {
                ThreadName.enter("dlpipe-other")
                continuation.resume(returning: Self.currentName())
            }
        }
        queue.end()
        #expect(name == "dlpipe-test-l")
    }

    @Test func waitingForASerialQueueWaitsForItsBlocks() {
        let queue = NamedQueue("dlpipe-test-w")
        let names = Names()
        queue.async {
            usleep(20_000)
            names.add("ran")
        }
        queue.waitForQueued()
        #expect(names.all == ["ran"])
        queue.end()
        queue.waitForQueued()  // an ended queue has nothing to wait for
    }

    /// The calling thread's name as the kernel has it (what top and gdb show).
    static func currentName() -> String {
        let comm = (try? String(contentsOfFile: "/proc/thread-self/comm", encoding: .utf8)) ?? ""
        return comm.trimmingCharacters(in: .newlines)
    }
}

private final class Names: Sendable {
    private let names = Mutex<[String]>([])
    func add(_ name: String) { names.withLock { $0.append(name) } }
    var all: [String] { names.withLock { $0 } }
}
