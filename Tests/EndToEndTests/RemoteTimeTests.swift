import Foundation
import Testing

/// File times from `Last-Modified` (issue 18): the default, as in wget;
/// `--no-mtime` keeps the time of writing; `dl.config{ mtime = false }` too.
@Suite struct RemoteTimeTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let out: String

    init() throws {
        nginx = try Nginx.shared()
        out = try TempDir.make("mtime")
    }

    private func modified(_ path: String) -> Int {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mtim.tv_sec : -1
    }

    /// A served file dated 2001-09-09 01:46:40 UTC (nginx's Last-Modified is the file's mtime).
    private func putOld(_ name: String) throws -> Int {
        try nginx.put(dir + "/" + name, randomBytes: 2000)
        let old = 1_000_000_000
        var times = [timespec(tv_sec: old, tv_nsec: 0), timespec(tv_sec: old, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, nginx.root() + dir + "/" + name, &times, 0) == 0)
        return old
    }

    @Test func aFileGetsItsLastModifiedAsItsTime() async throws {
        let old = try putOld("a.bin")
        let run = try await DLPipeRun.run(["get", nginx.url(dir + "/a.bin"), "-d", out, "--cacert", nginx.ca.certificate])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(modified(out + "/a.bin") == old)
        let explicit = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/a.bin"), "-d", out, "--cacert", nginx.ca.certificate, "-R", "-o", "r.bin"])
        #expect(explicit.status == 0, "\(explicit.stderr)")
        #expect(modified(out + "/r.bin") == old)
    }

    @Test func noMtimeKeepsTheTimeOfWriting() async throws {
        let old = try putOld("b.bin")
        let before = Int(Date().timeIntervalSince1970) - 1
        let run = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/b.bin"), "-d", out, "--cacert", nginx.ca.certificate, "--no-mtime"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(modified(out + "/b.bin") >= before && modified(out + "/b.bin") != old)
        let both = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/b.bin"), "-d", out, "-R", "--no-mtime"])
        #expect(both.status == 2, "contradicting options are a usage error: \(both.stderr)")
    }
}
