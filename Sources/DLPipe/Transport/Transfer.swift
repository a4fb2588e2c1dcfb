internal import CCurl

/// The engine side of a transfer's callbacks. Called on the transfer thread,
/// from inside curl, so implementations must not add or remove handles.
protocol TransferOwner: AnyObject {
    /// The final response's head is complete and the first body byte is here.
    func bodyStarts(_ transfer: Transfer) -> BodyDecision
    /// The transfer reached its `segmentLimit` (a split download): the new
    /// limit when it goes on into the next segment, else nil and it stops.
    func segmentLimitReached(_ transfer: Transfer) -> Int64?
}

extension TransferOwner {
    /// An owner that never sets a limit never hears of one.
    func segmentLimitReached(_ transfer: Transfer) -> Int64? { nil }
}

/// One attempt of one download: the easy handle's callbacks land here.
final class Transfer {
    let id: DownloadID
    let easy: CurlEasy
    unowned let owner: any TransferOwner

    /// Bytes of the file that were on disk when the attempt started (Range start).
    var resumeOffset: Int64 = 0
    /// Response headers of the current block, lower-case names.
    private(set) var headers: [String: String] = [:]
    /// What the body bytes do (see `TransferBody`).
    private(set) var body = TransferBody.undecided
    /// The run's speed cap, when it has one (shared by every transfer).
    var pacer: RatePacer?
    /// Where this transfer stands with the pacer (paused in its line or not).
    var pacing = Pacing.free
    /// Body bytes kept in memory while the part file waits for the state
    /// commit (`body` is `.buffering` or `.bufferFull`).
    private var buffered: [UInt8] = []
    static let maxBufferedBytes = 256 * 1024
    var bufferedCount: Int { buffered.count }
    /// The bytes of a memory download's body so far (it never reaches a
    /// file, so `received` counts them only once the body is whole): what
    /// its progress reports.
    var collectedCount: Int64 { body == .collecting ? Int64(buffered.count) : 0 }
    /// The whole body, when it all arrived in memory and goes to disk as a
    /// `HeldFile` instead of through a part file (`keepWholeBody`).
    private(set) var wholeBody: [UInt8]?
    /// The open part file, once the body is wanted.
    var file: PartFile?
    var hasher: SHA256Hasher?
    /// Body bytes written in this attempt.
    private(set) var received: Int64 = 0
    /// Header bytes of this attempt (all blocks); past `maxHeaderBytes` it stops.
    private var headerBytes = 0
    /// A response head larger than this is refused: a header block that never
    /// ends would otherwise keep the stall check happy forever.
    static let maxHeaderBytes = 256 * 1024
    /// The error of a head past that limit (or past libcurl's own for one line).
    static let headTooLarge = DownloadError(.http, "the response headers exceed \(maxHeaderBytes / 1024) KiB")
    /// Counts callbacks; the engine's stall check watches it move.
    private(set) var activity = 0
    /// The engine's record of `activity` and when it last changed.
    var watchedActivity = -1
    var lastActiveAt = 0.0
    /// Set when our own callback stopped the transfer, and why.
    var abortError: DownloadError?
    /// The file offset this transfer stops before (a split download's
    /// segment end, docs/design/split.md); nil for the whole body.
    var segmentLimit: Int64?
    /// Whether it stopped there: curl then reports a write error, which is
    /// the segment's end and not a failure.
    private(set) var reachedLimit = false
    /// `--record`: the response as it arrives (heads, and the body bytes taken).
    var recording: ResponseRecording?
    /// The most bytes the whole body may have (the download's `maxSize`),
    /// resumed bytes included; a chunk that would go past it stops the transfer.
    var bodyLimit: Int64?
    /// How the size error names that limit (`EngineConfiguration.sizeLimitName`).
    var bodyLimitName = "maxSize"
    /// Seconds without progress before the attempt fails (the download's own
    /// timeout, else the engine's).
    var stallTimeout = 30.0
    /// Bytes so far at recent moments, oldest first, for `speedLimit`
    /// (EngineLoop+SpeedLimits); emptied while the transfer waits for a hook.
    var speedSamples: [(at: Double, bytes: Int64)] = []

    init(id: DownloadID, easy: CurlEasy, owner: any TransferOwner) {
        self.id = id
        self.easy = easy
        self.owner = owner
    }

