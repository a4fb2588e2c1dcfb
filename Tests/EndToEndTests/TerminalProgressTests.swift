import Foundation
import Testing

/// The terminal's progress as a user sees it (issue 38): the built dlpipe runs
/// on a real pseudo-terminal (util-linux `script`), and the test reads every
/// redraw of the screen. `--rate` holds the body to a speed the test can rely
/// on without sleeps: 3 MiB at 1 MiB/s flow for about 3 s, some 30 redraws.
@Suite struct TerminalProgressTests {
    let server: FaultServer
    let out: String
    let urls: [String]

    init() throws {
        let server = try FaultServer()
        self.server = server
        out = try TempDir.make("term")
        urls = try (1...3).map { index in
            try server.put("t\(index).bin", randomBytes: 1 << 20, seed: UInt64(index))
            return server.url("/files/t\(index).bin")
        }
    }

    /// What the pty showed, split into redraws: each starts by moving up over
    /// the bars it replaces (ESC [ N F, ESC [ J); pty lines end in CR LF.
    private static func frames(_ screen: String) -> [[String]] {
        screen.components(separatedBy: "\u{1b}[J").map { chunk in
            chunk.replacingOccurrences(of: "\r", with: "").split(separator: "\n").map(String.init)
        }
    }

    /// A size, a speed's size, or an ETA read back: "1.5 MiB" -> bytes.
    private static func bytes(_ text: Substring) -> Double? {
        let parts = text.split(separator: " ")
        guard parts.count == 2, let value = Double(parts[0]) else { return nil }
        let units = ["B": 1.0, "KiB": 1024.0, "MiB": 1048576.0, "GiB": 1073741824.0]
        return units[String(parts[1])].map { value * $0 }
    }

