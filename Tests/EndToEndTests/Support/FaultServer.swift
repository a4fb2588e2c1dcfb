import Foundation
import TestSupport

/// The loopback fault-injecting HTTP server (Tests/Support/fault_server.py), on
/// 127.0.0.1 with a port of its own choosing, serving `root` under /files/.
final class FaultServer: @unchecked Sendable {
    // @unchecked: all fields are set in init and never change.
    let process: Subprocess
    let port: Int
    let root: String
    let logPath: String
    let scheme: String

    /// Serves `root` (a fresh empty directory when nil), over https with `tls`.
    init(root: String? = nil, tls: TestCertificate? = nil) throws {
        self.root = try root ?? TempDir.make("server-root")
        logPath = try TempDir.make("server-log") + "/requests.jsonl"
        scheme = tls == nil ? "http" : "https"
        let script = Paths.repository + "/Tests/Support/fault_server.py"
        let tlsArguments = tls.map { ["--tls-cert", $0.certificate, "--tls-key", $0.key] } ?? []
        // No watchdog: the server lives as long as its test, and ends with it
        // (deinit) or with the test process (--exit-with-parent).
        process = try Subprocess(
            "/usr/bin/env", ["python3", script, "--root", self.root, "--log", logPath, "--exit-with-parent"] + tlsArguments,
            timeout: nil)
        guard let line = process.readStdoutLine(), line.hasPrefix("PORT "),
            let port = Int(line.dropFirst(5))
        else { throw TestFailure("the fault server did not report its port") }
        self.port = port
    }

    deinit {
        process.signal(SIGTERM)
        process.waitForExit()
    }

    /// The URL of a path on this server ("/files/a.bin?truncate=10").
    func url(_ path: String) -> String { "\(scheme)://127.0.0.1:\(port)\(path)" }

    /// Writes a file under the served root and returns its bytes.
    @discardableResult
    func put(_ name: String, bytes: [UInt8]) throws -> [UInt8] {
        let path = root + "/" + name
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try TestFiles.create(path, Data(bytes))
        return bytes
    }

    /// A file of `count` seeded pseudo-random bytes under the served root.
    @discardableResult
    func put(_ name: String, randomBytes count: Int, seed: UInt64 = 1) throws -> [UInt8] {
        try put(name, bytes: TestData.random(count, seed: seed))
    }

    /// The requests the server saw whose path starts with `prefix`.
    func requests(matching prefix: String) throws -> [[String: Any]] {
        guard let data = FileManager.default.contents(atPath: logPath) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap { line in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let path = object["path"] as? String, path.hasPrefix(prefix)
            else { return nil }
            return object
        }
    }

    /// The most answers under `/files/` paths starting with `prefix` that
    /// were in progress at one time (from each request's record and its
    /// `ended` record; an end and a start at the same moment do not overlap).
    /// An answer the client broke off ends for the server only at its next
    /// write, a few milliseconds later: `grace` counts each answer as ended
    /// that much before its record.
    func peak(matching prefix: String, grace: Double = 0) -> Int {
        guard let data = FileManager.default.contents(atPath: logPath) else { return 0 }
        var edges: [(at: Double, step: Int)] = []
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                let time = object["time"] as? Double
            else { continue }
            if let path = object["path"] as? String, path.hasPrefix(prefix) { edges.append((time, 1)) }
            if let path = object["ended"] as? String, path.hasPrefix(prefix) { edges.append((time - grace, -1)) }
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
}

/// Where things are.
enum Paths {
    /// The repository's top directory (this file is Tests/EndToEndTests/Support/).
    static let repository: String = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<4 { url.deleteLastPathComponent() }
        return url.path
    }()

    /// The built `dlpipe` binary: $DLPIPE_BIN (scripts/test sets it), else .build/debug.
    static let binary: String =
        ProcessInfo.processInfo.environment["DLPIPE_BIN"] ?? repository + "/.build/debug/dlpipe"
}

/// Test directories (TestSupport): removed when the test process exits.
typealias TempDir = TestSupport.TempDir

enum TestData {
    /// Deterministic bytes (SplitMix64), so failures can be reproduced.
    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8]()
        bytes.reserveCapacity(count + 8)
        while bytes.count < count {
            withUnsafeBytes(of: generator.next()) { bytes.append(contentsOf: $0) }
        }
        return Array(bytes.prefix(count))
    }
}


struct TestFailure: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Runs the built dlpipe binary and collects what it printed.
struct DLPipeRun {
    let status: Int32
    let stdout: String
    let stderr: String
    /// From the spawn to the exit, measured on the thread that waits for the child (not by
    /// an async test, whose resumption can wait seconds for a free thread of the pool when
    /// synchronous tests block them: how a 2 s probe once measured 40 s in the full suite).
    var seconds: Double = 0

    /// Runs `dlpipe ARGS` in `cwd` and waits for it.
    /// The wait happens on a thread of its own: blocking one of the concurrency
    /// pool's few threads would starve the async tests running beside this one.
    static func run(_ arguments: [String], stdin: String? = nil, environment: [String: String] = [:]) async throws -> DLPipeRun {
        let started = Date()
        let process = try Subprocess(Paths.binary, arguments, environment: environment.merging(["NO_COLOR": "1"]) { $1 }, stdin: stdin)
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                let (status, out, err) = process.finish()
                let seconds = Date().timeIntervalSince(started)
                if let signal = process.endingSignal, !process.timedOut.load(ordering: .relaxed) {
                    reportCrash(arguments, signal: signal, stderr: err)
                }
                continuation.resume(returning: DLPipeRun(status: status, stdout: out, stderr: err, seconds: seconds))
            }
        }
    }

    /// A run that no test ends with a signal died by one (SIGABRT, SIGSEGV...): its
    /// stderr, where the Swift runtime or glibc said why, goes to the test log at once,
    /// whatever the test then checks. A test that checks only the exit status kept the
    /// reason of a rare crash (exit 134, once in 8 loaded runs) out of sight.
    private static func reportCrash(_ arguments: [String], signal: Int32, stderr: String) {
        let text = "dlpipe \(arguments.joined(separator: " ")) died by signal \(signal) (exit \(128 + signal)); its stderr:\n"
            + stderr + (stderr.hasSuffix("\n") ? "" : "\n")
        FileHandle.standardError.write(Data(text.utf8))
    }

    /// The JSON Lines of stdout, decoded.
    var events: [[String: Any]] {
        stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
    }

    /// Events of one type.
    func events(_ type: String) -> [[String: Any]] { events.filter { $0["event"] as? String == type } }
}

/// Reads a whole file's bytes (empty when missing).
func bytes(at path: String) -> [UInt8] {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) } ?? []
}

/// Whether the file holds exactly `data`. A Bool on purpose: `#expect(bytes(at:) ==
/// data)` makes a failing test diff both arrays, which takes minutes for a few
/// hundred kilobytes. A missing file is never the same, not even as empty data.
func sameBytes(_ path: String, _ data: [UInt8]) -> Bool {
    FileManager.default.contents(atPath: path).map { [UInt8]($0) } == data
}

/// The names in a directory, sorted (hidden ones included, except dlpipe's own
/// `.dlpipe/` folder of the run lock and state).
func listing(_ directory: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter { $0 != ".dlpipe" }.sorted()
}

/// The part files anywhere under `directory` (a queue worker's are in
/// `.dlpipe/queue/JOB/`), as paths relative to it.
func partFiles(under directory: String) -> [String] {
    FileManager.default.enumerator(atPath: directory)?.compactMap { $0 as? String }.filter { $0.hasSuffix(".part") } ?? []
}
