/// Help texts in the OVERVIEW / USAGE / OPTIONS layout.
enum HelpText {
    static let main = """
        OVERVIEW: dlpipe, a scriptable download pipeline

        USAGE: dlpipe <command> [options]

        COMMANDS:
          run JOB.lua [options]   run a job: a Lua script that adds URLs and handles events
          get URL... [options]    download URLs (-i FILE for a list, - for stdin)
          check JOB.lua           load and validate a job and its hooks; no network
          status [DIR]            what the state of an output directory holds (--json);
                                  status --queue URL [--name NAME]: a shared queue's jobs
          queue SUBCOMMAND        steer a shared queue's job: failures, runs, retry,
                                  pause, resume, cancel, stop, purge (queue --help)
          web [DIR]               a live web page and /metrics of a directory's state;
                                  web --queue URL [--name NAME]: of a shared queue
          lua-defs                print the dl API for editors (LuaLS): dlpipe lua-defs > dl.d.lua

        OPTIONS:
          -h, --help              show help (also: dlpipe get --help)
          -V, --version           show the version

        EXIT CODES:
          0 every download finished or was skipped, 1 at least one failed,
          2 usage error or a script that failed to load, 3 another run holds the
          directory's lock, 4 a shared queue's database cannot be reached (or a
          worker lost it, or its lease), 130 stopped by SIGINT or SIGTERM; a done
          handler may return its own

        """

    /// The options `run` and `get` share.
    static let shared = """
          -d, --dir DIR           output directory (default: .)
          -j, --concurrency N     transfers at once (default: 8)
          --per-host N            transfers at once per host (default: 4)
          --retries N             retries of network errors, timeouts, 408, 429, 5xx (default: 3)
          --timeout SECONDS       no progress for that long fails the attempt (default: 30)
          -m, --max-time S        an attempt that takes longer fails (kind timeout, retried)
          -Y, --speed-limit B     an attempt slower than B bytes/s over --speed-time fails
          -y, --speed-time S      the seconds --speed-limit is measured over (default: 30)
          --rate BYTES[/s]        total speed cap; K, M, G suffixes (e.g. 500K, 2M)
          --split N               one large file over up to N connections by byte ranges
                                  (at least 1 MiB each; they count against --per-host)
          --web ADDR:PORT         serve a live page, /metrics and /api/run while the run lasts
                                  (port 0: a free one; the URL goes to stderr); an address
                                  beyond loopback needs a token: DLPIPE_WEB_TOKEN,
                                  --web-token-file FILE or --web-token TOKEN (docs/operating.md)
          --var NAME=VALUE        a value for scripts (dl.var.NAME; every script reads it)
          --allow-env NAME        let scripts read this environment variable with os.getenv
                                  (repeatable; no other is answered)
          --hooks DIR             load DIR/*.lua as drop-in hooks (repeatable)
          --no-hooks              do not load hooks.d/ beside the job
          --hook FILE             load one hook script (repeatable)
          --unsafe-lua            give scripts the full Lua standard library
          --wait-lock             wait for another run in the same directory instead of exit 3
          --state FILE            keep the state here instead of DIR/.dlpipe/state.db
                                  (a file, not a URL)
          --cacert FILE           trust the certificate authorities in FILE (PEM) for https
                                  (default: $CURL_CA_BUNDLE, else $SSL_CERT_FILE, else the system's)
          -k, --insecure          do not check certificates (warns on every run)
          -x, --proxy URL         use this proxy (default: $http_proxy, $https_proxy, $ALL_PROXY)
          --noproxy LIST          hosts reached directly (default: $no_proxy); * for all
          --resolve HOST:PORT:ADDR
                                  connect to ADDR for HOST:PORT (repeatable)
          --connect-to HOST1:PORT1:HOST2:PORT2
                                  connect to HOST2:PORT2 instead (repeatable)
          --max-redirs N          redirects followed per download (default: 10)
          --allow-insecure-redirects
                                  follow redirects from https to http (refused by default)
          -u, --user USER:PASS    credentials for the requested host (never sent after a
                                  redirect to another host); blanked in ps once read
          --netrc                 credentials from ~/.netrc, per host
          --netrc-file FILE       credentials from FILE, per host (keeps a password out
                                  of ps from the start)
          -b, --cookie FILE       send the cookies of a Netscape cookie file
          -c, --cookie-jar FILE   write the session's cookies to FILE at the end
          --host-delay S          at least S seconds between requests to one host
          --robots                obey each host's robots.txt (skip what it disallows,
                                  take its Crawl-delay when longer)
          --digest, --anyauth     HTTP Digest, or whichever scheme the server offers
          --compressed            ask for compressed transfers, store decoded bytes
                                  (compressed files such as .gz are stored as sent)
          --no-mtime              keep the time of writing (default: the file's time is
                                  its Last-Modified; -R, --remote-time say so explicitly)
          --overwrite             a new body replaces a file of the same name (default:
                                  it goes beside it as name.1.ext)
          --verify                hash each kept file again before asking about it; one
                                  that differs from its SHA-256 is fetched and replaced
          --json                  one JSON object per event on stdout (JSON Lines)
          -q, --quiet             print nothing but errors and dl.warn lines
          --progress MODE         auto, bars, lines or none (default: auto: bars on a terminal)
          --refresh WHEN          a file an earlier run finished: conditional (ask the server
                                  whether it changed; the default), never (keep it), always
                                  (fetch it again)
          -h, --help              show this help
        """

