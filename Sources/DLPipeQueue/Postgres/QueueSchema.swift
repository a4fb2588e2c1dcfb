import DLPipe

/// The tables of the shared queue, in PostgreSQL schema `dlpipe`, as the
/// ordered steps that build them (`SchemaMigrator` applies them). A step is
/// never edited once released: a change is a new step at the end.
/// docs/design/queue-schema.md explains each table.
package enum QueueSchema {
    /// The PostgreSQL schema that holds every table, so that dlpipe can share
    /// a database with other programs and a role can be granted just this.
    package static let name = "dlpipe"

    /// The channel of NOTIFY for new work; the payload is the job's id.
    package static let workChannel = "dlpipe_work"
    /// After the job's id in a NOTIFY's payload: the job's run ended (or was
    /// ended by its last worker's leaving), so every worker looks now.
    package static let runEndedSuffix = " ended"
    /// After the job's id in a NOTIFY's payload: ` held SECONDS HOST`, a
    /// server's Retry-After holds its host back for the job that long.
    package static let heldInfix = " held "

    /// After the job's id in a NOTIFY's payload: ` control VERB WORKER ID`,
    /// a handler of another worker paused, resumed or cancelled download ID,
    /// which WORKER holds.
    package static let controlInfix = " control "

    /// The control, worker and download of a control's payload for `job`.
    package static func parseControl(_ payload: String, job: String) -> (control: QueueControl, worker: Int64, id: Int64)? {
        guard payload.hasPrefix(job + controlInfix) else { return nil }
        let parts = payload.dropFirst(job.count + controlInfix.count).split(separator: " ", omittingEmptySubsequences: false)
        guard parts.count == 3, let control = QueueControl(rawValue: String(parts[0])),
            let worker = Int64(parts[1]), let id = Int64(parts[2])
        else { return nil }
        return (control, worker, id)
    }

    /// The host and seconds of a hold's payload for `job`; nil for others.
    package static func parseHeld(_ payload: String, job: String) -> (host: String, seconds: Double)? {
        guard payload.hasPrefix(job + heldInfix) else { return nil }
        let rest = payload.dropFirst(job.count + heldInfix.count)
        guard let space = rest.firstIndex(of: " "), let seconds = Double(rest[..<space]), seconds > 0 else { return nil }
        let host = String(rest[rest.index(after: space)...])
        return host.isEmpty ? nil : (host, seconds)
    }

    package static var latest: Int { migrations.last?.version ?? 0 }

    package static let migrations: [SchemaMigration] = [
        SchemaMigration(version: 1, what: "jobs, runs, workers, hosts, downloads, url facts, names, store", sql: version1),
        SchemaMigration(version: 2, what: "placed times, released and script-written files, credential keys", sql: version2),
        SchemaMigration(version: 3, what: "runs count skipped downloads and bytes", sql: runCounts),
        SchemaMigration(version: 4, what: "runs count cancelled downloads", sql: runCancelled),
        SchemaMigration(version: 5, what: "a host slot counts transfers: a running row may have given its slot back", sql: slotsCountTransfers),
        SchemaMigration(version: runWorkersVersion, what: "a run's counts kept per worker, its top-level adds and queued count", sql: runWorkers),
        SchemaMigration(version: 7, what: "no foreign-key checks on the rows every download writes", sql: hotRowsUnchecked),
        SchemaMigration(version: 8, what: "claims held ahead that never started count no attempt when taken back", sql: aheadFlag),
        SchemaMigration(version: 9, what: "url facts and downloads leave room on their pages for the writes that follow", sql: factsRoom),
        SchemaMigration(version: 10, what: "a job knows the output directory its workers share", sql: directoryToken),
        SchemaMigration(version: 11, what: "a worker's row says which directory it checked", sql: workerDirectoryToken),
        SchemaMigration(version: 12, what: "no table of reserved names: the shared directory's no-clobber link decides a name", sql: noReservedNames),
        SchemaMigration(version: 13, what: "a paused claim keeps its token and is no work of its run's", sql: pausedClaims),
        SchemaMigration(version: 14, what: "a worker's row says whether it follows the job (--follow)", sql: workerFollows),
        SchemaMigration(version: controlsVersion, what: "a job can be paused, and its workers asked to stop", sql: controls),
        SchemaMigration(version: retriedVersion, what: "a retried failure leaves the count of the worker that failed it", sql: retried),
    ]

    /// A `--follow` worker keeps its paused downloads across runs instead of
    /// failing them when its run ends, so a run's default exit code counts
    /// only the paused rows of workers that will fail them.
    private static let workerFollows = """
        ALTER TABLE dlpipe.workers ADD COLUMN follows boolean NOT NULL DEFAULT false;
        """

    /// A download paused in its worker's engine shows `paused` (it had stayed
    /// `running`, and its run never ended) and keeps its claim token, so that
    /// its end is reported as any claim's and a late one changes nothing.
    /// The index of held rows covers paused ones: a worker that dies holding
    /// one gives it back with the rest.
    private static let pausedClaims = """
        ALTER TABLE dlpipe.downloads DROP CONSTRAINT downloads_claim_token;
        ALTER TABLE dlpipe.downloads ADD CONSTRAINT downloads_claim_token
          CHECK ((status IN ('running', 'paused')) = (claim_token IS NOT NULL));
        DROP INDEX dlpipe.downloads_running;
        CREATE INDEX downloads_running ON dlpipe.downloads (worker_id) WHERE status IN ('running', 'paused');
        """

    /// Version 1 made a table for the final names that downloads in flight
    /// would reserve; no version of dlpipe wrote a row into it. Workers
    /// place a file with a link that fails when the name exists (the
    /// disk decides, for every worker of the job at once, as on one
    /// machine), so a second arbiter in the database would only add a
    /// round trip per file, and the empty table still cost every report
    /// and take-back a delete, and every deleted download a cascade check.
    private static let noReservedNames = """
        DROP TABLE IF EXISTS dlpipe.names;
        """

    /// The directory token a worker found and checked in its own directory
    /// (NULL until it has): only workers past the check count as writing
    /// into the job's directory. Counting every live worker, workers that
    /// started together on the job's new directory each saw the others,
    /// not yet checked, as writing elsewhere, and all were refused.
    private static let workerDirectoryToken = """
        ALTER TABLE dlpipe.workers ADD COLUMN directory_token text;
        """

    /// The token in the job's folder of the output directory that its live
    /// workers found there (`QueueWorker.checkSharedDirectory`): a worker
    /// started with another -d finds another token, or none, and is refused
    /// while they live. A column that may be NULL: no rewrite of the table.
    private static let directoryToken = """
        ALTER TABLE dlpipe.jobs ADD COLUMN directory_token text;
        """

    /// Each download writes its url_facts row twice, about 50 ms apart:
    /// before its file is placed (target, validators) and after (the placed
    /// file's facts). The second write changes no indexed column (since
    /// this version a placed file under the record's own target is stored
    /// as NULL in `placed_target`: `PostgresDownloadState.write`), so it
    /// can be a heap-only update, with no new entry in any of the table's
    /// three indexes, when the row's page has room. At the default fill of
    /// 100 % the page a row was just inserted into never had any; at 70 %
    /// about half the rows found room, at 50 % nearly all (one worker,
    /// 10,000 files: the state's WAL 12.5 -> 9.8 -> 8.1 MB, its records
    /// 101,000 -> 76,000 -> 62,000). Half of each page is left free: room for
    /// one more version of each row, which is what a run writes; the table
    /// takes twice the pages it would when full (about 7 MB for 10,000
    /// URLs), as it would with a dead version of each row between vacuums.
    ///
    /// A download's row is written up to four times after its add; the two
    /// writes that move its host slot (`slot_host`: the claim held ahead
    /// that takes one, the transfer's end that gives it back) change no
    /// indexed column either; a page filled to 70 % lets most of them stay
    /// on it (one worker, 10,000 files: heap-only updates 4,000 -> 7,700 of
    /// 28,000, the whole run's WAL 27.0 -> 24.3 MB). The claim and the end
    /// change `status`, which the partial indexes name: never heap-only.
    ///
    /// Applies to pages filled from now on; nothing is rewritten.
    private static let factsRoom = """
        ALTER TABLE dlpipe.url_facts SET (fillfactor = 50);
        ALTER TABLE dlpipe.downloads SET (fillfactor = 70);
        """

    /// A claim held ahead counts an attempt when it is made, as any claim.
    /// One that never started (no slot came to it) and is taken back, from a
    /// worker that died or left, gave the server no request: without this
    /// mark the take-back kept the attempt, and each kill or Ctrl-C of a
    /// worker holding 6 x -j of them ahead spent one retry of each. Set by
    /// the claim ahead, cleared when the row takes a slot or stops running.
    /// (A column with a constant default: no rewrite of the table.)
    private static let aheadFlag = """
        ALTER TABLE dlpipe.downloads ADD COLUMN ahead boolean NOT NULL DEFAULT false;
        """

    /// Every download's add, claim and state write fired a foreign-key
    /// check (a trigger that runs a query and locks the referenced row):
    /// four per file in a first run, about 20 µs of the server's CPU each,
    /// more than the update it guarded. The statements themselves keep
    /// these references right: a row's job is the job that added it, its
    /// worker the one whose claim set it (cleared when the claim ends or
    /// is taken back), its run one that existed when it was queued (a run
    /// pruned later leaves a number no new run takes, and code only ever
    /// compares it with the open run's). What the checks also did, delete
    /// a job's rows with the job, is no longer done: no command deletes a
    /// job; docs/scale-out.md says how to remove one by hand. The
    /// references of the small tables (runs, workers, hosts, store, ...)
    /// stay checked: they are written once per run, worker or host.
    private static let hotRowsUnchecked = """
        ALTER TABLE dlpipe.downloads DROP CONSTRAINT IF EXISTS downloads_job_id_fkey;
        ALTER TABLE dlpipe.downloads DROP CONSTRAINT IF EXISTS downloads_run_id_fkey;
        ALTER TABLE dlpipe.downloads DROP CONSTRAINT IF EXISTS downloads_worker_id_fkey;
        ALTER TABLE dlpipe.url_facts DROP CONSTRAINT IF EXISTS url_facts_job_id_fkey;
        """

    /// A claim gives its host's slot back when its transfer ends, and stays
    /// running (under its token) while its file waits to be placed: a
    /// running row holds a slot when `slot_host` is set, and none when it is
    /// NULL. Version 1's check (running exactly when a token and a slot are
    /// set; unnamed, so PostgreSQL called it `downloads_check`) becomes: a
    /// running row has a token, and a row with a token is running.
    private static let slotsCountTransfers = """
        ALTER TABLE dlpipe.downloads DROP CONSTRAINT downloads_check;
        ALTER TABLE dlpipe.downloads ADD CONSTRAINT downloads_claim_token CHECK ((status = 'running') = (claim_token IS NOT NULL));
        """

    /// `s.cancelled` of `done`, job-wide: downloads cancelled while a worker
    /// held them, and queued ones cancelled before any worker took them.
    private static let runCancelled = """
        ALTER TABLE dlpipe.runs ADD COLUMN cancelled bigint NOT NULL DEFAULT 0;
        """

    /// The job-wide summary `done` gets (`s.skipped`, `s.bytes`) is summed
    /// in the run's row as workers report, like the other counts.
    private static let runCounts = """
        ALTER TABLE dlpipe.runs ADD COLUMN skipped bigint NOT NULL DEFAULT 0;
        ALTER TABLE dlpipe.runs ADD COLUMN bytes bigint NOT NULL DEFAULT 0;
        """

    private static let version1 = """
        -- One row per --name: the job's identity, and its job-wide limits (the
        -- values of the worker that started last; every claim reads them here,
        -- so that workers started with other values cannot exceed them).
        CREATE TABLE dlpipe.jobs (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          name text NOT NULL UNIQUE CHECK (name <> ''),
          per_host integer NOT NULL DEFAULT 2 CHECK (per_host >= 1),
          host_delay interval NOT NULL DEFAULT '0' CHECK (host_delay >= '0'),
          max_downloads bigint CHECK (max_downloads >= 0),
          created_at timestamptz NOT NULL DEFAULT now()
        );

        -- A run: from a worker starting while none is open to the moment nothing
        -- is ready, running or scheduled and nothing was for the settle time.
        -- At most one open run per job.
        CREATE TABLE dlpipe.runs (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          started_at timestamptz NOT NULL DEFAULT now(),
          idle_since timestamptz,
          done_worker bigint,
          done_at timestamptz,
          ended_at timestamptz,
          exit_code smallint,
          finished bigint NOT NULL DEFAULT 0,
          unchanged bigint NOT NULL DEFAULT 0,
          failed bigint NOT NULL DEFAULT 0,
          handled bigint NOT NULL DEFAULT 0,
          summary jsonb
        );
        CREATE UNIQUE INDEX runs_one_open ON dlpipe.runs (job_id) WHERE ended_at IS NULL;
        CREATE INDEX runs_by_job ON dlpipe.runs (job_id, started_at DESC);

        -- A worker process. Times are the database's (now()); a worker whose
        -- lease_until passed is dead, and its claims go back to ready.
        CREATE TABLE dlpipe.workers (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          run_id bigint REFERENCES dlpipe.runs ON DELETE SET NULL,
          hostname text NOT NULL,
          pid integer NOT NULL,
          lease interval NOT NULL CHECK (lease >= '2 seconds'),
          started_at timestamptz NOT NULL DEFAULT now(),
          heartbeat_at timestamptz NOT NULL DEFAULT now(),
          lease_until timestamptz NOT NULL,
          stopped_at timestamptz,
          stop_reason text
        );
        CREATE INDEX workers_live ON dlpipe.workers (job_id, lease_until) WHERE stopped_at IS NULL;
        ALTER TABLE dlpipe.runs ADD FOREIGN KEY (done_worker) REFERENCES dlpipe.workers ON DELETE SET NULL;

        -- Politeness across all workers: transfers in flight against a host and
        -- the earliest time of its next request. A claim locks the rows of the
        -- hosts it takes from, so the count is exact, not a race.
        CREATE TABLE dlpipe.hosts (
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          host text NOT NULL,
          in_flight integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
          next_at timestamptz NOT NULL DEFAULT '-infinity',
          last_claim_at timestamptz NOT NULL DEFAULT '-infinity',
          PRIMARY KEY (job_id, host)
        );

        CREATE SEQUENCE dlpipe.claim_tokens;

        -- The queue: one row per request of a job (key: URL, target, method and
        -- body digest, as the engine deduplicates), kept across runs.
        CREATE TABLE dlpipe.downloads (
          id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          key bytea NOT NULL,
          url text NOT NULL,
          host text NOT NULL,
          request jsonb NOT NULL DEFAULT '{}',
          secret jsonb,
          status text NOT NULL DEFAULT 'ready'
            CHECK (status IN ('ready', 'running', 'paused', 'finished', 'skipped', 'failed', 'handled', 'cancelled')),
          priority integer NOT NULL DEFAULT 0,
          run_at timestamptz NOT NULL DEFAULT now(),
          attempts integer NOT NULL DEFAULT 0,
          run_id bigint REFERENCES dlpipe.runs ON DELETE SET NULL,
          worker_id bigint REFERENCES dlpipe.workers ON DELETE SET NULL,
          claim_token bigint,
          slot_host text,
          claimed_at timestamptz,
          added_at timestamptz NOT NULL DEFAULT now(),
          ended_at timestamptz,
          last_error text,
          UNIQUE (job_id, key),
          CHECK ((status = 'running') = (claim_token IS NOT NULL AND slot_host IS NOT NULL))
        );
        -- Only ready rows are in the claim's index: finished rows pile up
        -- without making a claim slower.
        CREATE INDEX downloads_ready ON dlpipe.downloads (job_id, host, priority DESC, run_at, id) WHERE status = 'ready';
        CREATE INDEX downloads_running ON dlpipe.downloads (worker_id) WHERE status = 'running';

        -- What a later run needs to ask conditionally and keep a file: the
        -- facts of the response a file came from (as the SQLite state's
        -- downloads table). Written when a download ends, read when it starts.
        CREATE TABLE dlpipe.url_facts (
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          key bytea NOT NULL,
          url text NOT NULL,
          target text,
          status text NOT NULL,
          bytes bigint NOT NULL DEFAULT 0,
          total bigint,
          etag text,
          last_modified text,
          sha256 text,
          media_type text,
          attempts integer NOT NULL DEFAULT 0,
          last_error text,
          placed_target text,
          placed_size bigint,
          placed_inode bigint,
          updated_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (job_id, key)
        );

        -- Final names held by downloads in flight, relative to the shared
        -- directory: two workers never take one name.
        CREATE TABLE dlpipe.names (
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          name text NOT NULL,
          download_id bigint NOT NULL REFERENCES dlpipe.downloads ON DELETE CASCADE,
          claim_token bigint NOT NULL,
          reserved_at timestamptz NOT NULL DEFAULT now(),
          PRIMARY KEY (job_id, name)
        );
        CREATE INDEX names_by_claim ON dlpipe.names (claim_token);

        -- dl.store: the job's keys and JSON values, shared by its workers.
        CREATE TABLE dlpipe.store (
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          key text NOT NULL,
          value text NOT NULL,
          PRIMARY KEY (job_id, key)
        );
        """
}

