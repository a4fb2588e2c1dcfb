"""The sets: what each downloads, who it is compared with, and the targets it must meet.
Each target is (name, measured ratio, limit): met when the ratio is at most the limit."""
import os

import counts
import datasets
import queueset
import browser
import ratecap
import tools
import toplevel

KIB, MIB = datasets.KIB, datasets.MIB
GIB = 1024 * MIB

ALL_SETS = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10)
QUICK_SETS = (1, 2, 3, 4, 5, 7, 8, 9, 10)


def sizes(quick):
    if quick:
        return dict(rounds=3, small=(2000, 16 * KIB), medium=(100, 1 * MIB), large=256 * MIB, capped=48 * MIB,
                    queue=(2_000, 20_000), huge_queue=200_000, queue_file=4 * KIB,
                    many_small=(2_000, 16 * KIB), top_level=(2_000, 20_000))
    return dict(rounds=5, small=(2000, 16 * KIB), medium=(200, 1 * MIB), large=1 * GIB, capped=96 * MIB,
                queue=(10_000, 100_000), huge_queue=1_000_000, queue_file=4 * KIB,
                many_small=(10_000, 16 * KIB), top_level=(2_000, 20_000, 1_000_000))


def run_all(bench, server, wanted):
    targets = []
    if 4 in wanted and (1 not in wanted or bench.args.counts):
        # Set 4 alone (an A/B of the handler path, or its counts): set 1's data
        # without set 1's rounds, which take minutes with aria2c among the peers.
        count, size = bench.size["small"]
        data = datasets.DataSet(bench.root, "small", count, size, 1)
        job = tools.Job(bench.work, "small", [server.url(p) for p in data.paths()], 16)
        results = handlers(bench, server, data, job)
        if not bench.args.counts:
            targets.append(("set 4: 3 trivial handlers, wall / dlpipe get -i",
                            results["dlpipe run, 3 handlers"].wall / results["dlpipe get -i"].wall, 1.10))
        wanted = set(wanted) - {4}
    if 1 in wanted or 4 in wanted:
        count, size = bench.size["small"]
        data, job, results = many_files(bench, server, 1, "small", count, size, 1)
        durable = results[tools.LIMIT_PREFIX + "cp -r + sync -f"].wall
        bound = max(results["curl --parallel"].wall, 1.1 * durable)
        targets.append(("set 1: wall / max(curl --parallel, 1.1 x durable copy)",
                        results["dlpipe"].wall / bound, 1.0))
        if 4 in wanted:
            results = handlers(bench, server, data, job)
            targets.append(("set 4: 3 trivial handlers, wall / dlpipe get -i",
                            results["dlpipe run, 3 handlers"].wall / results["dlpipe get -i"].wall, 1.10))
    if 2 in wanted:
        count, size = bench.size["medium"]
        _, _, results = many_files(bench, server, 2, "medium", count, size, 2)
        targets.append(("set 2: wall / durable copy (cp -r + sync -f)",
                        results["dlpipe"].wall / results[tools.LIMIT_PREFIX + "cp -r + sync -f"].wall, 1.10))
        targets += web_target(bench, 2, results)
    if 3 in wanted:
        results = one_large_file(bench, server)
        targets.append(("set 3: wall / durable copy (dd conv=fsync)",
                        results["dlpipe"].wall / results[tools.LIMIT_PREFIX + "dd conv=fsync"].wall, 1.10))
        targets.append(("set 3: CPU / wget2's CPU", results["dlpipe"].cpu / results["wget2"].cpu, 1.0))
        targets.append(("set 3: peak RSS / 50 MB", results["dlpipe"].rss_mib / 50, 1.0))
        targets += web_target(bench, 3, results)
    if 5 in wanted:
        results, growth = long_queue(bench, server)
        large = results[max(results)]
        targets.append(("set 5: peak RSS / 100 MB at %s URLs" % format(max(results), ","), large.rss_mib / 100, 1.0))
        targets.append(("set 5: time per URL, %s / %s URLs" % (format(max(results), ","), format(min(results), ",")),
                        growth, 1.5))
    if 10 in wanted:
        results = capped_file(bench, server)
        split = results["dlpipe --split 8"].wall
        targets.append(("set 10: --split 8 wall / aria2c -x 8 -s 8", split / results["aria2c -x 8"].wall, 1.10))
        targets.append(("set 10: --split 8 wall / one connection", split / results["dlpipe"].wall, 0.30))
    if 7 in wanted:
        for reading in rate_cap(bench, server):
            targets.append(("set 7: %s, |rate / cap - 1|" % reading.label, abs(reading.ratio - 1), 0.10))
    # Set 8 before set 6: set 6 deletes a million files after each of its
    # runs, and for up to 305 s after that ext4 scans past every inode deleted
    # at each allocation (main.Bench.put_away). Run after it, set 8's
    # SQLite runs took 1.4 to 2.6 s instead of about 1.5 s, its queue runs
    # less in proportion, and its ratio read 1.21 where runs of set 8 alone
    # read 1.52 and 1.59.
    if 8 in wanted:
        targets += queueset.run(bench, server)
    # Set 9 before set 6 for the same reason; its own million-URL runs come
    # last in it, two rounds in opposite orders (toplevel.py says why).
    if 9 in wanted:
        targets += toplevel.run(bench, server)
    if 6 in wanted:
        for label, rss, growth in huge_queue(bench, server):
            targets.append(("set 6: %s, peak RSS / 250 MB" % label, rss / 250, 1.0))
            targets.append(("set 6: %s, time per URL / at %s URLs" % (label, format(bench.size["queue"][0], ",")),
                            growth, 1.5))
    return targets