    /// Installs the callbacks with this object as their context. The caller keeps
    /// the transfer alive until the handle leaves the multi handle.
    func installCallbacks() {
        let context = Unmanaged.passUnretained(self).toOpaque()
        easy.set(CURLOPT_WRITEFUNCTION, callback: transferWrite)
        easy.set(CURLOPT_WRITEDATA, pointer: context)
        easy.set(CURLOPT_HEADERFUNCTION, callback: transferHeader)
        easy.set(CURLOPT_HEADERDATA, pointer: context)
    }

    /// One header line; a status line starts a new block (redirects, 1xx).
    /// Parsed on bytes: names are ASCII, and only values become Strings.
    /// Returns false to stop the transfer (the head is too large).
    fileprivate func header(_ line: UnsafeRawBufferPointer) -> Bool {
        headerBytes += line.count
        if headerBytes > Transfer.maxHeaderBytes {
            abortError = Transfer.headTooLarge
            return false
        }
        recording?.header(line)
        var end = line.count
        while end > 0, line[end - 1] == 10 || line[end - 1] == 13 { end -= 1 }
        // Progress is a status line or a complete head, not each header line: a
        // head that trickles in forever must still meet the stall timeout.
        if end == 0 {
            activity &+= 1
            return true
        }
        if end >= 5, line[0] == 0x48, line[1] == 0x54, line[2] == 0x54, line[3] == 0x50, line[4] == 0x2F {  // "HTTP/"
            headers = [:]  // a new block: a redirect or 1xx came before
            activity &+= 1
            return true
        }
        guard let colon = line[0..<end].firstIndex(of: 0x3A) else { return true }
        var nameEnd = colon
        while nameEnd > 0, line[nameEnd - 1] == 0x20 || line[nameEnd - 1] == 0x09 { nameEnd -= 1 }
        var start = colon + 1
        while start < end, line[start] == 0x20 || line[start] == 0x09 { start += 1 }
        var stop = end
        while stop > start, line[stop - 1] == 0x20 || line[stop - 1] == 0x09 { stop -= 1 }
        // Lower-cased straight into the String's storage: most names fit a small
        // string, so no allocation at all.
        let name = String(unsafeUninitializedCapacity: nameEnd) { buffer in
            for i in 0..<nameEnd {
                let byte = line[i]
                buffer[i] = (0x41...0x5A).contains(byte) ? byte | 0x20 : byte
            }
            return nameEnd
        }
        // Values are bytes: UTF-8 when valid, else ISO-8859-1 (what old servers send
        // in Content-Disposition), never a lossy replacement.
        let value = ContentDisposition.decodeUTF8OrLatin1(line[start..<stop])
        if let earlier = headers[name] {
            // Set-Cookie cannot be comma-joined (its Expires dates hold commas):
            // its lines are kept apart by "\n", which no header value holds.
            headers[name] = earlier + (name == "set-cookie" ? "\n" : ", ") + value
        } else {
            headers[name] = value
        }
        return true
    }

    /// Applies the engine's decision on the body (from the write callback, or
    /// for an empty body when the transfer ended).
    func decide(_ decision: BodyDecision) {
        switch decision {
        case .write: body = .streaming
        case .pause: body = .paused
        case .buffer: body = .buffering
        case .collect: body = .collecting
        case .abort: body = .refused
        case .discard(let reason): body = .dropping(reason)
        }
    }

    /// The body, all in memory, becomes a `HeldFile` when curl reports the
    /// transfer complete (`keepWholeBody`).
    func keepWhenComplete() {
        assert(body == .buffering, "only a body flowing into memory is kept whole")
        body = .keptWhole
    }

    /// A memory download's body goes on into memory after the response hook
    /// let it (the bytes buffered meanwhile stay). The caller unpauses curl.
    func collectInMemory() {
        body = .collecting
    }

    /// The transfer ended with its whole body in memory: that is the body.
    func keepWholeBody() {
        let whole = buffered
        buffered = []
        body = .keptWhole
        received += Int64(whole.count)
        wholeBody = whole
    }