    static let run = """
        OVERVIEW: run a dlpipe job: a Lua 5.4 script that configures the run, adds
        URLs with dl.add and handles events with dl.on (see docs/lua-api.md)

        USAGE: dlpipe run JOB.lua [options]

        OPTIONS (they override the job's dl.config):
        \(shared)
        TESTING HOOKS OFFLINE:
          --record DIR            also store every response (status, headers, body,
                                  redirect hops) in DIR, a new or empty folder
          --replay DIR            run with no network: DIR's responses answer, into a
                                  new temporary output directory and state (-d: another)

        SHARED QUEUE (docs/scale-out.md): every process started so is one worker of the job
          --queue URL             PostgreSQL holds the job's queue and state, shared by
                                  every worker started so (default: $DLPIPE_QUEUE)
          --name NAME             the job's name in the queue (required with a queue)
          --lease S               seconds without a heartbeat before the other workers
                                  take this one's downloads (default 30, at least 2)
          --settle S              seconds the whole job must be idle before its run
                                  ends and done runs, once, in one worker (default 5)
          --follow                do not exit when a run ends: wait for the next one
                                  (a daemon; stop it with SIGTERM)
          --no-queue              run without a shared queue, whatever $DLPIPE_QUEUE or
                                  dl.config{ queue } say (also: --queue '')
          with a queue, --state is a usage error: the queue's database holds the state;
          -d DIR belongs to one job at a time: another job's workers there is exit 3

        EXIT CODES:
          0 all finished, unchanged or skipped; 1 at least one failed; 2 usage error
          or a script failed to load; 3 another run holds the directory's lock (or
          another queue job's workers write there); 4 the queue's database cannot be reached at start, or a worker lost it
          for longer than it waits (max(60 s, 2 x lease)), or lost its lease;
          130 stopped by SIGINT or SIGTERM; a done handler may return its own

        """

    static let status = """
        OVERVIEW: show what the state of an output directory holds: downloads by
        status, the failed ones with their last error, the partial ones with their
        bytes on disk, files placed earlier and no longer tracked, and the last
        runs (ended, running, or killed); with --queue, what a job of a shared
        queue is doing

        USAGE: dlpipe status [DIR] [--json] [--state FILE]
               dlpipe status --queue URL [--name NAME] [--json]

        OPTIONS:
          --json                  one JSON object for machines
          --state FILE            read this state file instead of DIR/.dlpipe/state.db
          --queue URL             a shared queue in PostgreSQL instead of a directory
                                  (also DLPIPE_QUEUE, when no DIR is given)
          --name NAME             the queue's job to show; without it, every job of
                                  the queue on one line with its counts and workers
          --no-queue              the directory's status even when DLPIPE_QUEUE is set
                                  (also: --queue '')
          -h, --help              show this help

        WITH --queue (docs/scale-out.md, "Watching a job"):
          the job's downloads by status (ready, scheduled: waiting for a retry's
          time, running, paused, finished, skipped, failed, handled, cancelled),
          its workers (alive, or lease expired: dead, claims not yet taken back)
          with their last heartbeat, transfers in flight per host, the 20 most
          recent failures with their last error and how many failed, the last 5
          runs. Times are ages measured by the database. Nothing is written.
          --json keys: queue, schema_version, job, per_host, host_delay,
          max_downloads, the counts by status, workers_alive, workers_expired,
          workers [id, hostname, pid, state, started_ago, heartbeat_ago,
          lease_left, running], in_flight, hosts_in_flight, hosts [host,
          in_flight, waiting], failures [url, last_error, attempts, ended_ago],
          runs [id, status, started_ago, ended_ago, idle_ago, exit_code, finished,
          unchanged, failed, handled, done_worker]; without --name: queue,
          schema_version, jobs [job, the counts, workers_alive, workers_expired].
          Ages and lease_left are seconds.

        EXIT CODES (with --queue):
          0 shown; 1 no dlpipe queue in the database, no job of that name (the
          message lists the names), or a schema it cannot read; 2 usage error;
          4 the database cannot be reached

        """

