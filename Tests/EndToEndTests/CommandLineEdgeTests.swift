import Foundation
import Testing
import TestSupport

/// Promises at the edges of the command line (issue 36): secrets blanked in
/// the process's arguments, `get -` as the stdin list, and curl's and wget's
/// spellings.
@Suite struct CommandLineEdgeTests {
    let server: FaultServer
    let out: String

    init() throws {
        server = try FaultServer()
        out = try TempDir.make("edges")
    }

    /// What `ps` shows: the process's arguments, NUL-separated.
    private static func commandLine(of pid: pid_t) -> String {
        let bytes = (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()
        return String(decoding: bytes.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self)
    }

    /// Waits (at most `seconds`) until the server saw a request for `path`.
    private func waitForRequest(_ path: String, seconds: Double = 60) async throws {
        try await within(seconds: seconds, "a request for \(path)") { [server] in
            while (try? server.requests(matching: path).isEmpty) ?? true {
                try? await Task.sleep(nanoseconds: 20_000_000)
            }
        }
    }

    /// `-u`, a proxy URL's user and password, and an Authorization header are
    /// blanked in /proc/PID/cmdline while the run lasts (as curl does for -u);
    /// the rest of the command line stays as it was.
    @Test func secretsAreBlankedInTheProcessArguments() async throws {
        _ = try server.put("slow.bin", randomBytes: 200_000)
        let url = server.url("/files/slow.bin?stall=1000")
        let process = try Subprocess(Paths.binary, [
            "get", url, "-d", out, "-u", "alice:pw-secret-1", "--proxy=http://puser:proxy-secret-2@127.0.0.1:1",
            "--noproxy", "*", "-H", "Authorization: Bearer token-secret-3", "-H", "X-Plain: shown-4",
        ])
        defer { process.signal(SIGKILL) }
        // The request went out: the arguments were read long ago.
        try await waitForRequest("/files/slow.bin")
        let shown = Self.commandLine(of: process.pid)
        for secret in ["alice", "pw-secret-1", "puser", "proxy-secret-2", "token-secret-3"] {
            #expect(!shown.contains(secret), "\(secret) in \(shown)")
        }
        for kept in [url, "-u", "--proxy=http://", "@127.0.0.1:1", "Authorization:", "X-Plain: shown-4"] {
            #expect(shown.contains(kept), "\(kept) in \(shown)")
        }
        let headers = try server.requests(matching: "/files/slow.bin").first?["headers"] as? [String: String] ?? [:]
        #expect(headers["authorization"] == "Bearer token-secret-3", "the copy dlpipe keeps is whole")
    }

    /// `--help` says how to keep a password out of `ps` from the start.
    @Test func helpPointsToNetrcFile() async throws {
        let run = try await DLPipeRun.run(["get", "--help"])
        #expect(run.stdout.contains("--netrc-file FILE       credentials from FILE, per host (keeps a password out\n"), "\(run.stdout)")
    }

    /// `dlpipe get -` reads the URL list from stdin, as `-i -`.
    @Test func aDashAmongTheURLsIsTheListOnStdin() async throws {
        let a = try server.put("a.txt", randomBytes: 100)
        let b = try server.put("b.txt", randomBytes: 200, seed: 2)
        let list = try TempDir.make("edges-list") + "/urls.txt"
        try "\(server.url("/files/a.txt"))\n# a comment\n".write(toFile: list, atomically: true, encoding: .utf8)
        let run = try await DLPipeRun.run(["get", "-", server.url("/files/b.txt"), "-d", out], stdin: list)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/a.txt", a))
        #expect(sameBytes(out + "/b.txt", b))
    }

    /// curl's letters for what dlpipe does anyway are taken and change nothing
    /// (`-s` is `-q`: no line on stderr).
    @Test func curlsLettersForWhatDlpipeDoesAreAccepted() async throws {
        let data = try server.put("c.bin", randomBytes: 5000)
        let hop = server.url("/redirect-code/302?url=/files/c.bin")
        let run = try await DLPipeRun.run(["get", "-O", "-L", "-C", "-", "-f", "-s", hop, "-d", out])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.stderr.isEmpty, "\(run.stderr)")
        // Named from the URL asked, as curl's -O -L names it.
        #expect(sameBytes(out + "/302", data))
        let long = try await DLPipeRun.run(
            ["get", "--remote-name", "--location", "--continue-at", "-", "--fail", "--silent", hop, "-d", out, "-o", "d.bin"])
        #expect(long.status == 0, "\(long.stderr)")
        #expect(sameBytes(out + "/d.bin", data))
        // -f does what it says: an HTTP error fails the download (exit 1).
        let missing = try await DLPipeRun.run(["get", "-f", "-s", server.url("/files/none.bin"), "-d", out])
        #expect(missing.status == 1, "\(missing.stderr)")
    }

    /// wget's `-c URL` and `-O FILE URL`, and a `-C` offset: a usage error that
    /// says what to do, before any request.
    @Test(arguments: [
        (["-c", "URL"], "dlpipe resumes by itself"),
        (["-O", "saved.bin", "URL"], "write -o saved.bin"),
        (["-O", "-", "URL"], "write -o -"),
        (["-C", "100", "URL"], "only -C - is taken"),
    ])
    func wgetsSpellingsSayWhatToDo(_ args: [String], _ words: String) async throws {
        let url = server.url("/files/w.bin")
        let run = try await DLPipeRun.run(["get"] + args.map { $0 == "URL" ? url : $0 } + ["-d", out])
        #expect(run.status == 2, "\(args): \(run.stderr)")
        #expect(run.stderr.contains(words), "\(args): \(run.stderr)")
        #expect(!run.stderr.contains("no URL given"), "\(run.stderr)")
        #expect(try server.requests(matching: "/files/w.bin").isEmpty)
    }
}
