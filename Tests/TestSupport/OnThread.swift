import Foundation
import Testing

/// Runs `body` on a thread of its own with an 8 MiB stack (as dlpipe runs Lua)
/// and gives up after `limit` seconds: a call that escapes its budget records
/// an issue and returns nil instead of hanging the suite (the stuck thread is
/// abandoned).
public func onThread<T: Sendable>(limit: Double = 20, _ body: @escaping @Sendable () -> T) -> T? {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        box.value = body()
        done.signal()
    }
    thread.stackSize = 8 << 20
    thread.start()
    guard done.wait(timeout: .now() + limit) == .success else {
        Issue.record("the Lua call did not stop within \(limit) s")
        return nil
    }
    return box.value
}

/// Holds a result handed from the helper thread to the test; read only after
/// the semaphore says it was written.
private final class ResultBox<T>: @unchecked Sendable { var value: T? }
