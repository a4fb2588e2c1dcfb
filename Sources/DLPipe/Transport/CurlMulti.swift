internal import CCurl

/// The multi handle: every transfer of the engine runs through one of these on one thread.
final class CurlMulti {
    private let handle: UnsafeMutableRawPointer

    /// A finished transfer: its easy handle and curl's result code.
    struct Completion {
        let easy: UnsafeMutableRawPointer
        let code: Int
    }

    init() {
        precondition(CurlGlobal.initialised, "curl_global_init failed")
        guard let handle = curl_multi_init() else { fatalError("curl_multi_init failed") }
        self.handle = handle
        // No CURLMOPT_MAX_HOST_CONNECTIONS: the scheduler limits transfers per
        // requested host; a cap by connected host would park redirected
        // transfers inside curl, where the stall check would count the wait.
    }

    deinit { curl_multi_cleanup(handle) }

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

    /// Ends a `poll` early; the one call that is safe from another thread.
    func wakeup() { curl_multi_wakeup(handle) }

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