def dlpipes(bench, web=False):
    """dlpipe, and the build given with --compare beside it; with `web` (sets 2 and 3 under
    --web-page) also dlpipe with --web and its page open in the bench's browser."""
    compared = bench.args.compare
    page = [browser.dlpipe_web(bench.binary, bench.browser), browser.dlpipe_web(bench.binary)] \
        if web and bench.browser else []
    return [tools.dlpipe(bench.binary)] + page + ([tools.dlpipe(compared, "dlpipe (compared)")] if compared else [])


WEB_LABELS = ("dlpipe --web, page open", "dlpipe --web, no page")
WEB_NOTE = ("`dlpipe --web, page open` is the same command with `--web 127.0.0.1:0` while headless Chromium, "
            "started before the set, holds the run's live page open in its one tab (sent there as soon as dlpipe "
            "prints the URL; the page polls `/api/run` once a second). The browser shares the machine's cores: "
            "`dlpipe --web, no page` is the same command with no browser looking, the server's own cost.")


def web_target(bench, number, results):
    """The ratios of the run with --web (its page open, and no page) to the same run without (--web-page)."""
    if not bench.browser or "dlpipe" not in results:
        return []
    names = {WEB_LABELS[0]: "with --web and the page open", WEB_LABELS[1]: "with --web, no page"}
    return [("set %d: wall %s / without" % (number, names[label]), results[label].wall / results["dlpipe"].wall, 1.05)
            for label in WEB_LABELS if label in results]


def many_files(bench, server, number, name, count, size, seed):
    data = datasets.DataSet(bench.root, name, count, size, seed)
    job = tools.Job(bench.work, name, [server.url(p) for p in data.paths()], 16)
    title = "Set %d: %s files of %s, concurrency 16" % (number, format(count, ","), human(size))
    web = number == 2
    contenders = dlpipes(bench, web) + tools.peers() + [
        tools.copy_tree(data.directory, durable=False), tools.copy_tree(data.directory, durable=True)]
    note = WEB_NOTE if web and bench.browser else None
    results = bench.measure_set(title, job, contenders, data.expected(), data.total_bytes, bench.size["rounds"],
                                note=note)
    return data, job, results


def one_large_file(bench, server):
    size = bench.size["large"]
    data = datasets.DataSet(bench.root, "large", 1, size, 3)
    job = tools.Job(bench.work, "large", [server.url(p) for p in data.paths()], 1)
    name, source = data.expected()[0]
    contenders = dlpipes(bench, web=True) + [tools.curl(), tools.aria2c(), tools.aria2c(split=8), tools.wget2(),
                  tools.copy_file(source, name, durable=False), tools.copy_file(source, name, durable=True)]
    note = ("dlpipe runs over one connection here (its `--split` is measured in set 10); `aria2c -x 8` "
            "splits the file over 8 connections and is shown for reference.") + (" " + WEB_NOTE if bench.browser else "")
    rounds = max(3, bench.size["rounds"] - 2)
    return bench.measure_set("Set 3: one file of %s" % human(size), job, contenders, data.expected(),
                             data.total_bytes, rounds, note=note)


