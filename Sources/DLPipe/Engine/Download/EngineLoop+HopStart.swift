internal import CCurl

/// Starting a job's next hop: whether it may start now, the handle's options,
/// and the request's header lines.
extension EngineLoop {
    /// Configures a handle for the job's next request and adds it to the multi handle.
    func startTransfer(_ job: Job) {
        // Only a phase that transfers has an attempt to run a transfer in.
        guard job.attempt != nil else { return assertionFailure("a transfer to start in phase \(job.state.phase.kind)") }
        job.progress.starts(at: EngineLoop.now())
        splitAttemptStarts(job)
        guard hopMayStart(job) else { return }
        job.turns.turnEnded()
        let easy = pool.idleHandles.popLast() ?? CurlEasy()
        easy.reset()
        let transfer = Transfer(id: job.id, easy: easy, owner: self)
        job.state.updateAttempt { $0.hopStarts(at: EngineLoop.now()) }
        transfer.installCallbacks()
        transfer.recording = configuration.recorder?.begin(url: job.currentURL)
        configure(easy, transfer, for: job)
        var lines = requestLines(job, transfer, easy)
        if configuration.replay != nil {
            // The replay server answers for the URL this request stands for,
            // over plain http and with no proxy (ReplayServer); by the
            // redacted URL, the one the recording keeps.
            lines.append("\(ReplayServer.urlHeader): \(RedactedURL.text(job.currentURL))")
            easy.set(CURLOPT_PROXY, "")
            // Plain HTTP/1.1 to the replay server: nothing to wait for to share.
            easy.set(CURLOPT_PIPEWAIT, 0)
        }
        cookies?.mergeCookieHeaders(&lines, into: easy)
        easy.setHeaders(lines)
        job.attempt?.method.apply(to: easy)
        transfer.lastActiveAt = EngineLoop.now()
        pool.transfers[easy.handle] = transfer
        job.state.updateAttempt { $0.run(transfer) }
        multi.add(easy)
    }

    /// Whether the hop starts now. When it does not, what it waits for (a
    /// host slot, a resume hash, a hook's headers, a host's turn, a lease)
    /// starts it later, or the attempt failed.
    private func hopMayStart(_ job: Job) -> Bool {
        // The slot counts against the host this request goes to (after a
        // redirect, another one): a full host keeps the download waiting, at
        // the front of its line, and startQueued comes back here.
        let host = URLParts(job.currentURL)?.hostPort ?? job.host
        guard scheduler.hop(job.id, to: host, priority: job.request.priority) else { return false }
        // A redirect's next hop, under `robots`: its origin's robots.txt first.
        if robotsHoldsHop(job) { return false }
        // A resume with a checksum: the bytes on disk are hashed on a queue first.
        if waitsForResumeHash(job) { return false }
        // `verify`: the kept file's bytes are hashed first, on the same queue.
        if waitsForContentCheck(job) { return false }
        if let replay = configuration.replay, !replay.has(job.currentURL) {
            attemptFailed(job, DownloadError(.network, "--replay: the recording \(replay.directory) has no response for \(RedactedURL.text(job.currentURL))"))
            return false
        }
        // A `request` hook decides this hop's headers first (EngineLoop+RequestHook).
        if interests.contains(.request), job.hopHeaders == nil {
            askRequestHook(job)
            return false
        }
        // Politeness: the host's turn (`--host-delay`, a Retry-After); the job
        // keeps its slot meanwhile (EngineLoop+HostPacing).
        if schedule.hostPacing.isActive, !job.paced, waitsForHostTurn(job) { return false }
        // A shared queue's worker whose lease is not sure sends nothing.
        return !waitsForLease(job)
    }

    /// The handle's options for this hop.
    func configure(_ easy: CurlEasy, _ transfer: Transfer, for job: Job) {
        easy.set(CURLOPT_URL, configuration.replay?.address ?? job.currentURL)
        easy.set(CURLOPT_NOSIGNAL, 1)
        // Redirects are followed by the engine, hop by hop, so that schemes and
        // credentials are checked at every hop (see followRedirect).
        easy.set(CURLOPT_FOLLOWLOCATION, 0)
        easy.set(CURLOPT_PROTOCOLS_STR, "http,https")
        easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        transfer.stallTimeout = job.request.timeout ?? configuration.timeout
        transfer.bodyLimit = job.request.bodyLimit
        transfer.bodyLimitName = configuration.sizeLimitName
        easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(transfer.stallTimeout * 1000))
        cookies?.apply(to: easy)
        TransferOptions(options: configuration.transport, caFile: configuration.caFile)
            .apply(to: easy, url: job.currentURL, firstHost: job.host)
        // A larger receive buffer than curl's 16 KiB default: fewer callbacks and
        // fewer write(2) calls per megabyte on fast links. Under a speed cap, a
        // smaller one, so that the pacer's steps stay small.
        easy.set(CURLOPT_BUFFERSIZE, pacer?.chunkSize ?? 256 * 1024)
        transfer.pacer = pacer
    }

    /// The hop's header lines: the hook's or the caller's, then the
    /// conditional, adoption or resume headers and the encoding asked for.
    private func requestLines(_ job: Job, _ transfer: Transfer, _ easy: CurlEasy) -> [String] {
        var lines: [String]
        if let decided = job.state.updateAttempt({ $0.takeHopHeaders() }) ?? nil {  // this hop's only: the next one asks again
            lines = decided.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        } else {
            lines = job.request.headers.isEmpty ? [] : headerLines(for: job)
        }
        if let conditional = job.conditional, job.partBytes == 0 {
            if let etag = conditional.etag { lines.append("If-None-Match: \(etag)") }
            if let date = conditional.lastModified { lines.append("If-Modified-Since: \(date)") }
        }
        if let adoption = job.adoption, job.partBytes == 0 {
            lines.append("If-Modified-Since: \(adoption.ifModifiedSince)")
        }
        if job.partBytes > 0, let validator = job.validator, job.target != nil {
            transfer.resumeOffset = job.partBytes
            lines.append("Range: bytes=\(job.partBytes)-")
            lines.append("If-Range: \(validator)")
            // The part file holds decoded bytes, which are the identity bytes.
            if configuration.compressed { lines.append("Accept-Encoding: identity") }
        } else {
            job.claim.dropPart()
            if configuration.compressed {
                if job.wantsIdentity || CompressedResource.named(job.request.url) || CompressedResource.named(job.currentURL) {
                    lines.append("Accept-Encoding: identity")
                } else {
                    askForEncodedBody(easy)
                }
            }
        }
        return lines
    }

    /// The caller's headers, minus credentials once a redirect left the first host.
    private func headerLines(for job: Job) -> [String] {
        hopHeaders(for: job).sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
    }

    /// The caller's headers for the current hop: without credentials once a
    /// redirect left the first host.
    func hopHeaders(for job: Job) -> [String: String] {
        let sameHost = job.hops == 0 || URLParts(job.currentURL)?.hostPort == job.host
        if sameHost { return job.request.headers }
        let credentials: Set<String> = ["authorization", "cookie", "proxy-authorization"]
        return job.request.headers.filter { !credentials.contains($0.key.lowercased()) }
    }
}
