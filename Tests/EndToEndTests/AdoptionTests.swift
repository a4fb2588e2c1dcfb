import Foundation
import Testing
import TestSupport

/// Files already in the output directory that the state does not know (issue
/// 18): a copy that kept the server's time, a folder curl -R or wget filled,
/// are adopted on a 304 with no body; a user's own file of the same name is
/// never adopted, whichever way the server reads If-Modified-Since.
@Suite struct AdoptionTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let out: String

    init() throws {
        nginx = try Nginx.shared()
        out = try TempDir.make("adopt")
    }

    private func get(_ path: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await DLPipeRun.run(["get", nginx.url(path), "-d", out, "--cacert", nginx.ca.certificate, "--json"] + extra)
    }

    /// Serves `bytes` random bytes at `path`, dated long ago.
    @discardableResult
    private func serve(_ path: String, _ count: Int, seed: UInt64 = 1) throws -> [UInt8] {
        let data = try nginx.put(path, randomBytes: count, seed: seed)
        try FileTimes.set(nginx.root() + path, seconds: FileTimes.longAgo)
        return data
    }

    @Test func aCopyWithTheServersTimeIsAdoptedWithNoBodyTransferred() async throws {
        let data = try serve(dir + "/a.bin", 200_000)
        try FileTimes.copyKeepingTime(nginx.root() + dir + "/a.bin", to: out + "/a.bin")
        let inode = FileTimes.inode(out + "/a.bin")
        let run = try await get(dir + "/a.bin")
        #expect(run.status == 0, "\(run.stderr)")
        let finished = run.events("finished")
        #expect(finished.count == 1 && finished.first?["unchanged"] as? Bool == true, "\(run.stdout)")
        #expect((finished.first?["path"] as? String)?.hasSuffix("/a.bin") == true)
        let requests = nginx.requests(matching: dir + "/a.bin")
        #expect(requests.map(\.status) == [304], "one conditional request, answered 304")
        #expect(requests.first?.sent == 0, "no body transferred")
        #expect(listing(out) == ["a.bin"], "no copy written")
        #expect(sameBytes(out + "/a.bin", data) && FileTimes.inode(out + "/a.bin") == inode)
        #expect(FileTimes.modified(out + "/a.bin")?.tv_sec == FileTimes.longAgo)
        // Adopted: the state knows the file as if dlpipe had placed it.
        let status = try await DLPipeRun.run(["status", out, "--json"])
        let object = try JSONSerialization.jsonObject(with: Data(status.stdout.utf8)) as? [String: Any]
        let record = (object?["downloads"] as? [[String: Any]])?.first
        #expect(record?["status"] as? String == "finished" && record?["target"] as? String == "a.bin", "\(status.stdout)")
        #expect(record?["bytes"] as? Int == 200_000 && record?["last_modified"] != nil && record?["etag"] != nil)
        let again = try await get(dir + "/a.bin")
        #expect(again.events("finished").first?["unchanged"] as? Bool == true, "\(again.stdout)")
        #expect(nginx.requests(matching: dir + "/a.bin").map(\.status) == [304, 304])
        #expect(listing(out) == ["a.bin"])
    }

    /// What curl -R and wget leave (a file with the server's time) is adopted.
    @Test func whatCurlAndWgetLeftIsAdopted() async throws {
        try serve(dir + "/c.bin", 50_000, seed: 2)
        try serve(dir + "/w.bin", 60_000, seed: 3)
        let curl = try await awaitExit(Subprocess(
            "/usr/bin/env", ["curl", "-sS", "-R", "--cacert", nginx.ca.certificate, "-o", out + "/c.bin", nginx.url(dir + "/c.bin")],
            timeout: 30))
        try #require(curl.status == 0, "\(curl.stderr)")
        let wget = try await awaitExit(Subprocess(
            "/usr/bin/env", ["wget", "-q", "--ca-certificate=" + nginx.ca.certificate, "-P", out, nginx.url(dir + "/w.bin")],
            timeout: 30))
        try #require(wget.status == 0, "\(wget.stderr)")
        let run = try await DLPipeRun.run(
            ["get", nginx.url(dir + "/c.bin"), nginx.url(dir + "/w.bin"), "-d", out, "--cacert", nginx.ca.certificate, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("finished").allSatisfy { $0["unchanged"] as? Bool == true }, "\(run.stdout)")
        #expect(run.events("finished").count == 2)
        for name in ["c.bin", "w.bin"] {
            let requests = nginx.requests(matching: dir + "/" + name)
            #expect(requests.map(\.status) == [200, 304], "\(name): the tool's 200, then dlpipe's 304")
            #expect(requests.last?.sent == 0)
        }
        #expect(listing(out) == ["c.bin", "w.bin"])
    }

    /// A file of the user's under the same name, newer than the server's (a
    /// whole second, as a tool that sets times leaves it, so that it is asked
    /// about): a server that answers 304 to any date not older than its file
    /// (`before`) and one that wants the exact date (nginx's default) both end
    /// with the user's file untouched and the server's beside it.
    @Test(arguments: [("/before", [304, 200]), ("", [200])])
    func aUsersNewerFileIsNeverAdopted(_ location: String, _ statuses: [Int]) async throws {
        let path = location + dir + "/notes.txt"
        let served = try serve(path, 3_000, seed: 4)
        let mine = Array("the user's own notes, not the server's\n".utf8)
        try TestFiles.create(out + "/notes.txt", Data(mine))
        try FileTimes.set(out + "/notes.txt", seconds: FileTimes.longAgo + 86_400)
        let time = try #require(FileTimes.modified(out + "/notes.txt"))
        let run = try await get(path)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(nginx.requests(matching: path).map(\.status) == statuses)
        #expect(run.events("finished").first?["unchanged"] as? Bool == false, "\(run.stdout)")
        #expect(listing(out) == ["notes.1.txt", "notes.txt"])
        #expect(sameBytes(out + "/notes.txt", mine), "the user's file is untouched")
        #expect(FileTimes.modified(out + "/notes.txt")?.tv_sec == time.tv_sec)
        #expect(FileTimes.modified(out + "/notes.txt")?.tv_nsec == time.tv_nsec)
        #expect(sameBytes(out + "/notes.1.txt", served))
    }
}