def capped_file(bench, server):
    """One file from a server that caps each connection at 12 MiB/s: split over 8
    connections (dlpipe and aria2c) against one."""
    size = bench.size["capped"]
    data = datasets.DataSet(bench.root, "capped", 1, size, 10)
    job = tools.Job(bench.work, "capped", [server.url(p) for p in data.paths()], 1)
    contenders = [tools.dlpipe_split(bench.binary, 8), tools.aria2c(split=8), tools.dlpipe(bench.binary)]
    rounds = max(3, bench.size["rounds"] - 2)
    return bench.measure_set("Set 10: one file of %s, the server capping each connection at 12 MiB/s" % human(size),
                             job, contenders, data.expected(), data.total_bytes, rounds,
                             note="`aria2c -x 8 -s 8` and `dlpipe --split 8 --per-host 8` split the file over "
                                  "8 connections; `dlpipe` alone takes one.")


def handlers(bench, server, data, job):
    plain = os.path.join(bench.work, "plain.lua")
    hooked = os.path.join(bench.work, "handlers.lua")
    adds = "for _, name in ipairs({%s}) do dl.add(dl.var.base .. '/%s/' .. name) end\n" % (
        ",".join('"%s"' % f for f in data.files), data.name)
    with open(plain, "w") as f:
        f.write(adds)
    with open(hooked, "w") as f:
        f.write(adds + "local seen, bytes, done = 0, 0, 0\n"
                "dl.on('response', function(d, r) seen = seen + 1 end)\n"
                "dl.on('progress', function(d, p) bytes = p.bytes end)\n"
                "dl.on('finished', function(d, f) done = done + 1 end)\n")
    base = server.url("")
    label, get = tools.dlpipe(bench.binary)
    contenders = [tools.dlpipe_job(bench.binary, hooked, "dlpipe run, 3 handlers", base),
                  tools.dlpipe_job(bench.binary, plain, "dlpipe run, no handlers", base),
                  ("dlpipe get -i", get)]
    if bench.args.compare:
        # An A/B run: the compared build's handler job and its get -i, in the same rounds.
        compared = bench.args.compare
        contenders += [tools.dlpipe_job(compared, hooked, "dlpipe run, 3 handlers (compared)", base),
                       tools.dlpipe(compared, "dlpipe get -i (compared)")]
    if bench.args.counts:
        return counts.run(bench, job, contenders, data.expected(), bench.size["rounds"], "dlpipe get -i")
    title = "Set 4: set 1 through a Lua job with trivial response/progress/finished handlers, vs the same list"
    return bench.measure_set(title, job, contenders, data.expected(), data.total_bytes, bench.size["rounds"],
                             baseline="dlpipe get -i")


def long_queue(bench, server):
    small, large = bench.size["queue"]
    repeated = datasets.RepeatedFile(bench.root, bench.size["queue_file"], 5)
    results = {}
    for count in (small, large):
        job, expected = queue_job(bench, server, repeated, count)
        title = "Set 5: %s queued URLs of one %s file, concurrency 16" % (format(count, ","), human(repeated.size))
        results[count] = bench.measure_set(title, job, dlpipes(bench), expected,
                                           count * repeated.size, max(3, bench.size["rounds"] - 2),
                                           baseline="dlpipe")["dlpipe"]
    per_small = results[small].wall / small * 1e6
    per_large = results[large].wall / large * 1e6
    summary = ("Time per URL: %.1f µs at %s, %.1f µs at %s (ratio %.2f); peak RSS %.1f MB and %.1f MB." % (
        per_small, format(small, ","), per_large, format(large, ","), per_large / per_small,
        results[small].rss_mib, results[large].rss_mib))
    print(summary)
    bench.markdown += ["", summary]
    return results, per_large / per_small


