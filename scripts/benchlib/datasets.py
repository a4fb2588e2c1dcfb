"""Random data sets, written once per benchmark run under the server's root."""
import os
import random

KIB = 1024
MIB = 1024 * KIB


class DataSet:
    """Files under root/<name>/, with the URL path and expected bytes of each."""

    def __init__(self, root, name, count, size, seed):
        self.name, self.count, self.size = name, count, size
        self.directory = os.path.join(root, name)
        os.makedirs(self.directory, exist_ok=True)
        rng = random.Random(seed)
        width = len(str(count - 1))
        self.files = []
        for index in range(count):
            filename = "f%0*d.bin" % (width, index)
            _write_random(os.path.join(self.directory, filename), size, rng)
            self.files.append(filename)

    @property
    def total_bytes(self):
        return self.count * self.size

    def paths(self):
        return ["/%s/%s" % (self.name, filename) for filename in self.files]

    def expected(self):
        """(name in the output directory, source path) pairs."""
        return [(filename, os.path.join(self.directory, filename)) for filename in self.files]


class RepeatedFile:
    """One small file served under many URLs (/same/<n>.bin): queue size without data size."""

    def __init__(self, root, size, seed):
        self.size = size
        self.source = os.path.join(root, "same.bin")
        _write_random(self.source, size, random.Random(seed))

    def paths(self, count):
        width = len(str(count - 1))
        return ["/same/%0*d.bin" % (width, index) for index in range(count)]


def _write_random(path, size, rng):
    chunk = 4 * MIB
    with open(path, "wb") as f:
        left = size
        while left > 0:
            n = min(chunk, left)
            f.write(rng.randbytes(n))
            left -= n
