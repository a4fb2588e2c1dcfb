"""scripts/bench: dlpipe against curl --parallel, aria2c and wget2, side by side, and
against the disk's own limits (a durable copy of the same bytes).

Runs on the disk by default (--dir, default /var/tmp), where durability costs what it
costs users; --memory runs in /dev/shm, for profiling. Each set runs every tool once as
a warm-up, then in rounds (A B C D, B C D A, ...), and reports medians. Every output is
compared with its source after every run; outputs of many files are kept aside until
the bench ends rather than deleted between runs (run_once says why)."""
import argparse
import datetime
import os
import platform
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(__file__))
import browser  # noqa: E402
import measure  # noqa: E402
import pgcluster  # noqa: E402
import place  # noqa: E402
import report  # noqa: E402
import sets  # noqa: E402
import verify  # noqa: E402
from server import Nginx  # noqa: E402

# Outputs of this many files are moved aside after their run, not deleted (put_away):
# from 1,000 (fewer cost the next run nothing measurable) to 200,000, so that set 5
# compares its 10,000 and 100,000 URLs alike (kept aside at 20,000 and less, its
# 100,000-URL runs alone paid the scans: 2.78 x the time per URL, 1.00 x before).
# Set 6's million files of 4 KiB, kept for each of its runs, would take tens of GB:
# they are deleted, so its million-URL runs pay scans its 10,000-URL runs do not.
KEEP_ASIDE_FILES = (1000, 200_000)

# A bench's removal of its work directory (hundreds of thousands of files) slows the
# next one's file creation for minutes (put_away says why): set 8 run right after
# another bench took 2.7 x as long in SQLite mode and 1.7 x in queue mode, and read
# a ratio of 0.87 where the run before had read 1.42. Each bench leaves the time of
# its removal in this file of the parent folder, and the next one warns when it
# starts within this many seconds of it.
CLEANUP_MARK = ".dlpipe-bench-removed"
CLEANUP_QUIET_SECONDS = 15 * 60


