import Foundation

/// robots.txt (`dl.config{ robots = true }`, `--robots`): before the first
/// request to a host, its robots.txt is fetched once per run, on a handle of
/// its own; that host's downloads wait for it out of line, other hosts go on.
/// A URL it disallows ends skipped with the reason `robots.txt` and is never
/// requested; its Crawl-delay becomes the host's delay when longer than
/// the configured one (docs/design/robots.md).
final class RobotsBook {
    enum Entry {
        /// The file is on its way; these downloads wait for it.
        case fetching(RobotsFetch, waiting: [DownloadID])
        /// Another worker of the shared run fetches it: its copy is read
        /// from the state until it is there (`pollSharedRobots`).
        case awaitingPeer(host: String, waiting: [DownloadID], since: Double)
        /// The rules, and the shared run they are for (nil on its own).
        case known(RobotsRules, run: Int64?)
    }

    var entries: [String: Entry] = [:]
    /// The origin of each fetch in flight, by its curl handle.
    var inFlight: [UnsafeMutableRawPointer: String] = [:]
    /// Entries waiting for another worker's fetch.
    var awaitsPeers = false
    var lastPeerPoll = 0.0
    /// A Crawl-delay longer than this is taken as this: a file cannot stall a crawl for hours.
    static let maxCrawlDelay = 60.0
    /// The reason of a download robots.txt disallows.
    static let skipReason = "robots.txt"
    /// How often the state is read for another worker's copy.
    static let peerPollInterval = 0.25
}

extension EngineLoop {
    /// Whether robots.txt keeps the job from starting now: its host's file is
    /// not known yet (the job waits out of line, its slot given back), or it
    /// disallows the URL (the job ends skipped). False: the job starts.
    func robotsHolds(_ job: Job) -> Bool {
        guard configuration.robots, job.state.phase == .queued,
            let parts = URLParts(job.currentURL), parts.isHTTP, !parts.hostPort.isEmpty
        else { return false }
        let origin = parts.scheme + "://" + parts.hostPort
        let run = configuration.queue?.runNumber
        switch robots.entries[origin] {
        case .known(let rules, let knownRun) where knownRun == run:
            guard !rules.allows(url: job.currentURL) else { return false }
            scheduler.finished(job.id)
            job.state.endBeforeStart(.skipped)
            finish(job, .skipped(RobotsBook.skipReason))
        case .fetching(let fetch, let waiting):
            scheduler.finished(job.id)
            robots.entries[origin] = .fetching(fetch, waiting: waiting + [job.id])
        case .awaitingPeer(let host, let waiting, let since):
            scheduler.finished(job.id)
            robots.entries[origin] = .awaitingPeer(host: host, waiting: waiting + [job.id], since: since)
        case .known, nil:
            let stored = storedRobots(origin)
            if let run, let stored, stored.run == run {
                // Another worker of this run fetched it already.
                learn(stored.rules, origin: origin, host: parts.hostPort, run: run, fetchedAt: nil)
                return robotsHolds(job)
            }
            scheduler.finished(job.id)
            if let run, (try? store?.claimValue(StoredRobots.claimKey(origin), String(run))) == false {
                robots.entries[origin] = .awaitingPeer(host: parts.hostPort, waiting: [job.id], since: EngineLoop.now())
                robots.awaitsPeers = true
            } else {
                startRobotsFetch(origin: origin, host: parts.hostPort, stored: stored, waiting: [job.id])
            }
        }
        return true
    }

    private func storedRobots(_ origin: String) -> StoredRobots? {
        guard let json = try? store?.value(StoredRobots.stateKey(origin)) else { return nil }
        return StoredRobots.decode(json)
    }

    private func startRobotsFetch(origin: String, host: String, stored: StoredRobots?, waiting: [DownloadID]) {
        let fetch = RobotsFetch(origin: origin, host: host, stored: stored)
        if let replay = configuration.replay, !replay.has(fetch.url) {
            // A recording without the file: as a server without one (404).
            learn(.allowAll, origin: origin, host: host, run: configuration.queue?.runNumber, fetchedAt: nil)
            return requeue(waiting)
        }
        fetch.recording = configuration.recorder?.begin(url: fetch.url)
        fetch.configure(
            userAgent: configuration.userAgent, timeout: configuration.timeout,
            options: TransferOptions(options: configuration.transport, caFile: configuration.caFile),
            replay: configuration.replay)
        robots.entries[origin] = .fetching(fetch, waiting: waiting)
        robots.inFlight[fetch.easy.handle] = origin
        multi.add(fetch.easy)
    }

    /// Takes a finished robots.txt fetch (true), or says the handle is not one.
    func robotsFetchEnded(_ completion: CurlMulti.Completion) -> Bool {
        guard let origin = robots.inFlight.removeValue(forKey: completion.easy) else { return false }
        guard case .fetching(let fetch, let waiting) = robots.entries[origin] else { return true }
        multi.remove(fetch.easy)
        var answer = fetch.outcome(code: completion.code)
        let run = configuration.queue?.runNumber
        answer.run = run
        if let json = answer.json { store?.setValue(StoredRobots.stateKey(origin), json) }
        learn(answer.rules, origin: origin, host: fetch.host, run: run, fetchedAt: fetch.startedAt)
        requeue(waiting)
        return true
    }

    /// The origin's rules are known: its Crawl-delay paces the host.
    private func learn(_ rules: RobotsRules, origin: String, host: String, run: Int64?, fetchedAt: Double?) {
        robots.entries[origin] = .known(rules, run: run)
        guard let delay = rules.crawlDelay, delay > configuration.hostDelay else { return }
        hostPacing.setDelay(min(delay, RobotsBook.maxCrawlDelay), for: host)
        // The fetch was the host's first request: the next waits a delay after it.
        if let fetchedAt { _ = hostPacing.reserve(host, now: fetchedAt) }
    }

    /// Downloads that waited for robots.txt go back in line (not those a
    /// pause or a cancel took meanwhile).
    private func requeue(_ waiting: [DownloadID]) {
        for id in waiting {
            guard let job = jobs[id], job.state.phase == .queued, !pausedJobs.contains(id) else { continue }
            scheduler.enqueue(id, host: job.host, priority: job.request.priority)
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
            guard case .awaitingPeer(let host, let waiting, let since) = entry else { continue }
            let stored = storedRobots(origin)
            if let run, let stored, stored.run == run {
                learn(stored.rules, origin: origin, host: host, run: run, fetchedAt: nil)
                requeue(waiting)
            } else if now - since > max(10, 2 * configuration.timeout) {
                startRobotsFetch(origin: origin, host: host, stored: stored, waiting: waiting)
            } else {
                still = true
            }
        }
        robots.awaitsPeers = still
    }
}
