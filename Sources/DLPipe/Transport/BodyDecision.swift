/// What the engine wants done with a response's body.
enum BodyDecision {
    /// Write it: the part file is open.
    case write
    /// Hold it: a hook is deciding (back-pressure through CURL_WRITEFUNC_PAUSE).
    case pause
    /// Keep it in memory until the part file opens: after the state commit at
    /// the end of this loop turn, or after the response hook's verdict
    /// (`Transfer.flushBuffer`); past `maxBufferedBytes`, pause as for `.pause`.
    /// A small file then completes in curl at once, without a pause and unpause
    /// and another loop turn to finish it.
    case buffer
    /// Keep all of it in memory: a memory download.
    case collect
    /// Stop the transfer; the engine recorded why.
    case abort
    /// Read and drop it (a redirect, a 304, a refused resume).
    case discard(TransferBody.Drop)
}
