internal import CCurl

/// Turns curl's result codes into the engine's error kinds.
enum CurlErrors {
    static func map(_ code: Int, _ easy: CurlEasy, url: String) -> DownloadError {
        let text = String(cString: curl_easy_strerror(CURLcode(UInt32(code))))
        switch CURLcode(UInt32(code)) {
        case CURLE_OPERATION_TIMEDOUT:
            return DownloadError(.timeout, "no progress from \(url) in time (\(text))")
        case CURLE_PARTIAL_FILE:
            return DownloadError(.network, "the body from \(url) ended before its Content-Length")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return DownloadError(.http, "cannot fetch \(quoted(url)): \(text)")
        case CURLE_TOO_MANY_REDIRECTS:
            return DownloadError(.http, "too many redirects from \(url)")
        case CURLE_COULDNT_CONNECT where DescriptorBudget.exhausted():
            // curl says "Couldn't connect" when socket() fails with EMFILE: name the real cause.
            return DownloadError(.io, "cannot open a connection to \(url): too many open files (the limit is \(DescriptorBudget.limit()); raise it with ulimit -n)")
        case CURLE_WRITE_ERROR:
            return DownloadError(.io, "cannot write the body of \(url)")
        default:
            return DownloadError(.network, "\(text) (\(url))")
        }
    }
}
