import Foundation
import Testing
import TestSupport

/// Local faults: a full disk, a read-only directory, too few file descriptors.
/// Every run has a deadline, so a hang fails the test instead of stalling it.
@Suite struct LocalFaultTests {
    let server: FaultServer

    init() throws { server = try FaultServer() }

    @Test(.enabled(if: TmpfsMount.available, "needs root to mount a tmpfs"))
    func fullDiskFailsTheFileClearlyAndEnds() async throws {
        let disk = try TmpfsMount(options: "size=1m")
        try server.put("big.bin", randomBytes: 3_000_000)
        let run = try await DLPipeRun.run(["get", server.url("/files/big.bin"), "-d", disk.path, "--json"], under: [], within: 30)
        #expect(run.status == 1, "\(run.stderr)")
        let failed = try #require(run.events("failed").first, "\(run.stdout)")
        #expect(failed["kind"] as? String == "io")
        #expect((failed["message"] as? String ?? "").contains("big.bin"), "names the file")
        #expect(!listing(disk.path).contains("big.bin"), "nothing under the final name")
    }

    @Test(.enabled(if: TmpfsMount.available, "needs root to mount a tmpfs"))
    func fullDiskBeforeTheStateCanBeWritten() async throws {
        let disk = try TmpfsMount(options: "size=256k")
        try TestFiles.create(disk.path + "/filler", Data(count: 256 * 1024))
        try server.put("x.bin", randomBytes: 100)
        let run = try await DLPipeRun.run(["get", server.url("/files/x.bin"), "-d", disk.path], under: [], within: 30)
        #expect(run.status == 1)
        #expect(run.stderr.contains("full"), "\(run.stderr)")
        #expect(!listing(disk.path).contains("x.bin"))
    }

    /// Root ignores permission bits (chmod 555 would not stop it), so the
    /// directory is a read-only mount.
    @Test(.enabled(if: TmpfsMount.available, "needs root to mount a tmpfs"))
    func readOnlyOutputDirectoryIsNamedAndNothingIsWritten() async throws {
        let readOnly = try TmpfsMount(options: "ro,size=64k")
        try server.put("x.bin", randomBytes: 100)
        for dir in [readOnly.path, readOnly.path + "/sub"] {
            let run = try await DLPipeRun.run(["get", server.url("/files/x.bin"), "-d", dir], under: [], within: 30)
            #expect(run.status == 1 || run.status == 2, "\(run.stderr)")
            #expect(run.stderr.contains(dir), "names the directory: \(run.stderr)")
            #expect(run.stderr.contains("Read-only"), "\(run.stderr)")
        }
        #expect(listing(readOnly.path).isEmpty)
    }

    /// 64 downloads with -j 32 under `ulimit -n 20` (about 16 are taken before
    /// the first transfer): concurrency shrinks to what the limit allows, and
    /// every download finishes.
    @Test func fewFileDescriptorsSlowTheRunDown() async throws {
        var files: [String: [UInt8]] = [:]
        for index in 1...64 { files["f\(index).bin"] = try server.put("f\(index).bin", randomBytes: 20_000, seed: UInt64(index)) }
        let out = try TempDir.make("fds")
        let urls = files.keys.sorted().map { server.url("/files/\($0)") }
        let run = try await DLPipeRun.run(["get"] + urls + ["-d", out, "-j", "32"], under: ["/usr/bin/prlimit", "--nofile=20"], within: 60)
        #expect(run.status == 0, "\(run.stderr.suffix(600))")
        let wrong = files.filter { !sameBytes(out + "/" + $0.key, $0.value) }.keys.sorted()
        #expect(wrong.isEmpty, "not byte-identical: \(wrong)")
    }

    /// So few descriptors that not even the state or one socket fits: a clear
    /// error, fast, and no crash.
    @Test(arguments: [8, 12])
    func tooFewFileDescriptorsIsAClearError(_ limit: Int) async throws {
        try server.put("x.bin", randomBytes: 100)
        let out = try TempDir.make("fds")
        let run = try await DLPipeRun.run(["get", server.url("/files/x.bin"), "-d", out], under: ["/usr/bin/prlimit", "--nofile=\(limit)"], within: 30)
        #expect(run.status == 1, "\(run.stderr)")
        #expect(run.stderr.lowercased().contains("too many open files"), "\(run.stderr)")
        #expect(!listing(out).contains("x.bin"))
    }
}
