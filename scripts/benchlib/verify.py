"""Every output checked against its source: the right names, nothing more, the same bytes."""
import os

CHUNK = 1 << 20
# Files a tool keeps for itself beside the downloads.
OWN_FILES = {".dlpipe"}


def check(out, expected):
    """expected: (name, source path) pairs. Returns a problem, or None."""
    names = sorted(name for name in os.listdir(out) if name not in OWN_FILES)
    wanted = sorted(name for name, _ in expected)
    if names != wanted:
        extra = sorted(set(names) - set(wanted))[:3]
        missing = sorted(set(wanted) - set(names))[:3]
        return "%d files instead of %d (extra %s, missing %s)" % (len(names), len(wanted), extra, missing)
    for name, source in expected:
        if not same_bytes(os.path.join(out, name), source):
            return "%s differs from its source" % name
    return None


def same_bytes(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(CHUNK), fb.read(CHUNK)
            if x != y:
                return False
            if not x:
                return True
