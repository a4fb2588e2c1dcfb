/// Politeness per host (`--host-delay`, `dl.config{ host_delay }`): the
/// earliest moment each host may get its next request. Every request counts,
/// redirect hops included, and a 429 or 503 with Retry-After holds the whole
/// host back, not only the URL that got it. Pure bookkeeping on the engine
/// thread; times are `EngineLoop.now()` seconds.
struct HostPacing {
    /// Seconds between the starts of two requests to one host (0: none).
    let delay: Double
    /// When each host may next be asked; hosts past their time are dropped.
    private var nextAllowed: [String: Double] = [:]
    /// Until when a Retry-After holds each host back; dropped when found past.
    private var heldUntil: [String: Double] = [:]
    /// Hosts whose own delay is longer than `delay` (robots.txt's Crawl-delay).
    private var hostDelays: [String: Double] = [:]
    /// When the last request to each paced host truly started. Turns are
    /// reserved a delay apart, but a turn the loop serves late would leave
    /// less than the delay before the next one: the gap counts from here.
    private var startedAt: [String: Double] = [:]

    init(delay: Double) { self.delay = max(0, delay) }

    /// Whether anything can hold a request back: a delay, or a host slowed by
    /// Retry-After. Without either, requests skip the URL parse entirely.
    var isActive: Bool { delay > 0 || !nextAllowed.isEmpty || !hostDelays.isEmpty }

    /// Gives `host` a delay of its own when longer than `delay`.
    mutating func setDelay(_ seconds: Double, for host: String) {
        guard seconds > delay else { return }
        hostDelays[host] = seconds
    }

    /// Reserves the host's next turn for a request that wants to start at
    /// `now`; returns how long it must wait (0: go now).
    mutating func reserve(_ host: String, now: Double) -> Double {
        let slot = max(now, nextAllowed[host] ?? now)
        let delay = hostDelays[host] ?? self.delay
        if delay > 0 {
            nextAllowed[host] = slot + delay
        } else if slot <= now {
            nextAllowed[host] = nil
        }
        return slot - now
    }

    /// A request to `host` is about to start at `now` (at once, or when its
    /// turn came): how much longer it must wait because the host's previous
    /// request started less than the delay ago; 0 records the start.
    mutating func start(_ host: String, now: Double) -> Double {
        let delay = hostDelays[host] ?? self.delay
        guard delay > 0 else { return 0 }
        if let last = startedAt[host], now - last < delay { return last + delay - now }
        startedAt[host] = now
        nextAllowed[host] = max(nextAllowed[host] ?? now, now + delay)
        return 0
    }

    /// A 429 or 503 said to wait `seconds`: no request to `host` starts before.
    mutating func holdBack(_ host: String, for seconds: Double, now: Double) {
        guard seconds > 0 else { return }
        nextAllowed[host] = max(nextAllowed[host] ?? now, now + seconds)
        heldUntil[host] = max(heldUntil[host] ?? now, now + seconds)
    }

    /// Whether a Retry-After holds `host` back at `now`. A request whose turn
    /// was reserved before the hold came asks this when its turn comes, and
    /// takes a new turn (`reserve`) if so: the hold is for every request to
    /// the host, those already waiting included.
    mutating func isHeld(_ host: String, now: Double) -> Bool {
        guard let until = heldUntil[host] else { return false }
        if until > now { return true }
        heldUntil[host] = nil
        return false
    }

    /// A shared queue handed this worker a download of `host`: the database,
    /// whose clock holds a Retry-After for every worker (`hosts.next_at`),
    /// says the host is due. A hold of this engine's own clock that outlasts
    /// it (the worker that got the Retry-After holds the host too) must not
    /// keep the claim waiting, so it goes.
    mutating func liftHold(_ host: String) {
        guard heldUntil.removeValue(forKey: host) != nil else { return }
        nextAllowed[host] = nil
    }
}
