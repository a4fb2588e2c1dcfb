"""Set 4 in counts the machine's load does not move (`scripts/bench --sets 4 --counts`).

On two cores shared with other builds, wall and CPU time of set 4 move by more than
the 10 % its target allows. What the handler path adds can be counted instead, per
download, with `perf stat` in alternating rounds (medians):

- system calls (`raw_syscalls:sys_enter`);
- thread hops: a thread that blocks (a voluntary switch: `sched:sched_switch` with
  `prev_state != 0`; the engine waiting in `poll`, the Lua thread on its semaphore)
  and, apart, preemptions (`prev_state == 0`), which do move with the load;
- calls of `malloc`, `swift_retain` and `swift_release`, counted by uprobes on libc and
  the Swift runtime: exact, and a fair proxy for the work of Swift code (most of the
  handler path's instructions are reference counting and allocation around the events).
  Each uprobe hit costs a trap, so these runs are slow: their time is not shown.
- task-clock (CPU time of all threads), which does move with the load: for reference.

Hardware counters would be the direct measure (`instructions:u`, `instructions:k`); this
VM has none (`perf stat -e instructions` says <not supported>), so they are added only
where perf can count them. valgrind 3.19 (cachegrind, callgrind, even `--tool=none`)
crashes on this machine as soon as libdispatch starts a thread, so it is not used.

The uprobes need root (or perf_event_paranoid <= 1 and write access to tracefs); they
are made here when missing and left in place (`perf probe -d 'probe_libc:*'` removes
them). Without them the table has the other columns."""
import os
import shutil
import statistics
import subprocess

import verify

HARDWARE = ["instructions:u", "instructions:k"]
# (column, perf event, filter or None)
SOFTWARE = [("task-clock ms", "task-clock", None),
            ("system calls", "raw_syscalls:sys_enter", None),
            ("blocking switches", "sched:sched_switch", "prev_state != 0"),
            ("preemptions", "sched:sched_switch", "prev_state == 0")]
PROBES = [("malloc", "probe_libc:malloc", "libc", "malloc"),
          ("swift_retain", "probe_libswiftCore:swift_retain", "libswiftCore", "swift_retain"),
          ("swift_release", "probe_libswiftCore:swift_release", "libswiftCore", "swift_release")]


def _perf_ok(events):
    try:
        done = subprocess.run(["perf", "stat", "-x,"] + sum((["-e", e] for e in events), []) + ["true"],
                              capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and "<not supported>" not in done.stderr and "event syntax" not in done.stderr


def _library(binary, stem):
    """The path of the shared library `stem` the binary loads (from ldd)."""
    try:
        out = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    for line in out.splitlines():
        parts = line.split()
        if parts and parts[0].startswith(stem + ".so") and "=>" in parts and len(parts) > 2:
            return os.path.realpath(parts[2])
    return None


def probes(binary):
    """The uprobe columns that work here, making the probes that are missing."""
    usable = []
    for column, event, stem, symbol in PROBES:
        if not _perf_ok([event]):
            library = _library(binary, stem)
            if library:
                subprocess.run(["perf", "probe", "-q", "-x", library, "-a", symbol], capture_output=True)
        if _perf_ok([event]):
            usable.append((column, event, None))
    return usable


def _perf_arguments(columns):
    args = []
    for _, event, event_filter in columns:
        args += ["-e", event] + (["--filter", event_filter] if event_filter else [])
    return args


def perf_run(argv, columns, cwd):
    """One run under `perf stat`: the values in the order of `columns`, and the exit status."""
    stats = os.path.join(cwd, "perf-stat.csv")
    done = subprocess.run(["perf", "stat", "-x,", "-o", stats] + _perf_arguments(columns) + ["--"] + argv,
                          cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True)
    values = []
    with open(stats) as f:
        for line in f:
            fields = line.strip().split(",")
            if len(fields) >= 3 and not line.startswith("#"):
                try:
                    values.append(float(fields[0]))
                except ValueError:
                    values.append(float("nan"))  # <not counted>
    return values, done.returncode, done.stderr[-600:]


def run(bench, job, contenders, expected, rounds, baseline):
    """Counts per download for each contender (label, argv), in alternating rounds: a
    table printed and added to the bench's Markdown, ratios against `baseline`."""
    downloads = len(expected)
    binary = bench.binary
    groups = [("", SOFTWARE + ([(e, e, None) for e in HARDWARE] if _perf_ok(HARDWARE) else []))]
    probed = probes(binary)
    if probed:
        groups.append(("probes", probed))
    else:
        print("  (uprobes on malloc and swift_retain/release unavailable: those columns are left out)")
    columns = [c for _, group in groups for c in group]
    samples = {label: [] for label, _ in contenders}
    out = os.path.join(bench.work, "out")
    print("\n== Set 4 in counts: %d downloads, %d rounds ==" % (downloads, rounds), flush=True)
    order = list(contenders)
    for _ in range(rounds):
        for label, argv in order:
            values = []
            for _, group in groups:
                shutil.rmtree(out, ignore_errors=True)
                os.makedirs(out)
                got, status, tail = perf_run(argv(job, out), group, bench.work)
                problem = "exit status %d" % status if status else verify.check(out, expected)
                shutil.rmtree(out, ignore_errors=True)
                if problem or len(got) != len(group):
                    bench.failures.append("%s (counts): %s\n%s" % (label, problem or "perf printed no counts", tail))
                    print("  %s FAILED: %s" % (label, problem or "no counts"), flush=True)
                    values = None
                    break
                values += got
            if values:
                samples[label].append(values)
                print("  %-34s %s" % (label, "  ".join(
                    "%s %.0f" % (c[0], v) for c, v in zip(columns, values))), flush=True)
        order = order[1:] + order[:1]

    def per_download(label, index):
        values = [s[index] for s in samples[label]]
        if not values:
            return float("nan")
        value = statistics.median(values)
        return value * 1000 / downloads if columns[index][1] == "task-clock" else value / downloads

    names = ["task-clock µs (moves with load)" if c[1] == "task-clock" else c[0] for c in columns]
    lines = ["| per download | " + " | ".join(names) + " |", "| --- |" + " ---: |" * len(columns)]
    for label, _ in contenders:
        if not samples[label]:
            continue
        cells = []
        for index in range(len(columns)):
            value, base = per_download(label, index), per_download(baseline, index)
            cell = "%.0f" % value if value >= 100 else "%.2f" % value
            if label != baseline and base == base and base > 0.005:
                cell += " (%+.0f %%)" % ((value / base - 1) * 100)
            cells.append(cell)
        lines.append("| %s | %s |" % (label, " | ".join(cells)))
    print("\n".join(lines), flush=True)
    bench.markdown += ["", "### Set 4 in counts (per download, %d downloads, medians of %d rounds)" % (
        downloads, rounds), ""] + lines
    return samples
