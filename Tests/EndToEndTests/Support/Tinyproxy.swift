import Foundation

/// tinyproxy on loopback, one per suite that needs a proxy (its settings are
/// part of what a test checks): optionally with Basic auth (a 407 without
/// it), and optionally allowing CONNECT to some ports only (a 403 to others).
/// Its log names each request it carried (`carried`).
final class Tinyproxy: @unchecked Sendable {
    // @unchecked: set once in init.
    let daemon: LoopbackDaemon
    let logPath: String
    var port: Int { daemon.ports[0] }
    /// The proxy URL, with credentials when given.
    func url(user: String? = nil, password: String? = nil) -> String {
        let credentials = user.map { "\($0):\(password ?? "")@" } ?? ""
        return "http://\(credentials)127.0.0.1:\(port)"
    }

    init(basicAuth: (user: String, password: String)? = nil, connectPorts: [Int]? = nil) throws {
        let folder = try TempDir.make("tinyproxy")
        logPath = folder + "/tinyproxy.log"
        let logPath = logPath
        daemon = try LoopbackDaemon("tinyproxy", ports: 1, command: { ports in
            var lines = [
                "Port \(ports[0])", "Listen 127.0.0.1", "Timeout 30", "LogLevel Info",
                "LogFile \"\(logPath)\"", "MaxClients 100", "Allow 127.0.0.1",
            ]
            if let basicAuth { lines.append("BasicAuth \(basicAuth.user) \(basicAuth.password)") }
            // Without ConnectPort lines tinyproxy allows CONNECT to every port.
            for port in connectPorts ?? [] { lines.append("ConnectPort \(port)") }
            let config = folder + "/tinyproxy.conf"
            try Data((lines.joined(separator: "\n") + "\n").utf8).write(to: URL(fileURLWithPath: config))
            return ("/usr/bin/tinyproxy", ["-d", "-c", config])
        }, ready: { _ in
            // This tinyproxy listens, not a process that took the port meanwhile
            // (a tinyproxy that cannot bind exits before it logs this).
            let log = FileManager.default.contents(atPath: logPath).map { String(decoding: $0, as: UTF8.self) } ?? ""
            return log.contains("Accepting connections")
        })
    }

    /// The request lines the proxy logged ("GET http://... HTTP/1.1", "CONNECT host:port HTTP/1.1")
    /// that contain `text`.
    func carried(_ text: String) -> [String] {
        guard let data = FileManager.default.contents(atPath: logPath) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let range = line.range(of: "): "), line.contains("Request ("), line.contains(text) else { return nil }
            return String(line[range.upperBound...])
        }
    }
}
