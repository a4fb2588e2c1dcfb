"""Set 8, "queue": one Lua job of many small files run without a queue (SQLite, the
baseline) and through PostgreSQL (`--queue`) with 1, 2 and 4 workers (issue 11).

Every queue run gets a database of its own in a throwaway cluster, so that it starts
from an empty queue. The workers of one run start together from one shell, which waits
for them all: the wall time is from the first start to the last exit, and the CPU time
(from wait4) is the sum over the workers. Each worker runs with `--settle 0`: the settle
time is a fixed wait for late workers, not work, so it is left out.

Each run's database is a copy of one that holds dlpipe's tables and no job, as a
database does after its first run: creating the schema (ten migrations, each
committed: about 0.1 s of PostgreSQL's CPU) happens once per database, not per run,
so it is made outside the timing (`schema_template`)."""
import os
import statistics
import subprocess

import datasets
import pgcluster
import tools

CONCURRENCY = 16  # -j of every worker, and of the SQLite run
NAME = "bench"  # the job's --name in the queue
TEMPLATE = "queue_template"  # the database each run's is copied from (schema_template)
# The compared build's own: its schema may be older (a newer one is refused).
COMPARED_TEMPLATE = "queue_template_compared"
BASELINE = "dlpipe run (SQLite)"
WORKERS = (1, 2, 4)

# Starts "$@" $1 times at once and waits for each; the first failure's status is the shell's.
SPAWN = ('n=$1; shift; pids=; i=0; while [ "$i" -lt "$n" ]; do "$@" & pids="$pids $!"; i=$((i+1)); done; '
         'status=0; for p in $pids; do wait "$p" || { [ "$status" -ne 0 ] || status=$?; }; done; exit "$status"')


def label(workers, compared=False):
    return "dlpipe run --queue, %d worker%s%s" % (workers, "" if workers == 1 else "s", " (compared)" if compared else "")


COMPARED_BASELINE = BASELINE + " (compared)"


class QueueRuns:
    """What the database says about each queue run, by label: claims and their spread."""

    def __init__(self, cluster):
        self.cluster = cluster
        self.spreads = {}  # label -> [(claims, seconds from the first claim to the last end)]
        self.statements = {}  # label -> (statements, wal) of the last run, with --pg-stats
        self.server_cpu = {}  # label -> [PostgreSQL's CPU seconds during the run]
        self.commits = {}  # label -> [transactions committed in the run's database]

    def contender(self, binary, script, base, count, workers, compared=False):
        name = label(workers, compared)
        database = []

        def argv(job, out):
            # Made outside the timing: argv is built before the runner starts.
            database[:] = [self.cluster.fresh_database(COMPARED_TEMPLATE if compared else TEMPLATE),
                           self.cluster.cpu_seconds()]
            # No `timeout` wrapper: with one, quick runs had workers stopped by signals
            # (twice in 16 runs; never in 32 runs without). A worker that did not
            # exit (docs/architecture.md, "A run that does not end") would stall
            # the bench: ^C stops it, PostgreSQL included.
            command = [binary, "run", script, "--var", "base=" + base, "--var", "count=%d" % count, "-d", out,
                       "-j", str(CONCURRENCY), "--per-host", str(CONCURRENCY * workers), "-q", "--progress", "none", "--no-hooks",
                       "--queue", self.cluster.url(database[0]), "--name", NAME, "--settle", "0"]
            return command if workers == 1 else ["sh", "-c", SPAWN, "sh", str(workers)] + command

        def after_run(passed, measured):
            if passed and measured:  # not the warm-up
                self.server_cpu.setdefault(name, []).append(self.cluster.cpu_seconds() - database[1])
                claims, seconds = self.cluster.sql(
                    "SELECT sum(attempts), extract(epoch FROM max(ended_at) - min(claimed_at)) "
                    "FROM dlpipe.downloads", database[0])[0]
                self.spreads.setdefault(name, []).append((int(claims), float(seconds)))
                # The run's database is its own, so its commit count is the workers'
                # (less psql's own statements: this one and the one above).
                commits = self.cluster.sql("SELECT pg_stat_force_next_flush(), xact_commit FROM pg_stat_database "
                                           "WHERE datname = current_database()", database[0])[0][1]
                self.commits.setdefault(name, []).append(int(commits))
                if self.cluster.stats:
                    self.statements[name] = self.cluster.statements(database[0])
            self.cluster.drop(database[0])

        argv.after_run = after_run
        return name, argv

    def claims_per_second(self, name):
        """Median over the runs of claims / (last end - first claim), and the median spread."""
        runs = self.spreads.get(name, [])
        if not runs:
            return None, None
        return (statistics.median(c / s for c, s in runs if s > 0), statistics.median(s for _, s in runs))


