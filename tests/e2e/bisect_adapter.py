"""An adapter whose kernels' outputs depend on tiny packages installed in the venv it runs in,
for `attngate bisect`'s tests (bisect_test.py builds the packages and their releases):

  pkg-attn    right unless the installed `alpha` says BROKEN (a release in alpha's history)
  pair-attn   right unless both `beta` and `gamma` say FLAG (neither moves it alone)
  zeta-attn   right unless the installed `zeta` says BROKEN; a `zeta` that raises on import
              (a release that imports what it does not declare) keeps the adapter from starting;
              so does an `eta` that needs a later `zeta` than the one installed
  flaky-attn  wrong for the life of the first process that sees `delta` FLAG while the file
              $BISECT_FLAKY_MARKER does not exist (which it then creates): a change that
              does not show again

It serves docs/protocol.md v1 through fault_adapter.py's handler (numpy, the oracle's maths).
The venvs bisect makes hold only the tiny packages: numpy comes from Debian's python3, appended
to sys.path after the venv's own site-packages, so the tiny packages are always the venv's."""
import importlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.path.append("/usr/lib/python3/dist-packages")
import fault_adapter as fa  # noqa: E402


def flag(package, name):
    try:
        return bool(getattr(importlib.import_module(package), name, False))
    except ImportError:
        return False


def flaky_now():
    marker = os.environ.get("BISECT_FLAKY_MARKER")
    if not marker or not flag("delta", "FLAG") or os.path.exists(marker):
        return False
    with open(marker, "w") as f:
        f.write("shown once\n")
    return True


BROKEN = {"pkg-attn": flag("alpha", "BROKEN"), "pair-attn": flag("beta", "FLAG") and flag("gamma", "FLAG"),
          "flaky-attn": flaky_now(), "zeta-attn": flag("zeta", "BROKEN") or flag("eta", "NEVER")}
KERNELS = list(BROKEN)


class Handler(fa.Handler):
    def do_GET(self):
        if self.path == "/v1/kernels" and self.authorized():
            return self.reply(200, {"kernels": [{"name": k, "version": "0.1", "description": k, "features": fa.FEATURES}
                                                for k in KERNELS]})
        return super().do_GET()

    def do_POST(self):
        if self.path == "/v1/run" and self.authorized():
            raw = self.body()
            req = fa.json.loads(raw)
            out = fa.compute(req["case"], req["inputs"])
            if BROKEN.get(req["kernel"]):
                out = out + 0.25
            fa.tensors[req["output"]] = out
            return self.reply(200, {"ok": True, "output": {"name": req["output"], "shape": list(out.shape), "dtype": "float32"},
                                    "compile_s": 0.01, "run_s": 0.001})
        return super().do_POST()


if __name__ == "__main__":
    fa.serve(Handler, "127.0.0.1:0", os.environ.get("ATTNGATE_ADAPTER_TOKEN"))
