import Foundation

/// robots.txt (`dl.config{ robots = true }`, `--robots`): before the first
/// request to a host, its robots.txt is fetched once per run, on a handle of
/// its own; that host's downloads wait for it out of line, other hosts go on.
/// A URL it disallows ends skipped with the reason `robots.txt` and is never
/// requested; its Crawl-delay becomes the host's delay when longer than
/// the configured one (docs/design/robots.md).
final class RobotsBook {
    enum Answer {
        case allows, disallows, pending
    }

    enum Entry {
        /// The file is on its way; the origin's downloads wait (`waiting`).
        case fetching(RobotsFetch)
        /// Another worker of the shared run fetches it: its copy is read
        /// from the state until it is there (`pollSharedRobots`).
        case awaitingPeer(host: String, since: Double)
        /// The rules, and the shared run they are for (nil on its own).
        case known(RobotsRules, run: Int64?)
    }

    var entries: [String: Entry] = [:]
    /// The downloads waiting for each origin's file, in the order they came.
    var waiting: [String: [DownloadID]] = [:]
    /// The redirect hops waiting for each origin's file: each job with its
    /// request generation then (a pause or a cancel since makes it stale).
    var waitingHops: [String: [(id: DownloadID, generation: Int)]] = [:]
    /// The origin of each fetch in flight, by its curl handle.
    var inFlight: [UnsafeMutableRawPointer: String] = [:]
    /// Entries waiting for another worker's fetch.
    var awaitsPeers = false
    var lastPeerPoll = 0.0
    /// The origins whose robots.txt could not be read, in the order met,
    /// with why and how many downloads were skipped for it.
    var unreachable: [(origin: String, host: String, cause: String, skipped: Int)] = []
    /// A Crawl-delay longer than this is taken as this: a file cannot stall a crawl for hours.
    static let maxCrawlDelay = 60.0
    /// The reason of a download robots.txt disallows.
    static let skipReason = "robots.txt"
    /// How often the state is read for another worker's copy.
    static let peerPollInterval = 0.25
}

extension EngineLoop {
    /// Whether the download of `id` waits for its origin's robots.txt, on its
    /// way: it gives its slot back and waits out of line, and one not started
    /// yet stays a bare request (no `Job` is made for it until it may start).
    func robotsDefers(_ id: DownloadID) -> Bool {
        guard configuration.robots else { return false }
        let url: String
        if let job = jobs[id] {
            guard job.state.phase.kind == .queued else { return false }
            url = job.currentURL
        } else if let queued = schedule.waiting[id] {
            url = queued.request.url
        } else {
            return false
        }
        guard let parts = URLParts(url) else { return false }
        let origin = parts.scheme + "://" + parts.hostPort
        switch robots.entries[origin] {
        case .fetching, .awaitingPeer:
            scheduler.finished(id)
            robots.waiting[origin, default: []].append(id)
            return true
        case .known, nil:
            return false
        }
    }

    /// Whether robots.txt keeps the job from starting now: its host's file is
    /// not known yet (the job waits out of line, its slot given back), or it
    /// disallows the URL (the job ends skipped). False: the job starts.
    func robotsHolds(_ job: Job) -> Bool {
        guard configuration.robots, job.state.phase.kind == .queued, let (origin, host) = Self.robotsOrigin(job.currentURL) else { return false }
        switch robotsAnswer(job.currentURL, origin: origin, host: host) {
        case .allows:
            return false
        case .disallows:
            countUnreachableSkip(origin)
            scheduler.finished(job.id)
            job.state.endBeforeStart(.skipped)
            finish(job, .skipped(RobotsBook.skipReason))
        case .pending:
            scheduler.finished(job.id)
            robots.waiting[origin, default: []].append(job.id)
        }
        return true
    }

    /// Whether robots.txt keeps a redirect's next hop from starting now: the
    /// hop's origin (another one, or the same) is asked as a first request's
    /// is. Its file not known yet: the job waits for it with its slot, as for
    /// a host's turn. Disallowed: the download ends skipped, the hop unasked.
    func robotsHoldsHop(_ job: Job) -> Bool {
        guard configuration.robots, job.hops > 0, let (origin, host) = Self.robotsOrigin(job.currentURL) else { return false }
        switch robotsAnswer(job.currentURL, origin: origin, host: host) {
        case .allows:
            return false
        case .disallows:
            countUnreachableSkip(origin)
            feed(job, .hopRefused(reason: RobotsBook.skipReason))
        case .pending:
            robots.waitingHops[origin, default: []].append((job.id, job.requestGeneration))
        }
        return true
    }

    /// The origin (scheme and authority) and host of an HTTP(S) URL, which
    /// robots.txt is asked for; nil for any other URL.
    private static func robotsOrigin(_ url: String) -> (origin: String, host: String)? {
        guard let parts = URLParts(url), parts.isHTTP, !parts.hostPort.isEmpty else { return nil }
        return (parts.scheme + "://" + parts.hostPort, parts.hostPort)
    }

    /// What the origin's robots.txt says of `url`; `pending` while it is on
    /// its way (a fetch started here, or another worker's awaited).
    private func robotsAnswer(_ url: String, origin: String, host: String) -> RobotsBook.Answer {
        let run = configuration.queue?.runNumber
        switch robots.entries[origin] {
        case .known(let rules, let knownRun) where knownRun == run:
            return rules.allows(url: url) ? .allows : .disallows
        case .fetching, .awaitingPeer:
            return .pending
        case .known, nil:
            let stored = storedRobots(origin)
            if let run, let stored, stored.run == run {
                // Another worker of this run fetched it already.
                learn(stored, origin: origin, host: host, run: run, fetchedAt: nil)
            } else if let run, (try? store?.claimValue(StoredRobots.claimKey(origin), String(run))) == false {
                robots.entries[origin] = .awaitingPeer(host: host, since: EngineLoop.now())
                robots.awaitsPeers = true
            } else {
                startRobotsFetch(origin: origin, host: host, stored: stored)
            }
            // Known at once (a copy from the state, a recording without the file).
            if case .known = robots.entries[origin] { return robotsAnswer(url, origin: origin, host: host) }
            return .pending
        }
    }

