/// One run of a job, as `dlpipe status` shows it.
package struct RunRecord: Sendable, Hashable {
    public var id: Int64
    public var startedAt: Double
    public var endedAt: Double?
    public var pid: Int64
    public var finished: Int64
    public var failed: Int64
    public var unchanged: Int64
}