extension QueueSchema {
    /// What `PostgresDownloadState` needs beyond version 1 to hold all that
    /// the SQLite state holds, job by job.
    fileprivate static let version2 = """
        -- The placed file's modification time (nanoseconds), so that a re-run
        -- tells a file the user changed from the one dlpipe left (the SQLite
        -- state's schema 7). url_facts.updated_at (version 1) is the time of
        -- the write on the database's clock.
        ALTER TABLE dlpipe.url_facts ADD COLUMN placed_mtime_ns bigint;

        -- dl.remove and the adoption of a file already under a name ask
        -- whether a path is a download's file; without these a job of a
        -- million URLs would read all its rows for each question.
        CREATE INDEX url_facts_by_target ON dlpipe.url_facts (job_id, target) WHERE target IS NOT NULL;
        CREATE INDEX url_facts_by_placed ON dlpipe.url_facts (job_id, placed_target) WHERE placed_target IS NOT NULL;

        -- Files a download placed and left behind when it placed a newer
        -- version under another name: still on disk, still a download's file
        -- (a script may not overwrite it), no longer any download's record.
        CREATE TABLE dlpipe.released (
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          path text NOT NULL,
          url text NOT NULL,
          size bigint NOT NULL,
          PRIMARY KEY (job_id, path)
        );

        -- Files that scripts wrote (dl.write, dl.append), relative to the
        -- shared directory, and the script's name (the dl.store namespace)
        -- that wrote each: a script may replace its own files, not others'.
        CREATE TABLE dlpipe.written (
          job_id bigint NOT NULL REFERENCES dlpipe.jobs ON DELETE CASCADE,
          path text NOT NULL,
          writer text NOT NULL,
          PRIMARY KEY (job_id, path)
        );

        -- 32 random bytes per job that key the digests standing in for a
        -- URL's user:password in url_facts.key (as the SQLite state's
        -- credential_key): the credentials themselves are kept only in
        -- downloads.secret. Set by the first state opened on the job.
        ALTER TABLE dlpipe.jobs ADD COLUMN credential_key bytea;
        """
}

/// One step of the schema: SQL that takes it from `version - 1` to `version`.
package struct SchemaMigration: Sendable {
    package let version: Int
    /// What the step adds, for messages.
    package let what: String
    package let sql: String

    package init(version: Int, what: String, sql: String) {
        self.version = version
        self.what = what
        self.sql = sql
    }
}
