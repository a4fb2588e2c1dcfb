import Testing

@testable import DLPipe

/// Politeness bookkeeping per host, on times the tests choose.
@Suite struct HostPacingTests {
    @Test func turnsOfOneHostAreADelayApartAndOtherHostsDoNotWait() {
        var pacing = HostPacing(delay: 1)
        #expect(pacing.reserve("a:80", now: 10) == 0)
        #expect(pacing.reserve("a:80", now: 10) == 1, "the second request waits one delay")
        #expect(pacing.reserve("a:80", now: 10.5) == 1.5, "the third comes after the second's turn")
        #expect(pacing.reserve("b:80", now: 10.5) == 0, "another host has its own turns")
        #expect(pacing.reserve("a:80", now: 20) == 0, "a host idle past its turn goes at once")
    }

    @Test func retryAfterHoldsBackAHostWithoutAnyDelay() {
        var pacing = HostPacing(delay: 0)
        #expect(!pacing.isActive)
        pacing.holdBack("a:80", for: 2, now: 5)
        #expect(pacing.isActive)
        #expect(pacing.reserve("a:80", now: 6) == 1)
        #expect(pacing.reserve("b:80", now: 6) == 0)
        #expect(pacing.reserve("a:80", now: 7.5) == 0)
        #expect(!pacing.isActive, "nothing left to hold back: requests skip the check again")
        pacing.holdBack("a:80", for: 0, now: 8)
        #expect(!pacing.isActive, "Retry-After: 0 holds nothing back")
    }
}
