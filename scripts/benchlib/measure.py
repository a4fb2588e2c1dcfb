"""One timed run of a command: wall time, CPU (user+sys) and peak RSS of the child,
read by runner.c (see there why it is a C program)."""
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))


class Sample:
    def __init__(self, wall, cpu, rss_kib, status):
        self.wall, self.cpu, self.rss_kib, self.status = wall, cpu, rss_kib, status


def build_runner(work):
    """Compiles runner.c into `work`; returns its path."""
    path = os.path.join(work, "runner")
    subprocess.run(["cc", "-O2", "-o", path, os.path.join(HERE, "runner.c")], check=True)
    return path


def run(runner, argv, cwd=None, log=None):
    """Runs argv to its end; its output goes to `log` (a path) or nowhere."""
    out = open(log, "ab") if log else subprocess.DEVNULL
    try:
        done = subprocess.run([runner] + argv, cwd=cwd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=out, check=True)
    finally:
        if log:
            out.close()
    wall, cpu, rss, status = done.stdout.split()
    return Sample(float(wall), float(cpu), int(rss), int(status))
