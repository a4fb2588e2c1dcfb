/// curl's `-m/--max-time` and `-Y/--speed-limit` with `-y/--speed-time`, per
/// attempt: the stall check (`timeout`) only sees a transfer that stops, so
/// a server that trickles a byte a second would hold a slot for ever.
///
/// Checked on the engine's progress tick rather than with curl's own
/// CURLOPT_TIMEOUT and CURLOPT_LOW_SPEED_*: the engine follows redirects hop
/// by hop (one curl transfer each), and a transfer waiting for a hook (paused)
/// must not count as slow.
extension EngineLoop {
    /// How often the limits in force need looking at.
    func shortestLimitCheck() -> Double {
        var shortest = Double.infinity
        for transfer in pool.transfers.values {
            guard let job = jobs[transfer.id] else { continue }
            if let maxTime = job.request.maxTime ?? configuration.maxTime { shortest = min(shortest, maxTime / 4) }
            if job.request.speedLimit ?? configuration.speedLimit != nil {
                shortest = min(shortest, (job.request.speedTime ?? configuration.speedTime) / 10)
            }
        }
        return max(shortest, 0.01)
    }

    /// Fails the attempts that ran out of time or were too slow, with kind `timeout`.
    func checkTimeAndSpeedLimits(now: Double) {
        var failures: [(Job, DownloadError)] = []
        for transfer in pool.transfers.values {
            guard let job = jobs[transfer.id], let attempt = job.attempt, attempt.transfer === transfer else { continue }
            // Run on every progress tick: the URL's text only for a failure.
            if let maxTime = job.request.maxTime ?? configuration.maxTime, now - attempt.startedAt >= maxTime {
                let url = RedactedURL.text(attempt.currentURL)
                failures.append((job, DownloadError(.timeout, "\(url) took longer than the max time of \(maxTime.secondsText) s")))
                continue
            }
            guard let limit = job.request.speedLimit ?? configuration.speedLimit else { continue }
            let window = job.request.speedTime ?? configuration.speedTime
            // Waiting for a hook is not slowness: the measure starts again after it.
            if transfer.body.pausesCurl {
                transfer.speedSamples.removeAll()
                continue
            }
            let bytes = job.bytes
            if let last = transfer.speedSamples.last, now - last.at < window / 10 {
                // Sampled recently enough.
            } else {
                transfer.speedSamples.append((now, bytes))
            }
            // Keep one sample at least `window` old, and none older than needed.
            while transfer.speedSamples.count > 1, now - transfer.speedSamples[1].at >= window {
                transfer.speedSamples.removeFirst()
            }
            guard let oldest = transfer.speedSamples.first, now - oldest.at >= window else { continue }
            let rate = Double(bytes - oldest.bytes) / (now - oldest.at)
            if rate < Double(limit) {
                let url = RedactedURL.text(job.currentURL)
                failures.append((job, DownloadError(
                    .timeout, "\(url) was slower than \(limit) bytes/s for \(window.secondsText) s (\(Int(rate)) bytes/s)")))
            }
        }
        for (job, error) in failures where job.transfer != nil { attemptFailed(job, error) }
    }
}
