/// What a transfer does with the body bytes curl hands it: one value in
/// place of the flags it once took (decided, holding, buffered, keeping the
/// whole body, redirect, not modified, restart). The write callback switches
/// on it once per chunk.
enum TransferBody: Equatable {
    /// Why a body is read and dropped.
    enum Drop: Equatable {
        /// The body of a redirect: the engine follows the Location.
        case redirect
        /// The body of a 304: the file on disk is current.
        case unchanged
        /// The body of a 416 to a resume: the download starts again from byte 0.
        case restart
    }

    /// The head is not judged yet: the first body byte (or the end of an
    /// empty body) asks the engine.
    case undecided
    /// Bytes go to the part file (and the hasher) as they come.
    case streaming
    /// Bytes wait in memory (`Transfer.buffered`) until the part file opens.
    case buffering
    /// The memory buffer is full: curl is paused until the part file opens.
    case bufferFull
    /// A hook decides about a transfer that ended: curl is paused, no buffer.
    case paused
    /// The whole body is in memory and becomes a `HeldFile` once curl reports
    /// the transfer complete (`Transfer.keepWholeBody`).
    case keptWhole
    /// Bytes are read and dropped.
    case dropping(Drop)
    /// The engine refused the body (its reason is `Transfer.abortError`).
    case refused
    /// A memory download's body: every byte stays in memory, up to the
    /// download's limit (`DownloadRequest.bodyLimit`), never a file.
    case collecting

    /// Whether curl is held (CURL_WRITEFUNC_PAUSE) by this transfer's own
    /// choice: not a stall.
    var pausesCurl: Bool { self == .paused || self == .bufferFull }
    /// Whether body bytes are kept in memory.
    var isInMemory: Bool { self == .buffering || self == .bufferFull }
    /// Whether the next chunk is taken as the body's (to the part file or
    /// memory): what a size limit counts.
    var keepsBytes: Bool { self == .streaming || self == .buffering || self == .collecting }
}
