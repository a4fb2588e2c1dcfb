import DLPipe
import Foundation

/// A monotonic clock in seconds: leases are measured on it, never on the wall clock.
enum QueueClock {
    static func now() -> Double {
        var spec = timespec()
        clock_gettime(CLOCK_MONOTONIC, &spec)
        return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
    }
}
