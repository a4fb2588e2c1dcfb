import Testing

@testable import DLPipe
@testable import DLPipeQueue

/// The line of claims held ahead for a host: first in, first out, whatever
/// the order of appends and departures.
@Suite struct FirstInLineTests {
    @Test func elementsLeaveInTheOrderTheyCameAcrossCompactions() {
        var line = FirstInLine<Int>()
        var expected: [Int] = []
        var next = 0
        var left: [Int] = []
        // Enough rounds of three in, two out that the departed are compacted away many times.
        for _ in 0..<200 {
            for _ in 0..<3 {
                line.append(next)
                expected.append(next)
                next += 1
            }
            for _ in 0..<2 { left.append(line.popFirst()!) }
            #expect(line.count == expected.count - left.count)
            #expect(Array(line.elements) == Array(expected[left.count...]))
        }
        while let first = line.popFirst() { left.append(first) }
        #expect(left == expected)
        #expect(line.isEmpty && line.count == 0 && line.popFirst() == nil)
        line.append(7)
        #expect(Array(line.elements) == [7], "usable again once empty")
    }

    @Test func oneInTheMiddleLeavesAndTheRestKeepTheirOrder() {
        var line = FirstInLine<Int>()
        for value in 1...5 { line.append(value) }
        #expect(line.popFirst() == 1)
        #expect(line.remove(firstWhere: { $0 == 1 }) == nil, "one already gone is not in line")
        #expect(line.remove(firstWhere: { $0 == 4 }) == 4)
        #expect(line.remove(firstWhere: { $0 == 9 }) == nil)
        #expect(Array(line.elements) == [2, 3, 5] && line.count == 3)
    }
}
