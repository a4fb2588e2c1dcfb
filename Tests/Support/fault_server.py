#!/usr/bin/env python3
"""Loopback HTTP/1.1 test server with fault injection for dlpipe's tests.

Usage: python3 fault_server.py --root DIR [--log FILE] [--tls-cert PEM --tls-key PEM]

Binds 127.0.0.1 on an ephemeral port and prints "PORT <n>" on stdout.
Standard library only. See the route table in Handler._dispatch and the fault
parameters in Handler._files. Any path with ?serve=NAME serves /files/NAME
(so that tests can put hostile names in the URL path).
"""

import argparse
import email.utils
import hashlib
import http
import json
import mimetypes
import os
import re
import select
import signal
import socket
import socketserver
import ssl
import struct
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, unquote, urlsplit

PIECE = 16 * 1024          # body write size (and max chunk size when chunked)
STALL_MAX = 600.0          # longest a stalled response waits for the client: tests
                           # end their stalls by stopping the client; a full suite on
                           # two cores took over 120 s between a stall's start and the
                           # step that needs it still stalled
ENDLESS_MAX = 600.0        # safety cap for /endless-headers
BODY_ROUTES = ("/echo-request",)   # answered for any method, request body read


def http_date(ts):
    return email.utils.formatdate(ts, usegmt=True)


def parse_http_date(value):
    """Epoch seconds for an HTTP date, or None if it does not parse."""
    try:
        return int(email.utils.parsedate_to_datetime(value).timestamp())
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


def parse_range(value, size):
    """Single byte range -> (start, end) inclusive, 'unsat', or None (ignore)."""
    m = re.fullmatch(r"\s*bytes\s*=\s*(\d*)\s*-\s*(\d*)\s*", value)
    if not m or (m[1] == "" and m[2] == ""):
        return None                     # malformed or multi-range: serve 200
    if m[1] == "":                      # suffix form: bytes=-N
        n = int(m[2])
        if n == 0 or size == 0:
            return "unsat"
        return max(0, size - n), size - 1
    start = int(m[1])
    if m[2] and int(m[2]) < start:
        return None                     # syntactically invalid: ignore
    if start >= size:
        return "unsat"
    return start, min(int(m[2]) if m[2] else size - 1, size - 1)


