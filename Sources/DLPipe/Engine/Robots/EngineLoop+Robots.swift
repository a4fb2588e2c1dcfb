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
        case known(RobotsRules)
    }

    var entries: [String: Entry] = [:]
    /// The origin of each fetch in flight, by its curl handle.
    var inFlight: [UnsafeMutableRawPointer: String] = [:]
    /// A Crawl-delay longer than this is taken as this: a file cannot stall a crawl for hours.
    static let maxCrawlDelay = 60.0
    /// The reason of a download robots.txt disallows.
    static let skipReason = "robots.txt"
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
        switch robots.entries[origin] {
        case .known(let rules):
            guard !rules.allows(url: job.currentURL) else { return false }
            scheduler.finished(job.id)
            job.state.endBeforeStart(.skipped)
            finish(job, .skipped(RobotsBook.skipReason))
        case .fetching(let fetch, let waiting):
            scheduler.finished(job.id)
            robots.entries[origin] = .fetching(fetch, waiting: waiting + [job.id])
        case nil:
            scheduler.finished(job.id)
            startRobotsFetch(origin: origin, host: parts.hostPort, waiting: job.id)
        }
        return true
    }

    private func startRobotsFetch(origin: String, host: String, waiting id: DownloadID) {
        let stored = (try? store?.value(StoredRobots.stateKey(origin))).flatMap { $0.flatMap(StoredRobots.decode) }
        let fetch = RobotsFetch(origin: origin, host: host, stored: stored)
        fetch.configure(
            userAgent: configuration.userAgent, timeout: configuration.timeout,
            options: TransferOptions(options: configuration.transport, caFile: configuration.caFile))
        robots.entries[origin] = .fetching(fetch, waiting: [id])
        robots.inFlight[fetch.easy.handle] = origin
        multi.add(fetch.easy)
    }

    /// Takes a finished robots.txt fetch (true), or says the handle is not one.
    func robotsFetchEnded(_ completion: CurlMulti.Completion) -> Bool {
        guard let origin = robots.inFlight.removeValue(forKey: completion.easy) else { return false }
        guard case .fetching(let fetch, let waiting) = robots.entries[origin] else { return true }
        multi.remove(fetch.easy)
        let (rules, keep) = fetch.outcome(code: completion.code)
        robots.entries[origin] = .known(rules)
        if let keep, let json = keep.json { store?.setValue(StoredRobots.stateKey(origin), json) }
        if let delay = rules.crawlDelay, delay > configuration.hostDelay {
            hostPacing.setDelay(min(delay, RobotsBook.maxCrawlDelay), for: fetch.host)
            // The fetch was the host's first request: the next waits a delay after it.
            _ = hostPacing.reserve(fetch.host, now: fetch.startedAt)
        }
        for id in waiting {
            guard let job = jobs[id], job.state.phase == .queued, !pausedJobs.contains(id) else { continue }
            scheduler.enqueue(id, host: job.host, priority: job.request.priority)
        }
        return true
    }
}
