import DLPipe

extension QueueSchema {
    /// The version that lets `dlpipe queue` pause a job and stop its
    /// workers: a worker of an older dlpipe would claim through a pause and
    /// never hear a stop, so it is refused by this version's database, as
    /// the migrator refuses every newer schema.
    package static let controlsVersion = 15

    /// After the job's id in a NOTIFY's payload: `dlpipe queue stop` asked
    /// every worker of the job to leave, as on SIGTERM.
    package static let stopSuffix = " stop"

    /// `jobs.paused_at`: while set, no worker claims (its claims held ahead
    /// go back to ready at its next cycle); transfers already running end
    /// as usual. `workers.stop_asked_at`: the worker gives back what it
    /// holds and leaves. A worker learns of a stop by NOTIFY and, should it
    /// miss that (its listener reconnecting), by its next heartbeat.
    /// `runs.reopened_at`: `retry --failed` reopened the ended run; until a
    /// worker has been in it since, no worker's start ends it as orphaned.
    /// Columns that may be NULL: no table is rewritten.
    static let controls = """
        ALTER TABLE dlpipe.jobs ADD COLUMN paused_at timestamptz;
        ALTER TABLE dlpipe.workers ADD COLUMN stop_asked_at timestamptz;
        ALTER TABLE dlpipe.runs ADD COLUMN reopened_at timestamptz;
        """
}
