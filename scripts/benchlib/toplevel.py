"""Set 9: a job whose top level queues the list with `dl.add`, against `get -i` of the
same list, at several list lengths. Both run in the same rounds, alternating, so the
ratio is read side by side; the time per URL at each length shows whether a job's cost
grows with its list. Per URL means wall time of the whole run (queueing and downloading
one small file per URL) over the number of URLs.

At a million URLs each run deletes a million files afterwards, and ext4 slows the next
run's file creation for minutes after such a removal (main.Bench.put_away): one round
would make whichever tool runs second pay for the first one's removal. Two rounds in
opposite orders give each tool one run in each place; the median of two is their mean."""
import os

import datasets
import sets  # queue_job and human; sets imports this module, which is fine: both are used at run time
import tools

JOB = ("dl.config{ max_downloads = tonumber(dl.var.count) }\n"
       "local base, width = dl.var.base .. '/same/', #tostring(tonumber(dl.var.count) - 1)\n"
       "for i = 0, tonumber(dl.var.count) - 1 do\n"
       "  dl.add(base .. string.format('%0' .. width .. 'd.bin', i))\n"
       "end\n")
GET, RUN = "dlpipe get -i", "dlpipe run (top-level dl.add)"


def run(bench, server):
    """Measures every length; returns the targets: run / get -i at each length past the
    smallest (<= 1.3), and run's time per URL at the largest over the smallest (<= 1.5)."""
    script = os.path.join(bench.work, "toplevel.lua")
    with open(script, "w") as f:
        f.write(JOB)
    repeated = datasets.RepeatedFile(bench.root, bench.size["queue_file"], 5)
    _, get = tools.dlpipe(bench.binary)
    contenders = [(GET, get),
                  tools.dlpipe_job(bench.binary, script, RUN, server.url(""),
                                   extra=lambda job: ["--var", "count=%d" % len(job.urls)])]
    if bench.args.compare:
        # An A/B run: the compared build's job in the same rounds.
        contenders.append(tools.dlpipe_job(bench.args.compare, script, RUN + " (compared)", server.url(""),
                                           extra=lambda job: ["--var", "count=%d" % len(job.urls)]))
    lengths = bench.size["top_level"]
    per_url, cpu_per_url = {}, {}
    for count in lengths:
        job, expected = sets.queue_job(bench, server, repeated, count)
        rounds, warmup = (bench.size["rounds"], True) if count <= 100_000 else (2, False)
        title = "Set 9: a job's top-level dl.add vs get -i, %s URLs of one %s file, concurrency 16" % (
            format(count, ","), sets.human(repeated.size))
        results = bench.measure_set(title, job, contenders, expected, count * repeated.size, rounds,
                                    baseline=GET, warmup=warmup)
        if GET in results and RUN in results:
            per_url[count] = (results[GET].wall / count * 1e6, results[RUN].wall / count * 1e6)
            cpu_per_url[count] = (results[GET].cpu / count * 1e6, results[RUN].cpu / count * 1e6)
    lines = ["| URLs | get -i µs per URL | run µs per URL | run / get -i | CPU µs per URL, get -i | CPU, run | "
             "CPU, run / get -i |", "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for count, (get_us, run_us) in sorted(per_url.items()):
        get_cpu, run_cpu = cpu_per_url[count]
        lines.append("| %s | %.1f | %.1f | %.2f | %.1f | %.1f | %.2f |" % (
            format(count, ","), get_us, run_us, run_us / get_us, get_cpu, run_cpu, run_cpu / get_cpu))
    print("\n".join(lines), flush=True)
    bench.markdown += ["", "### Set 9: time per URL, a job's top level against get -i", ""] + lines
    targets = []
    for count in lengths[1:]:
        if count in per_url:
            get_us, run_us = per_url[count]
            targets.append(("set 9: top-level dl.add / get -i at %s URLs" % format(count, ","), run_us / get_us, 1.3))
    smallest, largest = min(lengths), max(lengths)
    if smallest in per_url and largest in per_url:
        targets.append(("set 9: run's time per URL, %s / %s URLs" % (format(largest, ","), format(smallest, ",")),
                        per_url[largest][1] / per_url[smallest][1], 1.5))
    return targets