    private func storedRobots(_ origin: String) -> StoredRobots? {
        guard let json = try? store?.value(StoredRobots.stateKey(origin)) else { return nil }
        return StoredRobots.decode(json)
    }

    private func startRobotsFetch(origin: String, host: String, stored: StoredRobots?) {
        let fetch = RobotsFetch(origin: origin, host: host, stored: stored)
        if let replay = configuration.replay, !replay.has(fetch.url) {
            // A recording without the file: as a server without one (404).
            learn(StoredRobots(verdict: .allow), origin: origin, host: host, run: configuration.queue?.runNumber, fetchedAt: nil)
            return requeue(origin)
        }
        fetch.recording = configuration.recorder?.begin(url: fetch.url)
        fetch.configure(
            userAgent: configuration.userAgent, timeout: configuration.timeout,
            options: TransferOptions(options: configuration.transport, caFile: configuration.caFile),
            replay: configuration.replay)
        robots.entries[origin] = .fetching(fetch)
        robots.inFlight[fetch.easy.handle] = origin
        multi.add(fetch.easy)
    }

    /// Takes a finished robots.txt fetch (true), or says the handle is not one.
    func robotsFetchEnded(_ completion: CurlMulti.Completion) -> Bool {
        guard let origin = robots.inFlight.removeValue(forKey: completion.easy) else { return false }
        guard case .fetching(let fetch) = robots.entries[origin] else { return true }
        multi.remove(fetch.easy)
        var answer = fetch.outcome(code: completion.code)
        let run = configuration.queue?.runNumber
        answer.run = run
        if let json = answer.json { store?.setValue(StoredRobots.stateKey(origin), json) }
        learn(answer, origin: origin, host: fetch.host, run: run, fetchedAt: fetch.startedAt)
        requeue(origin)
        return true
    }

    /// The origin's rules are known: its Crawl-delay paces the host; a file
    /// that could not be read is reported with the run's summary.
    private func learn(_ answer: StoredRobots, origin: String, host: String, run: Int64?, fetchedAt: Double?) {
        let rules = answer.rules
        robots.entries[origin] = .known(rules, run: run)
        robots.unreachable.removeAll { $0.origin == origin }
        if let cause = answer.unreachable { robots.unreachable.append((origin, host, cause, 0)) }
        guard let delay = rules.crawlDelay, delay > configuration.hostDelay else { return }
        schedule.hostPacing.setDelay(min(delay, RobotsBook.maxCrawlDelay), for: host)
        // The fetch was the host's first request: the next waits a delay after it.
        if let fetchedAt { _ = schedule.hostPacing.reserve(host, now: fetchedAt) }
    }

    /// The downloads that waited for the origin's robots.txt go back in line
    /// (not those a pause or a cancel took meanwhile).
    private func requeue(_ origin: String) {
        for id in robots.waiting.removeValue(forKey: origin) ?? [] {
            if let job = jobs[id] {
                guard job.state.phase.kind == .queued, !schedule.pausedJobs.contains(id) else { continue }
                scheduler.enqueue(id, host: job.host, priority: job.request.priority)
            } else if let queued = schedule.waiting[id] {
                scheduler.enqueue(id, host: queued.host, priority: queued.request.priority)
            }
        }
        for (id, generation) in robots.waitingHops.removeValue(forKey: origin) ?? [] {
            guard let job = jobs[id], job.state.phase.kind == .requesting, job.transfer == nil,
                job.requestGeneration == generation
            else { continue }
            startTransfer(job)
        }
    }

    /// Reads the state for the copies other workers of the run fetch; one
    /// that is not there after twice the stall timeout (its worker died) is
    /// fetched here.
    func pollSharedRobots(now: Double) {
        guard now - robots.lastPeerPoll >= RobotsBook.peerPollInterval else { return }
        robots.lastPeerPoll = now
        let run = configuration.queue?.runNumber
        var still = false
        for (origin, entry) in robots.entries {
            guard case .awaitingPeer(let host, let since) = entry else { continue }
            let stored = storedRobots(origin)
            if let run, let stored, stored.run == run {
                learn(stored, origin: origin, host: host, run: run, fetchedAt: nil)
                requeue(origin)
            } else if now - since > max(10, 2 * configuration.timeout) {
                startRobotsFetch(origin: origin, host: host, stored: stored)
            } else {
                still = true
            }
        }
        robots.awaitsPeers = still
    }

    /// A download skipped because its origin's robots.txt could not be read: counted for the warning.
    private func countUnreachableSkip(_ origin: String) {
        guard let index = robots.unreachable.firstIndex(where: { $0.origin == origin }) else { return }
        robots.unreachable[index].skipped += 1
    }

    /// One warning per origin whose robots.txt could not be read, for the
    /// run's summary: the skips it caused are otherwise only `robots.txt`
    /// lines, which `-q` hides.
    func robotsWarnings() -> [String] {
        robots.unreachable.filter { $0.skipped > 0 }.map { entry in
            let downloads = entry.skipped == 1 ? "1 download" : "\(entry.skipped) downloads"
            return "robots.txt for \(entry.host) unreachable: \(entry.cause); \(downloads) skipped "
                + "(an unreachable robots.txt disallows everything, RFC 9309)"
        }
    }
}
