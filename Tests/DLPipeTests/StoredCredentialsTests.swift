import Foundation
import Testing
import TestSupport

@testable import DLPipe

/// Credentials in URLs never reach the state file (issue 18), and the state
/// is the owner's alone.
@Suite struct StoredCredentialsTests {
    let folder: String
    let path: String

    init() throws {
        folder = try TempDir.make("creds") + "/.dlpipe"
        path = folder + "/state.db"
    }

    private func record(_ request: DownloadRequest) -> DownloadRecord {
        DownloadRecord(
            key: request.deduplicationKey, url: request.url, target: "f.bin", status: .finished, bytes: 5,
            total: 5, etag: "\"e\"", lastModified: nil, sha256: nil, mediaType: nil, attempts: 1, lastError: nil,
            updatedAt: 0)
    }

    /// Every byte of every file in the state's folder (database, WAL, shm).
    private func stateBytes() throws -> Data {
        var all = Data()
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            all += FileManager.default.contents(atPath: folder + "/" + name) ?? Data()
        }
        return all
    }

    private func mode(_ path: String) -> mode_t {
        var info = stat()
        return stat(path, &info) == 0 ? info.st_mode & 0o777 : 0
    }

    @Test func aRecordIsFoundByItsCredentialsWhichAreNotStored() throws {
        let alice = DownloadRequest(url: "http://alice:hunter2@h/x.bin")
        let bob = DownloadRequest(url: "http://bob:swordfish@h/x.bin")
        let store = try StateStore(path: path)
        try store.save(record(alice))
        try store.release(ReleasedFile(path: "old.bin", url: alice.url, size: 1))
        try store.flush()
        #expect(try store.record(key: alice.deduplicationKey)?.target == "f.bin")
        #expect(try store.record(key: alice.deduplicationKey)?.key == alice.deduplicationKey)
        #expect(try store.record(key: bob.deduplicationKey) == nil, "other credentials are another download")
        #expect(try store.records().map(\.url) == ["http://***@h/x.bin"])
        // A reopened store keys the digest with the same secret.
        #expect(try StateStore(path: path).record(key: alice.deduplicationKey) != nil)
        let bytes = try stateBytes()
        #expect(bytes.range(of: Data("hunter2".utf8)) == nil)
        #expect(bytes.range(of: Data("alice".utf8)) == nil)
    }

    /// A memory download's key and a POST's hold the URL after other parts:
    /// their credentials never reach the file either, and the record is found.
    @Test(arguments: ["memory", "post"])
    func credentialsInLaterPartsOfAKeyAreNotStored(_ kind: String) throws {
        var request = DownloadRequest(url: "http://carol:opensesame@h/api", into: kind == "memory" ? .memory : .file)
        if kind == "post" { request.body = Array("q=1".utf8) }
        let store = try StateStore(path: path)
        try store.save(record(request))
        try store.flush()
        #expect(try store.record(key: request.deduplicationKey) != nil)
        var other = request
        other.url = "http://dave:opensesame@h/api"
        #expect(try store.record(key: other.deduplicationKey) == nil, "other credentials are another download")
        let bytes = try stateBytes()
        #expect(bytes.range(of: Data("opensesame".utf8)) == nil)
        #expect(bytes.range(of: Data("carol".utf8)) == nil)
    }

    @Test func twoStatesKeyTheirDigestsWithTheirOwnSecrets() throws {
        let other = try TempDir.make("creds-other") + "/state.db"
        let request = DownloadRequest(url: "https://u:p@h/a")
        let a = try StateStore(path: path)
        let b = try StateStore(path: other)
        try a.save(record(request))
        try b.save(record(request))
        try a.flush()
        try b.flush()
        var keys: [String] = []
        for file in [path, other] {
            try SQLiteDatabase(path: file).query("SELECT key FROM downloads") { keys.append($0.text(0) ?? "") }
        }
        #expect(keys.count == 2 && keys[0] != keys[1], "\(keys)")
        #expect(keys.allSatisfy { $0.hasPrefix("https://***~") && !$0.contains("u:p") })
    }

    /// Schema 5 rewrites what an older dlpipe stored in plaintext, and leaves
    /// none of it in freed pages or the WAL.
    @Test func aVersionFourFileForgetsItsCredentials() throws {
        let request = DownloadRequest(url: "http://alice:hunter2@h/x.bin")
        let plain = DownloadRequest(url: "http://h/y.bin")
        do {
            let store = try StateStore(path: path)
            try store.save(record(plain))
            try store.flush()
        }
        try SQLiteDatabase(path: path).execute("""
            DELETE FROM dlpipe_meta WHERE key = 'credential_key';
            ALTER TABLE downloads DROP COLUMN placed_mtime_ns;
            ALTER TABLE downloads DROP COLUMN segments;
            UPDATE dlpipe_meta SET value = '4' WHERE key = 'schema_version';
            INSERT INTO downloads(key, url, target, status, updated_at)
              VALUES ('\(request.url)' || char(0) || char(0), '\(request.url)', 'x.bin', 'finished', 0);
            INSERT INTO released(path, url, size) VALUES ('old.bin', '\(request.url)', 3);
            """)
        #expect(try stateBytes().range(of: Data("hunter2".utf8)) != nil, "the old file holds it")
        let store = try StateStore(path: path)
        #expect(try store.record(key: request.deduplicationKey)?.target == "x.bin")
        #expect(try store.record(key: plain.deduplicationKey)?.target == "f.bin")
        #expect(try store.releasedFiles().map(\.url) == ["http://***@h/x.bin"])
        #expect(try stateBytes().range(of: Data("hunter2".utf8)) == nil)
    }

    @Test func theStateIsTheOwnersAlone() throws {
        let lock = try RunLock(path: folder + "/lock", wait: false)
        let store = try StateStore(path: path)
        try store.save(record(DownloadRequest(url: "http://h/a")))
        try store.flush()
        #expect(mode(folder) == 0o700)
        for name in try FileManager.default.contentsOfDirectory(atPath: folder) {
            #expect(mode(folder + "/" + name) == 0o600, "\(name)")
        }
        _ = lock
    }

    @Test func anOlderStatesModesAreTightened() throws {
        do { _ = try StateStore(path: path) }
        chmod(folder, 0o755)
        chmod(path, 0o644)
        let lockPath = folder + "/lock"
        close(open(lockPath, O_CREAT | O_WRONLY, 0o644))
        chmod(lockPath, 0o644)
        _ = try RunLock(path: lockPath, wait: false)
        _ = try StateStore(path: path)
        #expect(mode(folder) == 0o700)
        #expect(mode(path) == 0o600)
        #expect(mode(lockPath) == 0o600)
    }

    /// A foreign file named as the state is refused and its mode kept.
    @Test func aForeignFileKeepsItsMode() throws {
        let foreign = try TempDir.make("creds-foreign") + "/notes.db"
        try SQLiteDatabase(path: foreign).execute("CREATE TABLE notes(x);")
        chmod(foreign, 0o644)
        #expect(throws: StateStore.Failure.self) { try StateStore(path: foreign) }
        #expect(mode(foreign) == 0o644)
    }
}
