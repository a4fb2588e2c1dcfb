import Foundation
import Testing

/// `get --refresh conditional|never|always` on a re-run, against the fault
/// server: what is asked (its request log) and what the file becomes.
@Suite struct GetRefreshTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("get-refresh")
        try server.put("r.bin", randomBytes: 3000)
    }

    /// A first run, then (after `between`) a re-run with `refresh`: the
    /// re-run and its requests.
    private func rerun(_ refresh: String, between: () throws -> Void = {}) async throws -> (DLPipeRun, [[String: Any]]) {
        let url = server.url("/files/r.bin")
        let first = try await DLPipeRun.run(["get", url, "-d", out, "--json"])
        try #require(first.status == 0, "\(first.stderr)")
        try between()
        let second = try await DLPipeRun.run(["get", url, "-d", out, "--json", "--refresh", refresh])
        let requests = try server.requests(matching: "/files/r.bin")
        return (second, Array(requests.dropFirst()))
    }

    @Test func conditionalAsksWhetherTheFileChanged() async throws {
        let (run, requests) = try await rerun("conditional")
        #expect(run.status == 0, "\(run.stderr)")
        try #require(requests.count == 1)
        let headers = requests[0]["headers"] as? [String: String] ?? [:]
        #expect(headers["if-none-match"] != nil, "\(headers)")
        #expect(run.events("finished").first?["unchanged"] as? Bool == true, "\(run.stdout)")
    }

    @Test func neverKeepsTheFileWithoutARequest() async throws {
        let (run, requests) = try await rerun("never")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(requests.isEmpty)
        #expect(run.events("finished").count == 1)
    }

    @Test func alwaysFetchesItAgainOverTheOldFile() async throws {
        var changed: [UInt8] = []
        let (run, requests) = try await rerun("always") { changed = try server.put("r.bin", randomBytes: 2000, seed: 9) }
        #expect(run.status == 0, "\(run.stderr)")
        try #require(requests.count == 1)
        let headers = requests[0]["headers"] as? [String: String] ?? [:]
        #expect(headers["if-none-match"] == nil && headers["if-modified-since"] == nil, "no conditional request: \(headers)")
        #expect(sameBytes(out + "/r.bin", changed), "replaced in place")
        #expect(!FileManager.default.fileExists(atPath: out + "/r.1.bin"), "the same name, not a copy")
    }

    @Test func anotherValueIsAUsageError() async throws {
        let run = try await DLPipeRun.run(["get", server.url("/files/r.bin"), "-d", out, "--refresh", "sometimes"])
        #expect(run.status == 2)
        #expect(run.stderr.contains("--refresh wants conditional, never or always"), "\(run.stderr)")
        #expect(try server.requests(matching: "/files/").isEmpty, "nothing fetched")
    }
}
