import Foundation
import Testing

/// Strict event tables (issue 40, item 4): reading a name no event's table
/// has is an error that names it and the nearest field; an optional field and
/// another event's field read as nil; a new name cannot be written; writing a
/// read-only field of `d` names the writable ones.
@Suite struct StrictEventTableTests: ServerJobSuite {
    let fixture: ServerJobFixture

    init() throws {
        fixture = try ServerJobFixture(label: "strict")
        try server.put("a.txt", bytes: Array("alpha".utf8))
    }

    func run(_ handlers: String) async throws -> DLPipeRun {
        try job.write("job.lua", "dl.add(dl.var.base .. \"/a.txt\")\n" + handlers)
        return try await job.run("job.lua", out: out, ["--var", "base=\(server.url("/files"))"])
    }

    @Test func aMisspelledFieldIsAnErrorNamingTheNearest() async throws {
        let response = try await run("""
            dl.on("response", function(d, r)
              local n = r.lenght
            end)
            """)
        #expect(response.status == 1)
        let message = response.events("failed").first?["message"] as? String ?? ""
        #expect(message.hasPrefix("\(job.directory)/job.lua:3: r.lenght: unknown response field 'lenght' (did you mean 'length'?); known: status, headers,"), "\(message)")
        let finished = try await run("""
            dl.on("finished", function(d, f)
              local digest = f.sah256
            end)
            """)
        let failure = finished.events("failed").first?["message"] as? String ?? ""
        #expect(failure.contains("job.lua:3: f.sah256: unknown finished field 'sah256' (did you mean 'sha256'?)"), "\(failure)")
    }

    @Test func optionalAndOtherEventsFieldsReadAsNil() async throws {
        let run = try await run("""
            dl.on("response", function(d, r)
              dl.log("response", r.resumed_from, r.path, r.status)
            end)
            dl.on("finished", function(d, f)
              dl.log("finished", f.body, f.status, f.sha256 ~= nil, d.parent)
            end)
            dl.on("done", function(s) dl.log("done", s.finished, s.kind) end)
            """)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.logLines(containing: "response\tnil\tnil\t200").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "finished\tnil\tnil\ttrue\tnil").count == 1, "\(run.stderr)")
        #expect(run.logLines(containing: "done\t1\tnil").count == 1, "\(run.stderr)")
    }

    @Test func writesOfNewNamesAndReadOnlyFieldsSayWhatIsWritable() async throws {
        let newName = try await run("""
            dl.on("finished", function(d, f) f.note = "x" end)
            """)
        let message = newName.events("failed").first?["message"] as? String ?? ""
        #expect(message.contains("job.lua:2: f.note: unknown finished field 'note'; known: path,"), "\(message)")
        let readOnly = try await run("""
            dl.on("response", function(d, r) d.url = "http://elsewhere/" end)
            """)
        let refusal = readOnly.events("failed").first?["message"] as? String ?? ""
        #expect(refusal.contains("job.lua:2: d.url is read-only (writable: dir, meta, name)"), "\(refusal)")
        let misspelled = try await run("""
            dl.on("response", function(d, r) local x = d.nmae end)
            """)
        let unknown = misspelled.events("failed").first?["message"] as? String ?? ""
        #expect(unknown.contains("job.lua:2: d.nmae: unknown download field 'nmae' (did you mean 'name'?)"), "\(unknown)")
    }
}
