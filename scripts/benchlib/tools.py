"""How each tool is asked to download a list of URLs into a directory at a concurrency.
Every tool runs quietly, so what is timed is the download, not terminal output."""
import os


class Job:
    """What one set asks of every tool: the URLs (written once as lists) and a concurrency."""

    def __init__(self, work, name, urls, concurrency):
        self.urls, self.concurrency = urls, concurrency
        self.list_file = os.path.join(work, name + ".txt")
        with open(self.list_file, "w") as f:
            f.write("".join(url + "\n" for url in urls))
        self.curl_config = os.path.join(work, name + ".curl")
        with open(self.curl_config, "w") as f:
            f.write("".join('url = "%s"\n' % url for url in urls))


def dlpipe(binary):
    def argv(job, out):
        c = str(job.concurrency)
        return [binary, "get", "-i", job.list_file, "-d", out, "-j", c, "--per-host", c, "-q", "--progress", "none"]
    return "dlpipe", argv


def dlpipe_job(binary, script, label, base):
    """The same downloads through a Lua job (set 4)."""
    def argv(job, out):
        c = str(job.concurrency)
        return [binary, "run", script, "--var", "base=" + base, "-d", out, "-j", c, "--per-host", c,
                "-q", "--progress", "none", "--no-hooks"]
    return label, argv


def curl():
    def argv(job, out):
        c = str(job.concurrency)
        return ["curl", "--parallel", "--parallel-max", c, "--silent", "--show-error", "--fail",
                "--output-dir", out, "--remote-name-all", "--config", job.curl_config]
    return "curl --parallel", argv


def aria2c(split=1):
    def argv(job, out):
        return ["aria2c", "--input-file", job.list_file, "--dir", out, "--quiet",
                "--max-concurrent-downloads", str(job.concurrency),
                "--max-connection-per-server", str(split), "--split", str(split), "--min-split-size", "1M",
                "--file-allocation=none", "--allow-overwrite=true", "--auto-file-renaming=false",
                "--summary-interval=0", "--console-log-level=error"]
    return ("aria2c" if split == 1 else "aria2c -x %d" % split), argv


def wget2():
    def argv(job, out):
        return ["wget2", "--no-config", "--quiet", "--input-file", job.list_file, "--directory-prefix", out,
                "--max-threads", str(job.concurrency), "--no-hsts", "--no-netrc"]
    return "wget2", argv


def peers():
    return [curl(), aria2c(), wget2()]
