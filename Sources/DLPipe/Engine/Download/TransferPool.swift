/// The curl side of the engine loop: the transfers running on the multi
/// handle, by their easy handle, and the handles kept for reuse. Engine
/// thread only.
final class TransferPool {
    /// Running transfers, by their easy handle (curl's completions name it).
    var transfers: [UnsafeMutableRawPointer: Transfer] = [:]
    /// Easy handles of ended transfers, reset and used again.
    var idleHandles: [CurlEasy] = []
    /// When the running transfers next report their progress.
    var nextProgressTick = 0.0
    /// Split downloads' segments, by download (docs/design/split.md).
    var splits: [DownloadID: SplitPlan] = [:]
}
