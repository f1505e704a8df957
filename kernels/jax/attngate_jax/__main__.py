"""Command line: attngate-jax-adapter (or python -m attngate_jax) --http HOST:PORT
--interpret auto|tpu|hlo|none [--kernels MODULE:FACTORY ...] [--no-builtins] [--no-entry-points] ...

Prints exactly one line once it accepts connections:
    ATTNGATE-ADAPTER LISTENING http://127.0.0.1:43567
to the descriptor that $ATTNGATE_ADAPTER_READY_FD names (set by a harness that starts the
adapter; taken before any kernel module is imported, so no kernel can write there), else to stdout.
Exit codes: 0 after POST /v1/shutdown (or SIGINT), 2 bad usage or an unavailable mode,
3 the address cannot be bound. A kernel source that fails to load is reported (stderr and
GET /v1/kernels) while the other kernels serve.
"""
from __future__ import annotations

import argparse
import os
import sys
import threading
from collections.abc import Sequence


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    from . import PROTOCOL, VERSION
    from .api import API_VERSION
    p = argparse.ArgumentParser(prog="attngate-jax-adapter",
                                description=f"attngate's JAX adapter (attngate protocol {PROTOCOL})")
    p.add_argument("--version", action="version",
                   version=f"attngate-jax {VERSION} (attngate protocol {PROTOCOL}, kernel API {API_VERSION})")
    p.add_argument("--http", default="127.0.0.1:0", metavar="HOST:PORT",
                   help="address to listen on (default 127.0.0.1:0: loopback, a free port)")
    p.add_argument("--interpret", default="auto", choices=["auto", "tpu", "hlo", "none"],
                   help="how Pallas kernels run: auto (a real TPU if present, else TPU interpret mode "
                        "where this jax has it, else hlo), tpu (TPU interpret mode), hlo (the generic "
                        "Pallas interpreter), none (compiled for the device)")
    p.add_argument("--tpu-target", default="v6e", choices=["v4", "v5e", "v5p", "v6e", "7x"],
                   help="the TPU generation kernels are lowered for (POST /v1/program) when the backend "
                        "is not a TPU (default v6e); recorded in the fingerprint")
    p.add_argument("--interpret-checks", action="store_true",
                   help="run each Pallas kernel once more per case in TPU interpret mode with race detection "
                        "on 2 simulated cores, out-of-bounds reads raising and uninitialised memory as NaN; "
                        "a race or out-of-bounds read is a contract failure (costs about one more call per case)")
    p.add_argument("--token-env", default="ATTNGATE_ADAPTER_TOKEN", metavar="NAME",
                   help="environment variable holding the bearer token; unset or empty: no authentication")
    p.add_argument("--max-body-mb", type=float, default=1024, metavar="N",
                   help="largest request body accepted, in MiB (default 1024); larger ones get 413")
    p.add_argument("--exit-with-parent", action="store_true",
                   help="exit when the process (strictly: the thread) that started the adapter dies "
                        "(Linux prctl PR_SET_PDEATHSIG), so that a killed harness leaves no adapter behind")
    p.add_argument("--verbose", action="store_true", help="log every request to stderr")
    p.add_argument("--kernels", action="append", default=[], metavar="MODULE:FACTORY",
                   help="also serve the kernels a factory returns (repeatable): a function of no arguments "
                        "returning attngate_jax.api.KernelAdapter instances, e.g. team_attention.gate:make")
    p.add_argument("--no-builtins", action="store_true",
                   help="do not serve the adapter's own kernels (jax-xla, pallas-flash, pallas-splash)")
    p.add_argument("--no-entry-points", action="store_true",
                   help="do not load the kernels that installed packages publish as entry points "
                        "(group attngate.kernels)")
    args = p.parse_args(argv)
    from .registry import check_spec
    for spec in args.kernels:
        try:
            check_spec(spec)
        except ValueError as e:
            p.error(str(e))
    host, sep, port = args.http.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535 or not host:
        p.error(f"--http {args.http!r}: expected HOST:PORT")
    args.address = (host.strip("[]"), int(port))
    if not args.max_body_mb > 0:
        p.error("--max-body-mb: expected a number > 0")
    return args


READY_FD_ENV = "ATTNGATE_ADAPTER_READY_FD"


def take_ready_fd() -> int | None:
    """The readiness descriptor the harness passed, removed from the environment and closed
    on exec before any kernel module runs; None when there is none (the line goes to stdout)."""
    value = os.environ.pop(READY_FD_ENV, None)
    if value is None:
        return None
    try:
        fd = int(value)
        os.set_inheritable(fd, False)
    except (ValueError, OSError) as e:
        print(f"attngate_jax: error: ${READY_FD_ENV}={value!r}: not an open file descriptor ({e})", file=sys.stderr)
        sys.exit(2)
    return fd


def say_listening(url: str, ready_fd: int | None) -> None:
    line = f"ATTNGATE-ADAPTER LISTENING {url}\n"
    if ready_fd is None:
        print(line, end="", flush=True)
        return
    os.write(ready_fd, line.encode())
    os.close(ready_fd)


def exit_with_parent() -> None:
    """Asks Linux to send SIGTERM when the parent dies; SIGTERM then ends serve_forever."""
    import ctypes
    import signal
    pr_set_pdeathsig = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(pr_set_pdeathsig, signal.SIGTERM)
    if os.getppid() == 1:  # the parent died before prctl took effect
        sys.exit(0)


def main(argv: Sequence[str] | None = None) -> int:
    ready_fd = take_ready_fd()
    args = parse_args(sys.argv[1:] if argv is None else argv)
    if args.exit_with_parent:
        exit_with_parent()
    import jax  # after argument parsing: --help stays fast

    from . import modes, registry
    from .engine import Engine
    from .fingerprint import fingerprint
    from .server import App, Server
    from .store import Store

    try:
        mode = modes.PallasMode(modes.resolve(args.interpret, jax.default_backend()))
    except modes.ModeError as e:
        print(f"attngate_jax: error: {e}", file=sys.stderr)
        return 2
    # jax initialises its backend and runtime on the first jit: pay that before serving,
    # so the first case's compile time is that case's, not the process's start-up.
    jax.block_until_ready(jax.jit(lambda x: x * 2)(jax.numpy.ones(8)))
    # After the mode: a kernel module that binds pallas_call at import sees the interpreter.
    kernels = registry.load(args.kernels, builtins=not args.no_builtins, entry_points=not args.no_entry_points,
                            mode=mode)
    for failed in kernels.errors:
        print(f"attngate_jax: error: {failed.source}: {failed.error}", file=sys.stderr, flush=True)
    from .program import register_target
    target = register_target(args.tpu_target, jax.default_backend())
    store = Store()
    if args.interpret_checks:
        from . import contract
        why = contract.available() if mode.mode == "tpu" else "they need --interpret tpu"
        if why is not None:
            print(f"attngate_jax: error: --interpret-checks: {why}", file=sys.stderr)
            return 2
    engine = Engine(mode, store, kernels.kernels(), target, interpret_checks=args.interpret_checks)
    app = App(engine, store, kernels, fingerprint(mode.mode, kernels.packages(), target),
              os.environ.get(args.token_env) or None, int(args.max_body_mb * 1024 * 1024), verbose=args.verbose)
    try:
        server = Server(args.address, app)
    except OSError as e:
        print(f"attngate_jax: error: cannot listen on {args.http}: {e}", file=sys.stderr)
        return 3
    import signal
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=server.shutdown, daemon=True).start())
    say_listening(server.url, ready_fd)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
