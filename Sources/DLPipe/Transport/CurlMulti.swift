internal import CCurl

/// The multi handle: every transfer of the engine runs through one of these on one thread.
/// Not Sendable: it lives on the engine thread; other threads wake its poll
/// through the `CurlMultiHandle` they hold.
final class CurlMulti {
    private let owner: CurlMultiHandle
    private var handle: UnsafeMutableRawPointer { owner.raw }

    /// A finished transfer: its easy handle and curl's result code.
    struct Completion {
        let easy: UnsafeMutableRawPointer
        let code: Int
    }

    /// The multi interface of `handle`, on the one thread that uses it.
    init(_ handle: CurlMultiHandle = CurlMultiHandle()) {
        self.owner = handle
        // No CURLMOPT_MAX_HOST_CONNECTIONS: the scheduler limits transfers per
        // requested host; a cap by connected host would park redirected
        // transfers inside curl, where the stall check would count the wait.
    }

    func add(_ easy: CurlEasy) { curl_multi_add_handle(handle, easy.handle) }

    func remove(_ easy: CurlEasy) { curl_multi_remove_handle(handle, easy.handle) }

    /// Drives every transfer as far as it can go without blocking.
    func perform() {
        var running: Int32 = 0
        curl_multi_perform(handle, &running)
    }

    /// Sleeps until a socket is ready, `wakeup` is called, or `milliseconds` pass.
    func poll(milliseconds: Int) {
        var ready: Int32 = 0
        curl_multi_poll(handle, nil, 0, Int32(milliseconds), &ready)
    }

    /// Takes the transfers that ended since the last call.
    func completions() -> [Completion] {
        var done: [Completion] = []
        var left: Int32 = 0
        while let message = curl_multi_info_read(handle, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let easy = message.pointee.easy_handle
            else { continue }
            done.append(Completion(easy: easy, code: Int(message.pointee.data.result.rawValue)))
        }
        return done
    }
}

/// A multi handle's lifetime and its one thread-safe call. The engine's inbox
/// holds it (to wake the loop from any thread) as well as the loop's
/// `CurlMulti`, so it is freed only when both are gone: a `post` racing the
/// loop's end never wakes a freed handle.
final class CurlMultiHandle: @unchecked Sendable {
    // @unchecked: other threads can only call `wakeup`, and curl documents
    // curl_multi_wakeup as safe from any thread; every other use of `raw` is
    // through `CurlMulti`, which is not Sendable. The cleanup runs once the
    // last holder is gone, so never during another call.
    fileprivate let raw: UnsafeMutableRawPointer

    init() {
        precondition(CurlGlobal.initialised, "curl_global_init failed")
        guard let handle = curl_multi_init() else { fatalError("curl_multi_init failed") }
        raw = handle
    }

    deinit { curl_multi_cleanup(raw) }

    /// Ends a `poll` early; the one call that is safe from another thread.
    func wakeup() { curl_multi_wakeup(raw) }
}
