import Foundation

/// Calls `probe` every 0.1 s until it returns a value, at most `seconds`;
/// then throws. For conditions only a query can see (a database's clock
/// running out a lease), where nothing can be awaited.
public func pollUntil<T>(seconds: Double, _ probe: () throws -> T?) throws -> T {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if let value = try probe() { return value }
        usleep(100_000)
    }
    throw PollTimedOut(seconds: seconds)
}

/// `pollUntil`'s failure.
public struct PollTimedOut: Error, CustomStringConvertible {
    public let seconds: Double
    public var description: String { "the condition did not hold within \(seconds) s" }
}
