/// The run's speed cap (`--rate`, `dl.config{ rate }`), one for all transfers.
///
/// libcurl's own cap (CURLOPT_MAX_RECV_SPEED_LARGE) cannot be trusted here: it
/// is per handle, and curl checks it only between its read loops, each of which
/// may take many receive buffers at once (256 KiB each in this engine): 10 MiB
/// at `--rate 100K` arrived in 3.7 s. So the engine paces itself: every body
/// chunk is taken from one `TokenBucket`; a transfer that finds it empty returns
/// CURL_WRITEFUNC_PAUSE from its write callback (curl keeps the chunk) and waits
/// in line here, and the engine loop unpauses the line in order when tokens are
/// back (`EngineLoop.releasePacedTransfers`). Only runs with a cap have a pacer:
/// without one, the write path pays a single nil check per chunk.
final class RatePacer {
    private var bucket: TokenBucket
    /// Transfers paused for want of tokens, first paused first.
    private var line: [Transfer] = []
    private let clock: () -> Double

    /// A full bucket of `bytesPerSecond`; `clock` gives monotonic seconds.
    init(bytesPerSecond: Int, clock: @escaping () -> Double = EngineLoop.now) {
        self.clock = clock
        bucket = TokenBucket(rate: bytesPerSecond, now: clock())
        chunkSize = min(256 * 1024, max(16 * 1024, bytesPerSecond / 32))
    }

    /// curl's receive buffer under this cap: small enough that one chunk is a
    /// small part of a second's worth, so that pauses are short and even.
    let chunkSize: Int

    /// Transfers waiting for tokens.
    var waiting: Int { line.count }

    /// Whether `transfer` may take a chunk now; if not, it joins the line (once)
    /// and its write callback must pause. While others wait, only a transfer
    /// the line just released is let in, so that a transfer curl happens to
    /// read first does not take every refill: the line is round-robin, chunk
    /// by chunk.
    func admits(_ transfer: Transfer) -> Bool {
        bucket.refill(now: clock())
        if bucket.hasTokens && (line.isEmpty || transfer.pacing == .released) {
            transfer.pacing = .free
            return true
        }
        if transfer.pacing != .waiting {
            transfer.pacing = .waiting
            line.append(transfer)
        }
        return false
    }

    /// A chunk of `bytes` was received.
    func spent(_ bytes: Int) { bucket.spend(bytes) }

    /// Seconds until the line can move, or nil when nobody waits.
    func secondsUntilRelease() -> Double? {
        guard !line.isEmpty else { return nil }
        return bucket.secondsUntilTokens(now: clock())
    }

    /// Takes transfers off the line, in order, while tokens last, and hands
    /// each to `unpause`, which may receive (and spend) at once: curl delivers
    /// the chunk it kept from inside the unpause. Transfers for which `isLive`
    /// is false (aborted or completed meanwhile) just leave the line.
    func release(isLive: (Transfer) -> Bool, unpause: (Transfer) -> Void) {
        bucket.refill(now: clock())
        var taken = 0
        while taken < line.count, bucket.hasTokens {
            let transfer = line[taken]
            taken += 1
            transfer.pacing = .released
            if isLive(transfer) { unpause(transfer) }
        }
        // A released transfer that found no tokens joined the end of the line
        // again, behind those still waiting.
        line.removeFirst(taken)
    }
}

/// Where a transfer stands with the run's speed cap.
enum Pacing {
    /// Receives whenever tokens are there and nobody waits.
    case free
    /// Paused, in the pacer's line.
    case waiting
    /// Unpaused by the line: its next chunk goes first.
    case released
}
