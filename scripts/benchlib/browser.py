"""--web-page: dlpipe runs with `--web 127.0.0.1:0` while headless Chromium holds its live page
open, polling `/api/run` once a second as a user's browser does.

One Chromium with one tab serves every run of the bench: started once (its start and a new
tab's renderer cost CPU that no run should pay), driven over its DevTools pipe
(`--remote-debugging-pipe`: JSON messages ended by a NUL byte, commands on its fd 3, answers on
its fd 4). While a run lasts, a thread of the bench reads the run's stderr as it is written (the
bench's log of it) and, when dlpipe prints its page's URL, sends the tab there. The command
timed is dlpipe alone: no wrapper."""
import fcntl
import json
import os
import re
import shutil
import subprocess
import threading

URL_LINE = re.compile(rb"web view at (http://[^ ]+/)")


class Browser:
    def __init__(self, work):
        self.profile = os.path.join(work, "chromium-profile")
        os.makedirs(self.profile, exist_ok=True)
        commands_read, self.commands = os.pipe()
        self.answers, answers_write = os.pipe()
        # Out of the way of 3 and 4, where bash puts them for Chromium.
        ends = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (commands_read, answers_write)]
        for fd in (commands_read, answers_write):
            os.close(fd)
        chromium = [shutil.which("chromium") or "/usr/bin/chromium", "--headless=new", "--no-sandbox", "--disable-gpu",
                    "--remote-debugging-pipe", "--user-data-dir=" + self.profile, "--no-first-run", "about:blank"]
        self.process = subprocess.Popen(
            ["bash", "-c", 'exec "$@" 3<&%d 4>&%d %d<&- %d>&-' % (ends[0], ends[1], ends[0], ends[1]), "bash"] + chromium,
            pass_fds=ends, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for fd in ends:
            os.close(fd)
        self.next_id = 0
        self.replies = {}
        self.replied = threading.Condition()
        self.opened = 0
        threading.Thread(target=self.read_answers, daemon=True).start()
        # The tab every run's page opens in, made before any run is timed.
        target = self.call("Target.createTarget", {"url": "about:blank"})["result"]["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["result"]["sessionId"]

    def call(self, method, params, session=None, timeout=30):
        with self.replied:
            self.next_id += 1
            number = self.next_id
        message = {"id": number, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self.commands, json.dumps(message).encode() + b"\0")
        with self.replied:
            if not self.replied.wait_for(lambda: number in self.replies, timeout):
                raise RuntimeError("chromium did not answer %s" % method)
            return self.replies.pop(number)

    def read_answers(self):
        pending = b""
        while True:
            chunk = os.read(self.answers, 65536)
            if not chunk:
                return
            pending += chunk
            while b"\0" in pending:
                message, pending = pending.split(b"\0", 1)
                answer = json.loads(message)
                if "id" in answer:
                    with self.replied:
                        self.replies[answer["id"]] = answer
                        self.replied.notify_all()

    def watch(self, log):
        """Sends the tab to the page whose URL the run writes into `log`; returns the call that
        ends the watch (after the run)."""
        done = threading.Event()

        def follow():
            while not done.wait(0.005):
                try:
                    with open(log, "rb") as f:
                        found = URL_LINE.search(f.read(4096))
                except OSError:
                    continue
                if found:
                    self.call("Page.navigate", {"url": found.group(1).decode()}, session=self.session)
                    self.opened += 1
                    return

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()

        def stop():
            done.set()
            thread.join()
        return stop

    def stop(self):
        self.process.kill()
        self.process.wait()


def dlpipe_web(binary, browser=None):
    """The set's dlpipe command with `--web 127.0.0.1:0`; with `browser`, its page held open there."""
    def argv(job, out):
        c = str(job.concurrency)
        return [binary, "get", "-i", job.list_file, "-d", out, "-j", c, "--per-host", c, "-q", "--progress", "none",
                "--web", "127.0.0.1:0"]
    if browser:
        argv.watch = browser.watch
    return ("dlpipe --web, page open" if browser else "dlpipe --web, no page"), argv
