"""One timed run of a command: wall time, CPU (user+sys) and peak RSS of the child."""
import os
import subprocess
import time


class Sample:
    def __init__(self, wall, cpu, rss_kib, status):
        self.wall, self.cpu, self.rss_kib, self.status = wall, cpu, rss_kib, status


def run(argv, cwd=None, log=None):
    """Runs argv to its end; output goes to `log` (a path) or nowhere."""
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        start = time.perf_counter()
        process = subprocess.Popen(argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
        # wait4 gives this child's own rusage, not the sum over every child so far.
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - start
        process.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if log:
            out.close()
    return Sample(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss, process.returncode)