    /// Writes the bytes kept in memory to the part file, now open, and lets
    /// later bytes stream to it; false (with `abortError`) when the write fails.
    /// The caller unpauses curl when it was paused.
    func flushBuffer() -> Bool {
        let wasInMemory = body.isInMemory
        body = .streaming
        guard wasInMemory else { return true }
        let pending = buffered
        buffered = []
        return pending.withUnsafeBytes { store($0) }
    }

    /// Body bytes, first through the speed cap when the run has one.
    fileprivate func write(_ bytes: UnsafeRawBufferPointer) -> Int {
        if let pacer, !pacer.admits(self) { return dl_writefunc_pause() }
        let taken = take(bytes)
        // Only bytes taken count: a chunk paused for another reason comes again.
        if taken == bytes.count {
            pacer?.spent(taken)
            recording?.body(bytes)
        } else if abortError != nil {
            // Refused on its first bytes (a Content-Length past the limit):
            // kept in the recording all the same, so that a replay offers
            // the bytes this decision was taken on instead of leaving the
            // engine waiting for a body until its timeout.
            recording?.refused(bytes)
        }
        return taken
    }

    /// Body bytes: to the part file (and the hasher), or a pause, or a stop.
    private func take(_ bytes: UnsafeRawBufferPointer) -> Int {
        if body.keepsBytes, let bodyLimit, exceeds(bodyLimit, adding: bytes.count) {
            abortError = DownloadError(.size, "the body is larger than its limit of \(bodyLimit) bytes (\(bodyLimitName))")
            return 0
        }
        switch body {
        case .streaming:
            activity &+= 1
            if segmentLimit != nil { return storeWithin(bytes) }
            return store(bytes) ? bytes.count : 0
        case .undecided:
            decide(owner.bodyStarts(self))
            // The decision is never `.undecided`: this recurses once.
            return take(bytes)
        case .buffering:
            if buffered.count + bytes.count > Transfer.maxBufferedBytes {
                body = .bufferFull
                return dl_writefunc_pause()
            }
            buffered.append(contentsOf: bytes)
            activity &+= 1
            return bytes.count
        case .collecting:
            // Bounded by `bodyLimit`, checked above.
            buffered.append(contentsOf: bytes)
            activity &+= 1
            return bytes.count
        case .bufferFull, .paused:
            return dl_writefunc_pause()
        case .dropping:
            return bytes.count
        case .keptWhole, .refused:
            return 0
        }
    }

    /// A segment's bytes up to its limit; past it the engine says whether the
    /// transfer goes on into the next segment or stops there.
    private func storeWithin(_ bytes: UnsafeRawBufferPointer) -> Int {
        var rest = bytes
        while let limit = segmentLimit {
            let room = limit - (resumeOffset + received)
            if Int64(rest.count) <= room { break }
            if room > 0 {
                guard store(UnsafeRawBufferPointer(rebasing: rest[..<Int(room)])) else { return 0 }
                rest = UnsafeRawBufferPointer(rebasing: rest[Int(room)...])
            }
            guard let next = owner.segmentLimitReached(self), next > limit else {
                reachedLimit = true
                return 0
            }
            segmentLimit = next
        }
        return rest.isEmpty || store(rest) ? bytes.count : 0
    }

    /// Whether `count` more bytes would take the body past `limit`. Checked
    /// before a chunk is taken, so nothing past the limit is ever written.
    private func exceeds(_ limit: Int64, adding count: Int) -> Bool {
        resumeOffset + received + Int64(buffered.count) + Int64(count) > limit
    }

    /// To the part file and the hasher.
    private func store(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard let file else { return false }
        guard file.write(bytes) else {
            abortError = FileErrors.io("cannot write", file.path)
            return false
        }
        hasher?.update(bytes)
        received += Int64(bytes.count)
        return true
    }
}

private func transferWrite(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
    _ context: UnsafeMutableRawPointer?
) -> Int {
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    return transfer.write(UnsafeRawBufferPointer(start: data, count: size * count))
}

private func transferHeader(
    _ data: UnsafeMutablePointer<CChar>?, _ size: Int, _ count: Int,
    _ context: UnsafeMutableRawPointer?
) -> Int {
    let transfer = Unmanaged<Transfer>.fromOpaque(context!).takeUnretainedValue()
    // Any count but size * count makes curl stop the transfer.
    return transfer.header(UnsafeRawBufferPointer(start: data, count: size * count)) ? size * count : 0
}
