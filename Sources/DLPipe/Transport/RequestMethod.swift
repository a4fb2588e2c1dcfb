internal import CCurl

/// The method and body of a request, and what a redirect does to them.
/// Redirects are followed by the engine (one transfer per hop), so curl's own
/// rule is applied here (RFC 9110 15.4): a 303 turns any method but HEAD into
/// a GET without a body; a 301 or 302 turns a POST, and only a POST, into a GET
/// (what browsers do, and curl without `--post301/302`); 307 and 308 keep the
/// method and the body, and so does a 301/302 of a PUT, PATCH or DELETE.
struct RequestMethod: Equatable {
    /// The method sent ("GET", "POST", ...).
    var name: String
    /// The body sent, if any.
    var body: [UInt8]?

    init(name: String, body: [UInt8]?) {
        self.name = name
        self.body = body
    }

    init(_ request: DownloadRequest) {
        self.init(name: request.effectiveMethod, body: request.body)
    }

    static let get = RequestMethod(name: "GET", body: nil)

    /// The method of the next hop after a redirect of `status`.
    func following(status: Int) -> RequestMethod {
        switch status {
        case 303 where name != "HEAD": return .get
        // One `where` per pattern: a `where` after `301, 302` binds to 302 only,
        // and made a GET of every 301.
        case 301 where name == "POST", 302 where name == "POST": return .get
        default: return self
        }
    }

    /// Sets the method and body on a handle that `reset()` left as a GET.
    func apply(to easy: CurlEasy) {
        if let body {
            // curl copies the bytes: the handle does not keep a pointer into ours.
            easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: Int64(body.count))
            if body.isEmpty {
                easy.set(CURLOPT_POST, 1)
            } else {
                var copy = body
                copy.withUnsafeMutableBytes { easy.set(CURLOPT_COPYPOSTFIELDS, pointer: $0.baseAddress) }
            }
        } else if name == "POST" {
            easy.set(CURLOPT_POST, 1)
            easy.set(CURLOPT_POSTFIELDSIZE_LARGE, offset: 0)
        }
        // POST with POSTFIELDS is curl's own; any other method is named as is.
        if name != "GET" && name != "POST" { easy.set(CURLOPT_CUSTOMREQUEST, name) }
    }
}
