/// The events waiting for one slow reader, in order, with each download's
/// progress coalesced: a progress event replaces the one of the same download
/// still waiting since that download's last other event, so a reader that lags
/// holds a few events per download however many bytes arrive.
struct EventQueue {
    private var items: [DownloadEvent] = []
    /// Index in `items` of the first event not yet taken.
    private var head = 0
    /// Where each download's waiting progress event is, as an absolute position
    /// (`taken` + index), until another event of that download follows it.
    private var progressSlot: [DownloadID: Int] = [:]
    /// Events taken and dropped from the front of `items` so far.
    private var taken = 0

    /// Events waiting.
    var count: Int { items.count - head }

    mutating func push(_ event: DownloadEvent) {
        if case .progress(let download, _) = event {
            if let slot = progressSlot[download.id] {
                items[slot - taken] = event
                return
            }
            progressSlot[download.id] = taken + items.count
        } else if !progressSlot.isEmpty, let id = event.download?.id {
            // A later progress must come after this event, not replace one before it.
            progressSlot[id] = nil
        }
        items.append(event)
    }

    mutating func pop() -> DownloadEvent? {
        guard head < items.count else { return nil }
        let event = items[head]
        if case .progress(let download, _) = event, progressSlot[download.id] == taken + head {
            progressSlot[download.id] = nil
        }
        head += 1
        if head == items.count {
            taken += head
            items = []
            head = 0
        } else if head >= 1024 && head * 2 >= items.count {
            // Drop what was read once it is most of the buffer: amortised O(1).
            items.removeFirst(head)
            taken += head
            head = 0
        }
        return event
    }

    mutating func removeAll() {
        taken += items.count - head
        items = []
        head = 0
        progressSlot = [:]
    }
}