    static let check = """
        OVERVIEW: load a job and its hooks without any network access, and report
        syntax errors, unknown events and config keys, misplaced API calls,
        misspelled dl names anywhere and literals a handler may not return
        (run refuses the same job at load: docs/lua-api.md, "Checking a job")

        USAGE: dlpipe check JOB.lua [--hooks DIR] [--no-hooks] [--hook FILE] [--var NAME=VALUE]

        EXIT CODES:
          0 the job loads; 2 it does not (each problem as file:line: message)

        """

    static let luaDefs = """
        OVERVIEW: print a lua-language-server definition file of the dl API
        (every call, event argument and field, with types), for completion and
        checks in an editor

        USAGE: dlpipe lua-defs > dl.d.lua

        """

    static let get = """
        OVERVIEW: download URLs through the dlpipe engine

        USAGE: dlpipe get URL... [options]
               dlpipe get -i FILE [options]
               dlpipe get - [options]  (the URL list on stdin)

        OPTIONS:
          -i, --input FILE        read URLs from FILE, one a line (- for stdin; # comments)
          -o, --output FILE       where the file goes (one URL only): a bare NAME goes
                                  under -d, a path with a / is the file itself (the
                                  state and lock stay those of -d), - is stdout (not
                                  with --json; its staged copy is removed on every
                                  exit); an existing file dlpipe did not place is
                                  never replaced (exit 2, before any request)
          --sha256 HEX            expected SHA-256 of the file (one URL only)
          -H, --header "N: V"     an extra request header (Authorization and Cookie are
                                  not sent after a redirect to another host)
          -O, -L, -C -, -f        curl's letters for what dlpipe does anyway: name from
                                  the URL, follow redirects, resume, fail on HTTP errors
          -s, --silent            as -q
        \(shared)
        EXIT CODES:
          0 all finished or skipped, 1 at least one failed, 2 usage error

        """

    static let queue = """
        OVERVIEW: steer a job of a shared queue (docs/scale-out.md, "Steering a job")

        USAGE: dlpipe queue <subcommand> --queue URL --name NAME [options]

        SUBCOMMANDS:
          failures                every failed download of the job's latest run
            --run N               of run N instead
            --host HOST           only those of HOST
            --kind KIND           only errors of KIND (http, network, timeout, tls, ...)
          retry --failed          the failed downloads of the latest run are ready again
                                  in that run, reopened if it had ended: running workers
                                  claim them at once, a worker started now joins the run
            --host HOST           only those of HOST
            --kind KIND           only errors of KIND
          runs                    the job's runs, newest first, with each worker's counts
          pause                   no worker claims anything new until resume (transfers
                                  that run finish; claims held ahead go back to the queue)
          resume                  the workers claim again, at once
          cancel                  the open run's waiting and running downloads end
                                  cancelled and the run ends (done runs once)
          stop                    every live worker of the job, on every machine, gives
                                  back what it holds and exits 130, as on SIGTERM
          purge --older-than D    delete the runs that ended more than D ago (30d, 12h,
                                  90m, 1d12h) and their workers' counts; never an open
                                  run, never the per-URL state, the files or dl.store

        OPTIONS:
          --queue URL             the queue's PostgreSQL database (default: $DLPIPE_QUEUE)
          --name NAME             the job (as the workers' --name)
          --json                  one JSON document on stdout

        EXIT CODES:
          0 done, 1 no queue, no such job, or the database refused it (a schema
          older than this dlpipe's: start a worker of it once), 2 usage error,
          4 the database cannot be reached

        """

    static let web = """
        OVERVIEW: a live web page, /api/view and /metrics of a shared queue or of a
        directory's state (docs/operating.md, "The fleet's view")

        USAGE: dlpipe web --queue URL [--name NAME] [--listen ADDR:PORT]
               dlpipe web [DIR] [--state FILE] [--listen ADDR:PORT]

        OPTIONS:
          --queue URL             the shared queue's PostgreSQL database (default:
                                  $DLPIPE_QUEUE when no directory is named): every job,
                                  its runs, workers, hosts in flight and failures
          --name NAME             only that job
          --state FILE            the directory's state file (as run's --state)
          --listen ADDR:PORT      where to serve (default 127.0.0.1:0, a free port);
                                  the URL is printed on stderr
          --web-token TOKEN       the token a request needs (also $DLPIPE_WEB_TOKEN,
          --web-token-file FILE   or a file); required beyond a loopback address

        It reads the database or the state once a second, read-only, and serves
        until SIGINT or SIGTERM.

        EXIT CODES:
          130 stopped by SIGINT or SIGTERM, 1 cannot listen there, 2 usage error
          (an address beyond loopback without a token), 4 the queue's database
          cannot be reached at start

        """
}
