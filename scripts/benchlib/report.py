"""Medians and the tables: printed, and kept as Markdown for docs/benchmarks.md."""
import statistics

import tools


class Result:
    """All measured runs of one tool on one set."""

    def __init__(self, label, samples, total_bytes, files):
        self.label, self.samples, self.total_bytes, self.files = label, samples, total_bytes, files

    @property
    def wall(self):
        return statistics.median(s.wall for s in self.samples)

    @property
    def cpu(self):
        return statistics.median(s.cpu for s in self.samples)

    @property
    def rss_mib(self):
        return max(s.rss_kib for s in self.samples) / 1024


def rate(total_bytes, seconds):
    per_second = total_bytes / seconds
    return "%.2f GB/s" % (per_second / 1e9) if per_second >= 1e9 else "%.0f MB/s" % (per_second / 1e6)


def table(results, baseline_label=None):
    """Markdown rows; the ratio is to the fastest peer (not dlpipe, not a disk limit), or to
    `baseline_label`."""
    if baseline_label:
        reference = next(r for r in results if r.label == baseline_label).wall
        reference_name = baseline_label
    else:
        peers = [r for r in results if not r.label.startswith("dlpipe") and not tools.is_limit(r.label)]
        fastest = min(peers, key=lambda r: r.wall)
        reference, reference_name = fastest.wall, fastest.label
    lines = ["| tool | wall (median) | CPU user+sys | peak RSS | throughput | files/s | wall / %s |" % reference_name,
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in results:
        lines.append("| %s | %.3f s | %.3f s | %.1f MB | %s | %.0f | %.2f |" % (
            r.label, r.wall, r.cpu, r.rss_mib, rate(r.total_bytes, r.wall), r.files / r.wall, r.wall / reference))
    return lines
