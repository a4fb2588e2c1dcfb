import Foundation
import Testing

/// Names set by scripts (issue 14, item 5): `d.name` is one file name, and
/// `dl.safename` gives scripts the sanitiser that server names get, keeping
/// a title whole (a `/` or `\` in it becomes `_`).
@Suite struct ScriptNameTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "names")
        try server.put("a.txt", bytes: Array("alpha".utf8))
    }

    @Test func aSlashInDNameIsAnErrorThatPointsToDDir() async throws {
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.on("response", function(d, r)
              d.name = "sub/a.txt"
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 1)
        let message = run.events("failed").first?["message"] as? String ?? ""
        #expect(message.hasPrefix("\(job.directory)/job.lua:3: d.name is one file name, not \"sub/a.txt\": a folder goes in d.dir"), "\(message)")
        #expect(listing(out).isEmpty, "no folder made, nothing written")
    }

    @Test func safenameKeepsATitleWholeUnderTheServerNamesRules() async throws {
        try job.write("job.lua", """
            dl.log("1", dl.safename("AC/DC: Live at Donington"))
            dl.log("2", dl.safename("..."))
            dl.log("3", dl.safename("a\\0b\\tc.txt"))
            dl.log("4", dl.safename(".hidden"))
            dl.log("5", dl.safename("..\\\\..\\\\etc/passwd"))
            """)
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 0, "\(run.stderr)")
        // A title keeps every part (issue 40, item 5): each / and \ becomes _.
        #expect(run.logLines(containing: "1\tAC_DC: Live at Donington").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "2\tnil").count == 1)
        #expect(run.logLines(containing: "3\tab c.txt").count == 1, "NUL removed, the tab a space")
        #expect(run.logLines(containing: "4\thidden").count == 1)
        #expect(run.logLines(containing: "5\t_.._etc_passwd").count == 1)
    }
}

/// `dl.store` before `dl.config{ dir }` (issue 14, item 6): a load error at the
/// dl.config line, not a store bound to the current directory.
@Suite struct StoreBeforeConfigTests {
    @Test func dirAfterTheStoreWasUsedIsALoadError() async throws {
        let job = try LuaJob()
        let cwd = try TempDir.make("store-cwd")
        try job.write("job.lua", """
            local last = dl.store.get("cursor")
            dl.config{ dir = "\(cwd)/out" }
            """)
        // Run from a folder of its own: the store opens before the error.
        let run = try await DLPipeRun.run(["run", job.directory + "/job.lua"], under: ["/usr/bin/env", "-C", cwd], within: 60)
        #expect(run.status == 2)
        #expect(run.stderr.contains("job.lua:2: dl.config: dir is set after dl.store was used, which took the state of \".\""), "\(run.stderr)")
        let check = try await DLPipeRun.run(["check", job.directory + "/job.lua"])
        #expect(check.status == 2, "check finds it too: \(check.stderr)")
        // A set first, whose write check keeps in memory, binds the store all the same.
        try job.write("set.lua", """
            dl.store.set("cursor", 1)
            dl.config{ dir = "\(cwd)/out" }
            """)
        let checkSet = try await DLPipeRun.run(["check", job.directory + "/set.lua"])
        #expect(checkSet.status == 2)
        #expect(checkSet.stderr.contains("set.lua:2: dl.config: dir is set after dl.store was used"), "\(checkSet.stderr)")
        // In the right order, or with -d (which wins over dl.config), it loads.
        try job.write("ok.lua", """
            dl.config{ dir = "\(cwd)/out" }
            dl.store.set("cursor", 1)
            """)
        #expect(try await DLPipeRun.run(["run", job.directory + "/ok.lua"], under: ["/usr/bin/env", "-C", cwd], within: 60).status == 0)
        #expect(try await DLPipeRun.run(["run", job.directory + "/job.lua", "-d", cwd + "/out"]).status == 0)
    }
}

/// A top-level `dl.add` whose name or dir leaves the output directory
/// (issue 14, item 7): `check` finds it, and `run` stops before any request.
@Suite struct AddOutsideTests {
    @Test func checkAndRunRefuseItBeforeAnyRequest() async throws {
        let server = try FaultServer()
        try server.put("a.txt", bytes: Array("alpha".utf8))
        let job = try LuaJob()
        let out = try TempDir.make("add-outside")
        try job.write("job.lua", """
            dl.add{ url = dl.var.base .. "/a.txt", dir = "sub", name = "../../escaped.txt" }
            """)
        let expected = "job.lua:1: dl.add: path \"sub/../../escaped.txt\" leaves the output directory"
        let check = try await DLPipeRun.run(["check", job.directory + "/job.lua", "--var", "base=\(server.url("/files"))"])
        #expect(check.status == 2)
        #expect(check.stderr.contains(expected), "\(check.stderr)")
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
        #expect(run.status == 2)
        #expect(run.stderr.contains(expected), "\(run.stderr)")
        #expect(try server.requests(matching: "/files/a.txt").isEmpty, "no request was made")
        #expect(!FileManager.default.fileExists(atPath: out + "/../escaped.txt"))
    }
}
