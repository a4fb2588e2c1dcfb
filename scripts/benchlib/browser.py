"""--web-page: dlpipe runs with `--web 127.0.0.1:0` while headless Chromium holds its live page
open, polling `/api/run` once a second as a user's browser does.

One Chromium serves every run of the bench: started once (its start costs a second of
CPU, which no run should pay), driven over its DevTools pipe (`--remote-debugging-pipe`:
JSON messages ended by a NUL byte, commands on its fd 3, answers on its fd 4). A run's
command is `webopen.py` around dlpipe: it reads the page's URL from dlpipe's stderr and
asks, through a FIFO, for a tab on it; the tab is closed when dlpipe exits."""
import fcntl
import json
import os
import shutil
import subprocess
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))


class Browser:
    def __init__(self, work):
        self.profile = os.path.join(work, "chromium-profile")
        self.fifo = os.path.join(work, "webopen.fifo")
        os.makedirs(self.profile, exist_ok=True)
        if not os.path.exists(self.fifo):
            os.mkfifo(self.fifo)
        commands_read, self.commands = os.pipe()
        self.answers, answers_write = os.pipe()
        # Out of the way of 3 and 4, where the shell puts them for Chromium.
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
        self.lock = threading.Lock()
        self.replies = {}
        self.replied = threading.Condition(self.lock)
        self.tabs = {}
        self.opened = 0
        threading.Thread(target=self.read_answers, daemon=True).start()
        threading.Thread(target=self.serve_fifo, daemon=True).start()
        # The first answer says Chromium is up, before any run is timed.
        self.call("Browser.getVersion", {})

    def call(self, method, params, timeout=30):
        with self.lock:
            self.next_id += 1
            number = self.next_id
        os.write(self.commands, json.dumps({"id": number, "method": method, "params": params}).encode() + b"\0")
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

    def serve_fifo(self):
        """`open URL` and `close URL` lines from the runs' wrappers."""
        while True:
            with open(self.fifo) as requests:
                for line in requests:
                    verb, _, url = line.strip().partition(" ")
                    try:
                        if verb == "open":
                            answer = self.call("Target.createTarget", {"url": url})
                            self.tabs[url] = answer["result"]["targetId"]
                            self.opened += 1
                        elif verb == "close" and url in self.tabs:
                            self.call("Target.closeTarget", {"targetId": self.tabs.pop(url)})
                    except (RuntimeError, KeyError) as error:
                        print("  chromium: %s %s: %s" % (verb, url, error), file=sys.stderr, flush=True)

    def stop(self):
        self.process.kill()
        self.process.wait()


def dlpipe_web(binary, fifo, label="dlpipe --web, page open"):
    """The set's dlpipe command with `--web 127.0.0.1:0`, its page held open by the browser."""
    def argv(job, out):
        c = str(job.concurrency)
        return [sys.executable, "-S", os.path.join(HERE, "webopen.py"), fifo, binary, "get", "-i", job.list_file,
                "-d", out, "-j", c, "--per-host", c, "-q", "--progress", "none", "--web", "127.0.0.1:0"]
    return label, argv
