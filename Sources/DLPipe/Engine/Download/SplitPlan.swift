/// A split download's segments (docs/design/split.md): the file's length,
/// the validator every segment sends in `If-Range`, and for each segment
/// `[start, end)` the first byte not yet written and the transfer on it.
/// Engine thread only; kept in `TransferPool.splits` while the download lives.
final class SplitPlan {
    struct Segment: Equatable {
        let start: Int64
        let end: Int64
        /// The first byte not yet written (`end` when the segment is whole).
        var next: Int64
        var isWhole: Bool { next >= end }
    }

    /// How a segment's transfer holds its slot.
    enum Slot {
        /// The download's own slot (its first transfer's, once that ended).
        case download
        /// A slot of its own (`Scheduler.takeSegmentSlot`), from `host`.
        case extra(host: String)
    }

    /// The least bytes a segment gets (aria2's `--min-split-size` default is
    /// 20 MiB; 1 MiB splits files large enough to gain from more connections).
    static let minimumSegment: Int64 = 1 << 20
    /// A segment's answer shows another version of the file than the first
    /// response's: the download starts over from byte 0.
    static let changed = DownloadError(
        .network, "the file changed on the server during a split download (a segment's If-Range did not match); it starts over")

    let total: Int64
    let validator: String
    private(set) var segments: [Segment]
    /// The side transfers by segment index, with how each holds its slot.
    private(set) var running: [Int: (transfer: Transfer, slot: Slot)] = [:]
    /// The segment the download's first transfer writes, while it runs.
    private(set) var mainSegment: Int?
    /// Whether the download's own slot carries no transfer (its first one ended).
    var downloadSlotFree = false
    /// Whether the state has committed a record with these segments: no side
    /// transfer writes before (a re-run must never meet bytes no record counts).
    var recorded = false
    /// Whether the whole file is being hashed before it is placed.
    var awaitsDigest = false
    /// When the segments' progress was last synced to be saved, and whether
    /// that sync is under way.
    var savedAt = 0.0
    var syncing = false
    /// What the record says of the segments: their progress as of the part
    /// file's last sync (`recordText` taken before it), never bytes that a
    /// power loss could take back. Until the first sync, no segment's bytes.
    private(set) var durableText: String

    /// The part file was synced after `text` was taken.
    func synced(_ text: String) {
        durableText = text
        syncing = false
    }

    private init(total: Int64, validator: String, segments: [Segment]) {
        self.total = total
        self.validator = validator
        self.segments = segments
        durableText = segments.map { "\($0.start):\($0.next):\($0.end)" }.joined(separator: ",")
    }

    /// A new plan of up to `connections` equal segments of at least
    /// `minimumSegment` bytes; nil when the file is too small for two.
    static func make(total: Int64, validator: String, connections: Int) -> SplitPlan? {
        let count = Int(min(Int64(connections), total / minimumSegment))
        guard count >= 2 else { return nil }
        let size = total / Int64(count)
        let segments = (0..<count).map { i in
            let start = Int64(i) * size
            return Segment(start: start, end: i == count - 1 ? total : start + size, next: start)
        }
        return SplitPlan(total: total, validator: validator, segments: segments)
    }

    /// The plan a record kept (`text`: `start:next:end` triples, comma-separated),
    /// or nil when it does not describe `total` bytes in order.
    static func recorded(_ text: String, total: Int64?, validator: String?) -> SplitPlan? {
        guard let total, let validator else { return nil }
        var segments: [Segment] = []
        for triple in text.split(separator: ",") {
            let parts = triple.split(separator: ":").compactMap { Int64($0) }
            guard parts.count == 3, parts[0] == (segments.last?.end ?? 0), parts[0] <= parts[1], parts[1] <= parts[2]
            else { return nil }
            segments.append(Segment(start: parts[0], end: parts[2], next: parts[1]))
        }
        guard segments.count >= 2, segments.last?.end == total else { return nil }
        let plan = SplitPlan(total: total, validator: validator, segments: segments)
        plan.recorded = true
        return plan
    }

