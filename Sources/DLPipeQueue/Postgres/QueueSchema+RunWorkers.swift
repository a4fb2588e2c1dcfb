import DLPipe

extension QueueSchema {
    /// The version that added `run_workers`: readers of an older schema
    /// (`dlpipe status`) find the run's counts in its own row only.
    package static let runWorkersVersion = 6
    /// The version that added `downloads.ahead` (claims held ahead): readers
    /// of an older schema count no claim as held ahead.
    package static let aheadVersion = 8

    /// What several workers wrote into the run's one row, each
    /// report and each look, now goes into a row of each worker: reports of
    /// different workers touch no common row, so they do not wait for each
    /// other's commit. `done`, `status` and the run's end sum them with the
    /// run's own counts (which keep what a worker of an older version added).
    static let runWorkers = """
        -- One row per worker and run: the counts of the reports this worker
        -- made in the run, and the digest of the job's top-level adds once
        -- this worker queued them all for the run (a later worker with the
        -- same digest need not send them again). Not tied to dlpipe.workers:
        -- long-stopped workers are pruned, the runs they counted in are kept.
        CREATE TABLE dlpipe.run_workers (
          run_id bigint NOT NULL REFERENCES dlpipe.runs ON DELETE CASCADE,
          worker_id bigint NOT NULL,
          finished bigint NOT NULL DEFAULT 0,
          unchanged bigint NOT NULL DEFAULT 0,
          failed bigint NOT NULL DEFAULT 0,
          handled bigint NOT NULL DEFAULT 0,
          skipped bigint NOT NULL DEFAULT 0,
          cancelled bigint NOT NULL DEFAULT 0,
          bytes bigint NOT NULL DEFAULT 0,
          top_level bytea,
          PRIMARY KEY (run_id, worker_id)
        );
        CREATE INDEX run_workers_top_level ON dlpipe.run_workers (run_id, top_level) WHERE top_level IS NOT NULL;

        -- Downloads the run queued (new rows, or rows of an earlier run queued
        -- again), counted while the job has a max_downloads: the job-wide limit.
        ALTER TABLE dlpipe.runs ADD COLUMN queued bigint NOT NULL DEFAULT 0;
        """
}