/// The same against the fault server, which answers If-Modified-Since as
/// Python's http.server does (304 for any date not older than the file) and
/// sends an ETag: adopted when the time is the server's, never otherwise; and
/// `--overwrite` replaces a file atomically.
@Suite struct AdoptionFaultServerTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("adopt-fault")
    }

    @discardableResult
    private func serve(_ name: String, _ count: Int, seed: UInt64 = 1) throws -> [UInt8] {
        let data = try server.put(name, randomBytes: count, seed: seed)
        try FileTimes.set(server.root + "/" + name, seconds: FileTimes.longAgo)
        return data
    }

    @Test func adoptedWhenTheTimeIsTheServersNeverOtherwise() async throws {
        let same = try serve("same.bin", 40_000)
        let other = try serve("other.bin", 40_000, seed: 2)
        try FileTimes.copyKeepingTime(server.root + "/same.bin", to: out + "/same.bin")
        let twin = try serve("twin.bin", 40_000, seed: 3)
        let mine = Array("mine".utf8)
        try TestFiles.create(out + "/other.bin", Data(mine))
        try FileTimes.set(out + "/other.bin", seconds: FileTimes.longAgo + 86_400)
        // Written in the very second of the server's file: its fraction of a
        // second says no tool gave it an HTTP date. Not even asked about.
        try TestFiles.create(out + "/twin.bin", Data(mine))
        try FileTimes.set(out + "/twin.bin", seconds: FileTimes.longAgo, nanoseconds: 500_000_000)
        let run = try await DLPipeRun.run(
            ["get", server.url("/files/same.bin"), server.url("/files/other.bin"), server.url("/files/twin.bin"), "-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        let same304 = try server.requests(matching: "/files/same.bin")
        #expect(same304.count == 1)
        #expect((same304.first?["headers"] as? [String: String])?["if-modified-since"] == "Sun, 09 Sep 2001 01:46:40 GMT")
        let asked = try server.requests(matching: "/files/other.bin").map { $0["headers"] as? [String: String] ?? [:] }
        #expect(asked.count == 2, "a 304 that proves nothing, then the body")
        #expect(asked.first?["if-modified-since"] != nil && asked.last?["if-modified-since"] == nil)
        let twinAsked = try server.requests(matching: "/files/twin.bin").map { $0["headers"] as? [String: String] ?? [:] }
        #expect(twinAsked.count == 1 && twinAsked.first?["if-modified-since"] == nil)
        #expect(listing(out) == ["other.1.bin", "other.bin", "same.bin", "twin.1.bin", "twin.bin"])
        #expect(sameBytes(out + "/same.bin", same) && sameBytes(out + "/other.bin", mine))
        #expect(sameBytes(out + "/other.1.bin", other))
        #expect(sameBytes(out + "/twin.bin", mine) && sameBytes(out + "/twin.1.bin", twin))
        var byName: [String: Bool] = [:]
        for event in run.events("finished") {
            let name = ((event["path"] as? String ?? "") as NSString).lastPathComponent
            byName[name] = event["unchanged"] as? Bool ?? false
        }
        #expect(byName == ["same.bin": true, "other.1.bin": false, "twin.1.bin": false])
    }

    /// An adoption's request that fails (a 503, no retries) leaves a record
    /// with no file: the next run asks again and adopts.
    @Test func anAdoptionThatFailedIsAskedAgainByTheNextRun() async throws {
        let data = try serve("a.bin", 10_000)
        try FileTimes.copyKeepingTime(server.root + "/a.bin", to: out + "/a.bin")
        let url = server.url("/files/a.bin?fail_times=1&status=503")
        let failed = try await DLPipeRun.run(["get", url, "-d", out, "--json", "--retries", "0"])
        #expect(failed.status == 1, "\(failed.stderr)")
        let again = try await DLPipeRun.run(["get", url, "-d", out, "--json"])
        #expect(again.status == 0, "\(again.stderr)")
        #expect(again.events("finished").first?["unchanged"] as? Bool == true, "\(again.stdout)")
        let asked = try server.requests(matching: "/files/a.bin").map { $0["headers"] as? [String: String] ?? [:] }
        #expect(asked.count == 2 && asked.allSatisfy { $0["if-modified-since"] != nil })
        #expect(listing(out) == ["a.bin"] && sameBytes(out + "/a.bin", data))
    }

    /// `--overwrite`: the body goes through its part file and is renamed over
    /// the file: while it streams the old file is whole under its name, after
    /// it the new one (another inode), never a mix, no `name.1.ext`.
    @Test func overwriteReplacesTheFileAtomically() async throws {
        let served = try serve("o.bin", 400_000)
        let mine = Array("the user's file\n".utf8)
        try TestFiles.create(out + "/o.bin", Data(mine))
        let inode = FileTimes.inode(out + "/o.bin")
        let running = try Subprocess(
            Paths.binary, ["get", server.url("/files/o.bin?throttle=150000"), "-d", out, "--json", "--overwrite"])
        // Looked at on the thread that saw the progress: a hop back to the test
        // pool could come after the body's end.
        let out = out
        let (progress, oldWhole, partThere) = await offThePool {
            (running.waitForLine(containing: "\"progress\""), sameBytes(out + "/o.bin", mine),
             FileManager.default.fileExists(atPath: out + "/o.bin.part"))
        }
        #expect(progress)
        #expect(oldWhole, "the old file is whole while the new one streams")
        #expect(partThere)
        let (status, _, stderr) = await awaitExit(running)
        #expect(status == 0, "\(stderr)")
        #expect(sameBytes(out + "/o.bin", served))
        #expect(FileTimes.inode(out + "/o.bin") != inode, "renamed over, not written into")
        #expect(listing(out) == ["o.bin"])
    }

    /// A small body (held in memory without `--overwrite`) replaces the file
    /// too; a job's `dl.config{ overwrite = true }` does the same; a value
    /// that is not a boolean is a load error.
    @Test func overwriteForSmallFilesAndFromAJob() async throws {
        let served = try serve("s.txt", 500)
        let mine = Array("mine\n".utf8)
        for name in ["s.txt", "j.txt"] {
            try TestFiles.create(out + "/" + name, Data(mine))
        }
        let small = try await DLPipeRun.run(["get", server.url("/files/s.txt"), "-d", out, "--overwrite"])
        #expect(small.status == 0, "\(small.stderr)")
        #expect(sameBytes(out + "/s.txt", served))
        let job = try LuaJob()
        try job.write("w.lua", "dl.config{ overwrite = true }\ndl.add{ url = dl.var.url, name = 'j.txt' }\n")
        let run = try await job.run("w.lua", out: out, ["--var", "url=" + server.url("/files/s.txt")])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/j.txt", served))
        #expect(listing(out) == ["j.txt", "s.txt"], "nothing beside")
        let bad = try LuaJob()
        try bad.write("b.lua", "dl.config{ overwrite = 'yes' }\n")
        let refused = try await bad.run("b.lua", out: out)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("b.lua:1:") && refused.stderr.contains("'overwrite' wants a boolean"), "\(refused.stderr)")
    }

    /// `get -o NAME` onto a file dlpipe did not place is refused; with
    /// `--overwrite` the body replaces it.
    @Test func outputOntoAForeignFileWithOverwrite() async throws {
        let served = try serve("x.bin", 2_000)
        let mine = Array("mine".utf8)
        try TestFiles.create(out + "/keep.bin", Data(mine))
        let refused = try await DLPipeRun.run(["get", server.url("/files/x.bin"), "-d", out, "-o", "keep.bin"])
        #expect(refused.status == 2 && sameBytes(out + "/keep.bin", mine), "\(refused.stderr)")
        let replaced = try await DLPipeRun.run(["get", server.url("/files/x.bin"), "-d", out, "-o", "keep.bin", "--overwrite"])
        #expect(replaced.status == 0, "\(replaced.stderr)")
        #expect(sameBytes(out + "/keep.bin", served))
        #expect(listing(out) == ["keep.bin"])
    }
}

/// Waits for a process on a thread of its own: blocking one of the test
/// pool's few threads for seconds would starve the async tests beside it.
func awaitExit(_ process: Subprocess) async -> (status: Int32, stdout: String, stderr: String) {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread { continuation.resume(returning: process.finish()) }
    }
}
