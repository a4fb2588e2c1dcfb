/// A set of download numbers (`DownloadID.rawValue`), one bit each. An
/// engine numbers its downloads 1, 2, 3...: a million queued ids take 125 KB
/// here, against about 32 MB in a `Set<DownloadID>` (a table of 2^21 slots).
struct NumberSet {
    private var words: [UInt64] = []
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    func contains(_ number: Int) -> Bool {
        let word = number >> 6
        return number >= 0 && word < words.count && words[word] & (1 << UInt64(number & 63)) != 0
    }

    /// Adds `number`; true when it was not in the set.
    @discardableResult
    mutating func insert(_ number: Int) -> Bool {
        precondition(number >= 0, "download numbers count from 1")
        let word = number >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: max(word + 1 - words.count, words.count))) }
        let bit: UInt64 = 1 << UInt64(number & 63)
        guard words[word] & bit == 0 else { return false }
        words[word] |= bit
        count += 1
        return true
    }

    /// Removes `number`; true when it was in the set.
    @discardableResult
    mutating func remove(_ number: Int) -> Bool {
        guard contains(number) else { return false }
        words[number >> 6] &= ~(1 << UInt64(number & 63))
        count -= 1
        return true
    }

    mutating func removeAll() {
        words = []
        count = 0
    }

    /// The numbers in the set, in increasing order.
    var sorted: [Int] {
        var numbers: [Int] = []
        numbers.reserveCapacity(count)
        for (index, word) in words.enumerated() where word != 0 {
            var bits = word
            while bits != 0 {
                numbers.append(index << 6 | bits.trailingZeroBitCount)
                bits &= bits - 1
            }
        }
        return numbers
    }
}
