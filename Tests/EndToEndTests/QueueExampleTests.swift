import Foundation
import Testing
import TestSupport

/// The jobs in examples/ run as one worker of a shared queue (`--queue`) give
/// the same files as without one. Each of them keeps the id its top level got
/// (`local page = dl.add(...)`) and tells its handlers' downloads apart by it
/// (`d.id == page`, a table keyed by ids): a handler that saw the queue's row
/// ids instead skipped the gallery page, walked only the API's first page and
/// saved the feed but no episode, all with exit 0.
@Suite struct QueueExampleTests {
    let site = Paths.repository + "/examples/site"

    struct Example: Sendable, CustomTestStringConvertible {
        let job: String
        /// The `--var` given, as NAME and a path under the server's /files.
        let variable: (name: String, path: String)
        var testDescription: String { job }
    }

    static let examples = [
        Example(job: "gallery/job.lua", variable: ("base", "")),
        Example(job: "api/job.lua", variable: ("api", "/api/page1.json")),
        Example(job: "sitemap/job.lua", variable: ("sitemap", "/sitemap.xml.gz")),
        Example(job: "feed/job.lua", variable: ("feed", "/feed.xml")),
    ]

    /// Every regular file under `directory` (its .dlpipe folder left out),
    /// by path relative to it, with its bytes.
    private func files(_ directory: String) -> [String: [UInt8]] {
        var found: [String: [UInt8]] = [:]
        let walker = FileManager.default.enumerator(atPath: directory)
        while let path = walker?.nextObject() as? String {
            if path == ".dlpipe" { walker?.skipDescendants(); continue }
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: directory + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                found[path] = bytes(at: directory + "/" + path)
            }
        }
        return found
    }

    /// A name with its collision number taken out: "pages/index.1.html" and
    /// "pages/index.html" are both "pages/index.html".
    private func collisionGroup(_ path: String) -> String {
        path.replacing(/\.[0-9]+(\.[^.\/]*)$/) { $0.output.1 }
    }

    @Test(arguments: examples)
    func anExampleGivesTheSameFilesWithTheQueueAsWithout(_ example: Example) async throws {
        let server = try FaultServer(root: site)
        let job = Paths.repository + "/examples/" + example.job
        let variable = "\(example.variable.name)=\(server.url("/files" + example.variable.path))"
        let alone = try TempDir.make("qexample-alone")
        let queued = try TempDir.make("qexample-queue")
        let database = try PostgresCluster.shared().freshDatabase("qexample")
        let without = try await DLPipeRun.run(["run", job, "-d", alone, "--json", "--no-hooks", "--var", variable])
        let with = try await DLPipeRun.run(
            ["run", job, "-d", queued, "--json", "--no-hooks", "--var", variable,
             "--queue", database, "--name", "example", "--settle", "0"])
        #expect(without.status == 0, "\(without.stderr)")
        #expect(with.status == 0, "\(with.stderr)")
        let expected = files(alone)
        // More than the job's first download: its handlers read it and added the rest.
        #expect(expected.count >= 3, "the run without a queue fetched only \(expected.keys.sorted())")
        let got = files(queued)
        #expect(got.keys.sorted() == expected.keys.sorted())
        // Names that collide (the sitemap's two index.html pages) are numbered
        // in the order the responses come, in either mode: under load the
        // run without a queue once had docs/index.html answered first. So
        // within a collision's group the bytes are compared as a set; every
        // other name must hold the same bytes.
        let differing = Dictionary(grouping: expected.keys, by: collisionGroup).filter { _, names in
            names.map { expected[$0] ?? [] }.sorted { $0.lexicographicallyPrecedes($1) }
                != names.map { got[$0] ?? [] }.sorted { $0.lexicographicallyPrecedes($1) }
        }.values.flatMap { $0 }.sorted()
        #expect(differing.isEmpty, "other bytes with the queue: \(differing)")
        // The handlers' verdicts too: the gallery skips its PDF by the response.
        for count in ["finished", "skipped", "failed"] {
            let alone = without.events("done").first?[count] as? Int
            #expect(alone != nil && with.events("done").first?[count] as? Int == alone, "\(count): \(with.stdout)")
        }
    }
}
