import Foundation
import Testing

/// Per-host limits and fairness, measured at nginx: a redirect counts against
/// the host that serves it, and input grouped by host keeps many hosts busy.
/// Names mapped with `--resolve` all reach nginx's default server, but dlpipe
/// counts them as the hosts they name.
@Suite struct HostSchedulingTests {
    let nginx: Nginx
    let dir = Nginx.uniquePath()

    init() throws { nginx = try Nginx.shared() }


    private func resolving(_ hosts: [String]) -> [String] {
        hosts.flatMap { ["--resolve", "\($0):\(nginx.plainPort):127.0.0.1"] }
    }

    @Test func perHostHoldsForTheHostARedirectLeadsTo() async throws {
        // 19 names, each redirecting to one file on a.test; --per-host 2.
        // nginx's limit_rate lets the first 100 KB go at once, then 100 KiB/s:
        // each file takes about half a second at the server.
        let out = try TempDir.make("per-host-redirect")
        let names = (1...19).map { "r\($0).test" }
        var urls: [String] = []
        for (index, name) in names.enumerated() {
            try nginx.put("/slow" + dir + "/\(index).bin", host: "a.test", randomBytes: 150_000, seed: UInt64(index))
            let target = nginx.url("/slow" + dir + "/\(index).bin", host: "a.test", tls: false)
            urls.append(nginx.url("/redirect?to=" + target, host: name, tls: false))
        }
        let run = try await DLPipeRun.run(["get"] + urls + [
            "-d", out, "--per-host", "2", "-j", "19", "--json",
        ] + resolving(names + ["a.test"]))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("finished").count == 19)
        let served = nginx.requests(matching: "/slow" + dir).filter { $0.host == "a.test" }
        try #require(served.count == 19)
        #expect(Nginx.peak(served) <= 2, "a.test served \(Nginx.peak(served)) at once")
        #expect(Nginx.peak(served) == 2, "and used both of its slots")
    }

    @Test func hostsTakeTurnsWhenTheInputIsGroupedByHost() async throws {
        // 8 hosts, 3 files each, listed host by host; 8 slots, 4 per host:
        // the first 8 requests go to the 8 hosts (in list order they would
        // have gone to 2 of them).
        let out = try TempDir.make("fair-hosts")
        let names = (1...8).map { "f\($0).test" }
        var urls: [String] = []
        for name in names {
            for index in 0..<3 {
                let path = "/slow" + dir + "/\(name)-\(index).bin"
                try nginx.put(path, randomBytes: 300_000, seed: UInt64(index))
                urls.append(nginx.url(path, host: name, tls: false))
            }
        }
        let run = try await DLPipeRun.run(["get"] + urls + [
            "-d", out, "-j", "8", "--per-host", "4", "--json",
        ] + resolving(names))
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("finished").count == 24)
        let served = nginx.requests(matching: "/slow" + dir)
        try #require(served.count == 24)
        let firstWave = served.sorted { $0.start < $1.start }.prefix(8)
        #expect(Set(firstWave.map(\.host)) == Set(names), "the first 8 requests: \(firstWave.map(\.host))")
        // Each takes about 2 s at nginx (its first 100 KB at once, then
        // 100 KiB/s): the 8 hosts were busy at once. (With 1 s files, a loaded
        // machine once connected the 8th host after the 1st host's first file
        // ended, so its second request came before it.)
        #expect(Nginx.peak(Array(firstWave)) == 8)
    }

    @Test func aFileIsNamedFromTheURLTheUserAskedFor() async throws {
        let out = try TempDir.make("requested-name")
        let data = try nginx.put(dir + "/index.html", bytes: Array("<p>hi</p>".utf8))
        // /redirect?to=DIR/ ends at DIR/, an HTML index: the file is named
        // "redirect" from the URL asked for, not index.html from the final one.
        let url = nginx.url("/redirect?to=" + nginx.url(dir + "/", tls: false), tls: false)
        let run = try await DLPipeRun.run(["get", url, "-d", out, "--json"])
        #expect(run.status == 0, "\(run.stderr)")
        #expect(sameBytes(out + "/redirect", data))
        #expect(!FileManager.default.fileExists(atPath: out + "/index.html"))
    }
}
