import Foundation
import Testing
import TestSupport

/// A run that fills the disk still records its end: its part file took the
/// last block, and the state's last commit (the failure's record and the run's
/// end) found no room, so `status` listed the run as killed and the download
/// as partial, though the run had ended with exit 1 and said why. The state
/// keeps some space for that commit (SpareSpace).
@Suite struct FullDiskRunRecordTests {
    let server: FaultServer

    init() throws { server = try FaultServer() }

    @Test(.enabled(if: TmpfsMount.available, "needs root to mount a tmpfs"))
    func aRunThatFillsTheDiskIsRecordedAsEndedAndFailed() async throws {
        let disk = try TmpfsMount(options: "size=1m")
        try server.put("big.bin", randomBytes: 3_000_000)
        // The commit found the disk full in about half the runs: four in a row.
        for round in 1...4 {
            let out = disk.path + "/run\(round)"
            let run = try await DLPipeRun.run(["get", server.url("/files/big.bin"), "-d", out], under: [], within: 30)
            #expect(run.status == 1, "\(run.stderr)")
            #expect(!run.stderr.contains("records are missing"), "round \(round): \(run.stderr)")
            let status = try await DLPipeRun.run(["status", out], under: [], within: 30)
            #expect(status.stdout.contains("downloads: 1 failed"), "round \(round): \(status.stdout)")
            let runLine = status.stdout.split(separator: "\n").first { $0.contains("#1 ") }.map(String.init) ?? ""
            #expect(runLine.contains(" to ") && !runLine.contains("killed"), "round \(round): \(status.stdout)")
            #expect(runLine.contains("1 failed"), "round \(round): \(status.stdout)")
            #expect(!FileManager.default.fileExists(atPath: out + "/.dlpipe/state.db-spare"), "the spare is given back")
            try FileManager.default.removeItem(atPath: out)
        }
    }
}
