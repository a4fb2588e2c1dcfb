internal import CCurl
#if canImport(Glibc)
import Glibc
#endif

/// Sets the curl options of `TransportOptions` (and the CA file) on one
/// request's handle: proxy, TLS trust, host mapping, credentials, HTTP/2
/// connection sharing. Kept apart from the transfer's callbacks.
struct TransferOptions {
    let options: TransportOptions
    let caFile: String?
    /// The process's environment, read once: curl's proxy variables.
    let environment: [String: String]

    init(options: TransportOptions, caFile: String?, environment: [String: String] = TransferOptions.environment) {
        self.options = options
        self.caFile = caFile
        self.environment = environment
    }

    /// Applies the options for a request of `url`. `firstHost` is the host and
    /// port the user asked for: `-u` credentials go there only, never to
    /// another host a redirect leads to.
    func apply(to easy: CurlEasy, url: String, firstHost: String) {
        // https: transfers to one host wait for its first connection's TLS
        // handshake (ALPN says whether it speaks HTTP/2) and share it as streams,
        // instead of each opening a TLS connection of its own. Not for http://:
        // there curl would learn that only from the first response, so a slow
        // first response would hold back every other transfer to the host.
        let parts = URLParts(url)
        if parts?.scheme == "https" { easy.set(CURLOPT_PIPEWAIT, 1) }
        let proxy = ProxyChoice.proxy(for: url, options: options, environment: environment)
        // Always explicit, "" for none: curl must not decide differently from
        // ProxyChoice by reading the environment itself.
        easy.set(CURLOPT_PROXY, proxy ?? "")
        easy.proxy = proxy
        if let caFile { easy.set(CURLOPT_CAINFO, caFile) }
        if let caPath = options.caPath { easy.set(CURLOPT_CAPATH, caPath) }
        if options.insecure {
            easy.set(CURLOPT_SSL_VERIFYPEER, 0)
            easy.set(CURLOPT_SSL_VERIFYHOST, 0)
            easy.set(CURLOPT_PROXY_SSL_VERIFYPEER, 0)
            easy.set(CURLOPT_PROXY_SSL_VERIFYHOST, 0)
        }
        if !options.resolve.isEmpty { easy.setList(CURLOPT_RESOLVE, options.resolve) }
        if !options.connectTo.isEmpty { easy.setList(CURLOPT_CONNECT_TO, options.connectTo) }
        let sameHost = parts?.hostPort == firstHost
        if sameHost, let credentials = options.credentials {
            easy.set(CURLOPT_USERPWD, credentials)
        }
        switch options.netrc {
        case .ignored: break
        case .home: easy.set(CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
        case .file(let path):
            easy.set(CURLOPT_NETRC, Int(CURL_NETRC_OPTIONAL.rawValue))
            easy.set(CURLOPT_NETRC_FILE, path)
        }
        switch options.authentication {
        case .basic: break
        case .digest: easy.set(CURLOPT_HTTPAUTH, dl_curlauth_digest())
        case .any: easy.set(CURLOPT_HTTPAUTH, dl_curlauth_any())
        }
    }

    /// The environment at the first transfer: read once, not per request.
    static let environment = processEnvironment()

    static func processEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var entry = environ
        while let pointer = entry.pointee {
            let text = String(cString: pointer)
            if let eq = text.firstIndex(of: "=") {
                result[String(text[..<eq])] = String(text[text.index(after: eq)...])
            }
            entry += 1
        }
        return result
    }
}
