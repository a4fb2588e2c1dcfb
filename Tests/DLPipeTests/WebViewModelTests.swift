@testable import DLPipe
@testable import DLPipeWeb
import Foundation
import Testing

/// The web view's parts without a server: the fold of events into the
/// run's figures, the metrics' escaping, the token rules and the addresses.
@Suite struct WebViewModelTests {
    private func info(_ id: Int, _ url: String, attempt: Int = 1) -> DownloadInfo {
        DownloadInfo(id: DownloadID(id), url: url, directory: "", attempt: attempt, meta: [:])
    }

    @Test func eventsFoldIntoCountsHostsBytesAndFailures() {
        var model = RunModel(start: 0)
        let a = info(1, "http://user:pw@a.example/x.bin")
        let b = info(2, "http://b.example:8080/y.bin")
        let c = info(3, "http://b.example:8080/z.bin")
        for d in [a, b, c] { model.record(.queued(d), at: 0) }
        #expect(model.waiting == 3 && model.hosts["b.example:8080"] == RunModel.HostLoad(inFlight: 0, waiting: 2))
        model.record(.response(a, ResponseInfo(status: 200, length: 100, filename: "x.bin", url: a.url)), at: 1)
        model.record(.response(b, ResponseInfo(status: 206, length: 100, filename: "y.bin", url: b.url, resumedFrom: 40)), at: 1)
        model.record(.progress(b, ProgressInfo(bytes: 70, total: 100, rate: 0)), at: 2)
        #expect(model.receivedBytes == 30, "a resume's kept bytes are not received again")
        #expect(model.transfers[DownloadID(1)]?.url == "http://***@a.example/x.bin", "the password is not shown")
        #expect(model.hosts["b.example:8080"] == RunModel.HostLoad(inFlight: 1, waiting: 1) && model.waiting == 1)
        model.record(.finished(a, FinishedInfo(path: "/x", bytes: 100, type: "", seconds: 0.3, unchanged: false)), at: 3)
        model.record(.retrying(b, DownloadError(.timeout, "slow"), delay: 1), at: 3)
        #expect(model.retries == 1 && model.transfers.count == 0 && model.hosts["b.example:8080"]?.waiting == 2)
        model.record(.failed(c, DownloadError(.http, "HTTP 404", status: 404)), at: 4)
        model.record(.failed(b, DownloadError(.timeout, "slow")), at: 5)
        #expect(model.receivedBytes == 130 && model.hosts.isEmpty && model.waiting == 0)
        #expect(model.counts["finished"] == 1 && model.counts["failed"] == 2)
        #expect(model.failures.map(\.url) == [c.url, b.url] && model.failures[0].status == 404 && model.failures[0].at == 4)
        #expect(model.durationCounts[2] == 1 && model.durationSum == 0.3, "0.3 s is in the bucket up to 0.5 s")
    }

    @Test func metricsEscapeLabelValues() {
        #expect(RunMetrics.label("a\"b\\c\nd") == "a\\\"b\\\\c\\nd")
        #expect(RunMetrics.number(2) == "2" && RunMetrics.number(0.25) == "0.25")
    }

    @Test func tokensCompareWholeAndHostsMustBeLoopbackWithoutOne() {
        #expect(WebAccess.same("abc", "abc") && !WebAccess.same("abc", "abd") && !WebAccess.same("ab", "abc") && !WebAccess.same("abcd", "abc"))
        let open = WebAccess(token: nil)
        #expect(open.verdict(authorization: nil, cookie: nil, query: nil, host: "127.0.0.1:8080") == .allowed)
        #expect(open.verdict(authorization: nil, cookie: nil, query: nil, host: "[::1]:80") == .allowed)
        #expect(open.verdict(authorization: nil, cookie: nil, query: nil, host: "localhost") == .allowed)
        #expect(open.verdict(authorization: nil, cookie: nil, query: nil, host: "127.0.0.1.evil.example") == .badHost)
        let guarded = WebAccess(token: "t0k")
        #expect(guarded.verdict(authorization: "bearer t0k", cookie: nil, query: nil, host: "x") == .allowed)
        #expect(guarded.verdict(authorization: "Basic t0k", cookie: nil, query: nil, host: nil) == .unauthorized)
        #expect(guarded.verdict(authorization: nil, cookie: nil, query: "t0k", host: nil) == .setCookie)
        #expect(WebAccess.problem(token: "a b") != nil && WebAccess.problem(token: "") != nil && WebAccess.problem(token: "Az09-_.~") == nil)
    }