def schema_template(cluster, binary, work, template=TEMPLATE):
    """Makes `template`: a database where `binary` created its tables (a run of a
    job with nothing to fetch, under another name), then emptied but for the
    schema's version."""
    cluster.sql("CREATE DATABASE %s" % template)
    script = os.path.join(work, "nothing.lua")
    with open(script, "w") as f:
        f.write("-- the schema only: nothing to fetch\n")
    out = os.path.join(work, template + "-out")
    subprocess.run([binary, "run", script, "-d", out, "-q", "--progress", "none", "--no-hooks",
                    "--queue", cluster.url(template), "--name", "template", "--settle", "0"],
                   check=True, stdout=subprocess.DEVNULL)
    cluster.clear_tables(template, "dlpipe", keep="schema_version")


def job_file(work, data):
    """The job: one dl.add per file of the set, all at its top level."""
    path = os.path.join(work, "many.lua")
    with open(path, "w") as f:
        f.write("dl.config{ max_downloads = tonumber(dl.var.count) }\n"
                "local base, width = dl.var.base .. '/%s/', #tostring(tonumber(dl.var.count) - 1)\n"
                "for i = 0, tonumber(dl.var.count) - 1 do\n"
                "  dl.add(base .. string.format('f%%0' .. width .. 'd.bin', i))\n"
                "end\n" % data.name)
    return path


