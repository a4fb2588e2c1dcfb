import Foundation
import Testing

/// SIGINT and SIGTERM stop a run cleanly: exit 130, part files kept, nothing
/// under a final name that is not whole.
@Suite struct StopTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("stop")
    }

    /// Starts a download that stalls after 50 KB, waits for its first progress
    /// event, sends `signal`, and returns the exit status.
    private func interrupt(with signal: Int32, twice: Bool = false) async throws -> Int32 {
        try server.put("big.bin", randomBytes: 500_000)
        let process = try Subprocess(Paths.binary, ["get", server.url("/files/big.bin?stall=50000"), "-d", out, "--json"])
        return await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                process.waitForLine(containing: "\"progress\"")
                process.signal(signal)
                if twice { process.signal(SIGINT) }
                continuation.resume(returning: process.finish().status)
            }
        }
    }

    @Test(arguments: [SIGINT, SIGTERM])
    func firstSignalStopsCleanly(_ signal: Int32) async throws {
        let status = try await interrupt(with: signal)
        #expect(status == 130)
        #expect(listing(out) == ["big.bin.part"], "the part file stays for a resume")
        #expect(bytes(at: out + "/big.bin.part").count == 50_000)
    }

    @Test func secondInterruptExitsAtOnce() async throws {
        let status = try await interrupt(with: SIGINT, twice: true)
        #expect(status == 130)
        #expect(!listing(out).contains("big.bin"), "never a file under the final name")
    }
}
