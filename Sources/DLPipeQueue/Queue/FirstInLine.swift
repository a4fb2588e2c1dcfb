import DLPipe

/// A first-in, first-out line whose first element leaves without the others
/// moving or being copied: the claims a worker holds ahead for one host, up
/// to 12 x `-j`, one of which leaves at every transfer's end. Taken out of an
/// array with `removeFirst`, each left cost a move of all the others, and,
/// read out of its dictionary first, a copy of the array with a retain and
/// release of every string in every claim (3 % of a busy worker's CPU).
struct FirstInLine<Element> {
    private var items: [Element] = []
    /// The index of the first element still in line.
    private var head = 0

    var count: Int { items.count - head }
    var isEmpty: Bool { head == items.count }
    /// The elements in line, first first.
    var elements: ArraySlice<Element> { items[head...] }

    mutating func append(_ element: Element) {
        items.append(element)
    }

    /// The first element, out of the line.
    mutating func popFirst() -> Element? {
        guard head < items.count else { return nil }
        let first = items[head]
        head += 1
        if head == items.count {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 32 && head * 2 >= items.count {
            // The departed, once they are half the storage, make room at once.
            items.removeFirst(head)
            head = 0
        }
        return first
    }

    /// The first element that `matches`, out of the line; nil when none does.
    mutating func remove(firstWhere matches: (Element) -> Bool) -> Element? {
        guard let index = items[head...].firstIndex(where: matches) else { return nil }
        return items.remove(at: index)
    }
}