    /// The record's text for the segments as they stand.
    var recordText: String {
        (0..<segments.count).map { "\(segments[$0].start):\(written(through: $0)):\(segments[$0].end)" }
            .joined(separator: ",")
    }

    /// The first byte not yet written of segment `i`, counting its running transfer.
    private func written(through i: Int) -> Int64 {
        let transfer = running[i]?.transfer ?? (mainSegment == i ? mainTransfer : nil)
        guard let transfer else { return segments[i].next }
        return min(segments[i].end, max(segments[i].next, transfer.resumeOffset + transfer.received))
    }

    /// A running transfer's part file, for a sync of the file.
    var anyFile: PartFile? { mainTransfer?.file ?? running.values.lazy.compactMap(\.transfer.file).first }

    /// The download's first transfer, while it writes `mainSegment`.
    private(set) var mainTransfer: Transfer?

    /// Bytes of the file written so far (every segment's).
    var writtenBytes: Int64 {
        (0..<segments.count).reduce(Int64(0)) { $0 + written(through: $1) - segments[$1].start }
    }

    /// Where the next attempt's first transfer starts: the first byte not yet
    /// written of the first segment that is not whole; nil when all are.
    var resumePoint: Int64? {
        segments.first { !$0.isWhole }?.next
    }

    var isWhole: Bool { segments.allSatisfy(\.isWhole) }

    var sideTransfers: [Transfer] { running.values.map(\.transfer) }

    /// The segment index a side transfer works on.
    func segment(of transfer: Transfer) -> Int? {
        running.first { $0.value.transfer === transfer }?.key
    }

    /// Segments no transfer works on and not whole, in order.
    var waiting: [Int] {
        segments.indices.filter { !segments[$0].isWhole && running[$0] == nil && mainSegment != $0 }
    }

    func segmentAt(_ i: Int) -> Segment { segments[i] }

    // MARK: The first transfer

    /// The download's first transfer writes from `offset` (a segment's next
    /// byte): that segment is its own. Its limit is the segment's end.
    func mainStarts(_ transfer: Transfer, at offset: Int64) -> Int64? {
        guard let i = segments.firstIndex(where: { $0.start <= offset && offset < $0.end && $0.next == offset }) else {
            return nil
        }
        mainSegment = i
        mainTransfer = transfer
        downloadSlotFree = false
        return segments[i].end
    }

    /// The first transfer reached its segment's end: the segment is whole, and
    /// the transfer goes on into the next one when no transfer has it (the
    /// new limit), else stops (nil).
    func mainReachedEnd() -> Int64? {
        guard let i = mainSegment else { return nil }
        segments[i].next = segments[i].end
        let following = i + 1
        // A segment whose own transfer finished it (often before the first
        // transfer gets there: all run at the same speed) is never fetched again.
        guard following < segments.count, running[following] == nil, !segments[following].isWhole else { return nil }
        mainSegment = following
        segments[following].next = segments[following].start  // its bytes come again, the same ones
        return segments[following].end
    }

    /// The first transfer ended (whole or not): what it wrote stays.
    func mainEnded() {
        if let i = mainSegment { segments[i].next = written(through: i) }
        mainSegment = nil
        mainTransfer = nil
        downloadSlotFree = true
    }

    // MARK: Side transfers

    func sideStarts(_ i: Int, _ transfer: Transfer, slot: Slot) {
        running[i] = (transfer, slot)
    }

    /// A side transfer ended or was stopped: what it wrote stays. Returns how
    /// it held its slot.
    @discardableResult
    func sideEnded(_ transfer: Transfer) -> Slot? {
        guard let i = segment(of: transfer), let entry = running[i] else { return nil }
        segments[i].next = written(through: i)
        running[i] = nil
        return entry.slot
    }
}