def huge_queue(bench, server):
    """A queue far past the rest, through `get -i` and through a job: its time per URL
    against the smallest queue's, and its peak RSS. One round: each run takes minutes."""
    small, huge = bench.size["queue"][0], bench.size["huge_queue"]
    repeated = datasets.RepeatedFile(bench.root, bench.size["queue_file"], 5)
    script = os.path.join(bench.work, "queue.lua")
    with open(script, "w") as f:
        f.write("dl.config{ max_downloads = tonumber(dl.var.count) }\n"
                "local base, width = dl.var.base .. '/same/', #tostring(tonumber(dl.var.count) - 1)\n"
                "for i = 0, tonumber(dl.var.count) - 1 do\n"
                "  dl.add(base .. string.format('%0' .. width .. 'd.bin', i))\n"
                "end\n")
    label, get = tools.dlpipe(bench.binary)
    found = []
    for name, contender in (("dlpipe get -i", ("dlpipe get -i", get)),
                            ("dlpipe run", tools.dlpipe_job(bench.binary, script, "dlpipe run", server.url(""),
                                                            extra=lambda job: ["--var", "count=%d" % len(job.urls)]))):
        per_url = {}
        for count, rounds, warmup in ((small, 3, True), (huge, 1, False)):
            job, expected = queue_job(bench, server, repeated, count)
            title = "Set 6: %s, %s queued URLs of one %s file, concurrency 16" % (
                name, format(count, ","), human(repeated.size))
            result = bench.measure_set(title, job, [contender], expected, count * repeated.size, rounds,
                                       baseline=name, warmup=warmup).get(name)
            if result is None:
                break
            per_url[count] = (result.wall / count * 1e6, result.rss_mib)
        if len(per_url) == 2:
            growth = per_url[huge][0] / per_url[small][0]
            line = "%s: %.1f µs per URL at %s, %.1f µs at %s (ratio %.2f); peak RSS %.1f MB at %s." % (
                name, per_url[small][0], format(small, ","), per_url[huge][0], format(huge, ","), growth,
                per_url[huge][1], format(huge, ","))
            print(line)
            bench.markdown += ["", line]
            found.append((name, per_url[huge][1], growth))
    return found


def rate_cap(bench, server):
    """--rate on one download and on several at once (the cap is a total)."""
    cap = 4 * MIB
    seconds = 3 if bench.args.quick else 6
    one = datasets.DataSet(bench.root, "rate-one", 1, cap * seconds, 7)
    several = datasets.DataSet(bench.root, "rate-several", 4, cap * seconds // 4, 8)
    print("\n== Set 7: --rate %s, one download and four at once ==" % human(cap), flush=True)
    readings = []
    for data, label, concurrency in ((one, "one file of %s" % human(one.size), 1),
                                     (several, "4 files of %s at once" % human(several.size), 4)):
        urls = [server.url(p) for p in data.paths()]
        reading = ratecap.measure(bench.binary, bench.work, urls, cap, label, concurrency)
        if reading.status != 0:
            bench.failures.append("set 7, %s: exit status %d" % (label, reading.status))
            continue
        print("  %-26s %.2f s, %.2f MB/s after the first second (cap %.2f)" % (
            label, reading.seconds, reading.rate / 1e6, cap / 1e6), flush=True)
        readings.append(reading)
    lines = ratecap.table(readings)
    print("\n".join(lines), flush=True)
    bench.markdown += ["", "### Set 7: --rate %s, one download and four at once" % human(cap), "",
                       "The rate is read from dlpipe's `--json` events, stamped as they arrive, from the last "
                       "event of the first second to the end of the run.", ""] + lines
    return readings


def queue_job(bench, server, repeated, count):
    paths = repeated.paths(count)
    job = tools.Job(bench.work, "queue%d" % count, [server.url(p) for p in paths], 16)
    expected = [(p.rsplit("/", 1)[1], repeated.source) for p in paths]
    return job, expected


def human(size):
    for unit, scale in (("GiB", GIB), ("MiB", MIB), ("KiB", KIB)):
        if size >= scale and size % scale == 0:
            return "%d %s" % (size // scale, unit)
    return "%d bytes" % size
