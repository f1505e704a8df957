"""An adapter whose kernels fail to say what they support, for the third hardening pass (issue 38).

It serves docs/protocol.md v1 like fault_adapter.py (whose np-ok kernel it reuses), plus
kernels whose POST /v1/supports goes wrong the ways a kernel's unsupported() can:

  sx-blocks   never answers (an unsupported() that blocks)
  sx-raises   HTTP 500, as the JAX adapter answers when unsupported() raises
  sx-kills    the process exits (an unsupported() that kills the adapter)

Options: --many-kernels N also lists N kernels many-0 ... many-<N-1>; --print-listening URL
prints a LISTENING line naming URL on stdout at start-up, as a kernel module could at import;
--load-error SOURCE lists SOURCE among the kernel sources that did not load (an ImportError),
as the JAX adapter does for a team's module that no longer imports.
"""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fault_adapter as fa  # noqa: E402

FAILING = ["sx-blocks", "sx-raises", "sx-kills"]
many = []  # names of --many-kernels
load_errors = []  # from --load-error


class Supports(fa.Handler):
    def do_GET(self):
        if self.path == "/v1/kernels" and self.authorized():
            return self.reply(200, {"kernels": [{"name": k, "version": "0.1", "description": k, "features": fa.FEATURES}
                                                for k in ["np-ok", *FAILING, *many]],
                                   "errors": load_errors})
        return super().do_GET()

    def do_POST(self):
        if self.path != "/v1/supports" or not self.authorized():
            return super().do_POST()
        kernel = json.loads(self.body())["kernel"]
        if kernel == "sx-blocks":
            time.sleep(3600)
        if kernel == "sx-raises":
            return self.reply(500, {"error": "adapter bug: RuntimeError: the team's unsupported() failed"})
        if kernel == "sx-kills":
            print("sx-kills: unsupported() ends the adapter", file=sys.stderr, flush=True)
            os._exit(5)
        return self.reply(200, {"supported": True})


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", default="127.0.0.1:0")
    parser.add_argument("--token-env", default="ATTNGATE_ADAPTER_TOKEN")
    parser.add_argument("--many-kernels", type=int, default=0)
    parser.add_argument("--print-listening")
    parser.add_argument("--load-error")
    args = parser.parse_args()
    if args.load_error:
        load_errors.append({"source": args.load_error, "error": f"cannot import {args.load_error.split()[-1].split(':')[0]}: "
                                                                  "ImportError: cannot import name 'tpu_gone' from 'jax.experimental.pallas'"})
    many.extend(f"many-{i}" for i in range(args.many_kernels))
    if args.print_listening:
        print(f"ATTNGATE-ADAPTER LISTENING {args.print_listening}", flush=True)
    fa.serve(Supports, args.http, os.environ.get(args.token_env))


if __name__ == "__main__":
    main()
