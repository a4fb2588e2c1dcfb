import Testing

@testable import DLPipe

/// The terminal's and `--json`'s speed and ETA (issue 38): a speed over a
/// sliding window reads 0 only when no byte came for the whole window, however
/// bursty the arrivals and however often it is read.
@Suite struct ProgressMeterTests {
    /// Bursts of 300 kB every 300 ms (1 MB/s), read every 100 ms, as the bars
    /// are redrawn: between bursts the speed never reads 0, nor unknown once
    /// the first burst came, and once the window is full it reads the true
    /// speed within a few percent.
    @Test func burstsNeverReadZeroBetweenThem() {
        var window = RateWindow(start: 0)
        var count: Int64 = 0
        var readings: [(time: Double, rate: Double?)] = []
        for tick in 1...150 {  // 15 s
            let now = Double(tick) / 10
            if tick % 3 == 0 {
                count += 300_000
                window.record(count, at: now)
            }
            readings.append((now, window.rate(at: now)))
        }
        let beforeFirst = readings.filter { $0.time < 0.3 }
        #expect(beforeFirst.allSatisfy { $0.rate == nil }, "no estimate before the first byte: \(beforeFirst)")
        let after = readings.filter { $0.time >= 0.3 }
        #expect(after.allSatisfy { ($0.rate ?? 0) > 0 }, "\(after.filter { ($0.rate ?? 0) <= 0 })")
        let settled = readings.filter { $0.time >= 6 }.map { $0.rate ?? 0 }
        #expect(settled.allSatisfy { abs($0 - 1_000_000) < 70_000 }, "\(settled)")
    }

    /// The first report gives a speed at once (the old one read 0 until a
    /// second report came): bytes over the time since the response.
    @Test func firstReportGivesASpeed() throws {
        var window = RateWindow(start: 10)
        window.record(250_000, at: 10.25)
        let rate = try #require(window.rate(at: 10.3))
        #expect(abs(rate - 1_000_000) < 1, "the time since the report holds bytes not reported yet")
    }

    /// A transfer that stops slows down to 0, and reads 0 only once no byte
    /// came for the whole window (5 s, read up to 1 s late).
    @Test func aStallSlowsToZeroAfterTheWindow() throws {
        var window = RateWindow(start: 0)
        for tick in 1...20 { window.record(Int64(tick) * 100_000, at: Double(tick) / 4) }  // 400 kB/s for 5 s
        let steady = try #require(window.rate(at: 5.5))
        #expect(abs(steady - 400_000) < 1000)
        let slowing = try #require(window.rate(at: 8))
        #expect(slowing > 0 && slowing < steady)
        #expect(try #require(window.rate(at: 10.9)) > 0, "a byte came 4.9 s into the window")
        #expect(window.rate(at: 11) == 0)
        #expect(window.rate(at: 100) == 0)
    }

    /// Nothing yet is "unknown" until a whole window passed without a byte.
    @Test func noByteIsUnknownThenZero() {
        let window = RateWindow(start: 0)
        #expect(window.rate(at: 3) == nil)
        #expect(window.rate(at: 6) == 0)
        #expect(window.eta(remaining: 100, at: 6) == nil, "no ETA at a speed of 0")
    }

    /// Samples older than the window are dropped: memory stays flat over a long transfer.
    @Test func oldSamplesAreDropped() throws {
        var window = RateWindow(start: 0)
        for tick in 1...100_000 { window.record(Int64(tick) * 1000, at: Double(tick) / 10) }
        #expect(abs(try #require(window.rate(at: 10_000)) - 10_000) < 1)
        #expect(window.sampleCount <= 62, "\(window.sampleCount) samples kept for a 5 s window at 10 a second")
    }

    private static func info(_ number: Int) -> DownloadInfo {
        DownloadInfo(id: DownloadID(number), url: "http://h/\(number)", directory: "", attempt: 1, meta: [:])
    }

    private static func finished(_ bytes: Int64) -> FinishedInfo {
        FinishedInfo(path: "/f", bytes: bytes, type: "", seconds: 1, unchanged: false)
    }

