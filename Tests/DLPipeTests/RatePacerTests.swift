import Foundation
import Testing

@testable import DLPipe

/// The speed cap's arithmetic and its line, on a clock the tests move by hand.
@Suite struct RatePacerTests {
    @Test func bucketStartsWithATenthOfASecondAndRefillsAtTheRate() {
        var bucket = TokenBucket(rate: 1000, now: 0)
        #expect(bucket.tokens == 100)
        bucket.spend(300)
        #expect(!bucket.hasTokens)
        #expect(abs(bucket.secondsUntilTokens(now: 0) - 0.201) < 1e-9, "200 bytes of debt, then one byte")
        bucket.refill(now: 0.1)
        #expect(bucket.tokens == -100)
        bucket.refill(now: 10)
        #expect(bucket.tokens == 100, "never more than the burst, however long it waited")
        #expect(bucket.secondsUntilTokens(now: 10) == 0)
    }

    /// Over any stretch, what the bucket lets through is the rate's worth plus
    /// the burst plus one chunk, whatever the chunk sizes.
    @Test func bucketNeverLetsMoreThanTheRateThrough() {
        var bucket = TokenBucket(rate: 1 << 20, now: 0)
        var taken = 0
        var now = 0.0
        var chunk = 1
        while now < 5 {
            bucket.refill(now: now)
            if bucket.hasTokens {
                bucket.spend(chunk)
                taken += chunk
                chunk = chunk % 65_536 + 4093  // sizes from 1 byte to about 68 KiB
            }
            now += 0.0007
        }
        #expect(Double(taken) <= 5.0 * Double(1 << 20) + bucket.burst + 70_000)
        #expect(Double(taken) >= 4.9 * Double(1 << 20), "and it does let the rate through")
    }

    final class Clock: @unchecked Sendable {
        var now = 0.0
    }

    final class Owner: TransferOwner {
        func bodyStarts(_ transfer: Transfer) -> BodyDecision { .discard(.redirect) }
    }

    @Test func anEmptyBucketPutsTransfersInLineAndReleasesThemInOrder() {
        let clock = Clock()
        let pacer = RatePacer(bytesPerSecond: 10_000, clock: { clock.now })
        let owner = Owner()
        let transfers = (1...3).map { Transfer(id: DownloadID($0), easy: CurlEasy(), owner: owner) }
        #expect(pacer.admits(transfers[0]), "the burst lets the first chunk in")
        pacer.spent(5000)
        #expect(!pacer.admits(transfers[1]) && !pacer.admits(transfers[2]) && !pacer.admits(transfers[0]))
        #expect(!pacer.admits(transfers[1]), "a second refusal does not queue it twice")
        #expect(pacer.waiting == 3)
        #expect(transfers.allSatisfy { $0.pacing == .waiting })
        var unpaused: [Int] = []
        pacer.release(isLive: { _ in true }, unpause: { unpaused.append($0.id.rawValue) })
        #expect(unpaused.isEmpty, "nothing before the debt is paid")
        clock.now = pacer.secondsUntilRelease()!
        // Each unpause takes a chunk at once (curl delivers what it kept) and
        // empties the bucket again: one transfer per refill, round-robin.
        let take: (Transfer) -> Void = { transfer in
            unpaused.append(transfer.id.rawValue)
            #expect(pacer.admits(transfer))
            pacer.spent(2000)
        }
        pacer.release(isLive: { _ in true }, unpause: take)
        #expect(unpaused == [2])
        clock.now += pacer.secondsUntilRelease()!
        pacer.release(isLive: { $0.id.rawValue != 3 }, unpause: take)
        #expect(unpaused == [2, 1], "3 was no longer live: it left the line, and 1 came next")
        #expect(pacer.waiting == 0)
        #expect(pacer.secondsUntilRelease() == nil, "nobody waits: no wake-up needed")
    }

    @Test func whileOthersWaitOnlyAReleasedTransferGetsIn() {
        let clock = Clock()
        let pacer = RatePacer(bytesPerSecond: 10_000, clock: { clock.now })
        let owner = Owner()
        let first = Transfer(id: DownloadID(1), easy: CurlEasy(), owner: owner)
        let second = Transfer(id: DownloadID(2), easy: CurlEasy(), owner: owner)
        pacer.spent(2000)
        #expect(!pacer.admits(second))
        clock.now = 10  // the bucket is full again
        #expect(!pacer.admits(first), "tokens are there, but the second was waiting first")
        #expect(pacer.waiting == 2)
    }

    @Test func engineWithoutARateHasNoPacer() throws {
        let root = NSTemporaryDirectory()
        let plain = EngineLoop(configuration: EngineConfiguration(), root: root, hooks: nil, events: EventHub(), store: nil)
        #expect(plain.pacer == nil, "no rate: the write path never asks a pacer")
        var capped = EngineConfiguration()
        capped.rateLimit = 1 << 20
        let loop = EngineLoop(configuration: capped, root: root, hooks: nil, events: EventHub(), store: nil)
        #expect(loop.pacer?.chunkSize == 32 * 1024)
    }
}
