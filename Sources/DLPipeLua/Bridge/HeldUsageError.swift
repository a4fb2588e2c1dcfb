/// A usage error of the command line that only the job can settle: `--name`,
/// `--lease`, `--settle` or `--follow` given while neither `--queue` nor
/// `DLPIPE_QUEUE` names a queue, which is right only when the job names one
/// with `dl.config{ queue }`. The job's top level may run up to its first
/// effect (a line it logs or prints, a `dl.store` call): a job that named
/// its queue by then is a worker; any other is refused there, or when its
/// top level ends, so a usage error still comes before anything the job
/// does is seen and before any request (docs/scale-out.md). Top-level adds
/// are only gathered until the run starts, and their numbering has its own
/// rule (`dl.config{ queue }` after the first `dl.add` is a load error).
struct HeldUsageError {
    /// The usage error to raise at the job's first effect; nil when none waits.
    var message: String?
    /// The error once raised: kept, so that a job that catches it with `pcall`
    /// is refused all the same when its top level ends.
    private(set) var raised: String?

    /// The job named its queue: the options were right.
    mutating func queueNamed() { message = nil }

    /// Called before each effect of a script: raises the held error, if any.
    mutating func check() throws(LuaCallError) {
        guard let message else { return }
        raised = message
        throw LuaCallError(message)
    }

    /// After the job's top level: the error to give, raised or not, unless the
    /// job named its queue before it did anything.
    var verdict: String? { raised ?? message }
}
