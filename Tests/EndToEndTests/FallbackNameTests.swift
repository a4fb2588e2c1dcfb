import Foundation
import Testing

/// A download that failed for good leaves no part file that holds its name
/// (issue 14, item 4): a handled failure's part file goes, so a fallback for the
/// same target takes the name; one the next run could not resume goes too.
@Suite struct FallbackNameTests: ServerJobSuite {
    let fixture: ServerJobFixture
    let data: [UInt8]

    init() throws {
        fixture = try ServerJobFixture(label: "fallback")
        data = try fixture.server.put("big.bin", randomBytes: 3_000_000)
    }

    private func run(_ source: String) async throws -> DLPipeRun {
        try await job.run(source: source, out: out, ["--var", "base=\(server.url("/files"))"])
    }

    @Test func aHandledFailuresFallbackTakesTheName() async throws {
        // The primary breaks after 1 MB (its part file is on disk, with a
        // validator: a run that did not hand it off would keep it to resume).
        let run = try await run("""
            dl.config{ retries = 0 }
            dl.add{ url = dl.var.base .. "/big.bin?reset=1000000", meta = { primary = true } }
            dl.on("failed", function(d, e)
              if d.meta and d.meta.primary then
                dl.add(dl.var.base .. "/big.bin")
                return dl.handled()
              end
            end)
            """)
        #expect(run.status == 0, "\(run.stderr)")
        #expect(run.events("handled").first?["kind"] as? String == "network", "\(run.stdout)")
        #expect(listing(out) == ["big.bin"], "no big.1.bin, no big.bin.part")
        #expect(sameBytes(out + "/big.bin", data))
    }

    @Test func aPartFileWithoutAValidatorIsRemovedWhenTheDownloadFails() async throws {
        let run = try await run("""
            dl.config{ retries = 0 }
            dl.add(dl.var.base .. "/big.bin?reset=1000000&no_validators=1")
            """)
        #expect(run.status == 1)
        #expect(listing(out).isEmpty, "nothing could resume it: \(listing(out))")
    }

    @Test func aPartFileTheNextRunCanResumeStays() async throws {
        let run = try await run("""
            dl.config{ retries = 0 }
            dl.add(dl.var.base .. "/big.bin?reset=1000000")
            """)
        #expect(run.status == 1)
        #expect(listing(out) == ["big.bin.part"], "kept for the next run's Range request")
    }
}
