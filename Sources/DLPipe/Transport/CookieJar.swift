internal import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// curl's cookie engine for every transfer of one engine (`-b/--cookie`,
/// `-c/--cookie-jar`, `dl.config{ cookie, cookie_jar }`): one share handle
/// holds the cookies, so a cookie one response sets (a login redirect's too:
/// the engine follows redirects hop by hop, each hop its own transfer) goes
/// with every later request that matches it.
///
/// No locks: every transfer of an engine runs on its one thread, and the
/// share is used nowhere else (curl needs lock callbacks only when handles
/// that share data run on several threads at once).
final class CookieJar {
    private let share: UnsafeMutableRawPointer
    /// The Netscape cookie file read at the start, when given.
    let readFile: String?
    /// The file the session's cookies are written to at the end, when given.
    let writeFile: String?

    /// Reads `readFile` now (a missing file is an empty jar, as in curl, so
    /// `-b jar -c jar` works from the first run); throws a message for a file
    /// that exists but cannot be read.
    init(readFile: String?, writeFile: String?) throws(DownloadError) {
        precondition(CurlGlobal.initialised, "curl_global_init failed")
        guard let share = curl_share_init() else { fatalError("curl_share_init failed: out of memory") }
        self.share = share
        self.readFile = readFile
        self.writeFile = writeFile
        _ = dl_share_data(share, Int(CURL_LOCK_DATA_COOKIE.rawValue))
        if let readFile {
            var info = stat()
            if stat(readFile, &info) == 0 {
                guard (info.st_mode & S_IFMT) == S_IFREG, access(readFile, R_OK) == 0 else {
                    throw DownloadError(.io, "cookie file \(readFile.debugDescription) is not a readable file")
                }
                let loader = CurlEasy()
                loader.set(CURLOPT_SHARE, pointer: share)
                loader.set(CURLOPT_COOKIEFILE, readFile)
                loader.set(CURLOPT_COOKIELIST, "RELOAD")  // reads the file into the share now
            }
        }
    }

    deinit {
        // Every easy handle that used the share is gone by now (the engine's
        // pool goes first); a share still in use is left to the process's end.
        _ = curl_share_cleanup(share)
    }

    /// Turns the cookie engine on for one transfer, over the shared cookies.
    func apply(to easy: CurlEasy) {
        easy.set(CURLOPT_SHARE, pointer: share)
        easy.set(CURLOPT_COOKIEFILE, "")  // the engine on, no file read per transfer
    }

    /// A `Cookie` header of the download's own (`dl.add` headers, a `request`
    /// handler) would go out as a second Cookie line beside the engine's, and
    /// a request may carry one (RFC 6265 5.4). Such lines leave `lines` for
    /// CURLOPT_COOKIE, which curl writes into the one line with the jar's
    /// cookies.
    func mergeCookieHeaders(_ lines: inout [String], into easy: CurlEasy) {
        var pairs: [String] = []
        lines.removeAll { line in
            guard line.utf8.count >= 7, line.prefix(7).lowercased() == "cookie:" else { return false }
            let value = line.dropFirst(7).drop { $0 == " " || $0 == "\t" }
            if !value.isEmpty { pairs.append(String(value)) }
            return true
        }
        if !pairs.isEmpty { easy.set(CURLOPT_COOKIE, pairs.joined(separator: "; ")) }
    }

    /// Writes the session's cookies to `writeFile` in the Netscape format curl
    /// reads (a temporary file renamed over it, mode 0600: cookies are
    /// credentials); nil, or what went wrong.
    func save() -> String? {
        guard let writeFile else { return nil }
        let reader = CurlEasy()
        reader.set(CURLOPT_SHARE, pointer: share)
        var raw: UnsafeMutableRawPointer?
        _ = dl_easy_getinfo_pointer(reader.handle, CURLINFO_COOKIELIST, &raw)
        var lines: [String] = []
        var node = raw?.assumingMemoryBound(to: curl_slist.self)
        while let current = node {
            if let data = current.pointee.data { lines.append(String(cString: data)) }
            node = current.pointee.next
        }
        curl_slist_free_all(raw?.assumingMemoryBound(to: curl_slist.self))
        let text = "# Netscape HTTP Cookie File\n# Written by dlpipe; it holds credentials.\n\n"
            + lines.map { $0 + "\n" }.joined()
        let temporary = writeFile + ".dlpipe-\(getpid())"
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0o600)
        guard fd >= 0 else { return "cannot write the cookie jar \(writeFile.debugDescription): \(String(cString: strerror(errno)))" }
        let bytes = Array(text.utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        let failure = written == bytes.count ? nil : String(cString: strerror(errno))
        close(fd)
        guard failure == nil, rename(temporary, writeFile) == 0 else {
            let reason = failure ?? String(cString: strerror(errno))
            unlink(temporary)
            return "cannot write the cookie jar \(writeFile.debugDescription): \(reason)"
        }
        return nil
    }
}
