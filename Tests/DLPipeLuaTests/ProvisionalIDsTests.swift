import Testing

@testable import DLPipeLua

/// How a shared queue's top-level ids and its rows map, both ways.
@Suite struct ProvisionalIDsTests {
    @Test func aTopLevelAddsRowIsShownAsItsProvisionalIdAndBack() {
        var ids = ProvisionalIDs()
        ids.commandLine = true
        #expect((1...3).map { ids.id(ofPosition: $0) } == [-1, -2, -3])
        // The second add was refused (past max_downloads): no row.
        ids.queued([40, 0, 17])
        #expect(ids.shown(40) == -1 && ids.shown(17) == -3)
        #expect(ids.shown(0) == 0 && ids.shown(41) == 41, "a row no top-level add made keeps its id")
        #expect(ids.row(of: -1) == 40 && ids.row(of: -3) == 17)
        #expect(ids.row(of: -4) == nil && ids.row(of: 17) == nil)
    }

    @Test func withoutAQueueIdsAreTheEnginesOwn() {
        var ids = ProvisionalIDs()
        ids.commandLine = false
        #expect((1...2).map { ids.id(ofPosition: $0) } == [1, 2])
        ids.queued([1, 2])
        #expect(ids.shown(1) == 1 && ids.shown(2) == 2 && ids.row(of: 1) == nil)
    }
}
