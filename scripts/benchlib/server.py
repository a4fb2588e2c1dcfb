"""A loopback nginx of the benchmark's own: its own config, sendfile, keep-alive,
no access log; started in the foreground and stopped by PID."""
import os
import signal
import socket
import subprocess
import time
import urllib.request

CONFIG = """
daemon off;
worker_processes 1;
pid {work}/nginx.pid;
error_log {work}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    keepalive_timeout 60s;
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path {work}/tmp;
    proxy_temp_path {work}/tmp;
    fastcgi_temp_path {work}/tmp;
    uwsgi_temp_path {work}/tmp;
    scgi_temp_path {work}/tmp;
    server {{
        listen 127.0.0.1:{port};
        root {root};
        # Set 5: every /same/<n>.bin is one small file, so 100,000 URLs need one.
        location /same/ {{ try_files /same.bin =404; }}
        # Set 10: a server that caps each connection (12 MiB/s), where split
        # downloads pay off.
        location /capped/ {{ limit_rate 12m; }}
    }}
}}
"""


def free_port():
    """A port the kernel says is free now (nginx cannot report a port 0 choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def nginx_binary():
    for candidate in ("/usr/sbin/nginx", "nginx"):
        if os.path.exists(candidate) or candidate == "nginx":
            return candidate


class Nginx:
    def __init__(self, root, work):
        self.root, self.work = root, work
        os.makedirs(os.path.join(work, "tmp"), exist_ok=True)
        self.process = None
        for _ in range(5):  # another process may take the port between probe and bind
            self.port = free_port()
            path = os.path.join(work, "nginx.conf")
            with open(path, "w") as f:
                f.write(CONFIG.format(work=work, root=root, port=self.port))
            # A non-root nginx warns that it cannot switch user; that is fine.
            self.process = subprocess.Popen([nginx_binary(), "-c", path, "-e", os.path.join(work, "stderr.log")],
                                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._ready():
                return
            self.stop()
        raise RuntimeError("nginx did not start; see " + os.path.join(work, "error.log"))

    def _ready(self):
        for _ in range(100):
            if self.process.poll() is not None:
                return False
            try:
                urllib.request.urlopen(self.url("/"), timeout=1).close()
                return True
            except urllib.error.HTTPError:
                return True  # it answered
            except OSError:
                time.sleep(0.05)
        return False

    def url(self, path):
        return "http://127.0.0.1:%d%s" % (self.port, path)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGQUIT)  # graceful: lets workers exit
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
