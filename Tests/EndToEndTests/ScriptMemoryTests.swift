import Foundation
import Testing

/// What Swift holds for a script's `dl.*` call counts against the script memory cap
/// (256 MiB): a call whose arguments' copies would not fit in what the cap leaves is
/// an error at its line, before Swift copies them. (`dl.url.parse` of a 60 MB string
/// once peaked at 581 MB.) The job reads its own peak RSS (`--unsafe-lua` for io).
@Suite struct ScriptMemoryTests {
    let job: LuaJob

    init() throws {
        job = try LuaJob()
    }

    /// The process's peak RSS in KiB after `call` (a Lua expression of `s`, a string of
    /// `megabytes`), and what the call printed.
    func peak(_ call: String, megabytes: Int = 60) async throws -> (kib: Int, said: String) {
        let path = try job.write("job.lua", """
            local s = "http://h/" .. string.rep("a", \(megabytes) * 1024 * 1024)
            local ok, e = pcall(function() return \(call) end)
            if not ok then print("refused: " .. tostring(e):gsub("\\n.*", "")) end
            s, e = nil, nil
            collectgarbage()
            print("VmHWM " .. io.open("/proc/self/status"):read("a"):match("VmHWM:%s*(%d+)"))
            """)
        let run = try await DLPipeRun.run(["check", "--unsafe-lua", "--no-hooks", path])
        #expect(run.status == 0, "\(run.stderr)")
        let kib = run.stderr.split(separator: "\n").compactMap { line in
            line.range(of: "VmHWM ").map { Int(line[$0.upperBound...]) ?? 0 }
        }.first
        return (try #require(kib, "\(run.stderr)"), run.stderr)
    }

    @Test(arguments: ["dl.url.parse(s)", "dl.url.resolve('http://h/', s)", "dl.safename(s)", "dl.log(s)"])
    func aHugeArgumentStaysInsideTheCap(_ call: String) async throws {
        let empty = try await peak("nil", megabytes: 0)
        let measured = try await peak(call)
        // The string and the garbage that built it already hold 120 MB of the cap, so
        // Swift's copies (about 6 times the argument for the URL calls, 3 for dl.log, 14
        // for dl.safename) do not fit: refused before they are made. The process holds
        // no more than the cap beyond a job without the string (32 MiB of slack for the
        // allocator's rounding); it held 427 MB more for dl.url.parse.
        #expect(measured.kib - empty.kib < (256 + 32) * 1024, "\(call): \(measured.kib) KiB against \(empty.kib) KiB")
        #expect(measured.said.contains("job.lua:2: not enough memory: "), "\(measured.said)")
        #expect(measured.said.contains("more than the script memory cap of 256 MiB leaves"), "\(measured.said)")
    }
}
