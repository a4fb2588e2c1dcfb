import Foundation
import Testing
import TestSupport

/// `dl.list(dir)` (issue 40, item 7): a folder inside the output directory,
/// as name, kind, size and mtime, confined as `dl.read` is (ConfinedFile's
/// checks, of the opened folder): never outside it, never `.dlpipe/`.
@Suite struct JobFolderListTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "list")
        try server.put("a.txt", bytes: Array("alpha".utf8))
        try server.put("b.txt", bytes: Array("bravo!".utf8))
    }

    /// A mirror removes what its listing no longer names, without a list of its own in dl.store.
    @Test func aMirrorRemovesFilesNoLongerListed() async throws {
        try job.write("job.lua", """
            local wanted = {}
            for name in (dl.var.names or ""):gmatch("[^,]+") do
              wanted[name] = true
              dl.add{ url = dl.var.base .. "/" .. name, dir = "mirror" }
            end
            dl.on("done", function(s)
              for _, e in ipairs(dl.list("mirror")) do
                dl.log("entry", e.name, e.type, e.size, math.type(e.mtime) ~= nil and e.mtime > 1e9)
                if e.type == "file" and not wanted[e.name] then dl.remove("mirror/" .. e.name) end
              end
              local top = {}
              for _, e in ipairs(dl.list()) do top[#top + 1] = e.name .. ":" .. e.type end
              dl.log("top", table.concat(top, " "))
            end)
            """)
        let base = server.url("/files")
        let first = try await job.run("job.lua", out: out, ["--var", "base=\(base)", "--var", "names=a.txt,b.txt"])
        #expect(first.status == 0, "\(first.stderr)")
        #expect(first.logLines(containing: "entry\ta.txt\tfile\t5\ttrue").count == 1, "\(first.stderr)")
        #expect(first.logLines(containing: "entry\tb.txt\tfile\t6\ttrue").count == 1, "\(first.stderr)")
        // The state's folder is never listed.
        #expect(first.logLines(containing: "top\tmirror:dir").count == 1, "\(first.stderr)")
        let second = try await job.run("job.lua", out: out, ["--var", "base=\(base)", "--var", "names=a.txt"])
        #expect(second.status == 0, "\(second.stderr)")
        #expect(listing(out + "/mirror") == ["a.txt"])
    }

    @Test func outsideTheOutputDirectoryAndTheStateAreRefused() async throws {
        let outside = try TempDir.make("list-outside")
        try "secret".write(toFile: outside + "/secret.txt", atomically: true, encoding: .utf8)
        try FileManager.default.createDirectory(atPath: out + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: out + "/away", withDestinationPath: outside)
        try FileManager.default.createSymbolicLink(atPath: out + "/sub/link", withDestinationPath: outside + "/secret.txt")
        try job.write("job.lua", """
            dl.add(dl.var.base .. "/a.txt")
            dl.on("done", function(s)
              for _, dir in ipairs({ "..", "away", dl.var.outside, ".dlpipe", "sub/../.dlpipe", "missing", "a.txt" }) do
                local ok, err = pcall(dl.list, dir)
                dl.log("refused", dir, not ok, (tostring(err):gsub("^.-: ", "", 1)))
              end
              for _, e in ipairs(dl.list("sub")) do dl.log("sub", e.name, e.type, e.size) end
              local ok, err = pcall(dl.list, 3)
              dl.log("type", tostring(err))
            end)
            """)
        let run = try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))", "--var", "outside=\(outside)"])
        #expect(run.status == 0, "\(run.stderr)")
        for dir in ["..", "away", outside, ".dlpipe", "sub/../.dlpipe"] {
            #expect(run.logLines(containing: "refused\t\(dir)\ttrue\tdl.list: \(dir) is outside the output directory, or inside .dlpipe/").count == 1,
                    "\(dir): \(run.stderr)")
        }
        #expect(run.logLines(containing: "refused\tmissing\ttrue\tdl.list: no such folder: missing").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "refused\ta.txt\ttrue\tdl.list: cannot list a.txt: Not a directory").count == 1, "\(run.stderr)")
        // A symlink inside is listed as a link, never followed.
        #expect(run.logLines(containing: "sub\tlink\tlink\t0").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "dl.list wants a folder's path").count == 1, "\(run.stderr)")
    }

    @Test func onlyInHandlers() async throws {
        try job.write("job.lua", "dl.list()\n")
        let run = try await job.run("job.lua", out: out)
        #expect(run.status == 2)
        #expect(run.stderr.contains("job.lua:1: dl.list may not be called in the top level of a script"), "\(run.stderr)")
    }
}
