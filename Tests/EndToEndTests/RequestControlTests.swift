import Foundation
import Testing

/// Per-download request controls of `dl.add`: `timeout` and `max_size`.
@Suite struct RequestControlTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "out")
    }

    private func run(_ source: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await job.run(source: source, out: out, extra)
    }

    @Test func contentLengthOverMaxSizeFailsAtOnceWithKindSize() async throws {
        try server.put("big.bin", randomBytes: 300_000)
        let run = try await run("""
            dl.add{ url = "\(server.url("/files/big.bin"))", max_size = 100000 }
            """)
        #expect(run.status == 1, "\(run.stderr)")
        let failed = run.events("failed")
        #expect(failed.first?["kind"] as? String == "size")
        // Unwrapped first: #expect expanded `(x?[k] as? String ?? "").contains(...)`
        // into a call whose result went unused, and the check passed whatever
        // the message said (a compiler warning was the only sign).
        let sizeMessage = failed.first?["message"] as? String ?? ""
        #expect(sizeMessage.contains("300000"), "\(sizeMessage)")
        #expect(run.events("retrying").isEmpty, "a size failure is not retried")
        #expect(try server.requests(matching: "/files/big.bin").count == 1)
        #expect(listing(out).isEmpty, "nothing of the body was kept: \(listing(out))")
    }

    @Test func bodyWithoutLengthStopsAtTheLimitExactly() async throws {
        let data = try server.put("c.bin", randomBytes: 200_000)
        // Chunked: no Content-Length, so the limit meets the bytes as they stream.
        // A body of exactly max_size bytes is whole; one byte less fails.
        let run = try await run("""
            dl.add{ url = "\(server.url("/files/c.bin?chunked=1"))", name = "exact.bin", max_size = 200000 }
            dl.add{ url = "\(server.url("/files/c.bin?chunked=1"))", name = "short.bin", max_size = 199999 }
            """)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(sameBytes(out + "/exact.bin", data))
        let failed = run.events("failed")
        #expect(failed.count == 1)
        #expect(failed.first?["kind"] as? String == "size")
        #expect(failed.first?["name"] as? String == "short.bin")
        #expect(!FileManager.default.fileExists(atPath: out + "/short.bin"))
        #expect(!FileManager.default.fileExists(atPath: out + "/short.bin.part"), "a size failure keeps no part file")
    }

    @Test func perDownloadTimeoutBeatsTheRunsTimeout() async throws {
        try server.put("st.bin", randomBytes: 200_000)
        // The run's timeout is 600 s: only the download's own 1 s can fail it soon.
        let run = try await run("""
            dl.add{ url = "\(server.url("/files/st.bin?stall=50000"))", timeout = 1 }
            """, ["--timeout", "600", "--retries", "0"])
        #expect(run.status == 1, "\(run.stderr)")
        let failed = run.events("failed").first
        #expect(failed?["kind"] as? String == "timeout")
        let timeoutMessage = failed?["message"] as? String ?? ""
        #expect(timeoutMessage.contains("for 1 s"), "\(timeoutMessage)")
        #expect(run.seconds < 60, "the run took \(run.seconds) s")
    }

    @Test func badControlValuesAreLoadErrorsAtTheirLine() async throws {
        for (field, value, words) in [
            ("max_size", "-1", "max_size wants a whole number of bytes from 1, not -1"),
            ("max_size", "1.5", "max_size wants a whole number of bytes from 1, not 1.5"),
            ("max_size", "2^63", "max_size wants a whole number of bytes from 1, not 9.2233720368548e+18"),
            ("timeout", "0", "timeout wants a number of seconds above 0, at most 86400, not 0"),
            ("timeout", "1e300", "timeout wants a number of seconds above 0, at most 86400, not 1e+300"),
            ("priority", "0/0", "priority wants a whole number from -1000000000 to 1000000000, not nan"),
            ("timeout", "'10'", "timeout wants a number of seconds above 0, at most 86400, not 10"),
        ] {
            let run = try await run("""
                -- line 1
                dl.add{ url = "\(server.url("/files/x"))", \(field) = \(value) }
                """)
            #expect(run.status == 2, "\(field) = \(value): \(run.stderr)")
            #expect(run.stderr.contains("job.lua:2: dl.add: \(words)"), "\(run.stderr)")
            #expect(try server.requests(matching: "/files/x").isEmpty)
        }
    }
}
