"""The HTTP side of the protocol (docs/protocol.md): routing, authentication, body limits.

Standard library only. Keep-alive HTTP/1.1 with TCP_NODELAY (without it small replies wait
~40 ms on Nagle and delayed ACK). Every error is {"error": message}; nothing a client
sends makes the adapter exit, except POST /v1/shutdown.
"""
from __future__ import annotations

import hmac
import json
import socket
import sys
import threading
import traceback
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from . import ADAPTER, PROTOCOL, VERSION, npy
from .engine import BadRequest, Engine, NotFound
from .registry import Registry
from .store import NAME, Store

Reply = tuple[int, "dict[str, Any] | bytes | None"]


class HttpError(Exception):
    def __init__(self, status: int, message: str, close: bool = False) -> None:
        super().__init__(message)
        self.status, self.message, self.close = status, message, close


class App:
    """What the handler needs: the engine, the store, the kernels' registry, the fingerprint and the limits."""

    def __init__(self, engine: Engine, store: Store, registry: Registry, fingerprint: dict[str, Any],
                 token: str | None, max_body_bytes: int, verbose: bool = False) -> None:
        self.engine, self.store, self.registry, self.fingerprint = engine, store, registry, fingerprint
        self.token = token.encode() if token else None
        self.max_body_bytes = max_body_bytes
        self.verbose = verbose
        self.server: Server | None = None

    def kernels(self) -> dict[str, Any]:
        """GET /v1/kernels: every served kernel with its declarations, and the sources that failed."""
        mode = self.engine.mode
        out = []
        for s in self.registry.served:
            k = s.kernel
            out.append({"name": k.name, "version": s.version(self.fingerprint["jax"]),
                        "description": k.description(mode), "features": list(k.features),
                        "workspace_growth": k.workspace_growth,
                        "rounds_to_case_dtype": list(k.rounds_to_case_dtype),
                        "conventions": dict(k.conventions(), interpret_mode=mode.mode),
                        "source": s.source, "package": s.package, "package_version": s.package_version})
        return {"kernels": out, "errors": [e.as_json() for e in self.registry.errors]}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True
    server_version = f"{ADAPTER}/{VERSION}"

    @property
    def app(self) -> App:
        return self.server.app  # type: ignore[attr-defined]

    # -- plumbing -------------------------------------------------------------------

    def log_message(self, fmt: str, *args: Any) -> None:
        if self.app.verbose:
            sys.stderr.write(f"{ADAPTER}: {self.address_string()} {fmt % args}\n")

    def _send(self, status: int, body: bytes, content_type: str = "application/json", close: bool = False,
              headers: tuple[tuple[str, str], ...] | list[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        if status != 204:  # a 204 carries no body and no body headers (RFC 9110)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
        for name, value in headers:
            self.send_header(name, value)
        if close:
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        if body and self.command != "HEAD":
            self.wfile.write(body)
        self.wfile.flush()

    def _json(self, status: int, obj: Any, close: bool = False) -> None:
        self._send(status, json.dumps(obj).encode(), close=close)

    def _error(self, status: int, message: str, close: bool = False) -> None:
        headers = [("WWW-Authenticate", "Bearer")] if status == 401 else []
        self._send(status, json.dumps({"error": message}).encode(), close=close, headers=headers)

    def _precheck(self) -> None:
        """Authentication and the declared body size, before any body byte is read."""
        if self.app.token is not None:
            given = self.headers.get("Authorization", "")
            if not hmac.compare_digest(given.encode(), b"Bearer " + self.app.token):
                raise HttpError(401, "missing or wrong bearer token (Authorization: Bearer <token>)", close=True)
        length = self.headers.get("Content-Length")
        if length is not None:
            if not length.isdigit():
                raise HttpError(400, f"Content-Length {length!r} is not a byte count", close=True)
            if int(length) > self.app.max_body_bytes:
                raise HttpError(413, f"body of {int(length)} bytes exceeds the adapter's limit of "
                                     f"{self.app.max_body_bytes} bytes (--max-body-mb)", close=True)

    def handle_expect_100(self) -> bool:
        # Answer 401/413 instead of inviting a body that would be refused anyway.
        try:
            self._precheck()
        except HttpError as e:
            self._error(e.status, e.message, close=True)
            return False
        return super().handle_expect_100()

    def _drain(self, cap: int = 64 << 20) -> None:
        """Reads and drops (up to `cap` bytes of) a refused body after the reply went out,
        so that a client that sent it without Expect: 100-continue still reads the 413
        instead of a reset connection."""
        try:
            left = min(int(self.headers.get("Content-Length") or 0), cap)
            self.connection.settimeout(5)
            while left > 0:
                chunk = self.rfile.read(min(left, 1 << 20))
                if not chunk:
                    break
                left -= len(chunk)
        except (OSError, ValueError):
            pass

    def _read_body(self) -> bytes:
        limit = self.app.max_body_bytes
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            total = 0
            while True:
                line = self.rfile.readline(1024)
                try:
                    size = int(line.split(b";")[0].strip(), 16)
                except ValueError:
                    raise HttpError(400, "malformed chunked body", close=True) from None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                total += size
                if total > limit:
                    raise HttpError(413, f"chunked body exceeds the adapter's limit of {limit} bytes", close=True)
                parts.append(self.rfile.read(size))
                self.rfile.readline(1024)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if len(body) != length:
            raise HttpError(400, f"body ended after {len(body)} of {length} bytes", close=True)
        return body

    @staticmethod
    def _json_body(body: bytes) -> dict[str, Any]:
        try:
            obj = json.loads(body or b"{}")
        except (ValueError, UnicodeDecodeError) as e:
            raise HttpError(400, f"request body is not JSON: {e}") from None
        if not isinstance(obj, dict):
            raise HttpError(400, "request body must be a JSON object")
        return obj

    def _dispatch(self) -> None:
        try:
            self._precheck()
            body = self._read_body()
            status, reply = self._route(self.command, self.path.split("?", 1)[0], body)
            if isinstance(reply, bytes):
                self._send(status, reply, content_type="application/octet-stream")
            elif reply is None:
                self._send(status, b"")
            else:
                self._json(status, reply, close=self.close_connection)
        except HttpError as e:
            self._error(e.status, e.message, close=e.close)
            if e.status == 413:
                self._drain()
        except (BadRequest, NotFound) as e:
            self._error(e.status, str(e))
        except (ConnectionError, socket.timeout):
            self.close_connection = True
        except Exception as e:  # a bug in the adapter: say so, keep serving
            traceback.print_exc(file=sys.stderr)
            try:
                self._error(500, f"adapter bug: {type(e).__name__}: {e}")
            except OSError:
                self.close_connection = True

    do_GET = do_PUT = do_POST = do_DELETE = _dispatch

    # -- endpoints ------------------------------------------------------------------

    def _route(self, method: str, path: str, body: bytes) -> Reply:
        app, store, engine = self.app, self.app.store, self.app.engine
        parts = path.strip("/").split("/")
        if parts[:1] != ["v1"]:
            raise HttpError(404, f"no such endpoint: {method} {path}")
        route = (method, "/".join(parts[1:2]))
        if len(parts) == 2:
            if route == ("GET", "hello"):
                return 200, {"protocol": PROTOCOL, "adapter": ADAPTER, "adapter_version": VERSION,
                             "fingerprint": app.fingerprint}
            if route == ("GET", "kernels"):
                return 200, app.kernels()
            if route == ("DELETE", "tensors"):
                store.clear()
                engine.drop_prepared()
                return 204, None
            if route == ("POST", "shutdown"):
                assert app.server is not None
                threading.Thread(target=app.server.shutdown, daemon=True).start()
                self.close_connection = True
                return 200, {"ok": True}
            calls = {"supports": engine.supports, "run": engine.run, "time": engine.time,
                     "memory": engine.memory, "profile": engine.profile,
                     "program": engine.program}
            if method == "POST" and parts[1] in calls:
                return 200, calls[parts[1]](self._json_body(body))
        if len(parts) == 3 and parts[1] in ("tensors", "files"):
            name = parts[2]
            if not NAME.match(name):
                raise HttpError(400, f"name {name!r}: expected [A-Za-z0-9_.-]{{1,128}}")
            if parts[1] == "tensors":
                return self._tensor(method, name, body)
            if method == "GET":
                data = store.get_file(name)
                if data is None:
                    raise HttpError(404, f"no file named {name!r}")
                return 200, data
            if method == "DELETE":
                store.delete_file(name)
                return 204, None
        raise HttpError(404, f"no such endpoint: {method} {path}")

    def _tensor(self, method: str, name: str, body: bytes) -> Reply:
        store = self.app.store
        if method == "PUT":
            try:
                arr = npy.parse(body)
            except npy.NpyError as e:
                raise HttpError(400, f"tensor {name!r}: {e}") from None
            store.put(name, arr)
            return 201, {"name": name, "shape": list(arr.shape), "dtype": arr.dtype.name, "bytes": arr.nbytes}
        if method == "GET":
            held = store.get(name)
            if held is None:
                raise HttpError(404, f"no tensor named {name!r}")
            return 200, npy.serialize(held[0])
        if method == "DELETE":
            if store.delete(name):
                self.app.engine.drop_prepared()
            return 204, None
        raise HttpError(404, f"no such endpoint: {method} /v1/tensors/{name}")


class Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, address: tuple[str, int], app: App) -> None:
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, Handler)
        self.app = app
        app.server = self

    @property
    def url(self) -> str:
        host, port = str(self.server_address[0]), self.server_address[1]
        return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"
