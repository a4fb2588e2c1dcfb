"""scripts/bench: dlpipe against curl --parallel, aria2c and wget2, side by side.

Each set runs every tool once as a warm-up, then in rounds (A B C D, B C D A, ...),
and reports medians. Every output is compared with its source after every run."""
import argparse
import datetime
import os
import platform
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(__file__))
import datasets  # noqa: E402
import measure  # noqa: E402
import report  # noqa: E402
import tools  # noqa: E402
import verify  # noqa: E402
from server import Nginx  # noqa: E402

KIB, MIB, GIB = datasets.KIB, datasets.MIB, 1024 * datasets.MIB


def sizes(quick):
    if quick:
        return dict(rounds=3, small=(2000, 16 * KIB), medium=(100, 1 * MIB), large=256 * MIB,
                    queue=(2_000, 20_000), queue_file=4 * KIB)
    return dict(rounds=5, small=(2000, 16 * KIB), medium=(200, 1 * MIB), large=1 * GIB,
                queue=(10_000, 100_000), queue_file=4 * KIB)


class Bench:
    def __init__(self, args):
        self.args = args
        self.binary = os.environ["DLPIPE_BENCH_BIN"]
        self.size = sizes(args.quick)
        if args.rounds:
            self.size["rounds"] = args.rounds
        parent = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None
        self.work = tempfile.mkdtemp(prefix="dlpipe-bench-", dir=parent)
        os.chmod(self.work, 0o755)  # nginx workers may run as another user
        self.root = os.path.join(self.work, "www")
        os.makedirs(self.root)
        os.chmod(self.root, 0o755)
        self.runner = measure.build_runner(self.work)
        self.markdown = []
        self.failures = []
        self.runs = 0

    # -- running ---------------------------------------------------------------

    def measure_set(self, title, job, contenders, expected, total_bytes, rounds, baseline=None, note=None):
        print("\n== %s ==" % title, flush=True)
        samples = {label: [] for label, _ in contenders}
        order = list(contenders)
        for round_index in range(rounds + 1):  # round 0 is the warm-up
            for label, argv in order:
                sample = self.run_once(label, argv, job, expected)
                if round_index > 0 and sample:
                    samples[label].append(sample)
            order = order[1:] + order[:1]
        results = [report.Result(label, samples[label], total_bytes, len(expected))
                   for label, _ in contenders if samples[label]]
        lines = report.table(results, baseline)
        print("\n".join(lines), flush=True)
        self.markdown += ["", "### " + title, ""] + ([note, ""] if note else []) + lines
        return {r.label: r for r in results}

    def run_once(self, label, argv, job, expected):
        out = os.path.join(self.work, "out")
        shutil.rmtree(out, ignore_errors=True)
        os.makedirs(out)
        log = os.path.join(self.work, "last-run.log")
        if os.path.exists(log):
            os.remove(log)
        sample = measure.run(self.runner, argv(job, out), cwd=self.work, log=log)
        self.runs += 1
        problem = "exit status %d" % sample.status if sample.status != 0 else verify.check(out, expected)
        shutil.rmtree(out, ignore_errors=True)
        if problem:
            with open(log, errors="replace") as f:
                tail = f.read()[-600:]
            self.failures.append("%s: %s\n%s" % (label, problem, tail))
            print("  %s FAILED: %s" % (label, problem), flush=True)
            return None
        print("  %-22s %.3f s" % (label, sample.wall), flush=True)
        return sample

    # -- the sets --------------------------------------------------------------

    def many_files(self, server, number, name, count, size, seed):
        data = datasets.DataSet(self.root, name, count, size, seed)
        job = tools.Job(self.work, name, [server.url(p) for p in data.paths()], 16)
        title = "Set %d: %s files of %s, concurrency 16" % (number, format(count, ","), human(size))
        contenders = [tools.dlpipe(self.binary)] + tools.peers()
        results = self.measure_set(title, job, contenders, data.expected(), data.total_bytes, self.size["rounds"])
        return data, job, results

    def one_large_file(self, server):
        size = self.size["large"]
        data = datasets.DataSet(self.root, "large", 1, size, 3)
        job = tools.Job(self.work, "large", [server.url(p) for p in data.paths()], 1)
        contenders = [tools.dlpipe(self.binary), tools.curl(), tools.aria2c(), tools.aria2c(split=8), tools.wget2()]
        note = ("dlpipe has no split mode (one connection per file); `aria2c -x 8` splits the file "
                "over 8 connections and is shown for reference.")
        rounds = max(3, self.size["rounds"] - 2)
        return self.measure_set("Set 3: one file of %s" % human(size), job, contenders, data.expected(),
                                data.total_bytes, rounds, note=note)

    def handlers(self, server, data, job):
        plain = os.path.join(self.work, "plain.lua")
        hooked = os.path.join(self.work, "handlers.lua")
        adds = "for _, name in ipairs({%s}) do dl.add(dl.var.base .. '/%s/' .. name) end\n" % (
            ",".join('"%s"' % f for f in data.files), data.name)
        with open(plain, "w") as f:
            f.write(adds)
        with open(hooked, "w") as f:
            f.write(adds + "local seen, bytes, done = 0, 0, 0\n"
                    "dl.on('response', function(d, r) seen = seen + 1 end)\n"
                    "dl.on('progress', function(d, p) bytes = p.bytes end)\n"
                    "dl.on('finished', function(d, f) done = done + 1 end)\n")
        base = server.url("")
        contenders = [tools.dlpipe_job(self.binary, hooked, "dlpipe run, 3 handlers", base),
                      tools.dlpipe_job(self.binary, plain, "dlpipe run, no handlers", base)]
        title = "Set 4: set 1 through a Lua job, trivial response/progress/finished handlers vs none"
        return self.measure_set(title, job, contenders, data.expected(), data.total_bytes, self.size["rounds"],
                                baseline="dlpipe run, no handlers")

    def long_queue(self, server):
        small, large = self.size["queue"]
        repeated = datasets.RepeatedFile(self.root, self.size["queue_file"], 5)
        results = {}
        for count in (small, large):
            paths = repeated.paths(count)
            job = tools.Job(self.work, "queue%d" % count, [server.url(p) for p in paths], 16)
            expected = [(p.rsplit("/", 1)[1], repeated.source) for p in paths]
            title = "Set 5: %s queued URLs of one %s file, concurrency 16" % (format(count, ","), human(repeated.size))
            results[count] = self.measure_set(title, job, [tools.dlpipe(self.binary)], expected,
                                              count * repeated.size, max(3, self.size["rounds"] - 2),
                                              baseline="dlpipe")["dlpipe"]
        per_small = results[small].wall / small * 1e6
        per_large = results[large].wall / large * 1e6
        summary = ("Time per URL: %.1f µs at %s, %.1f µs at %s (ratio %.2f); peak RSS %.1f MB and %.1f MB." % (
            per_small, format(small, ","), per_large, format(large, ","), per_large / per_small,
            results[small].rss_mib, results[large].rss_mib))
        print(summary)
        self.markdown += ["", summary]
        return results, per_large / per_small

    # -- the whole run -----------------------------------------------------------

    def run(self):
        wanted = set(int(s) for s in self.args.sets.split(",")) if self.args.sets else {1, 2, 3, 4, 5}
        server = Nginx(self.root, os.path.join(self.work, "nginx"))
        targets = []
        try:
            print("data and outputs under %s; nginx on port %d" % (self.work, server.port), flush=True)
            if 1 in wanted or 4 in wanted:
                count, size = self.size["small"]
                data, job, set1 = self.many_files(server, 1, "small", count, size, 1)
                targets.append(target("set 1: wall at most 1.0 x curl --parallel",
                                      set1["dlpipe"].wall / set1["curl --parallel"].wall, 1.0))
                if 4 in wanted:
                    set4 = self.handlers(server, data, job)
                    targets.append(target("set 4: handlers cost at most 10% wall",
                                          set4["dlpipe run, 3 handlers"].wall / set4["dlpipe run, no handlers"].wall, 1.10))
            if 2 in wanted:
                count, size = self.size["medium"]
                _, _, set2 = self.many_files(server, 2, "medium", count, size, 2)
                fastest = min(r.wall for label, r in set2.items() if label != "dlpipe")
                targets.append(target("set 2: wall at most 1.0 x the fastest peer", set2["dlpipe"].wall / fastest, 1.0))
            if 3 in wanted:
                set3 = self.one_large_file(server)
                targets.append(target("set 3: throughput at least wget2's",
                                      set3["dlpipe"].wall / set3["wget2"].wall, 1.0))
                targets.append(target("set 3: CPU per GB at most wget2's", set3["dlpipe"].cpu / set3["wget2"].cpu, 1.0))
                targets.append(target("set 3: peak RSS under 50 MB", set3["dlpipe"].rss_mib / 50, 1.0))
            if 5 in wanted:
                results, growth = self.long_queue(server)
                large = results[max(results)]
                targets.append(target("set 5: peak RSS under 100 MB at the larger queue", large.rss_mib / 100, 1.0))
                targets.append(target("set 5: time per URL grows at most 1.5 x", growth, 1.5))
        finally:
            server.stop()
            if not self.args.keep:
                shutil.rmtree(self.work, ignore_errors=True)
        self.finish(targets)

    def finish(self, targets):
        lines = ["| target | measured | met |", "| --- | ---: | --- |"]
        lines += ["| %s | %.2f | %s |" % (name, value, "yes" if ok else "**no**") for name, value, ok in targets]
        print("\n== Targets ==\n" + "\n".join(lines))
        if self.failures:
            print("\nFAILED RUNS (their times are left out):\n" + "\n\n".join(self.failures))
        document = header(self.binary, self.args.quick, self.size["rounds"]) + ["", "## Targets", ""] + lines + \
            ["", "## Results"] + self.markdown + [""]
        output = self.args.output or (None if self.args.quick else "docs/benchmarks.md")
        if output:
            with open(output, "w") as f:
                f.write("\n".join(document))
            print("\nwrote " + output)
        sys.exit(1 if self.failures else 0)


