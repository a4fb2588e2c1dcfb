internal import CCurl

/// Runs `curl_global_init` once per process, before the first handle (after
/// OpenSSL's own set-up, which must come first: `OpenSSLProcess`).
enum CurlGlobal {
    static let initialised: Bool = {
        _ = OpenSSLProcess.prepared
        return curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK
    }()

    /// libcurl's version text, e.g. "libcurl/7.88.1 OpenSSL/3.0.11".
    static var version: String { String(cString: curl_version()) }
}

/// One curl easy handle with typed setters; owns the handle and the header list.
/// Not Sendable: it lives on the engine's transfer thread only.
final class CurlEasy {
    let handle: UnsafeMutableRawPointer
    private var headerList: UnsafeMutablePointer<curl_slist>?
    /// Lists of other options (`--resolve`, `--connect-to`): curl keeps the
    /// pointer, so each list lives until the next reset.
    private var otherLists: [UnsafeMutablePointer<curl_slist>] = []
    /// curl's own text for the last failure (CURLOPT_ERRORBUFFER): names the
    /// certificate problem, the proxy's answer, the host it could not reach.
    private let errorBuffer = UnsafeMutablePointer<CChar>.allocate(capacity: Int(CURL_ERROR_SIZE) + 1)
    /// The proxy the current request goes through (set with its options), for
    /// error messages; nil when direct.
    var proxy: String?

    init() {
        precondition(CurlGlobal.initialised, "curl_global_init failed")
        guard let handle = curl_easy_init() else { fatalError("curl_easy_init failed: out of memory") }
        self.handle = handle
        installErrorBuffer()
    }

    deinit {
        curl_easy_cleanup(handle)
        curl_slist_free_all(headerList)
        otherLists.forEach { curl_slist_free_all($0) }
        errorBuffer.deallocate()
    }

    /// Back to a fresh handle's options; keeps the handle's buffers for reuse.
    func reset() {
        curl_easy_reset(handle)
        curl_slist_free_all(headerList)
        headerList = nil
        otherLists.forEach { curl_slist_free_all($0) }
        otherLists = []
        proxy = nil
        installErrorBuffer()
    }

    private func installErrorBuffer() {
        errorBuffer.initialize(repeating: 0, count: Int(CURL_ERROR_SIZE) + 1)
        _ = dl_easy_setopt_pointer(handle, CURLOPT_ERRORBUFFER, errorBuffer)
    }

    /// curl's text for the failure of the last transfer, when it wrote one.
    var errorText: String? {
        var text = Substring(String(cString: errorBuffer))
        while let last = text.last, last == " " || last == "\n" || last == "\r" { text.removeLast() }
        return text.isEmpty ? nil : String(text)
    }

    /// Sets a list option other than the request headers.
    func setList(_ option: CURLoption, _ lines: [String]) {
        var list: UnsafeMutablePointer<curl_slist>?
        for line in lines { list = curl_slist_append(list, line) }
        guard let list else { return }
        otherLists.append(list)
        _ = dl_easy_setopt_slist(handle, option, list)
    }

    func set(_ option: CURLoption, _ value: Int) {
        _ = dl_easy_setopt_long(handle, option, value)
    }

    func set(_ option: CURLoption, _ value: String) {
        // curl copies string options (since 7.17), so a temporary C string is fine.
        _ = value.withCString { dl_easy_setopt_string(handle, option, $0) }
    }

    func set(_ option: CURLoption, offset value: Int64) {
        _ = dl_easy_setopt_off(handle, option, curl_off_t(value))
    }

    func set(_ option: CURLoption, pointer: UnsafeMutableRawPointer?) {
        _ = dl_easy_setopt_pointer(handle, option, pointer)
    }

    func set(
        _ option: CURLoption,
        callback: @convention(c) (
            UnsafeMutablePointer<CChar>?, Int, Int, UnsafeMutableRawPointer?
        ) -> Int
    ) {
        _ = dl_easy_setopt_data_callback(handle, option, callback)
    }

    /// Replaces the request header list ("Name: value" lines).
    func setHeaders(_ lines: [String]) {
        curl_slist_free_all(headerList)
        headerList = nil
        for line in lines { headerList = curl_slist_append(headerList, line) }
        _ = dl_easy_setopt_slist(handle, CURLOPT_HTTPHEADER, headerList)
    }

    func long(_ info: CURLINFO) -> Int {
        var value = 0
        _ = dl_easy_getinfo_long(handle, info, &value)
        return value
    }

    func offset(_ info: CURLINFO) -> Int64 {
        var value: curl_off_t = 0
        _ = dl_easy_getinfo_off(handle, info, &value)
        return Int64(value)
    }

    func string(_ info: CURLINFO) -> String? {
        var value: UnsafeMutablePointer<CChar>?
        _ = dl_easy_getinfo_string(handle, info, &value)
        return value.map { String(cString: $0) }
    }

    /// Lets a transfer paused by the write callback go on. May call the write
    /// callback before it returns, so never call it from inside a callback.
    func unpause() {
        _ = curl_easy_pause(handle, CURLPAUSE_CONT)
    }
}
