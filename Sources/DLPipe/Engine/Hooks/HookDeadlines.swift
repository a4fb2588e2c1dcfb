/// Hook calls that have a deadline, earliest first (engine thread only).
/// An entry whose call was answered stays until it reaches the top and is
/// dropped there: no table keyed by call is needed, and the reply path stays
/// one atomic exchange.
struct HookDeadlines {
    struct Entry {
        let due: Double
        let gate: HookReplyGate
        /// What the engine answers in the hook's place.
        let expiry: EngineLoop.Command
    }

    private var heap = Heap<Entry>(by: { $0.due < $1.due })

    mutating func add(_ entry: Entry) { heap.push(entry) }

    /// The calls past their deadline that nobody answered; answered entries at
    /// the top are dropped on the way, so `nextDue` is a call still waiting.
    mutating func expired(now: Double) -> [Entry] {
        var due: [Entry] = []
        while let top = heap.first, top.gate.isAnswered || top.due <= now {
            _ = heap.pop()
            if top.gate.claim() { due.append(top) }
        }
        return due
    }

    var nextDue: Double? { heap.first?.due }
}
