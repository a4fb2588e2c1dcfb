import DLPipe

/// Hosts that claims held ahead would starve (issue #36): a worker's claims
/// ahead keep its transfer slots on the hosts where it transfers (each slot
/// that ends goes to the next claim of its host, in the worker), so while
/// the workers' slots are fewer than the hosts with work, the other hosts
/// waited until those ran dry: 2 workers of `-j 2` served 4 of 6 hosts, and
/// the other 2 got their first request after two thirds of the job.
extension SharedQueue {
    /// Whether a host of the job has downloads due and nothing in flight
    /// (nor a host delay or Retry-After holding it back): it waits for a
    /// slot that only the queue's claim gives, least recently served host
    /// first. Not the hosts of `holding` (those of which the asking worker
    /// holds claims ahead: a moment with none of their transfers running,
    /// which small files often see, gives those claims a slot, `promoteAhead`).
    /// One index probe per host the claim could serve, as the claim's own
    /// `free_hosts`. Also true while the job is paused (`dlpipe queue
    /// pause`): the worker then gives back its claims held ahead, as for a
    /// starving host, and holds no new ones.
    package func hostsStarve(holding: [String] = [], on connection: PostgresConnection) throws(PostgresError) -> Bool {
        try connection.executePrepared(
            "dlpipe_hosts_starve", Self.hostsStarveStatement, [.int(job), .textArray(holding)]
        ).rows[0].bool("starve")
    }

    /// `hostsStarve`'s statement. The probe of each host's ready downloads
    /// is a LATERAL with a LIMIT, as in the claim's `free_hosts`, so that
    /// the host is a parameter of the index scan: written as a plain EXISTS,
    /// a new job's tables (no statistics yet) got a semi join that read
    /// every ready row of the job once per idle host, quadratic in the hosts
    /// (3,000 hosts of one download each: 65 to 290 ms a call, most of the
    /// run's database CPU).
    static let hostsStarveStatement = """
        SELECT EXISTS (SELECT 1 FROM dlpipe.jobs WHERE id = $1 AND paused_at IS NOT NULL) OR EXISTS (
          SELECT 1 FROM dlpipe.jobs j JOIN dlpipe.hosts h ON h.job_id = j.id
          CROSS JOIN LATERAL (
            SELECT 1 FROM dlpipe.downloads d
            WHERE d.job_id = $1 AND d.host = h.host AND d.status = 'ready' AND d.run_at <= now()
            LIMIT 1
          ) due
          WHERE j.id = $1 AND j.per_host > 0 AND h.in_flight = 0 AND h.next_at <= now()
            AND h.host <> ALL($2::text[])
        ) AS starve
        """
}