def run(bench, server):
    """Measures the set (its tables go into bench.markdown); returns its target."""
    count, size = bench.size["many_small"]
    data = datasets.DataSet(bench.root, "many", count, size, 9)
    job = tools.Job(bench.work, "many", [server.url(p) for p in data.paths()], CONCURRENCY)
    script = job_file(bench.work, data)
    base = server.url("")
    cluster = pgcluster.Cluster(os.path.join(bench.work, "postgres"), stats=bench.args.pg_stats)
    try:
        schema_template(cluster, bench.binary, bench.work)
        runs = QueueRuns(cluster)
        contenders = [tools.dlpipe_job(bench.binary, script, BASELINE, base,
                                       extra=lambda job: ["--var", "count=%d" % count])]
        contenders += [runs.contender(bench.binary, script, base, count, n) for n in WORKERS]
        if bench.args.compare:
            # An A/B run: the other build's SQLite run and one worker, in the same rounds.
            schema_template(cluster, bench.args.compare, bench.work, COMPARED_TEMPLATE)
            contenders += [tools.dlpipe_job(bench.args.compare, script, COMPARED_BASELINE, base,
                                            extra=lambda job: ["--var", "count=%d" % count]),
                           runs.contender(bench.args.compare, script, base, count, 1, compared=True)]
        title = "Set 8 (queue): %s files of %d KiB through one Lua job, SQLite vs PostgreSQL with 1, 2 and 4 workers" % (
            format(count, ","), size // datasets.KIB)
        note = ("Each worker runs `-j %d`; `--per-host` (job-wide in queue mode) is %d x the workers, so that "
                "every worker can fill its `-j`. Queue runs use `--settle 0` (the settle time is a fixed wait, "
                "not work) and a fresh database each, holding dlpipe's tables and no job (as after a first run; "
                "the schema is made once, outside the timing), in a PostgreSQL %s cluster of the bench's own on the same "
                "disk, with its default durability (fsync and synchronous_commit on). Several workers start "
                "together from one shell: wall is from the first start to the last exit, CPU is the sum over the "
                "workers, peak RSS the largest worker's.%s" % (
                    CONCURRENCY, CONCURRENCY, os.path.basename(os.path.dirname(cluster.bin)),
                    " pg_stat_statements is on (--pg-stats)." if cluster.stats else ""))
        results = bench.measure_set(title, job, contenders, data.expected(), data.total_bytes,
                                    bench.size["rounds"], baseline=BASELINE, note=note)
    finally:
        cluster.stop(keep=bench.args.keep)
    lines = claims_table(runs, results) + paired_ratios(results)
    print("\n".join(lines), flush=True)
    bench.markdown += [""] + lines
    if cluster.stats:
        for name, (statements, wal) in runs.statements.items():
            print(statement_report(name, count, statements, wal), flush=True)
    targets = []
    one = label(1)
    if BASELINE in results and one in results:
        targets.append(("queue set: 1 worker / SQLite run", results[one].wall / results[BASELINE].wall, 1.30))
    if one in results and label(2) in results:
        # Two workers beside PostgreSQL and nginx on one machine: no slower than one.
        targets.append(("queue set: 2 workers / 1 worker", results[label(2)].wall / results[one].wall, 1.00))
    return targets


def paired_ratios(results):
    """One worker's wall over the SQLite run's of the same round, per round, and their
    median: the two run minutes apart at most, so a machine that speeds up or slows
    down between rounds moves both (the target itself is the ratio of the medians)."""
    lines = []
    for queue, sqlite in ((label(1), BASELINE), (label(1, compared=True), COMPARED_BASELINE)):
        # Paired by round only when every round of both ran (a failed run is left out).
        if queue not in results or sqlite not in results or len(results[queue].samples) != len(results[sqlite].samples):
            continue
        ratios = [q.wall / s.wall for q, s in zip(results[queue].samples, results[sqlite].samples) if s.wall > 0]
        if ratios:
            lines.append("%s / %s per round: %s (median %.2f)" % (
                queue, sqlite, ", ".join("%.2f" % r for r in ratios), statistics.median(ratios)))
    return [""] + lines if lines else []


def claims_table(runs, results):
    lines = ["Claims per second, from the queue's rows: claims (attempts) / (last `ended_at` - first `claimed_at`), "
             "medians over the rounds. PostgreSQL CPU: what the server's processes used during a run (the CPU "
             "column above is the workers' only), median; per claim, it and the workers' CPU per file are what "
             "to compare on a shared machine, where wall moves with the load. Commits: transactions committed "
             "in the run's own database (pg_stat_database), per file.", "",
             "| run | claims/s | first claim to last end | files/s (whole wall) | PostgreSQL CPU | PostgreSQL CPU / claim "
             "| workers' CPU / file | commits / file | wall / SQLite run |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    baseline = results.get(BASELINE)
    for name in [label(n) for n in WORKERS] + [label(1, compared=True)]:
        result = results.get(name)
        rate, spread = runs.claims_per_second(name)
        if result is None or rate is None:
            continue
        server = runs.server_cpu.get(name)
        claims = statistics.median(c for c, _ in runs.spreads[name])
        commits = runs.commits.get(name)
        against = results.get(COMPARED_BASELINE) if name.endswith("(compared)") else baseline
        lines.append("| %s | %.0f | %.2f s | %.0f | %s | %s | %.0f us | %s | %s |" % (
            name, rate, spread, result.files / result.wall,
            "%.2f s" % statistics.median(server) if server else "-",
            "%.0f us" % (statistics.median(server) / claims * 1e6) if server and claims else "-",
            result.cpu / result.files * 1e6,
            "%.2f" % (statistics.median(commits) / result.files) if commits else "-",
            "%.2f" % (result.wall / against.wall) if against else "-"))
    if baseline is not None:
        lines.append("| %s | | | %.0f | | | %.0f us | | 1.00 |" % (
            BASELINE, baseline.files / baseline.wall, baseline.cpu / baseline.files * 1e6))
    return lines


def statement_report(name, count, statements, wal):
    """What one run sent, per statement: calls, calls per download, rows, time."""
    records, writes, syncs, sync_ms, waits, waited, by = wal
    lines = ["", "-- %s: statements (pg_stat_statements), %s downloads" % (name, format(count, ",")),
             "   WAL: %s records, %s writes, %s syncs, %s ms syncing" % (records, writes, syncs, sync_ms),
             "   lock waits over 1 ms: %d, %.1f ms in all" % (waits, waited)]
    lines += ["   %5d waits %8.1f ms  %s" % kind for kind in by[:6]]
    lines += ["   %8s %9s %9s %10s  %s" % ("calls", "per file", "rows", "total ms", "statement")]
    for calls, rows, total, query in statements[:14]:
        lines.append("   %8d %9.3f %9d %10.1f  %s" % (calls, calls / count, rows, total, query[:90]))
    return "\n".join(lines)
