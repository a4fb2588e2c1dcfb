import Foundation
import Testing

/// Issue 18, bug 2: credentials from URLs and `-u` never reach the files of
/// `DIR/.dlpipe/`, which are the owner's alone; a re-run still finds its records.
@Suite struct StateSecretsTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()
    let out: String

    init() throws {
        nginx = try Nginx.shared()
        out = try TempDir.make("secrets")
    }

    /// Every file under `.dlpipe/` (database, WAL, shm, lock), as `strings` would read it.
    private func stateFiles() throws -> [(String, Data)] {
        let folder = out + "/.dlpipe"
        return try FileManager.default.contentsOfDirectory(atPath: folder).map {
            ($0, FileManager.default.contents(atPath: folder + "/" + $0) ?? Data())
        }
    }

    @Test func noSecretInTheStateAndARerunAsksConditionally() async throws {
        let inURL = try nginx.put("basic" + dir + "/in-url.bin", randomBytes: 4000, seed: 1)
        let byOption = try nginx.put("basic" + dir + "/by-option.bin", randomBytes: 4000, seed: 2)
        let withCredentials = nginx.url("/basic" + dir + "/in-url.bin").replacingOccurrences(
            of: "://", with: "://\(Nginx.user):\(Nginx.password)@")
        let plain = nginx.url("/basic" + dir + "/by-option.bin")
        for round in 0..<2 {
            let first = try await DLPipeRun.run(
                ["get", withCredentials, "-d", out, "--cacert", nginx.ca.certificate, "--json"])
            #expect(first.status == 0, "\(first.stderr)")
            let second = try await DLPipeRun.run(
                ["get", plain, "-d", out, "--cacert", nginx.ca.certificate, "-u", "\(Nginx.user):\(Nginx.password)"])
            #expect(second.status == 0, "\(second.stderr)")
            if round == 1 {
                #expect(first.events("finished").first?["unchanged"] as? Bool == true, "\(first.stdout)")
            }
        }
        #expect(sameBytes(out + "/in-url.bin", inURL))
        #expect(sameBytes(out + "/by-option.bin", byOption))
        // The re-runs asked conditionally and got 304: no second copy.
        #expect(nginx.requests(matching: "/basic" + dir + "/in-url.bin").map(\.status) == [200, 304])
        #expect(nginx.requests(matching: "/basic" + dir + "/by-option.bin").map(\.status) == [200, 304])
        #expect(!FileManager.default.fileExists(atPath: out + "/in-url.1.bin"))
        let files = try stateFiles()
        #expect(files.map(\.0).contains("state.db") && files.map(\.0).contains("lock"))
        let basic = Data("\(Nginx.user):\(Nginx.password)".utf8).base64EncodedString()
        for (name, bytes) in files {
            for secret in [Nginx.password, basic] {
                #expect(bytes.range(of: Data(secret.utf8)) == nil, "\(secret) in .dlpipe/\(name)")
            }
            var info = stat()
            #expect(stat(out + "/.dlpipe/" + name, &info) == 0 && info.st_mode & 0o777 == 0o600, "\(name)")
        }
        var info = stat()
        #expect(stat(out + "/.dlpipe", &info) == 0 && info.st_mode & 0o777 == 0o700)
    }
}
