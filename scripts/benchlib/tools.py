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


def dlpipe(binary, label="dlpipe"):
    def argv(job, out):
        c = str(job.concurrency)
        return [binary, "get", "-i", job.list_file, "-d", out, "-j", c, "--per-host", c, "-q", "--progress", "none"]
    return label, argv


def dlpipe_split(binary, connections):
    """One file over `connections` connections (set 10): as many slots for its host."""
    def argv(job, out):
        c = str(connections)
        return [binary, "get", "-i", job.list_file, "-d", out, "-j", c, "--per-host", c, "--split", c,
                "-q", "--progress", "none"]
    return "dlpipe --split %d" % connections, argv


def dlpipe_job(binary, script, label, base, extra=None):
    """The same downloads through a Lua job (sets 4 and 6); `extra(job)` adds arguments."""
    def argv(job, out):
        c = str(job.concurrency)
        return [binary, "run", script, "--var", "base=" + base, "-d", out, "-j", c, "--per-host", c,
                "-q", "--progress", "none", "--no-hooks"] + (extra(job) if extra else [])
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


# -- the disk's own limits ---------------------------------------------------------
# Not downloads: copies of the same bytes from the server's (cached) data into the
# output directory, so every ratio can be read against what the disk allows. The
# durable ones end when the data is on the disk, as dlpipe's runs do; the plain ones
# leave it in the page cache, as the peers do.

LIMIT_PREFIX = "disk: "


def is_limit(label):
    return label.startswith(LIMIT_PREFIX)


def copy_tree(source_dir, durable):
    """`cp -r` of a set's folder, and with `durable` a `sync -f` (syncfs) after it."""
    script = 'cp -r "$1"/. "$2"/' + (' && sync -f "$2"' if durable else "")

    def argv(job, out):
        return ["sh", "-c", script, "sh", source_dir, out]
    return LIMIT_PREFIX + ("cp -r + sync -f" if durable else "cp -r"), argv


def copy_file(source, name, durable):
    """One file: `dd conv=fsync` (durable) or `cat > file` (page cache only)."""
    def argv(job, out):
        target = os.path.join(out, name)
        if durable:
            return ["dd", "if=" + source, "of=" + target, "bs=1M", "conv=fsync", "status=none"]
        return ["sh", "-c", 'cat "$1" > "$2"', "sh", source, target]
    return LIMIT_PREFIX + ("dd conv=fsync" if durable else "cat > file"), argv
