import Foundation
import TestSupport

/// nginx on loopback, started once per test process and shared by the suites
/// that need a real server: TLS from a private CA (`TestCA`), HTTP/2, gzip,
/// autoindex, and virtual hosts (the default 127.0.0.1, `a.test`, `b.test`),
/// over https (`tlsPort`) and plain http (`plainPort`).
///
/// Each server block serves its own folder (`root(host)`), and has:
/// - `/basic/`: HTTP Basic auth, user `alice`, password `secret`;
/// - `/redirect?to=URL`: a 302 to URL (unencoded, as given);
/// - `/hops/N/PATH`: N redirects, then `/PATH`;
/// - `/slow/PATH`: the file at 100 KiB/s (nginx's `limit_rate`);
/// - `/before/PATH`: a 304 to any `If-Modified-Since` not older than the
///   file (`if_modified_since before`; elsewhere nginx's default, `exact`).
///
/// Every request is logged as one JSON line (`requests`), with nginx's
/// connection serial number (`$connection`: how many connections were used),
/// the protocol and the Authorization header the server received.
/// Tests use paths of their own (a fresh folder name) so that they can run
/// side by side.
final class Nginx: @unchecked Sendable {
    // @unchecked: set once in init.
    let ca: TestCA
    let daemon: LoopbackDaemon
    let folder: String
    var tlsPort: Int { daemon.ports[0] }
    var plainPort: Int { daemon.ports[1] }
    static let hosts = ["127.0.0.1", "a.test", "b.test"]
    static let user = "alice"
    static let password = "secret"

    /// The shared server, started on first use.
    static func shared() throws -> Nginx { try started.get() }
    private static let started = Result { try Nginx() }

    private init() throws {
        ca = try TestCA.make(names: Nginx.hosts)
        folder = try TempDir.make("nginx")
        for path in ["logs", "tmp"] + Nginx.hosts.map({ "roots/" + $0 }) {
            try FileManager.default.createDirectory(atPath: folder + "/" + path, withIntermediateDirectories: true)
        }
        try Data("\(Nginx.user):{PLAIN}\(Nginx.password)\n".utf8).write(to: URL(fileURLWithPath: folder + "/htpasswd"))
        let token = UUID().uuidString
        let folder = folder
        let ca = ca
        daemon = try LoopbackDaemon("nginx", ports: 2, command: { ports in
            let config = folder + "/nginx.conf"
            try Data(Nginx.configuration(folder: folder, ca: ca, ports: ports, token: token).utf8)
                .write(to: URL(fileURLWithPath: config))
            return ("/usr/sbin/nginx", ["-c", config, "-p", folder, "-e", folder + "/logs/error.log"])
        }, ready: { ports in
            // The port answers as this nginx, not a process that took it meanwhile.
            let probe = try? Subprocess("/usr/bin/env", ["curl", "-s", "http://127.0.0.1:\(ports[1])/.fixture"], timeout: 10).finish()
            return probe?.stdout == token
        })
    }

    /// The folder a virtual host serves.
    func root(_ host: String = "127.0.0.1") -> String { folder + "/roots/" + host }

    /// A URL on this server: https (HTTP/2) unless `tls` is false.
    func url(_ path: String, host: String = "127.0.0.1", tls: Bool = true) -> String {
        "\(tls ? "https" : "http")://\(host):\(tls ? tlsPort : plainPort)\(path)"
    }

    /// Writes a file under a virtual host's folder and returns its bytes.
    @discardableResult
    func put(_ path: String, host: String = "127.0.0.1", bytes: [UInt8]) throws -> [UInt8] {
        let full = root(host) + "/" + path
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try TestFiles.create(full, Data(bytes))
        return bytes
    }

    /// A file of seeded pseudo-random bytes.
    @discardableResult
    func put(_ path: String, host: String = "127.0.0.1", randomBytes count: Int, seed: UInt64 = 1) throws -> [UInt8] {
        try put(path, host: host, bytes: TestData.random(count, seed: seed))
    }

    /// A fresh folder name for one test's files ("/t-1a2b3c4d").
    static func uniquePath() -> String { "/t-" + UUID().uuidString.prefix(8).lowercased() }

    /// One logged request.
    struct Request {
        let connection: Int
        let host: String
        let port: Int
        let status: Int
        let proto: String
        let uri: String
        let authorization: String
        /// When the response ended and began, in milliseconds since 1970 (from
        /// nginx's `$msec` and `$request_time`, both whole milliseconds). Whole
        /// numbers, so that a request that began in the millisecond another
        /// ended compares equal to it: seconds as doubles, `end - seconds`
        /// could land a hair before the other's end and count as an overlap.
        let end: Int
        let start: Int
        /// Body bytes on the wire (`$body_bytes_sent`: compressed when gzip was used).
        let sent: Int
        /// The request's Accept-Encoding and the response's Content-Encoding.
        let acceptEncoding: String
        let contentEncoding: String
    }

