import DLPipe
import Foundation
import Synchronization
import Testing
import TestSupport

/// Issue 13: `URL` beside `String`, kind `url` for URLs that cannot be
/// fetched, and `EngineConfiguration`'s memberwise init.
@Suite struct LibraryURLTests: LibrarySuite {
    let fixture: LibraryFixture

    init() throws {
        fixture = try LibraryFixture(label: "liburl")
    }

    @Test func aFoundationURLIsAcceptedWhereAStringIs() async throws {
        let bytes = try server.put("u.bin", randomBytes: 1234)
        let engine = try DownloadEngine(configuration: EngineConfiguration(directory: out))
        let url = try #require(URL(string: server.url("/files/u.bin")))
        let task = engine.addTask(url)
        let file = try await within(seconds: 20, "a download by URL") { try? await task.value }
        #expect(file?.bytes == 1234)
        #expect(try Array(Data(contentsOf: URL(fileURLWithPath: out + "/u.bin"))) == bytes)
        // The same request by String is the same download while it is open.
        let again = DownloadRequest(url: url, name: "v.bin")
        #expect(again.url == server.url("/files/u.bin"))
        let id = engine.add(URL(string: server.url("/files/u.bin?x=1"))!)
        #expect(try await within(seconds: 20, "outcome") { await engine.outcome(of: id) }.map { "\($0)" }?.hasPrefix("finished") == true)
        await engine.stop()
    }

    @Test(arguments: [
        "not a url", "http://", "http:///files/x", "ftp://127.0.0.1/x", "mailto:someone@example.org",
        "http://exa mple.org/x",
    ])
    func aURLThatCannotBeFetchedFailsWithKindURLAndIsNotRetried(_ text: String) async throws {
        let engine = try DownloadEngine(configuration: EngineConfiguration(directory: out, backoffBase: 0.01))
        let retries = Atomic<Int>(0)
        engine.observe { event in if case .retrying = event { retries.add(1, ordering: .relaxed) } }
        let task = engine.addTask(text)
        let outcome = try await within(seconds: 20, "the result of \(text)") { await task.result }
        guard case .failed(let error) = outcome else {
            Issue.record("\(text): expected a failure, got \(outcome)")
            return
        }
        #expect(error.kind == .url, "\(text): \(error)")
        #expect(!error.isRetryable)
        #expect(retries.load(ordering: .relaxed) == 0)
        await engine.stop()
    }

    @Test func aFileURLFailsWithKindURL() async throws {
        let engine = try DownloadEngine(configuration: EngineConfiguration(directory: out))
        let task = engine.addTask(URL(fileURLWithPath: "/etc/hostname"))
        let outcome = try await within(seconds: 20, "a file URL's result") { await task.result }
        #expect(outcome == .failed(DownloadError(.url, "unsupported URL \"file:///etc/hostname\": only http and https are fetched")))
        #expect(!FileManager.default.fileExists(atPath: out + "/hostname"))
        await engine.stop()
    }

    @Test func theMemberwiseInitSetsWhatItNamesAndKeepsTheDefaults() {
        let configuration = EngineConfiguration(directory: "d", concurrency: 2, hookDeadline: nil)
        var plain = EngineConfiguration()
        #expect(configuration.directory == "d" && configuration.concurrency == 2 && configuration.hookDeadline == nil)
        #expect(plain.directory == "." && plain.concurrency == 8 && plain.perHost == 4 && plain.retries == 3)
        #expect(plain.timeout == 30 && plain.hookDeadline == 2 && plain.progressInterval == 0.25)
        #expect(plain.keepsOutcomes && !plain.endPausedWhenDrained && plain.refresh == .conditional)
        plain.directory = "d"
        plain.concurrency = 2
        plain.hookDeadline = nil
        #expect(plain.perHost == configuration.perHost && plain.userAgent == configuration.userAgent)
    }
}