class FaultServer(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False
    request_queue_size = 256            # default 5 drops SYNs under parallel load

    def __init__(self, addr, root, log_path):
        super().__init__(addr, Handler)
        self.root = os.path.realpath(root)
        self.log_file = open(log_path, "a", encoding="utf-8") if log_path else None
        self.log_lock = threading.Lock()
        self.counts = {}                # raw request target -> requests seen
        self.count_lock = threading.Lock()
        self.etags = {}                 # (path, ino, size, mtime_ns) -> ETag
        self.etag_lock = threading.Lock()

    def server_bind(self):
        # HTTPServer.server_bind() calls socket.getfqdn(), a DNS lookup that
        # can stall offline; we never need the name.
        socketserver.TCPServer.server_bind(self)
        self.server_name, self.server_port = self.server_address[:2]

    def bump(self, key):
        """Count a request for `key`; return how many came before it."""
        with self.count_lock:
            n = self.counts.get(key, 0)
            self.counts[key] = n + 1
            return n

    def etag_for(self, path, st):
        key = (path, st.st_ino, st.st_size, st.st_mtime_ns)
        with self.etag_lock:
            tag = self.etags.get(key)
        if tag is None:
            h = hashlib.sha256()
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    h.update(block)
            tag = '"%s"' % h.hexdigest()[:32]
            with self.etag_lock:
                self.etags[key] = tag
        return tag

    def log(self, record):
        if self.log_file:
            line = json.dumps(record) + "\n"
            with self.log_lock:
                self.log_file.write(line)
                self.log_file.flush()

    def handle_error(self, request, client_address):
        # Clients hanging up mid-response are expected; report anything else.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = "fault_server"

    def log_message(self, *args):       # silence per-request stderr logging
        pass

    def setup(self):
        if isinstance(self.request, ssl.SSLSocket):
            try:
                self.request.do_handshake()  # a client that rejects us ends here
            except (ssl.SSLError, OSError):
                self.request.close()
                raise
        super().setup()

    # ---- plumbing -------------------------------------------------------

    def do_GET(self):
        if self._split_target()[0] in BODY_ROUTES or self._split_target()[0].startswith("/redirect-code/"):
            return self._with_body()
        self._dispatch()

    do_HEAD = do_GET

    def _with_body(self):
        """Routes for any method, that read the request body.
        /echo-request: a JSON object of the method, the body (latin-1) and the
        Content-Type. /redirect-code/CODE?url=TARGET: a redirect of that status."""
        path, qs = self._split_target()
        self._log_request(path, qs)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if path.startswith("/redirect-code/"):
            _, _, url = qs.partition("url=")
            return self._simple(int(path[len("/redirect-code/"):]), "moved\n",
                                [("Location", unquote(url, encoding="latin-1"))])
        out = json.dumps({"method": self.command, "body": body.decode("latin-1"),
                          "content_type": self.headers.get("Content-Type")}) + "\n"
        self._simple(200, out, [("Content-Type", "application/json")])

    def _other(self):
        path = self._split_target()[0]
        if path in BODY_ROUTES or path.startswith("/redirect-code/"):
            return self._with_body()
        self._log_request(*self._split_target())
        self.close_connection = True    # we never read a request body
        self._simple(405, "method not allowed\n", [("Allow", "GET, HEAD")])

    do_POST = do_PUT = do_DELETE = do_PATCH = do_OPTIONS = _other

    def _split_target(self):
        target = self.path
        if "://" in target.split("?", 1)[0]:        # absolute-form target
            parts = urlsplit(target)
            target = parts.path + ("?" + parts.query if parts.query else "")
        path, _, qs = target.partition("?")
        return path, qs

    def _log_request(self, path, qs):
        query = {}
        for k, v in parse_qsl(qs, keep_blank_values=True, errors="replace"):
            query.setdefault(k, v)
        self.server.log({"method": self.command, "path": path, "query": query,
                         "headers": self._header_dict(), "time": time.time()})

    def _header_dict(self):
        out = {}
        for name, value in self.headers.items():
            name = name.lower()
            out[name] = out[name] + ", " + value if name in out else value
        return out

    def _send_head(self, code, headers):
        """Write status line + headers. Values are str (latin-1) or bytes."""
        try:
            reason = http.HTTPStatus(code).phrase
        except ValueError:
            reason = "Status"
        headers = list(headers) + [("Date", http_date(time.time())),
                                   ("Server", self.server_version)]
        if self.close_connection:
            headers.append(("Connection", "close"))
        out = [b"HTTP/1.1 %d %s\r\n" % (code, reason.encode())]
        for name, value in headers:
            if isinstance(value, str):
                value = value.encode("latin-1", "replace")
            out.append(name.encode("latin-1") + b": " + value + b"\r\n")
        out.append(b"\r\n")
        self.wfile.write(b"".join(out))

    def _simple(self, code, body, headers=()):
        body = body.encode()
        self._send_head(code, [("Content-Type", "text/plain; charset=utf-8"),
                               ("Content-Length", str(len(body)))] + list(headers))
        if self.command != "HEAD":
            self.wfile.write(body)

    def _redirect(self, location):
        self._simple(302, "redirect\n", [("Location", location)])

    def _reset(self):
        """Abort the connection with RST (SO_LINGER 0) so the client sees ECONNRESET."""
        sock = self.connection
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        # detach() + os.close() really closes now; socket.close() would wait
        # for rfile/wfile to be released, and socketserver's shutdown() would
        # send a FIN first.
        os.close(sock.detach())
        self.close_connection = True

    def _wait_for_disconnect(self, limit):
        """Sleep in small steps until the peer closes (or `limit` seconds)."""
        sock, deadline = self.connection, time.monotonic() + limit
        while time.monotonic() < deadline:
            readable, _, _ = select.select([sock], [], [], 0.1)
            if readable:
                try:
                    if not sock.recv(1, socket.MSG_PEEK):
                        return                  # orderly close by client
                except OSError:
                    return
                time.sleep(0.1)                 # client sent data; keep stalling

    def _digest_ok(self):
        """Whether the request's Digest credentials are alice's (any nonce)."""
        header = self.headers.get("Authorization", "")
        if not header.startswith("Digest "):
            return False
        fields = {k: (quoted if quoted else bare) for k, quoted, bare in
                  re.findall(r'(\w+)=(?:"([^"]*)"|([^,\s]*))', header[7:])}
        if fields.get("username") != "alice" or fields.get("uri") != self.path:
            return False
        md5 = lambda text: hashlib.md5(text.encode()).hexdigest()
        ha1 = md5("alice:%s:secret" % fields.get("realm", ""))
        ha2 = md5("%s:%s" % (self.command, fields["uri"]))
        expected = md5(":".join([ha1, fields.get("nonce", ""), fields.get("nc", ""),
                                 fields.get("cnonce", ""), fields.get("qop", ""), ha2]))
        return fields.get("response") == expected

    # ---- routing --------------------------------------------------------

    def _dispatch(self):
        path, qs = self._split_target()
        self._log_request(path, qs)
        suffix = "?" + qs if qs else ""
        try:
            q = {}
            # latin-1 so that %xx escapes map 1:1 back to raw bytes.
            for k, v in parse_qsl(qs, keep_blank_values=True, encoding="latin-1"):
                q.setdefault(k, v)
            if "serve" in q:
                # Any path at all (hostile names in the URL's last segment):
                # serves the file named by serve= with the /files/ faults.
                self._files(q["serve"], q)
            elif path.startswith("/files/"):
                try:
                    self._files(path[len("/files/"):], q)
                finally:
                    # When the answer ended (or broke off): with the request's
                    # own record, how many were served at once.
                    self.server.log({"ended": path, "time": time.time()})
            elif path.startswith("/digest/"):
                # /files/NAME behind HTTP Digest auth (RFC 7616, MD5, qop=auth):
                # user "alice", password "secret". nginx has no Digest.
                if self._digest_ok():
                    self._files(path[len("/digest/"):], q)
                else:
                    nonce = hashlib.sha256(os.urandom(16)).hexdigest()[:32]
                    self._simple(401, "digest wanted\n", [(
                        "WWW-Authenticate",
                        'Digest realm="dlpipe", qop="auth", algorithm=MD5, nonce="%s"' % nonce)])
            elif path.startswith("/redirect/"):
                n, _, rest = path[len("/redirect/"):].partition("/")
                if not n.isdigit():
                    return self._simple(404, "not found\n")
                n = int(n)
                self._redirect(("/redirect/%d/%s" % (n - 1, rest) if n > 0
                                else "/" + rest) + suffix)
            elif path == "/robots.txt":
                # The root's robots.txt with /files/'s validators and 304s; a
                # file robots.status in the root answers with that status
                # instead; neither: 404. A file robots.delay holds the answer
                # back that many seconds.
                pause = os.path.join(self.server.root, "robots.delay")
                if os.path.isfile(pause):
                    with open(pause) as f:
                        time.sleep(float(f.read().strip()))
                status = os.path.join(self.server.root, "robots.status")
                if os.path.isfile(status):
                    with open(status) as f:
                        code = int(f.read().strip())
                    self._simple(code, "robots status %d\n" % code)
                else:
                    self._files("robots.txt", q)
            elif path == "/loop":
                self._redirect("/loop")
            elif path == "/redirect-to":
                # Everything after "url=" is the target, so an unescaped URL
                # with its own "?a=1&b=2" survives intact.
                _, _, url = qs.partition("url=")
                self._redirect(unquote(url, encoding="latin-1") or "/")
            elif path == "/set-cookies":
                # Two cookies (one with an Expires date, which holds a comma)
                # and a repeated ordinary header, for the joining rules.
                self._simple(200, "cookies\n", [
                    ("Set-Cookie", "a=1; Path=/; Expires=Wed, 21 Oct 2037 07:28:00 GMT"),
                    ("Set-Cookie", "b=2; Path=/"),
                    ("X-Multi", "x"), ("X-Multi", "y")])
            elif path == "/login":
                # A login redirect: the session cookie comes with the 302.
                _, _, to = qs.partition("to=")
                self._simple(302, "logged in\n", [
                    ("Set-Cookie", "session=s3cret; Path=/"), ("Location", unquote(to) or "/")])
            elif path.startswith("/members/"):
                # /files/NAME for a client that sends the session cookie, else 403.
                cookies = self.headers.get("Cookie") or ""
                if "session=s3cret" in [c.strip() for c in cookies.split(";")]:
                    self._files(path[len("/members/"):], q)
                else:
                    self._simple(403, "log in first\n")
            elif path == "/echo-headers":
                body = json.dumps(self._header_dict(), indent=1) + "\n"
                self._simple(200, body, [("Content-Type", "application/json")])
            elif path == "/huge-headers":
                fill = [("X-Filler-%d" % i, chr(ord("a") + i) * 1000) for i in range(10)]
                self._simple(200, "ok", fill)
            elif path == "/endless-headers":
                self._endless_headers()
            elif path == "/one-huge-header":
                # One header line of mb= MiB (default 50): past any head limit.
                self.close_connection = True
                size = int(float(q.get("mb", "50")) * 1024 * 1024)
                self._send_head(200, [("X-Huge", b"h" * size), ("Content-Length", "2")])
                self.wfile.write(b"ok")
            elif path == "/gzip-zeros":
                self._gzip_zeros(int(q.get("mb", "100")))
            elif path == "/bad-header":
                # Raw bytes: invalid UTF-8 everywhere, plus a NUL byte (libcurl
                # 7.88 rejects that with "Nul byte in header"; ?nul=0 omits it).
                nul = b"" if "nul=0" in qs.split("&") else b"X-Nul: abc\x00def\r\n"
                self.wfile.write(
                    b"HTTP/1.1 200 OK\r\n"
                    b"Content-Type: text/plain\r\n"
                    b"X-Bad-Utf8: caf\xc3\x28 \xff\xfe\x80\r\n" + nul +
                    b"Content-Disposition: attachment; filename=\"bad\xff\xfe\xc0name.txt\"\r\n"
                    b"Content-Length: 2\r\n"
                    b"\r\n"
                    b"ok")
            else:
                self._simple(404, "not found\n")
        except ValueError as e:                  # bad numeric parameter
            self.close_connection = True
            self._simple(400, "bad request: %s\n" % e)
        except (ConnectionError, TimeoutError):
            self.close_connection = True

    def _gzip_zeros(self, mb):
        """mb MiB of zero bytes, gzip-encoded (level 9, about 1000:1) for a
        client that accepts gzip: a small wire body that decodes past any
        buffer. Anyone else gets the zeros as they are."""
        self.close_connection = True
        if "gzip" not in (self.headers.get("Accept-Encoding") or ""):
            self._send_head(200, [("Content-Type", "application/octet-stream"),
                                  ("Content-Length", str(mb << 20))])
            for _ in range(mb):
                self.wfile.write(bytes(1 << 20))
            return
        squeeze = zlib.compressobj(9, zlib.DEFLATED, 31)   # 31: a gzip wrapper
        block = bytes(1 << 20)
        wire = b"".join(squeeze.compress(block) for _ in range(mb)) + squeeze.flush()
        self._send_head(200, [("Content-Type", "application/octet-stream"),
                              ("Content-Encoding", "gzip"), ("Content-Length", str(len(wire)))])
        self.wfile.write(wire)

    def _endless_headers(self):
        self.close_connection = True
        self.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n")
        deadline, i = time.monotonic() + ENDLESS_MAX, 0
        while time.monotonic() < deadline:      # write fails once client is gone
            self.wfile.write(b"X-More-%d: %s\r\n" % (i, b"y" * 64))
            i += 1
            time.sleep(0.05)

    # ---- /files/<relpath> with fault injection --------------------------

    def _files(self, rel, q):
        n = self.server.bump(self.path)     # requests to this exact target before us

        def active(name):
            """Fault `name` applies unless `name_times` is exhausted."""
            if name not in q:
                return False
            times = q.get(name + "_times")
            return times is None or n < int(times)

        if "delay" in q:
            time.sleep(float(q["delay"]))

        # status= / fail_times=: an error response instead of the file.
        if "status" in q or "fail_times" in q:
            times = q.get("fail_times")
            if times is None or n < int(times):
                code = int(q.get("status") or 503)
                extra = [("Retry-After", q["retry_after"])] if "retry_after" in q else []
                return self._simple(code, "error %d\n" % code, extra)

        # Resolve the file; reject traversal and anything outside the root.
        rel = unquote(rel)
        if ".." in rel.split("/") or "\x00" in rel:
            return self._simple(404, "not found\n")
        path = os.path.realpath(os.path.join(self.server.root, rel))
        if not path.startswith(self.server.root + os.sep) or not os.path.isfile(path):
            return self._simple(404, "not found\n")
        lm = int(os.stat(path).st_mtime)
        if "swap_after" in q and n >= int(q["swap_after"]):
            path += ".v2"                   # the "changed" resource
            lm += 3600
            if not os.path.isfile(path):
                return self._simple(404, "not found (missing .v2)\n")

        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            size = st.st_size
            validators = "no_validators" not in q
            etag = self.server.etag_for(path, st) if validators else None
            head = [("Content-Type", q.get("type") or
                     mimetypes.guess_type(rel)[0] or "application/octet-stream")]
            if validators:
                head += [("ETag", etag), ("Last-Modified", http_date(lm))]
            # A sidecar FILE.headers ("Name: value" lines) adds its headers to
            # FILE's answers (a paginated API's Link, say).
            if os.path.isfile(path + ".headers"):
                with open(path + ".headers", encoding="latin-1") as extra:
                    head += [tuple(part.strip() for part in line.split(":", 1))
                             for line in extra.read().splitlines() if ":" in line]

            # Conditional GET: If-None-Match wins over If-Modified-Since.
            # ?bare_304=1: the 304 names no Content-Type (RFC 9110 does not
            # ask for one, and many servers leave it out).
            inm, ims = self.headers.get("If-None-Match"), self.headers.get("If-Modified-Since")
            head304 = head[1:] if "bare_304" in q else head
            if validators and inm is not None:
                tags = [t.strip().removeprefix("W/") for t in inm.split(",")]
                if "*" in tags or etag in tags:
                    return self._send_head(304, head304)
            elif validators and ims is not None:
                t = parse_http_date(ims)
                if t is not None and lm <= t:
                    return self._send_head(304, head304)

            code, start, length = 200, 0, size
            no_range = q.get("no_range", "0") not in ("", "0")
            rng = self.headers.get("Range")
            if rng is not None and not no_range:
                ifr = self.headers.get("If-Range")
                if ifr is not None:
                    ifr = ifr.strip()
                    if ifr.startswith('"'):
                        ok = validators and ifr == etag
                    elif ifr.startswith("W/"):
                        ok = False          # weak tags never match If-Range
                    else:
                        ok = validators and parse_http_date(ifr) == lm
                    if not ok:
                        rng = None          # validator mismatch: full 200
            if rng is not None and not no_range:
                r = parse_range(rng, size)
                if r == "unsat":
                    return self._simple(416, "range not satisfiable\n",
                                        [("Content-Range", "bytes */%d" % size)])
                if r is not None:
                    code, start, length = 206, r[0], r[1] - r[0] + 1
                    head.append(("Content-Range", "bytes %d-%d/%d" % (r[0], r[1], size)))

            if not no_range:
                head.append(("Accept-Ranges", "bytes"))
            if "cd" in q:
                head.append(("Content-Disposition", q["cd"].encode("latin-1")))
            chunked = q.get("chunked", "0") not in ("", "0")
            if chunked:                       # chunked wins over lie_length
                head.append(("Transfer-Encoding", "chunked"))
            elif "lie_length" in q:
                head.append(("Content-Length", str(int(q["lie_length"]))))
                self.close_connection = True  # framing is broken; don't reuse
            else:
                head.append(("Content-Length", str(length)))

            # Body faults: the one with the smallest byte offset wins.
            cuts = [(int(q[name]), name) for name in ("reset", "stall", "truncate")
                    if active(name)]
            cut, action = min(cuts) if cuts else (None, None)
            bps = float(q["throttle"]) if "throttle" in q else 0.0

            self._send_head(code, head)
            if self.command == "HEAD":
                return
            f.seek(start)
            self._send_body(f, length, cut, action, chunked, bps)

    def _send_body(self, f, length, cut, action, chunked, bps):
        limit = length if cut is None else max(0, min(cut, length))
        piece = PIECE if not bps else int(max(1, min(4096, bps / 10)))
        sent, t0 = 0, time.monotonic()
        while sent < limit:
            data = f.read(min(piece, limit - sent))
            if not data:
                break                        # file shrank under us
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked else data)
            sent += len(data)
            if bps:                          # pace against the start time
                delay = t0 + sent / bps - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
        if action is None:
            if chunked:
                self.wfile.write(b"0\r\n\r\n")
            return
        # A fault applies: never send the last chunk, never reuse the connection.
        self.close_connection = True
        if action == "reset":
            time.sleep(0.05)                 # let the client read what was sent
            self._reset()
        elif action == "stall":
            self._wait_for_disconnect(STALL_MAX)
        # "truncate": plain close (FIN) by socketserver after we return.


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--root", required=True, help="directory served under /files/")
    ap.add_argument("--log", help="append one JSON line per request to FILE")
    ap.add_argument("--exit-with-parent", action="store_true",
                    help="exit when the process that started us goes away")
    ap.add_argument("--tls-cert", help="serve https with this certificate (PEM)")
    ap.add_argument("--tls-key", help="the certificate's private key (PEM)")
    args = ap.parse_args()

    server = FaultServer(("127.0.0.1", 0), args.root, args.log)
    if args.tls_cert:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(args.tls_cert, args.tls_key)
        # The handshake runs in each request's thread, not in the accepting loop.
        server.socket = context.wrap_socket(server.socket, server_side=True, do_handshake_on_connect=False)
    if args.exit_with_parent:
        # A test process that crashes cannot stop us by PID; notice it is gone.
        parent = os.getppid()

        def watch_parent():
            while os.getppid() == parent:
                time.sleep(0.5)
            os._exit(0)

        threading.Thread(target=watch_parent, daemon=True).start()

    def stop(signum, frame):
        raise SystemExit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sys.stdout.write("PORT %d\n" % server.server_address[1])
    sys.stdout.flush()
    try:
        server.serve_forever(poll_interval=0.2)
    except SystemExit:
        pass
    server.server_close()
    if server.log_file:
        with server.log_lock:
            server.log_file.flush()
    # Handler threads may be sleeping (stall, throttle, endless headers);
    # exit without waiting for them.
    os._exit(0)


if __name__ == "__main__":
    main()
