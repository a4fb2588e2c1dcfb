@testable import DLPipe
import Synchronization

/// A shared queue played by the test (`QueueParticipant`), with no database:
/// its part files are worker `worker`'s in `folder`, the lease and the
/// engine's reports are the test's closures, and an `add` is numbered here
/// (1, 2, 3...) and handed straight back to the engine as a claim, as a
/// queue with one worker would.
final class TestQueue: QueueParticipant {
    let files: ClaimedFiles
    private let placeAllowed: @Sendable () -> Bool
    private let startAllowed: @Sendable () -> Bool
    private let handedBack: @Sendable (Int, Double, DownloadError?) -> Void
    private let ended: @Sendable (Int) -> Void
    private let engine = Mutex<DownloadEngine?>(nil)
    private let numbers = Mutex(0)

    init(
        folder: String, worker: Int64, mayPlace: @escaping @Sendable () -> Bool = { true },
        mayStart: @escaping @Sendable () -> Bool = { true },
        handBack: @escaping @Sendable (_ number: Int, _ delay: Double, _ error: DownloadError?) -> Void = { _, _, _ in },
        transferEnded: @escaping @Sendable (_ number: Int) -> Void = { _ in }
    ) {
        files = ClaimedFiles(folder: folder, worker: worker)
        placeAllowed = mayPlace
        startAllowed = mayStart
        handedBack = handBack
        ended = transferEnded
    }

    /// The engine that runs this queue's claims (made with it as its
    /// `EngineConfiguration.queue`), for `add`.
    func serve(_ engine: DownloadEngine) { self.engine.withLock { $0 = engine } }

    func mayPlace() -> Bool { placeAllowed() }
    func mayStart() -> Bool { startAllowed() }
    func handBack(_ number: Int, after delay: Double, _ error: DownloadError?, request: DownloadRequest, attempts: Int) {
        handedBack(number, delay, error)
    }
    func transferEnded(_ number: Int) { ended(number) }
    func pauseChanged(_ number: Int, paused: Bool) {}
    func hostHeld(_ number: Int, host: String, seconds: Double) {}

    func add(_ requests: [DownloadRequest]) -> [Int] {
        let claims = numbers.withLock { last in
            requests.map { request in
                last += 1
                return ClaimedRequest(number: last, request: request)
            }
        }
        engine.withLock { $0 }?.addClaimed(claims)
        return claims.map(\.number)
    }
    func cancelQueued(_ number: Int, sendIfOpen: () -> Bool) -> QueuedCancel { sendIfOpen() ? .sent : .untouched }
    func forward(_ control: QueueControl, of number: Int) -> Bool { false }
}
