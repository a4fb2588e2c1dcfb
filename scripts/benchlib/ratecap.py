"""Set 7: how closely --rate holds its cap. dlpipe runs with --json; every event line is
stamped as it arrives, and the rate is read from the last event of the first second
to the end of the run: a start-up burst is allowed, the long-run average is what counts."""
import json
import os
import shutil
import subprocess
import time


class Reading:
    def __init__(self, label, cap, seconds, rate, status):
        self.label, self.cap, self.seconds, self.rate, self.status = label, cap, seconds, rate, status

    @property
    def ratio(self):
        return self.rate / self.cap


def measure(binary, work, urls, cap, label, concurrency):
    """Runs `dlpipe get` on `urls` at --rate `cap` bytes/s; returns a Reading."""
    out = os.path.join(work, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    argv = [binary, "get"] + urls + ["-d", out, "-j", str(concurrency), "--per-host", str(concurrency),
                                     "--rate", str(cap), "--json", "--progress", "none"]
    start = time.monotonic()
    samples = []  # (seconds since start, total bytes so far)
    latest, finished = {}, 0
    with subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        for line in process.stdout:
            event = json.loads(line)
            kind = event.get("event")
            if kind == "progress":
                latest[event["id"]] = event["bytes"]
            elif kind == "finished":
                latest.pop(event["id"], None)
                finished += event["bytes"]
            else:
                continue
            samples.append((time.monotonic() - start, finished + sum(latest.values())))
    end = time.monotonic() - start
    shutil.rmtree(out, ignore_errors=True)
    if process.returncode != 0 or not samples:
        return Reading(label, cap, end, 0.0, process.returncode)
    # From the last event at or before the first second (or the start) to the end;
    # a run that ended within about a second is read whole.
    t1, b1 = (0.0, 0) if end < 1.5 else max(((t, b) for t, b in samples if t <= 1.0), default=(0.0, 0))
    return Reading(label, cap, end, (samples[-1][1] - b1) / (end - t1), process.returncode)


def table(readings):
    lines = ["| download | cap | wall | rate after the first second | rate / cap |",
             "| --- | ---: | ---: | ---: | ---: |"]
    for r in readings:
        lines.append("| %s | %.1f MB/s | %.2f s | %.2f MB/s | %.3f |" % (
            r.label, r.cap / 1e6, r.seconds, r.rate / 1e6, r.ratio))
    return lines
