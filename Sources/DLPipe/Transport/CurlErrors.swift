internal import CCurl

/// Turns curl's result codes into the engine's error kinds. Messages keep
/// curl's own text (its error buffer: which certificate check failed, what
/// the proxy answered) and blame the proxy when it is the proxy's fault.
enum CurlErrors {
    static func map(_ code: Int, _ easy: CurlEasy, url: String) -> DownloadError {
        let curlCode = CURLcode(UInt32(code))
        let detail = easy.errorText ?? String(cString: curl_easy_strerror(curlCode))
        let proxy = easy.proxy.map(RedactedURL.text)
        // A refused CONNECT (https through a proxy): curl says only "receive
        // error"; the proxy's status says who refused and why.
        let connectStatus = easy.long(CURLINFO_HTTP_CONNECTCODE)
        if let proxy, connectStatus >= 300 {
            return proxyStatus(connectStatus, proxy: proxy, url: url, detail: detail)
        }
        switch curlCode {
        case CURLE_OPERATION_TIMEDOUT:
            return DownloadError(.timeout, "no progress from \(url) in time (\(detail))")
        case CURLE_PARTIAL_FILE where easy.offset(CURLINFO_CONTENT_LENGTH_DOWNLOAD_T) >= 0:
            return DownloadError(.network, "the body from \(url) ended before its Content-Length")
        case CURLE_PARTIAL_FILE:
            // Chunked (or no length at all): the connection closed before the last chunk.
            return DownloadError(.network, "the body from \(url) was cut off: the connection closed before its end (\(detail))")
        case CURLE_UNSUPPORTED_PROTOCOL, CURLE_URL_MALFORMAT:
            return DownloadError(.url, "cannot fetch \(quoted(url)): \(detail)")
        case CURLE_TOO_MANY_REDIRECTS:
            return DownloadError(.http, "too many redirects from \(url)")
        case CURLE_COULDNT_CONNECT where DescriptorBudget.exhausted():
            // curl says "Couldn't connect" when socket() fails with EMFILE: name the real cause.
            return DownloadError(.io, "cannot open a connection to \(url): too many open files (the limit is \(DescriptorBudget.limit()); raise it with ulimit -n)")
        case CURLE_COULDNT_RESOLVE_PROXY:
            return DownloadError(.proxy, "cannot resolve the proxy \(proxy ?? "") for \(url): \(detail)")
        case CURLE_COULDNT_CONNECT where proxy != nil, CURLE_PROXY:
            return DownloadError(.proxy, "cannot use the proxy \(proxy!) for \(url): \(detail)")
        case CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CONNECT_ERROR, CURLE_SSL_CERTPROBLEM,
            CURLE_SSL_CIPHER, CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_CRL_BADFILE,
            CURLE_SSL_PINNEDPUBKEYNOTMATCH, CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_CLIENTCERT:
            return DownloadError(.tls, "\(detail) (\(url)\(proxy.map { " via the proxy \($0)" } ?? ""))")
        case CURLE_WRITE_ERROR:
            return DownloadError(.io, "cannot write the body of \(url)")
        default:
            return DownloadError(.network, "\(detail) (\(url)\(proxy.map { " via the proxy \($0)" } ?? ""))")
        }
    }

    /// An error the engine made from a response (`HTTP 407 from ...`): through
    /// a proxy, a 407 is the proxy's, not the origin's.
    static func blame(_ error: DownloadError, _ easy: CurlEasy, url: String) -> DownloadError {
        guard let proxy = easy.proxy.map(RedactedURL.text), error.status == 407 else { return error }
        return proxyStatus(407, proxy: proxy, url: url, detail: nil)
    }

    private static func proxyStatus(_ status: Int, proxy: String, url: String, detail: String?) -> DownloadError {
        let reason = status == 407
            ? "it wants credentials (HTTP 407; give them in the proxy URL, http://user:password@host:port)"
            : "it answered HTTP \(status)"
        let curlText = detail.map { " (\($0))" } ?? ""
        return DownloadError(.proxy, "the proxy \(proxy) refused \(url): \(reason)\(curlText)", status: status)
    }
}