    /// The most of `requests` that were at the server at one time (an end
    /// and a start in the same millisecond do not overlap).
    static func peak(_ requests: [Request]) -> Int {
        var edges: [(at: Int, step: Int)] = []
        for request in requests {
            edges.append((request.start, 1))
            edges.append((request.end, -1))
        }
        edges.sort { $0.at != $1.at ? $0.at < $1.at : $0.step < $1.step }
        var now = 0
        var most = 0
        for (_, step) in edges {
            now += step
            most = max(most, now)
        }
        return most
    }

    /// The requests logged so far whose URI starts with `prefix`.
    func requests(matching prefix: String) -> [Request] {
        guard let data = FileManager.default.contents(atPath: folder + "/logs/access.log") else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: String],
                let uri = object["uri"], uri.hasPrefix(prefix)
            else { return nil }
            return Request(
                connection: Int(object["connection"] ?? "") ?? -1, host: object["host"] ?? "",
                port: Int(object["port"] ?? "") ?? -1, status: Int(object["status"] ?? "") ?? -1,
                proto: object["protocol"] ?? "", uri: uri, authorization: object["authorization"] ?? "",
                end: milliseconds(object["end"]),
                start: milliseconds(object["end"]) - milliseconds(object["seconds"]),
                sent: Int(object["sent"] ?? "") ?? -1, acceptEncoding: object["accept_encoding"] ?? "",
                contentEncoding: object["content_encoding"] ?? "")
        }
    }

    /// "1796074796.509" as 1796074796509.
    private func milliseconds(_ seconds: String?) -> Int {
        Int(((Double(seconds ?? "") ?? 0) * 1000).rounded())
    }

    private static func configuration(folder: String, ca: TestCA, ports: [Int], token: String) -> String {
        var servers = ""
        for (index, host) in hosts.enumerated() {
            let isDefault = index == 0 ? " default_server" : ""
            var locations = """
                    root \(folder)/roots/\(host);
                    autoindex on;
                    location /basic/ {
                        auth_basic "dlpipe tests";
                        auth_basic_user_file \(folder)/htpasswd;
                    }
                    location /slow/ { limit_rate 100k; }
                    location /before/ { if_modified_since before; }
                    location = /redirect { return 302 $arg_to; }
                    location = /.fixture { return 200 "\(token)"; }
                    location ~ ^/hops/0/(.*)$ { return 302 /$1; }

            """
            for hop in 1...12 {
                locations += "        location ~ ^/hops/\(hop)/(.*)$ { return 302 /hops/\(hop - 1)/$1; }\n"
            }
            servers += """
                server {
                    listen 127.0.0.1:\(ports[0]) ssl http2\(isDefault);
                    server_name \(host);
                    ssl_certificate \(ca.serverCertificate);
                    ssl_certificate_key \(ca.serverKey);
            \(locations)    }
                server {
                    listen 127.0.0.1:\(ports[1])\(isDefault);
                    server_name \(host);
            \(locations)    }

            """
        }
        return """
            daemon off;
            master_process off;
            worker_processes 1;
            pid \(folder)/nginx.pid;
            error_log \(folder)/logs/error.log warn;
            events { worker_connections 1024; }
            http {
                default_type application/octet-stream;
                types { text/plain txt; text/html html; application/json json; application/gzip gz; application/x-tar tar; }
                client_body_temp_path \(folder)/tmp/body;
                proxy_temp_path \(folder)/tmp/proxy;
                fastcgi_temp_path \(folder)/tmp/fastcgi;
                uwsgi_temp_path \(folder)/tmp/uwsgi;
                scgi_temp_path \(folder)/tmp/scgi;
                log_format fixture escape=json '{"connection":"$connection","host":"$host","port":"$server_port",'
                    '"status":"$status","protocol":"$server_protocol","uri":"$request_uri",'
                    '"authorization":"$http_authorization","end":"$msec","seconds":"$request_time",'
                    '"sent":"$body_bytes_sent","accept_encoding":"$http_accept_encoding",'
                    '"content_encoding":"$sent_http_content_encoding"}';
                access_log \(folder)/logs/access.log fixture;
                gzip on;
                gzip_min_length 20;
                gzip_types text/plain application/json application/x-tar;
                keepalive_requests 10000;
                http2_max_concurrent_streams 128;
            \(servers)
            }

            """
    }
}
