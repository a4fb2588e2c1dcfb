import DLPipe

/// A progress event's figures from a `ProgressMeter`, taken when the event came.
struct MeterReading: Sendable {
    /// The download's (nil if the meter saw no response for it).
    var download: ProgressMeter.Figures?
    var overall: ProgressMeter.Overall
}

extension JSONLine {
    /// `speed` and `eta` of the download, and `overall`: the run's files and
    /// bytes done of the totals known, its speed and ETA (docs/cli.md, Output).
    /// A figure with no estimate is left out, not written as 0. Speeds are
    /// whole bytes per second and ETAs tenths of a second, as docs/cli.md shows.
    static func add(_ reading: MeterReading, to object: inout JSONObject) {
        object.add("speed", reading.download?.speed, decimals: 0)
        object.add("eta", reading.download?.eta.map(tenths), decimals: 1)
        var overall = JSONObject()
        overall.add("files_done", reading.overall.filesDone)
        overall.add("files_total", reading.overall.filesTotal)
        let f = reading.overall.figures
        overall.add("bytes", f.bytes)
        overall.add("total", f.total)
        overall.add("speed", f.speed, decimals: 0)
        overall.add("eta", f.eta.map(tenths), decimals: 1)
        object.add("overall", json: overall.json)
    }

    private static func tenths(_ seconds: Double) -> Double { (seconds * 10).rounded(.up) / 10 }
}
