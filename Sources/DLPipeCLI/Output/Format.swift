import Foundation

/// Human sizes, rates and durations.
enum Format {
    static func bytes(_ count: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(count)
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return unit == 0 ? "\(count) B" : String(format: "%.1f %@", value, units[unit])
    }

    static func rate(_ bytesPerSecond: Double) -> String {
        bytes(Int64(bytesPerSecond.isFinite ? bytesPerSecond : 0)) + "/s"
    }

    /// A speed from `ProgressMeter`: "--" while it has no estimate yet.
    static func speed(_ bytesPerSecond: Double?) -> String {
        bytesPerSecond.map(rate) ?? "-- B/s"
    }

    /// "ETA 4s", "ETA 1m05s": whole seconds, rounded up (a wait of 0.2 s is 1 s away).
    static func eta(_ value: Double) -> String {
        let whole = Int(min(value, 359_999).rounded(.up))
        if whole < 60 { return "ETA \(whole)s" }
        return "ETA " + seconds(Double(whole))
    }

    static func seconds(_ value: Double) -> String {
        if value < 60 { return String(format: "%.1fs", value) }
        let whole = Int(value)
        return whole < 3600
            ? String(format: "%dm%02ds", whole / 60, whole % 60)
            : String(format: "%dh%02dm", whole / 3600, whole % 3600 / 60)
    }
}
