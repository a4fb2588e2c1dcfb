import Foundation
import Testing

/// Files already in the directory that the state does not know (issue 18):
/// asked about with their mtime; a 304 adopts them with no copy written; a
/// changed server file goes beside them (`name.1.ext`) unless `--overwrite`.
@Suite struct AdoptionTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let out: String

    init() throws {
        nginx = try Nginx.shared()
        out = try TempDir.make("adopt")
    }

    private func setTime(_ path: String, _ seconds: Int) {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: seconds, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
    }

    private func get(_ name: String, _ extra: [String] = []) async throws -> DLPipeRun {
        try await DLPipeRun.run(["get", nginx.url(dir + "/" + name), "-d", out, "--cacert", nginx.ca.certificate, "--json"] + extra)
    }

    @Test func aFileAsOldAsTheServersIsAdoptedWithoutACopy() async throws {
        let data = try nginx.put(dir + "/kept.bin", randomBytes: 5000)
        setTime(nginx.root() + dir + "/kept.bin", 1_000_000_000)
        // As wget left it: the same bytes, the server's time.
        #expect(FileManager.default.createFile(atPath: out + "/kept.bin", contents: Data(data)))
        setTime(out + "/kept.bin", 1_000_000_000)
        let inode = (try? FileManager.default.attributesOfItem(atPath: out + "/kept.bin")[.systemFileNumber] as? Int) ?? -1
        let run = try await get("kept.bin")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("finished").first?["unchanged"] as? Bool == true, "\(run.stdout)")
        #expect(nginx.requests(matching: dir + "/kept.bin").map(\.status) == [304])
        #expect((try? FileManager.default.attributesOfItem(atPath: out + "/kept.bin")[.systemFileNumber] as? Int) == inode)
        #expect(!FileManager.default.fileExists(atPath: out + "/kept.1.bin"))
        // Adopted: the next run asks with the state's own validators, still 304.
        let again = try await get("kept.bin")
        #expect(again.status == 0, "\(again.stderr)")
        #expect(nginx.requests(matching: dir + "/kept.bin").map(\.status) == [304, 304])
        // And the state counts it as its own: a changed server file replaces it.
        let changed = try nginx.put(dir + "/kept.bin", randomBytes: 6000, seed: 9)
        setTime(nginx.root() + dir + "/kept.bin", 1_100_000_000)
        let third = try await get("kept.bin")
        #expect(third.status == 0, "\(third.stderr)")
        #expect(sameBytes(out + "/kept.bin", changed))
        #expect(!FileManager.default.fileExists(atPath: out + "/kept.1.bin"))
    }

    @Test func aChangedServerFileGoesBesideTheUnknownOne() async throws {
        let data = try nginx.put(dir + "/new.txt", randomBytes: 4000)
        setTime(nginx.root() + dir + "/new.txt", 1_100_000_000)
        let mine = Array("my own notes\n".utf8)
        #expect(FileManager.default.createFile(atPath: out + "/new.txt", contents: Data(mine)))
        setTime(out + "/new.txt", 1_000_000_000)
        let run = try await get("new.txt")
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/new.txt", mine), "never clobbered")
        #expect(sameBytes(out + "/new.1.txt", data))
        #expect(nginx.requests(matching: dir + "/new.txt").map(\.status) == [200])
    }

    @Test func overwriteReplacesTheUnknownFile() async throws {
        let data = try nginx.put(dir + "/over.txt", randomBytes: 4000)
        setTime(nginx.root() + dir + "/over.txt", 1_100_000_000)
        #expect(FileManager.default.createFile(atPath: out + "/over.txt", contents: Data("old".utf8)))
        setTime(out + "/over.txt", 1_000_000_000)
        let run = try await get("over.txt", ["--overwrite"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/over.txt", data))
        #expect(!FileManager.default.fileExists(atPath: out + "/over.1.txt"))
    }
}

extension AdoptionTests {
    /// A file of the user's written after the server's gets a 304 to its time,
    /// but its time is not the server's Last-Modified: not adopted.
    @Test func aNewerFileOfTheUsersIsNotAdopted() async throws {
        let data = try nginx.put(dir + "/newer.txt", randomBytes: 3000)
        setTime(nginx.root() + dir + "/newer.txt", 1_000_000_000)
        let mine = Array("mine".utf8)
        #expect(FileManager.default.createFile(atPath: out + "/newer.txt", contents: Data(mine)))
        setTime(out + "/newer.txt", 1_200_000_000)
        let run = try await get("newer.txt")
        #expect(run.status == 0, "\(run.stderr)")
        // nginx answers If-Modified-Since only when it is exact (its default
        // if_modified_since exact): a 200 at once. The fault server's
        // "not modified since" 304 is GetBasicsTests.existingFileIsNeverClobbered.
        #expect(nginx.requests(matching: dir + "/newer.txt").map(\.status) == [200])
        #expect(sameBytes(out + "/newer.txt", mine))
        #expect(sameBytes(out + "/newer.1.txt", data))
    }
}