def target(name, value, limit):
    return name, value, value <= limit


def human(size):
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size >= scale and size % scale == 0:
            return "%d %s" % (size // scale, unit)
    return "%d bytes" % size


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
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / GIB
    return "%s, %d cores, %.0f GiB, Linux %s" % (model, os.cpu_count(), memory, platform.release())


def header(binary, quick, rounds):
    return [
        "# Benchmarks",
        "",
        "Written by `scripts/bench%s` on %s. Do not edit by hand; run the script again. "
        "What the numbers mean, and what bounds the targets not met: [performance.md](performance.md)." % (
            " --quick" if quick else "", datetime.datetime.now().strftime("%Y-%m-%d %H:%M")),
        "",
        "- Machine: " + machine(),
        "- dlpipe: %s (release build)" % version([binary, "--version"]),
        "- curl: " + version(["curl", "--version"]),
        "- aria2c: " + version(["aria2c", "--version"]),
        "- wget2: " + version(["wget2", "--version"]),
        "- server: %s on 127.0.0.1, one worker, sendfile, keep-alive, no access log" % version(["nginx", "-v"]),
        "",
        "Method: data and outputs live in /dev/shm (memory), so the disk is not what is measured. "
        "Each set runs every tool once as a warm-up, then %d rounds in rotating order; the tables give "
        "medians of wall time and CPU time (user+sys, from wait4), and the highest peak RSS. Every output "
        "is compared byte for byte with its source after every run; a run that fails the check is left out "
        "and reported. dlpipe runs with its state, part files and durability on, as a user runs it; "
        "every tool runs quietly." % rounds,
    ]


def main():
    parser = argparse.ArgumentParser(prog="scripts/bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="reduced sets, under two minutes; prints only")
    parser.add_argument("--rounds", type=int, help="measured rounds per set (default 5, quick 3)")
    parser.add_argument("--sets", help="comma-separated set numbers to run, e.g. 1,4")
    parser.add_argument("--output", help="Markdown file to write (default docs/benchmarks.md for a full run)")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    Bench(parser.parse_args()).run()


if __name__ == "__main__":
    main()
