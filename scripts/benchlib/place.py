"""Where a run's data and outputs live: on the disk users write to (the default), or
in memory (/dev/shm, `--memory`) for profiling, where syncs cost nothing."""
import os
import tempfile


def file_system(path):
    """(mount point, type) of the file system that holds `path`, from /proc/mounts."""
    path = os.path.realpath(path)
    best = ("/", "unknown")
    try:
        with open("/proc/mounts") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 3:
                    continue
                mount = fields[1].replace("\\040", " ")
                inside = path == mount or path.startswith(mount.rstrip("/") + "/")
                if inside and len(mount) >= len(best[0]):
                    best = (mount, fields[2])
    except OSError:
        pass
    return best


MEMORY_TYPES = {"tmpfs", "ramfs"}


def work_directory(memory, parent):
    """A fresh directory for one run; refuses a memory file system for a disk run
    (its syncs cost nothing, so it would measure something users never see)."""
    if memory:
        parent = "/dev/shm"
        if not (os.path.isdir(parent) and os.access(parent, os.W_OK)):
            raise SystemExit("scripts/bench: --memory needs a writable /dev/shm")
    else:
        parent = parent or "/var/tmp"
        os.makedirs(parent, exist_ok=True)
        mount, kind = file_system(parent)
        if kind in MEMORY_TYPES:
            raise SystemExit("scripts/bench: %s is on %s (%s), which is memory; give --dir a folder on a "
                             "disk, or pass --memory to measure in memory on purpose" % (parent, mount, kind))
    work = tempfile.mkdtemp(prefix="dlpipe-bench-", dir=parent)
    os.chmod(work, 0o755)  # nginx workers may run as another user
    return work


def describe(work):
    mount, kind = file_system(work)
    return "%s (%s, mounted at %s)" % (work, kind, mount)
