import Synchronization

/// One download of one engine. An id is bound to the engine that made it: an id
/// of engine A given to engine B is refused (B's `pause` answers false, its
/// `outcome(of:)` nil), never taken for B's download of the same number.
///
/// Ids are made by `DownloadEngine.add`; a bridge that carries ids as plain
/// numbers (the Lua API, the command line's `[id]`) turns a number back into
/// an id of its engine with `DownloadEngine.downloadID(number:)`.
public struct DownloadID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The engine's serial in the high bits, the download's number in the low
    /// ones: one word, so that the engine's tables keyed by ids stay as small
    /// and as cheap to hash as with a bare number.
    private let bits: Int

    static let numberBits = 40
    private static let numberMask = (1 << numberBits) - 1

    /// An id of the engine whose serial is `engine`.
    package init(_ number: Int, engine: Int) {
        bits = (engine << DownloadID.numberBits) | (number & DownloadID.numberMask)
    }

    /// An id of no engine (serial 0), for unit tests of engine parts.
    init(_ number: Int) { self.init(number, engine: 0) }

    /// The number, unique within one engine, counting from 1 (what the command
    /// line prints and Lua scripts see).
    public var rawValue: Int { bits & DownloadID.numberMask }

    /// The serial of the engine that made the id.
    var engine: Int { bits >> DownloadID.numberBits }

    /// The number, as the command line prints it.
    public var description: String { String(rawValue) }

    /// By engine, then in the order the engine made them.
    public static func < (a: DownloadID, b: DownloadID) -> Bool { a.bits < b.bits }
}

/// Serials of engines: every engine of the process gets its own, from 1.
enum EngineSerial {
    private static let last = Atomic<Int>(0)

    /// The next serial. After 2^23 engines in one process serials wrap (an id
    /// then could match a much older engine's: a process that makes millions of
    /// engines should not keep ids across them).
    static func next() -> Int {
        let serial = last.add(1, ordering: .relaxed).newValue
        return (serial - 1) % (1 << 23) + 1
    }
}
