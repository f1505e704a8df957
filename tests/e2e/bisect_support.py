"""A package index on loopback for `attngate bisect`'s tests: tiny wheels built here (a wheel is
a zip with a dist-info), laid out as PEP 503's simple index and served by Python's http.server,
so that pip installs, resolves and lists releases (`pip index versions`) from it for real."""
import base64
import hashlib
import http.server
import os
import socketserver
import threading
import zipfile


def wheel(directory, name, version, requires=(), body=""):
    """Writes name-version-py3-none-any.whl with module `name` holding `body`."""
    dist = f"{name}-{version}.dist-info"
    files = {
        f"{name}/__init__.py": f"__version__ = {version!r}\n{body}\n",
        f"{dist}/METADATA": "Metadata-Version: 2.1\nName: {}\nVersion: {}\n{}".format(
            name, version, "".join(f"Requires-Dist: {r}\n" for r in requires)),
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: bisect-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(text.encode())}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    path = os.path.join(directory, f"{name}-{version}-py3-none-any.whl")
    with zipfile.ZipFile(path, "w") as z:
        for p, text in files.items():
            z.writestr(p, text)
    return path


def simple_index(root, wheels):
    """root/simple/<name>/index.html linking each wheel under root/files."""
    by_name = {}
    for w in wheels:
        by_name.setdefault(os.path.basename(w).split("-")[0], []).append(os.path.basename(w))
    for name, files in by_name.items():
        d = os.path.join(root, "simple", name)
        os.makedirs(d, exist_ok=True)
        links = "".join(f'<a href="../../files/{f}">{f}</a>\n' for f in sorted(files))
        with open(os.path.join(d, "index.html"), "w") as f:
            f.write(f"<!DOCTYPE html><html><body>\n{links}</body></html>\n")
    with open(os.path.join(root, "simple", "index.html"), "w") as f:
        f.write("".join(f'<a href="{n}/">{n}</a>\n' for n in sorted(by_name)))


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    """Serves root on 127.0.0.1 (a free port) in a thread; returns (server, url)."""
    handler = lambda *a, **k: Quiet(*a, directory=root, **k)  # noqa: E731
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/simple"


def write_lock(path, pins, extra_lines=()):
    with open(path, "w") as f:
        f.write("# a test lock\n")
        for name, version in sorted(pins.items()):
            f.write(f"{name}=={version}\n    # via -r requirements.in\n")
        for line in extra_lines:
            f.write(line + "\n")
    return path