    /// Runs `get` on a pty of 120 x 40 (or the size given), killed after 30 s:
    /// a hang fails in seconds.
    private func onTerminal(_ arguments: [String], columns: Int = 120, rows: Int = 40) throws -> (status: Int32, screen: String) {
        let quoted = ([Paths.binary] + arguments).map { "'" + $0.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let command = "stty cols \(columns) rows \(rows); exec " + quoted.joined(separator: " ")
        let process = try Subprocess("/usr/bin/script", ["-qfec", command, "/dev/null"],
                                     environment: ["NO_COLOR": "1", "SHELL": "/bin/sh"], timeout: 30)
        let (status, screen, stderr) = process.finish()
        return (status, screen + stderr)
    }

    @Test func totalLineAndBarsShowFilesBytesSpeedAndETAOnEveryRedraw() throws {
        let (status, screen) = try onTerminal(["get"] + urls + ["-j", "2", "--per-host", "2", "--rate", "1M", "-d", out])
        #expect(status == 0, "\(screen)")
        #expect(listing(out) == ["t1.bin", "t2.bin", "t3.bin"])
        let total = /^total: (\d+)\/(\d+) files, ([\d.]+ [KMG]?i?B)( of ([\d.]+ [KMG]?i?B))?, (-- B|[\d.]+ [KMG]?i?B)\/s(, ETA (\d+)s)?$/
        let bar = /^t\d\.bin +\[[#-]+\] +(\d+)% ([\d.]+ [KMG]?i?B) (-- B|[\d.]+ [KMG]?i?B)\/s( ETA (\d+)s)?$/
        var totals: [(done: Int, of: Int, bytes: Double, size: Double?, speed: Double?, eta: Int?)] = []
        var bars: [(bytes: Double, speed: Double?, eta: Int?)] = []
        for frame in Self.frames(screen) {
            for line in frame {
                if let m = line.wholeMatch(of: total) {
                    totals.append((Int(m.1)!, Int(m.2)!, Self.bytes(m.3)!, m.5.flatMap(Self.bytes),
                                   m.6 == "-- B" ? nil : Self.bytes(m.6), m.8.flatMap { Int($0) }))
                } else if let m = line.wholeMatch(of: bar) {
                    bars.append((Self.bytes(m.2)!, m.3 == "-- B" ? nil : Self.bytes(m.3), m.5.flatMap { Int($0) }))
                } else {
                    #expect(!line.hasPrefix("total:") && !line.hasPrefix("t1.bin "), "a line that does not read right: \(line)")
                }
            }
        }
        #expect(totals.count >= 15, "3 s of redraws 10 a second: \(totals.count)\n\(screen)")
        // While the body flows (bytes shown, files left), every redraw has a speed, never 0.
        let flowing = totals.filter { $0.bytes > 0 && $0.done < $0.of }
        #expect(flowing.count >= 10, "\(totals)")
        #expect(flowing.allSatisfy { ($0.speed ?? 0) > 0 }, "a redraw read 0 or no speed while bytes flowed: \(flowing)")
        // The cap holds the speed near 1 MiB/s: well above 0, never far above the cap.
        #expect(flowing.allSatisfy { ($0.speed ?? 0) < 2 * 1048576 }, "\(flowing)")
        #expect(totals.allSatisfy { $0.of == 3 }, "\(totals)")
        #expect(flowing.contains { $0.done >= 1 }, "files done of total: \(totals)")
        // Once every size is known (the third response): bytes of 3 MiB, and an ETA.
        let sized = flowing.filter { $0.size != nil }
        #expect(!sized.isEmpty && sized.allSatisfy { $0.size == 3 * 1048576 }, "\(totals)")
        #expect(sized.contains { $0.eta != nil }, "\(sized)")
        #expect(flowing.filter { $0.size == nil }.allSatisfy { $0.eta == nil }, "no ETA without a total")
        // Each bar its own speed and ETA.
        let moving = bars.filter { $0.bytes > 0 }
        #expect(moving.count >= 10, "\(bars)")
        #expect(moving.allSatisfy { ($0.speed ?? 0) > 0 }, "a bar read 0 or no speed with bytes in: \(moving)")
        #expect(moving.filter { $0.eta != nil }.count >= moving.count / 2, "\(moving)")
    }

    /// On a narrow, short terminal every line of the bars fits its width (a
    /// line that wrapped took two rows, and each redraw left one behind), a
    /// long name is cut in the middle and keeps the number and extension that
    /// tell it from the others, and the bars that do not fit are counted.
    @Test func onANarrowTerminalEveryLineFitsAndHiddenBarsAreCounted() throws {
        let names = (1...12).map { "a_rather_long_file_name_number_\($0).bin" }
        for (index, name) in names.enumerated() { try server.put(name, randomBytes: 256 << 10, seed: UInt64(index + 10)) }
        let (status, screen) = try onTerminal(
            ["get"] + names.map { server.url("/files/\($0)") } + ["-j", "12", "--per-host", "12", "--rate", "1M", "-d", out],
            columns: 60, rows: 12)
        #expect(status == 0, "\(screen)")
        #expect(listing(out).count == 12)
        let lines = Self.frames(screen).flatMap { $0 }
        let bars = lines.filter { $0.hasPrefix("a_rather") }
        let drawn = bars + lines.filter { $0.hasPrefix("total:") || $0.hasPrefix("… and ") }
        #expect(bars.count >= 20, "\(screen)")
        #expect(drawn.allSatisfy { $0.count <= 59 }, "lines wider than the terminal: \(drawn.filter { $0.count > 59 })")
        let cut = #/^a_rather\S*…\S*_(\d+)\.bin +(\d+)% /#
        #expect(bars.allSatisfy { $0.firstMatch(of: cut) != nil }, "\(bars.filter { $0.firstMatch(of: cut) == nil })")
        // 12 rows less the total line and room: 9 bars and a count of the rest.
        #expect(lines.contains { $0.wholeMatch(of: /… and \d+ more in flight/) != nil }, "\(screen)")
        #expect(Self.frames(screen).allSatisfy { $0.filter { $0.hasPrefix("a_rather") }.count <= 9 }, "\(screen)")
    }

    /// `--json` progress events carry the same figures: the download's speed
    /// and ETA, and the run's files, bytes, speed and ETA.
    @Test func jsonProgressEventsCarryTheSameFigures() async throws {
        let run = try await DLPipeRun.run(
            ["get"] + urls + ["-j", "2", "--per-host", "2", "--rate", "1M", "-d", out, "--json"], under: [], within: 30)
        #expect(run.status == 0, "\(run.stderr)")
        let progress = run.events("progress")
        #expect(progress.count >= 10, "\(progress.count) progress events")
        for event in progress {
            let speed = event["speed"] as? Double ?? 0
            #expect(speed > 0 && speed < 2 * 1048576, "\(event)")
            // The engine's own smoothed rate too, from the first report on.
            #expect(event["rate"] as? Double ?? 0 > 0, "\(event)")
            let overall = try #require(event["overall"] as? [String: Any], "\(event)")
            #expect(overall["files_total"] as? Int == 3, "\(event)")
            #expect((overall["speed"] as? Double ?? 0) > 0, "\(event)")
            #expect((overall["bytes"] as? Int ?? 0) > 0, "\(event)")
            if overall["total"] == nil { #expect(overall["eta"] == nil, "no ETA without a total: \(event)") }
        }
        #expect(progress.contains { $0["eta"] != nil }, "\(progress)")
        // Whole bytes per second and tenths of a second, as docs/cli.md shows them.
        let lines = run.stdout.split(separator: "\n").map(String.init).filter { $0.contains("\"event\":\"progress\"") }
        #expect(!lines.isEmpty && lines.allSatisfy { $0.range(of: #""speed":[0-9]+[,}]"#, options: .regularExpression) != nil }, "\(lines)")
        #expect(!lines.contains { $0.range(of: #""eta":[0-9]+\.[0-9]{2}"#, options: .regularExpression) != nil }, "\(lines)")
        #expect(progress.contains { ($0["overall"] as? [String: Any])?["total"] as? Int == 3 << 20 }, "\(progress)")
        #expect(progress.contains { ($0["overall"] as? [String: Any])?["eta"] != nil }, "\(progress)")
        #expect(progress.contains { ($0["overall"] as? [String: Any])?["files_done"] as? Int ?? 0 >= 1 }, "\(progress)")
    }
}