    /// Files done of the files known, bytes done of the total once every
    /// file's size is known, and ETAs from the windowed speed.
    @Test func meterCountsFilesBytesAndTheTotal() throws {
        var meter = ProgressMeter()
        let (a, b) = (Self.info(1), Self.info(2))
        meter.record(.queued(a), at: 0)
        meter.record(.queued(b), at: 0)
        meter.record(.response(a, ResponseInfo(status: 200, length: 1000, url: a.url)), at: 1)
        meter.record(.progress(a, ProgressInfo(bytes: 400, total: 1000, rate: 0)), at: 2)
        var overall = meter.overall(at: 2)
        #expect(overall.filesDone == 0 && overall.filesTotal == 2)
        #expect(overall.figures.bytes == 400)
        #expect(overall.figures.total == nil, "b has no size yet")
        #expect(overall.figures.eta == nil)
        let figures = try #require(meter.figures(of: a.id, at: 2))
        #expect(figures.speed == 400)
        #expect(figures.eta == 1.5)
        // b's size is known: the run's total is, and so is its ETA.
        meter.record(.response(b, ResponseInfo(status: 200, length: 3000, url: b.url)), at: 2)
        meter.record(.progress(a, ProgressInfo(bytes: 1000, total: 1000, rate: 0)), at: 3)
        meter.record(.finished(a, Self.finished(1000)), at: 3)
        overall = meter.overall(at: 3)
        #expect(overall.filesDone == 1 && overall.filesTotal == 2)
        #expect(overall.figures.bytes == 1000 && overall.figures.total == 4000)
        #expect(overall.figures.speed == 500, "1000 bytes in the 2 s since the first response")
        #expect(overall.figures.eta == 6)
        #expect(meter.figures(of: a.id, at: 3) == nil, "an ended download has no bar")
    }

    /// The run's ETA is never shorter than its slowest file's own: a fast file
    /// that just ended still counts in the run's window of speed.
    @Test func theRunsETAIsNoShorterThanItsSlowestFile() throws {
        var meter = ProgressMeter()
        let (a, b) = (Self.info(1), Self.info(2))
        meter.record(.queued(a), at: 0)
        meter.record(.queued(b), at: 0)
        meter.record(.response(a, ResponseInfo(status: 200, length: 10_000, url: a.url)), at: 0)
        meter.record(.response(b, ResponseInfo(status: 200, length: 10_000, url: b.url)), at: 0)
        meter.record(.progress(a, ProgressInfo(bytes: 10_000, total: 10_000, rate: 0)), at: 1)
        meter.record(.finished(a, Self.finished(10_000)), at: 1)
        meter.record(.progress(b, ProgressInfo(bytes: 1000, total: 10_000, rate: 0)), at: 1)
        let slow = try #require(meter.figures(of: b.id, at: 1)?.eta)
        #expect(slow == 9, "9000 bytes left at 1000 bytes a second")
        let overall = meter.overall(at: 1)
        #expect(overall.figures.speed == 11_000)
        #expect(overall.figures.eta == slow, "the window's 9000 / 11000 s would end the run before b")
    }

    /// A resume's kept bytes are bytes done but not speed; a retry that
    /// starts over does not count its bytes twice.
    @Test func resumedBytesAreNotSpeed() throws {
        var meter = ProgressMeter()
        let a = Self.info(1)
        meter.record(.queued(a), at: 0)
        meter.record(.response(a, ResponseInfo(status: 206, length: 10_000, url: a.url, resumedFrom: 8000)), at: 0)
        meter.record(.progress(a, ProgressInfo(bytes: 8500, total: 10_000, rate: 0)), at: 1)
        var figures = try #require(meter.figures(of: a.id, at: 1))
        #expect(figures.bytes == 8500 && figures.speed == 500 && figures.eta == 3)
        #expect(meter.overall(at: 1).figures.speed == 500)
        // The connection broke; the retry's server ignores the range: from 0.
        meter.record(.response(a, ResponseInfo(status: 200, length: 10_000, url: a.url)), at: 2)
        meter.record(.progress(a, ProgressInfo(bytes: 1000, total: 10_000, rate: 0)), at: 3)
        figures = try #require(meter.figures(of: a.id, at: 3))
        #expect(figures.bytes == 1000 && figures.speed == 1000)
        #expect(meter.overall(at: 3).figures.speed == 500, "1500 bytes received in 3 s")
    }
}