class Bench:
    def __init__(self, args):
        self.args = args
        self.binary = os.environ["DLPIPE_BENCH_BIN"]
        self.size = sets.sizes(args.quick)
        if args.rounds:
            self.size["rounds"] = args.rounds
        self.work = place.work_directory(args.memory, args.dir)
        self.root = os.path.join(self.work, "www")
        os.makedirs(self.root)
        os.chmod(self.root, 0o755)
        self.runner = measure.build_runner(self.work)
        self.markdown = []
        self.failures = []
        self.runs = 0
        self.browser = None  # --web-page: the headless Chromium that holds the live pages open
        self.aside = os.path.join(self.work, "aside")  # outputs kept until the end (run_once)
        self.mark = os.path.join(os.path.dirname(self.work), CLEANUP_MARK)
        self.warning = self.recent_removal()

    def recent_removal(self):
        """The warning to give when an earlier bench removed its files here lately."""
        try:
            with open(self.mark) as f:
                ago = time.time() - float(f.read().strip())
        except (OSError, ValueError):
            return None
        if not 0 <= ago < CLEANUP_QUIET_SECONDS:
            return None
        return ("warning: a bench removed its files in this folder %d s ago; for about %d minutes after such a "
                "removal this file system creates files more slowly (see put_away in benchlib/main.py), so the "
                "times below may read high, and ratios between tools move. Wait, or use --dir on another disk."
                % (ago, CLEANUP_QUIET_SECONDS // 60))

    # -- running ---------------------------------------------------------------

    def measure_set(self, title, job, contenders, expected, total_bytes, rounds, baseline=None, note=None,
                    warmup=True):
        print("\n== %s ==" % title, flush=True)
        # The data was just written: flush it now, so that no run's sync pays for it.
        os.sync()
        samples = {label: [] for label, _ in contenders}
        order = list(contenders)
        first = 0 if warmup else 1  # round 0 is the warm-up
        for round_index in range(first, rounds + 1):
            for label, argv in order:
                sample = self.run_once(label, argv, job, expected, measured=round_index > 0)
                if round_index > 0 and sample:
                    samples[label].append(sample)
            order = order[1:] + order[:1]
        results = [report.Result(label, samples[label], total_bytes, len(expected))
                   for label, _ in contenders if samples[label]]
        if not results or (baseline and not any(r.label == baseline for r in results)):
            # Every run failed (listed at the end): no table to show.
            self.markdown += ["", "### " + title, "", "Every measured run failed; see the failures below."]
            return {r.label: r for r in results}
        lines = report.table(results, baseline)
        print("\n".join(lines), flush=True)
        self.markdown += ["", "### " + title, ""] + ([note, ""] if note else []) + lines
        return {r.label: r for r in results}

    def run_once(self, label, argv, job, expected, measured=True):
        out = os.path.join(self.work, "out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        # Every run starts with nothing dirty: the peers do not sync, and what they
        # leave in the page cache must not be written back during the next run.
        os.sync()
        log = os.path.join(self.work, "last-run.log")
        if os.path.exists(log):
            os.remove(log)
        # --web-page: the browser follows the run's log for its page's URL.
        watching = argv.watch(log) if hasattr(argv, "watch") else None
        sample = measure.run(self.runner, argv(job, out), cwd=self.work, log=log)
        if watching:
            watching()
        self.runs += 1
        problem = "exit status %d" % sample.status if sample.status != 0 else verify.check(out, expected)
        self.put_away(out, len(expected))
        # A set may read what the run left elsewhere (the queue set: its database).
        after_run = getattr(argv, "after_run", None)
        if after_run:
            after_run(passed=not problem, measured=measured)
        if problem:
            with open(log, errors="replace") as f:
                tail = f.read()[-600:]
            self.failures.append("%s: %s\n%s" % (label, problem, tail))
            print("  %s FAILED: %s" % (label, problem), flush=True)
            return None
        print("  %-26s %.3f s" % (label, sample.wall), flush=True)
        return sample

    def put_away(self, out, files):
        """Removes a run's outputs, or moves them aside when they are many files.
        On a file system without a journal (this machine's), ext4 skips every
        inode deleted in the last 5 s when it allocates one, and for 305 s when
        the inode's table block is dirty, as the next run's first files make
        it: each allocation scans past them again. A run of 10,000 small files
        after another's removal spent a third of its CPU and up to twice its
        wall time there (docs/performance.md), whatever tool it was. Outputs
        set aside are deleted with the work directory when the bench ends.
        A set of a million files is still deleted after each run (its runs
        are long, and their outputs too large to keep)."""
        if KEEP_ASIDE_FILES[0] <= files <= KEEP_ASIDE_FILES[1]:
            os.makedirs(self.aside, exist_ok=True)
            os.rename(out, os.path.join(self.aside, "run-%d" % self.runs))
        else:
            shutil.rmtree(out, ignore_errors=True)

    # -- the whole run -----------------------------------------------------------

    def run(self):
        default = sets.QUICK_SETS if self.args.quick else sets.ALL_SETS
        wanted = set(int(s) for s in self.args.sets.split(",")) if self.args.sets else set(default)
        server = Nginx(self.root, os.path.join(self.work, "nginx"))
        targets = []
        try:
            print("data and outputs under %s; nginx on port %d" % (place.describe(self.work), server.port),
                  flush=True)
            if self.warning:
                print(self.warning, flush=True)
                self.markdown += ["", "**" + self.warning + "**"]
            if self.args.web_page:
                self.browser = browser.Browser(self.work)
            targets = sets.run_all(self, server, wanted)
        finally:
            server.stop()
            if self.browser:
                self.browser.stop()
            if not self.args.keep:
                shutil.rmtree(self.work, ignore_errors=True)
                try:
                    with open(self.mark, "w") as f:
                        f.write("%.0f\n" % time.time())
                except OSError:
                    pass  # a folder the bench may not write into: no warning next time
        self.finish(targets)

    def finish(self, targets):
        if self.failures:
            self.markdown += ["", "## Failed runs", ""] + ["    " + f.replace("\n", "\n    ") for f in self.failures]
        lines = ["| target | measured | limit | met |", "| --- | ---: | ---: | --- |"]
        lines += ["| %s | %.2f | %.2f | %s |" % (name, value, limit, "yes" if value <= limit else "**no**")
                  for name, value, limit in targets]
        print("\n== Targets ==\n" + "\n".join(lines))
        if self.failures:
            print("\nFAILED RUNS (their times are left out):\n" + "\n\n".join(self.failures))
        document = header(self) + ["", "## Targets", ""] + lines + ["", "## Results"] + self.markdown + [""]
        output = self.args.output or (None if self.args.quick or self.args.sets else "docs/benchmarks.md")
        if output:
            with open(output, "w") as f:
                f.write("\n".join(document))
            print("\nwrote " + output)
        sys.exit(1 if self.failures else 0)


def version(argv):
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
        return (done.stdout or done.stderr).strip().splitlines()[0]
    except (OSError, IndexError, subprocess.TimeoutExpired):
        return "not found"


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / sets.GIB
    return "%s, %d cores, %.0f GiB, Linux %s" % (model, os.cpu_count(), memory, platform.release())


def header(bench):
    args = bench.args
    command = "scripts/bench" + (" --quick" if args.quick else "") + (" --memory" if args.memory else "")
    mount, kind = place.file_system(bench.work)
    where = ("in /dev/shm (memory): syncs cost nothing there, so this run does not measure the disk"
             if args.memory else "on the disk: a %s file system mounted at %s, where syncs cost what they "
             "cost users" % (kind, mount))
    return [
        "# Benchmarks",
        "",
        "Written by `%s` on %s. Do not edit by hand; run the script again. "
        "What the numbers mean, and what bounds the targets not met: [performance.md](performance.md)." % (
            command, datetime.datetime.now().strftime("%Y-%m-%d %H:%M")),
        "",
        "- Machine: " + machine(),
        "- dlpipe: %s (release build)" % version([bench.binary, "--version"]),
        "- curl: " + version(["curl", "--version"]),
        "- aria2c: " + version(["aria2c", "--version"]),
        "- wget2: " + version(["wget2", "--version"]),
        "- PostgreSQL (set 8): " + version([pgcluster.server_binary(), "--version"]),
        "- server: %s on 127.0.0.1, one worker, sendfile, keep-alive, no access log" % version(["nginx", "-v"]),
        "",
        "Method: data and outputs live %s. The data is written and synced before a set starts, and "
        "every run starts with nothing dirty in the page cache (a `sync` outside the timing), so no "
        "run pays for another's write-back. Each set runs every tool once as a warm-up, then %d rounds "
        "in rotating order; the tables give medians of wall time and CPU time (user+sys, from wait4), "
        "and the highest peak RSS. Every output is compared byte for byte with its source after every "
        "run; a run that fails the check is left out and reported. dlpipe runs with its state, part "
        "files and durability on, as a user runs it; every tool runs quietly. The peers do not sync: "
        "their files may still be only in the page cache when they exit. Rows named `disk:` are the "
        "disk's own limits for the same bytes, copied from the server's cached data: `cp -r` or "
        "`cat > file` (page cache only, as the peers) and `cp -r` + `sync -f` or `dd conv=fsync` "
        "(durable, as dlpipe)." % (where, bench.size["rounds"]),
    ]


def main():
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="reduced sets, a few minutes; prints only")
    parser.add_argument("--dir", help="parent folder for data and outputs, on the disk to measure "
                                      "(default /var/tmp); a memory file system is refused")
    parser.add_argument("--memory", action="store_true", help="data and outputs in /dev/shm, for profiling")
    parser.add_argument("--rounds", type=int, help="measured rounds per set (default 5, quick 3)")
    parser.add_argument("--sets", help="comma-separated set numbers to run, e.g. 1,4 (prints only "
                                       "unless --output is given)")
    parser.add_argument("--output", help="Markdown file to write (default docs/benchmarks.md for a full run)")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--compare", metavar="BINARY", help="another dlpipe build, run beside this one in "
                                                            "every set as `dlpipe (compared)`: an A/B run (set 8: "
                                                            "its SQLite run and one queue worker)")
    parser.add_argument("--counts", action="store_true", help="with --sets 4: counts the load does not move "
                                                              "instead of times, per download (system calls, "
                                                              "blocking switches, malloc and swift_retain/release "
                                                              "calls), from perf stat; see benchlib/counts.py")
    parser.add_argument("--web-page", action="store_true", help="sets 2 and 3 also run dlpipe with --web "
                                                                "127.0.0.1:0 and its live page open in headless "
                                                                "Chromium, and report the ratio to the same set "
                                                                "without it (benchlib/browser.py)")
    parser.add_argument("--pg-stats", action="store_true", help="the queue set (8) with pg_stat_statements "
                                                                "on: prints what each run sent to PostgreSQL")
    args = parser.parse_args()
    if args.counts and args.sets != "4":
        parser.error("--counts goes with --sets 4")
    if args.memory and args.dir:
        parser.error("--memory and --dir exclude each other")
    # A SIGTERM unwinds like ^C: the finally blocks stop nginx and PostgreSQL.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    Bench(args).run()


if __name__ == "__main__":
    main()
