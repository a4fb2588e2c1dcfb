import Foundation
import Testing

/// `dl.add` takes http and https URLs only, in any case, and says so at the
/// add's line (the scheme is read from the URL's first part, not by splitting it).
@Suite struct AddSchemeTests {
    @Test func anotherSchemeIsAnErrorOfTheAddAndAnyCaseOfHTTPIsTaken() async throws {
        let job = try LuaJob()
        try job.write("job.lua", """
            dl.add("HTTPS://127.0.0.1:1/a.bin")
            dl.add("Http://127.0.0.1:1/b.bin")
            local ok, err = pcall(dl.add, "ftp://127.0.0.1/c.bin")
            dl.log("ftp", ok, err)
            dl.add("file:///etc/passwd")
            """)
        let run = try await DLPipeRun.run(["check", job.directory + "/job.lua", "--no-hooks"])
        #expect(run.status == 2, "\(run.stderr)")
        #expect(run.logLines(containing: "ftp\tfalse\t").first?
            .contains("only http and https URLs can be added, not \"ftp://127.0.0.1/c.bin\"") == true, "\(run.stderr)")
        #expect(run.stderr.contains("job.lua:5: dl.add: only http and https URLs can be added, not \"file:///etc/passwd\""),
                "\(run.stderr)")
    }
}
