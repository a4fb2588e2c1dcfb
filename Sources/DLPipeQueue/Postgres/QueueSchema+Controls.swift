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
    /// After the job's id in a NOTIFY's payload: ` cancel RUN`, `dlpipe
    /// queue cancel` ended run RUN's work: every worker in it cancels what
    /// it holds.
    package static let cancelInfix = " cancel "
    /// After the job's id in a NOTIFY's payload: `dlpipe queue pause` or
    /// `resume` changed the job's pause; each worker says so once.
    package static let pauseSuffix = " paused"
    package static let resumeSuffix = " resumed"

    /// The part of a claim's `job` condition that refuses claims while the
    /// job's open run is cancelled (`$1` is the job's id).
    static let openRunNotCancelled =
        "NOT EXISTS (SELECT 1 FROM dlpipe.runs c WHERE c.job_id = $1 AND c.ended_at IS NULL AND c.cancel_asked_at IS NOT NULL)"

    /// `jobs.paused_at`: while set, no worker claims (its claims held ahead
    /// go back to ready at its next cycle); transfers already running end
    /// as usual. `workers.stop_asked_at`: the worker gives back what it
    /// holds and leaves. A worker learns of a stop by NOTIFY and, should it
    /// miss that (its listener reconnecting), by its next heartbeat.
    /// `runs.cancel_asked_at`: `dlpipe queue cancel` ended the run's work;
    /// no worker claims for it, and what comes back ready ends cancelled.
    /// `runs.reopened_at`: `retry --failed` reopened the ended run; until a
    /// worker has been in it since, no worker's start ends it as orphaned.
    /// Columns that may be NULL: no table is rewritten.
    static let controls = """
        ALTER TABLE dlpipe.jobs ADD COLUMN paused_at timestamptz;
        ALTER TABLE dlpipe.workers ADD COLUMN stop_asked_at timestamptz;
        ALTER TABLE dlpipe.runs ADD COLUMN reopened_at timestamptz;
        ALTER TABLE dlpipe.runs ADD COLUMN cancel_asked_at timestamptz;
        """

    /// The version whose run history stays whole across `retry --failed`:
    /// `downloads.ended_by` is the worker that reported a download's end,
    /// so that a retried failure leaves that worker's count in the run
    /// (`run_workers`) as it leaves the run's; `runs.retried` counts the
    /// failures put back, the run's history of them.
    package static let retriedVersion = 16

    static let retried = """
        ALTER TABLE dlpipe.downloads ADD COLUMN ended_by bigint;
        ALTER TABLE dlpipe.runs ADD COLUMN retried bigint NOT NULL DEFAULT 0;
        """
}