    @Test func addressesParseAndSayWhetherTheyAreLoopback() throws {
        let bare = try WebAddress(parsing: "8080")
        #expect(bare.host == "127.0.0.1" && bare.port == 8080 && bare.isLoopback)
        #expect(try WebAddress(parsing: "localhost:0").isLoopback)
        #expect(try WebAddress(parsing: "127.3.4.5:1").isLoopback)
        #expect(try WebAddress(parsing: "[::1]:9").isLoopback)
        #expect(try WebAddress(parsing: "[::1]:9").url(port: 9) == "http://[::1]:9/")
        #expect(try !WebAddress(parsing: "0.0.0.0:0").isLoopback)
        #expect(try !WebAddress(parsing: "[::]:0").isLoopback)
        #expect(throws: WebAddressError.self) { try WebAddress(parsing: ":80") }
        #expect(throws: WebAddressError.self) { try WebAddress(parsing: "127.0.0.1:70000") }
        #expect(throws: WebAddressError.self) { try WebAddress(parsing: "::1:80") }
    }
    /// Four transfers trickling 8 KiB/s each (32 KiB/s in all) whose first
    /// reports land 0.02 s after their responses, just before the first
    /// sample: the chart's samples stay at or under the real speed, where
    /// a rate up to the latest report read 200 KiB/s at the first sample.
    @Test func theFirstThroughputSampleIsNotInflatedByAShortStart() {
        var model = RunModel(start: 0)
        var samples = ThroughputSamples(start: 0)
        let downloads = (1...4).map { info($0, "http://a.example/\($0).bin") }
        for d in downloads { model.record(.queued(d), at: 0) }
        for d in downloads { model.record(.response(d, ResponseInfo(status: 200, length: 1 << 20, filename: "x.bin", url: d.url)), at: 0.9) }
        var bytes: Int64 = 0
        var time = 0.92
        for second in 1...8 {
            while time <= Double(second) {
                bytes += 1024
                for d in downloads { model.record(.progress(d, ProgressInfo(bytes: bytes, total: 1 << 20, rate: 0)), at: time) }
                time += 0.125
            }
            samples.sample(received: model.receivedBytes, at: Double(second))
        }
        let speeds = samples.points.map(\.speed)
        #expect(samples.points.map(\.at) == (1...8).map(Double.init))
        #expect(speeds.allSatisfy { $0 <= 33 * 1024 }, "\(speeds)")
        #expect(speeds[7] >= 31 * 1024, "a full window reads the real speed: \(speeds)")
    }
    /// A shared queue's worker says so in its document, for the page to
    /// point to the fleet's view; a run of its own has no queue.
    @Test func aWorkersDocumentNamesItsQueueAndJob() throws {
        let worker = RunView(title: "crawl.lua (queue crawl)", command: "run", queue: ("postgres://***@db.example/dl", "crawl"))
        defer { worker.stop() }
        let document = try #require(try JSONSerialization.jsonObject(with: Data(worker.api("run") ?? [])) as? [String: Any])
        let queue = try #require(document["queue"] as? [String: String])
        #expect(queue == ["url": "postgres://***@db.example/dl", "job": "crawl"])
        let alone = RunView(title: "dlpipe get", command: "get")
        defer { alone.stop() }
        let plain = try #require(try JSONSerialization.jsonObject(with: Data(alone.api("run") ?? [])) as? [String: Any])
        #expect(plain["queue"] is NSNull)
    }
}
