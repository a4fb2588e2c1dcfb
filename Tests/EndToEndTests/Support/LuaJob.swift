import Foundation

/// Writes Lua job files for tests and runs them.
struct LuaJob {
    let directory: String

    init() throws { directory = try TempDir.make("job") }

    /// Writes `name` with `source` and returns its path.
    @discardableResult
    func write(_ name: String, _ source: String) throws -> String {
        let path = directory + "/" + name
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try source.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// `dlpipe run JOB --json -d OUT ARGS`.
    func run(_ job: String, out: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await DLPipeRun.run(["run", directory + "/" + job, "-d", out, "--json"] + extra)
    }

    /// Writes `source` as job.lua and runs it as `run` does.
    func run(source: String, out: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try write("job.lua", source)
        return try await run("job.lua", out: out, extra)
    }
}

extension DLPipeRun {
    /// The terminal event's type per download id.
    var terminalByID: [Int: String] {
        var result: [Int: String] = [:]
        for event in events {
            guard let type = event["event"] as? String, ["finished", "failed", "skipped", "cancelled"].contains(type),
                let id = event["id"] as? Int
            else { continue }
            result[id] = result[id] == nil ? type : "TWICE"
        }
        return result
    }

    /// Lines on stderr that contain `text`.
    func logLines(containing text: String) -> [Substring] {
        stderr.split(separator: "\n").filter { $0.contains(text) }
    }
}
