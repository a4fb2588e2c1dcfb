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

    @Test func aTurnServedLateMovesTheNextOneBack() {
        var pacing = HostPacing(delay: 0.3)
        #expect(pacing.reserve("a:80", now: 0) == 0)
        #expect(pacing.start("a:80", now: 0) == 0)
        #expect(abs(pacing.reserve("a:80", now: 0) - 0.3) < 1e-9, "the second's turn: 0.3")
        #expect(abs(pacing.reserve("a:80", now: 0) - 0.6) < 1e-9, "the third's turn: 0.6")
        // The second's turn is served at 0.42 (a busy loop): it starts then.
        #expect(pacing.start("a:80", now: 0.42) == 0)
        // The third's turn comes at 0.6, 0.18 after the second truly started: it waits 0.12 more.
        let rest = pacing.start("a:80", now: 0.6)
        #expect(abs(rest - 0.12) < 1e-9, "\(rest)")
        #expect(pacing.start("a:80", now: 0.72) == 0)
        #expect(abs(pacing.reserve("a:80", now: 0.72) - 0.3) < 1e-9, "a new request waits a delay from the last start")
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

    @Test func turnsReservedBeforeAHoldAreHeldBackAndTakeNewOnes() {
        var pacing = HostPacing(delay: 0.2)
        #expect(pacing.reserve("a:80", now: 0) == 0)
        #expect(pacing.reserve("a:80", now: 0) == 0.2, "reserved before the hold")
        let before = pacing.isHeld("a:80", now: 0.1)
        #expect(!before)
        pacing.holdBack("a:80", for: 1, now: 0.1)
        // The turn reserved for 0.2 comes inside the hold: a new turn after it.
        let atTurn = pacing.isHeld("a:80", now: 0.2)
        #expect(atTurn)
        let wait = pacing.reserve("a:80", now: 0.2)
        #expect(abs(wait - 0.9) < 1e-9, "at 1.1, when the hold ends: \(wait)")
        let otherHost = pacing.isHeld("b:80", now: 0.2)
        #expect(!otherHost, "other hosts are not held")
        let after = pacing.isHeld("a:80", now: 1.1)
        #expect(!after, "the hold is over")
    }

    /// A shared queue's claim says the host is due by the database's clock:
    /// the worker that got the Retry-After lets its own hold go for it.
    @Test func aClaimFromTheSharedQueueLiftsThisEnginesHoldOfItsHost() {
        var pacing = HostPacing(delay: 0)
        pacing.holdBack("a:80", for: 300, now: 0)
        pacing.holdBack("b:80", for: 300, now: 0)
        #expect(pacing.reserve("a:80", now: 1) == 299)
        pacing.liftHold("a:80")
        let held = pacing.isHeld("a:80", now: 2)
        #expect(!held)
        #expect(pacing.reserve("a:80", now: 2) == 0, "the claim starts at once")
        #expect(pacing.reserve("b:80", now: 2) == 298, "another host keeps its hold")
        pacing.liftHold("c:80")
        #expect(pacing.reserve("c:80", now: 2) == 0, "a host never held is untouched")
    }
}

