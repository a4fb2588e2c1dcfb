/// The ids `dl.add` returns at a job's top level, before the run starts.
///
/// Without a shared queue they are 1, 2, 3... in add order: the engine gives
/// the same numbers when it queues them. A shared queue numbers downloads by
/// its rows, which the job's top level cannot wait for (one round trip per
/// add would make 10,000 adds take seconds, more over a network), so there
/// they are -1, -2, -3...: provisional ids that no row of the queue can have.
/// When the top level ended and the worker queued its adds, each provisional
/// id and its row are one download to the scripts, both ways: a number that
/// comes from Lua (`dl.cancel`, `dl.pause`, `dl.resume`, a handler's add's
/// parent) names the row (`row(of:)`), and the row's id goes into Lua as the
/// provisional id (`d.id`, `d.parent`, what `dl.add` returns: `shown(_:)`),
/// so that `d.id == feed` holds for `local feed = dl.add(url)` as it does
/// without a queue. Every worker runs the same top level and gets its rows
/// in add order, so -3 is the same download in each. A positive number is
/// always a row's id, so the two never mix. What the command line prints
/// (lines, `--json`) keeps the rows' ids.
struct ProvisionalIDs {
    /// Whether the run is a shared queue's, as the command line said
    /// (`--queue`, `DLPIPE_QUEUE`: true; `--no-queue`: false); nil when the
    /// job's own `dl.config{ queue }` decides.
    var commandLine: Bool?
    /// The job called `dl.config{ queue = ... }`.
    var configNamesQueue = false
    /// Whether the ids are negative: decided at the first top-level add and kept.
    private(set) var negative: Bool?
    /// The queue's row id of each top-level add, by add order (once queued).
    private var rows: [Int] = []
    /// The provisional id of each of those rows (empty without a queue).
    private var provisionalOfRow: [Int: Int] = [:]

    /// The id of the top-level add at `position` (1, 2, 3... in add order).
    mutating func id(ofPosition position: Int) -> Int {
        let negative = self.negative ?? commandLine ?? configNamesQueue
        self.negative = negative
        return negative ? -position : position
    }

    /// Why `dl.config{ queue }` cannot come now: the job's first adds were
    /// numbered as without a queue, and those numbers are in its hands.
    var lateQueueProblem: String? {
        guard commandLine == nil, negative == false else { return nil }
        return "dl.config: queue is set after the job's first dl.add, whose id was given as without a queue; call dl.config{ queue = ... } before dl.add"
    }

    /// The worker queued the top-level adds: `ids` are their rows, in add order.
    mutating func queued(_ ids: [Int]) {
        guard negative == true else { return }
        rows = ids
        provisionalOfRow.reserveCapacity(ids.count)
        // 0: an add the run refused (past its max_downloads); no row.
        for (index, row) in ids.enumerated() where row > 0 && provisionalOfRow[row] == nil {
            provisionalOfRow[row] = -(index + 1)
        }
    }

    /// The id the scripts know download `row` by: its provisional id for a
    /// top-level add, else the row's own.
    func shown(_ row: Int) -> Int {
        provisionalOfRow.isEmpty ? row : provisionalOfRow[row] ?? row
    }

    /// The row a provisional id names; nil for any other number.
    func row(of number: Int) -> Int? {
        // Compared without negating: -Int.min (dl.cancel(math.mininteger)) traps.
        number < 0 && number >= -rows.count ? rows[-number - 1] : nil
    }
}
