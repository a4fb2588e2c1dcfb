import Foundation
import Testing

@testable import DLPipe
@testable import DLPipeLua

/// What the handler path costs the Lua state, counted in blocks its allocator makes
/// (tables, strings, closures): counts, unlike times, do not move with the machine's
/// load. The bounds sit a little above what the bridge makes (31 blocks per download, 6 per
/// add): a change that adds a table per event or per add shows here before it shows in the
/// benchmark.
@Suite struct EventCostTests {
    static func host(job: String) throws -> ScriptHost {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("dlpipe-eventcost-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("job.lua").path
        try job.write(toFile: path, atomically: true, encoding: .utf8)
        let host = try ScriptHost(unsafe: false, memoryLimit: 64 << 20, budget: 2, vars: [:], log: { _ in })
        try host.load(path: path, displayName: "job.lua", isJob: true)
        return host
    }

    /// Blocks per download for a response, a progress and a finished event,
    /// each with one trivial handler (the benchmark's set 4).
    @Test func threeTrivialHandlersCostFewBlocksPerDownload() throws {
        let host = try Self.host(job: """
            local seen, bytes, done = 0, 0, 0
            dl.on('response', function(d, r) seen = seen + 1 end)
            dl.on('progress', function(d, p) bytes = p.bytes end)
            dl.on('finished', function(d, f) done = done + 1 end)
            """)
        let headers = ["content-type": "application/octet-stream", "content-length": "16384",
                       "last-modified": "Mon, 07 Dec 2026 23:00:00 GMT", "etag": "\"6570a1b0-4000\""]
        func events(_ number: Int) {
            let url = "http://127.0.0.1:8080/set/file-\(number).bin"
            let download = DownloadInfo(
                id: DownloadID(number), url: url, name: "file-\(number).bin", directory: "",
                path: "/tmp/out/file-\(number).bin", parent: nil, attempt: 1, meta: [:])
            for (event, argument) in [
                ("response", EventArgument.response(ResponseInfo(status: 200, headers: headers, type: "application/octet-stream",
                                                                 length: 16384, filename: "file.bin", url: url))),
                ("progress", .progress(ProgressInfo(bytes: 16384, total: 16384, rate: 1e6))),
                ("finished", .finished(FinishedInfo(path: download.path ?? "", bytes: 16384, sha256: nil,
                                                    type: "application/octet-stream", seconds: 0.001, unchanged: false,
                                                    headers: headers))),
            ] {
                let outcome = host.dispatch(event, download: download, argument: argument)
                #expect(outcome.error == nil, "\(outcome.error?.message ?? "")")
            }
        }
        for number in 1...50 { events(number) }  // warm: interned names, grown tables
        let before = host.runtime.blocksMade
        let downloads = 500
        for number in 1...downloads { events(100 + number) }
        let perDownload = Double(host.runtime.blocksMade - before) / Double(downloads)
        #expect(perDownload <= 34, "Lua blocks per download with three handlers: \(perDownload)")
    }

    /// Blocks per `dl.add(url)` at a job's top level.
    @Test func aTopLevelAddCostsFewBlocks() throws {
        let host = try Self.host(job: "for i = 1, 50 do dl.add('http://127.0.0.1:8080/warm/' .. i) end")
        let before = host.runtime.blocksMade
        let adds = 1000
        _ = try host.runtime.run("for i = 1, \(adds) do dl.add('http://127.0.0.1:8080/set/file-' .. i .. '.bin') end",
                                 chunkName: "=job.lua")
        let perAdd = Double(host.runtime.blocksMade - before) / Double(adds)
        #expect(perAdd <= 6.5, "Lua blocks per top-level dl.add: \(perAdd)")
    }
}
