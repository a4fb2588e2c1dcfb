import CMicroHTTPD
import DLPipe
import Foundation

/// The HTTP server of `--web`: libmicrohttpd on a polling thread of its own,
/// read-only (GET and HEAD), serving what a `WebSource` has ready. A slow or
/// stalled client holds only its own connection (libmicrohttpd writes
/// without blocking); nothing here calls into the engine.
public final class WebServer: @unchecked Sendable {
    // @unchecked: `daemon` is set once in init and cleared once by `stop`
    // under `stopLock`; the rest is immutable.
    private var daemon: OpaquePointer?
    private let stopLock = NSLock()
    /// The handler's object, retained for the daemon's life (its closure argument).
    private let responder: Unmanaged<WebResponder>
    /// The port bound (the kernel's choice for port 0).
    public let port: UInt16
    /// The page's URL (for every address, under the machine's name).
    public let url: String
    /// The page's URL for a browser on this machine (loopback for every address).
    public let localURL: String
    /// Where it listens, `ADDR:PORT`.
    public let listening: String
    /// Whether it listens on every address of the machine.
    public let everyAddress: Bool

    /// Clients served at once; more wait in the kernel's accept queue.
    private static let connectionLimit: UInt32 = 64
    /// Seconds an idle client keeps its connection.
    private static let idleSeconds: UInt32 = 30

    /// Starts serving at `address`; throws when it cannot listen there.
    public init(address: WebAddress, access: WebAccess, source: any WebSource) throws(WebServerError) {
        let responder = Unmanaged.passRetained(WebResponder(source: source, access: access))
        let started = address.withSocketAddress(port: address.port) { socketAddress in
            dl_mhd_start(socketAddress, address.ipv6 ? (address.isWildcard ? 2 : 1) : 0, Self.connectionLimit, Self.idleSeconds, webHandler, responder.toOpaque())
        }
        guard let started else {
            let reason = String(cString: strerror(errno))
            responder.release()
            throw WebServerError("cannot listen on \(address.listening(port: address.port)) (\(reason))")
        }
        self.responder = responder
        daemon = started
        port = dl_mhd_bound_port(started)
        url = address.url(port: port)
        localURL = address.localURL(port: port)
        listening = address.listening(port: port)
        everyAddress = address.isWildcard
    }

    /// What a user is told: the URL to open and, for every address, where
    /// it listens and the URL on this machine. `dlpipe: web view at ` comes before it.
    public var announcement: String {
        guard everyAddress else { return url }
        let local = localURL == url ? "" : "; on this machine \(localURL)"
        return "\(url) (listening on every address, \(listening)\(local))"
    }

    deinit { stop() }

    /// Stops listening and ends every connection (waiting for the server's
    /// thread); idempotent.
    public func stop() {
        stopLock.lock()
        let running = daemon
        daemon = nil
        stopLock.unlock()
        guard let running else { return }
        MHD_stop_daemon(running)
        responder.release()
    }
}

/// Answers requests: the token rules, then the route.
final class WebResponder: Sendable {
    private let source: any WebSource
    private let access: WebAccess

    init(source: any WebSource, access: WebAccess) {
        self.source = source
        self.access = access
    }

    func respond(_ request: WebRequest) -> WebResponse {
        switch access.verdict(authorization: request.authorization, cookie: request.cookie, query: request.queryToken, host: request.host) {
        case .unauthorized:
            return .text(401, "a token is needed: Authorization: Bearer TOKEN, or ?token=TOKEN on the page's URL\n")
                .with("WWW-Authenticate", "Bearer realm=\"dlpipe\"")
        case .badHost:
            return .text(403, "this view answers only to a loopback host name (localhost, 127.0.0.1, [::1])\n")
        case .setCookie:
            guard request.isRead else { return Self.notAllowed }
            return WebResponse(status: 303, type: "text/plain; charset=utf-8", body: Array("see \(request.path)\n".utf8))
                .with("Location", request.path).with("Set-Cookie", access.cookie)
        case .allowed:
            guard request.isRead else { return Self.notAllowed }
            return route(request.path)
        }
    }

    private static let notAllowed = WebResponse.text(405, "read-only: GET and HEAD only\n").with("Allow", "GET, HEAD")

    private func route(_ path: String) -> WebResponse {
        switch path {
        case "/", "/index.html":
            return WebResponse(status: 200, type: "text/html; charset=utf-8", body: source.page)
                .with("Content-Security-Policy",
                      "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; "
                        + "img-src data:; base-uri 'none'; frame-ancestors 'none'")
        case "/metrics":
            return WebResponse(status: 200, type: "text/plain; version=0.0.4; charset=utf-8", body: source.metrics())
        default:
            if path.hasPrefix("/api/"), let body = source.api(String(path.dropFirst(5))) {
                return WebResponse(status: 200, type: "application/json", body: body)
            }
            return .text(404, "not found: / (the page), /metrics, and the page's documents under /api/\n")
        }
    }
}

/// Why `--web` could not start.
public struct WebServerError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}

/// What the handler read of a request.
struct WebRequest {
    var path: String
    var method: String
    var authorization: String?
    var cookie: String?
    var queryToken: String?
    var host: String?

    var isRead: Bool { method == "GET" || method == "HEAD" }
}

/// A response before it is handed to libmicrohttpd.
struct WebResponse {
    var status: UInt32
    var type: String
    var body: [UInt8]
    var headers: [(String, String)] = []

    static func text(_ status: UInt32, _ text: String) -> WebResponse {
        WebResponse(status: status, type: "text/plain; charset=utf-8", body: Array(text.utf8))
    }

    func with(_ name: String, _ value: String) -> WebResponse {
        var copy = self
        copy.headers.append((name, value))
        return copy
    }
}

/// libmicrohttpd's access handler: reads what the rules need, answers
/// with the responder's response. Runs on the server's own thread.
private let webHandler: dl_mhd_handler = { context, connection, url, method, _, _, _, _ in
    guard let context, let connection, let url, let method else { return dl_mhd_no() }
    ThreadName.enter("dlpipe-web")
    let responder = Unmanaged<WebResponder>.fromOpaque(context).takeUnretainedValue()
    let request = WebRequest(
        path: String(cString: url), method: String(cString: method),
        authorization: dl_mhd_header(connection, "Authorization").map { String(cString: $0) },
        cookie: dl_mhd_cookie(connection, WebAccess.cookieName).map { String(cString: $0) },
        queryToken: dl_mhd_query(connection, "token").map { String(cString: $0) },
        host: dl_mhd_header(connection, "Host").map { String(cString: $0) })
    let reply = responder.respond(request)
    guard let response = reply.body.withUnsafeBytes({ dl_mhd_response_copy($0.baseAddress, $0.count) }) else { return dl_mhd_no() }
    defer { MHD_destroy_response(response) }
    let common = [
        ("Content-Type", reply.type), ("Cache-Control", "no-store"), ("X-Content-Type-Options", "nosniff"),
        ("Referrer-Policy", "no-referrer"),
    ]
    for (name, value) in common + reply.headers { _ = MHD_add_response_header(response, name, value) }
    return MHD_queue_response(connection, reply.status, response)
}
