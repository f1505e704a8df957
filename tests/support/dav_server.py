"""A real WebDAV server for the store tests: Debian's Apache httpd (apache2-bin) with
mod_dav_fs, started on a free loopback port with its own config in a temporary directory
(nothing system-wide is touched, no service is assumed), requiring a bearer token; and a
small fault-injecting proxy in front of it for the faults a real server does not produce
on demand (500s, a slow answer, a truncated or oversized body)."""
import http.client
import http.server
import os
import pwd
import shutil
import socket
import socketserver
import subprocess
import tempfile
import threading
import time

APACHE = "/usr/sbin/apache2"
MODULES = "/usr/lib/apache2/modules"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port, timeout=20.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return True
        except OSError:
            time.sleep(0.05)
    return False


class DavServer:
    """Apache httpd serving <dir>/root at http://127.0.0.1:<port>/store/ with DAV on."""

    def __init__(self, token):
        self.dir = tempfile.mkdtemp(prefix="attngate-dav-")
        self.root = os.path.join(self.dir, "root")
        os.makedirs(os.path.join(self.root, "store"))
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/store/"
        self.token = token
        self.proc = None

    def start(self):
        if os.geteuid() == 0:  # Apache's children drop to this user; the tree must be theirs
            nobody = pwd.getpwnam("nobody")
            for base, dirs, files in os.walk(self.dir):
                for name in dirs + files + [""]:
                    os.chown(os.path.join(base, name), nobody.pw_uid, nobody.pw_gid)
        conf = os.path.join(self.dir, "httpd.conf")
        with open(conf, "w") as f:
            f.write(f"""ServerRoot "{self.dir}"
ServerName 127.0.0.1
Listen 127.0.0.1:{self.port}
PidFile "{self.dir}/httpd.pid"
ErrorLog "{self.dir}/error.log"
LogLevel warn
User nobody
Group nogroup
LoadModule mpm_event_module {MODULES}/mod_mpm_event.so
LoadModule authz_core_module {MODULES}/mod_authz_core.so
LoadModule dav_module {MODULES}/mod_dav.so
LoadModule dav_fs_module {MODULES}/mod_dav_fs.so
DavLockDB "{self.dir}/davlock"
DocumentRoot "{self.root}"
LimitRequestBody 0
<Directory "{self.root}">
  Dav On
  Require all granted
  <If "%{{HTTP:Authorization}} != 'Bearer {self.token}'">
    Require all denied
  </If>
</Directory>
""")
        self.proc = subprocess.Popen([APACHE, "-f", conf, "-DFOREGROUND"], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if not wait_for_port(self.port):
            self.stop()
            raise RuntimeError("apache did not start: " + self.error_log())
        return self

    def error_log(self):
        try:
            with open(os.path.join(self.dir, "error.log")) as f:
                return f.read()
        except OSError:
            return ""

    def files(self):
        """Every file under the store, relative, for "nothing lost" checks."""
        out = {}
        base = os.path.join(self.root, "store")
        for d, _, files in os.walk(base):
            for name in files:
                if ".davfs.tmp" in name:
                    continue
                p = os.path.join(d, name)
                with open(p, "rb") as f:
                    out[os.path.relpath(p, base)] = f.read()
        return out

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class FaultProxy:
    """Forwards every request to the upstream server unless a fault is set:
    "500" answers 500 to the next `count` requests (all when count is None), "slow" waits
    `delay` seconds before forwarding, "truncate" sends half of a GET's body while
    promising all of it, "oversize" answers GETs with `size` bytes. `requests` counts
    what arrived, per method."""

    def __init__(self, upstream_port):
        self.upstream = upstream_port
        self.fault = None
        self.count = None
        self.delay = 0.0
        self.size = 0
        self.requests = {}
        self.lock = threading.Lock()
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def handle_any(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0) or 0))
                with proxy.lock:
                    proxy.requests[self.command] = proxy.requests.get(self.command, 0) + 1
                    fault = proxy.fault
                    if fault == "500" and proxy.count is not None:
                        proxy.count -= 1
                        if proxy.count < 0:
                            fault = None
                if fault == "500":
                    return self.reply(500, b"injected failure\n")
                if fault == "slow":
                    time.sleep(proxy.delay)
                if fault == "oversize" and self.command == "GET":
                    self.send_response(200)
                    self.send_header("Content-Length", str(proxy.size))
                    self.end_headers()
                    chunk = b"x" * 65536
                    sent = 0
                    try:
                        while sent < proxy.size:
                            self.wfile.write(chunk[: proxy.size - sent])
                            sent += len(chunk)
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                conn = http.client.HTTPConnection("127.0.0.1", proxy.upstream, timeout=30)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("host", "connection")}
                conn.request(self.command, self.path, body=body or None, headers=headers)
                resp = conn.getresponse()
                data = resp.read()
                if fault == "truncate" and self.command == "GET" and resp.status == 200 and len(data) > 1:
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data[: len(data) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.send_response(resp.status)
                for k, v in resp.getheaders():
                    if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "content-length"):
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def reply(self, status, data):
                self.send_response(status)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_PROPFIND = do_MKCOL = do_HEAD = do_DELETE = handle_any

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True

            def handle_error(self, request, client_address):
                pass  # a client that gave up (timeout, size limit) closes mid-answer: expected here

        self.server = Server(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self):
        return f"http://127.0.0.1:{self.port}/store/"

    def set(self, fault=None, count=None, delay=0.0, size=0):
        with self.lock:
            self.fault, self.count, self.delay, self.size = fault, count, delay, size
            self.requests = {}

    def stop(self):
        self.server.shutdown()
        self.server.server_close()
