import DLPipe
import Foundation
import Testing

/// `dl.store` belongs to the job (its file's base name), not to the folder:
/// two jobs writing into one output directory keep their own values, drop-in
/// hooks share their job's, and rows of a state made before namespaces are
/// still read.
@Suite struct StoreNamespaceTests {
    let job: LuaJob
    let out: String

    init() throws {
        job = try LuaJob()
        out = try TempDir.make("store")
    }

    /// Logs the job's `cursor` and then sets it to `value`.
    private func cursorJob(_ value: String) -> String {
        "dl.log('cursor', tostring(dl.store.get('cursor')))\ndl.store.set('cursor', '\(value)')\n"
    }

    @Test func twoJobsInOneFolderKeepTheirOwnStore() async throws {
        try job.write("a.lua", cursorJob("from-a"))
        try job.write("b.lua", cursorJob("from-b"))
        try job.write("hooks.d/peek.lua", "dl.log('hook sees', tostring(dl.store.get('cursor')))\n")
        let a1 = try await job.run("a.lua", out: out)
        #expect(a1.status == 0, "\(a1.stderr)")
        #expect(a1.logLines(containing: "cursor\tnil").count == 1, "\(a1.stderr)")
        // The drop-in hook shares its job's store: it sees what a.lua just set.
        #expect(a1.logLines(containing: "hook sees\tfrom-a").count == 1, "\(a1.stderr)")
        let b1 = try await job.run("b.lua", out: out)
        #expect(b1.logLines(containing: "cursor\tnil").count == 1, "job b must not read job a's cursor: \(b1.stderr)")
        #expect(b1.logLines(containing: "hook sees\tfrom-b").count == 1, "\(b1.stderr)")
        let a2 = try await job.run("a.lua", out: out)
        #expect(a2.logLines(containing: "cursor\tfrom-a").count == 1, "\(a2.stderr)")
    }

    @Test func getHooksUseTheGetNamespace() async throws {
        let hook = try job.write("hook.lua", cursorJob("from-get"))
        try job.write("get.lua", "dl.log('job get sees', tostring(dl.store.get('cursor')))\n")
        // Port 1 refuses at once: the download fails, the hook has run.
        let unreachable = ["http://127.0.0.1:1/x", "--retries", "0", "--progress", "none"]
        let first = try await DLPipeRun.run(["get", "--hook", hook, "-d", out] + unreachable)
        #expect(first.logLines(containing: "cursor\tnil").count == 1, "\(first.stderr)")
        let second = try await DLPipeRun.run(["get", "--hook", hook, "-d", out] + unreachable)
        #expect(second.logLines(containing: "cursor\tfrom-get").count == 1, "\(second.stderr)")
        // A job named get.lua shares that namespace, as documented.
        let named = try await job.run("get.lua", out: out, ["--no-hooks"])
        #expect(named.logLines(containing: "job get sees\tfrom-get").count == 1, "\(named.stderr)")
    }

    /// A state written before namespaces holds bare keys: every job reads
    /// them until it sets its own value, which leaves the old row alone.
    @Test func rowsWithoutANamespaceStillRead() async throws {
        let state = try StateStore(path: out + "/.dlpipe/state.db")
        try state.setValue("cursor", "[\"s\",\"old-shared\"]")
        try job.write("a.lua", cursorJob("from-a"))
        try job.write("b.lua", cursorJob("from-b"))
        let a1 = try await job.run("a.lua", out: out, ["--no-hooks"])
        #expect(a1.logLines(containing: "cursor\told-shared").count == 1, "\(a1.stderr)")
        let a2 = try await job.run("a.lua", out: out, ["--no-hooks"])
        #expect(a2.logLines(containing: "cursor\tfrom-a").count == 1, "\(a2.stderr)")
        let b1 = try await job.run("b.lua", out: out, ["--no-hooks"])
        #expect(b1.logLines(containing: "cursor\told-shared").count == 1, "\(b1.stderr)")
        #expect(try state.value("cursor") == "[\"s\",\"old-shared\"]")
    }
}
