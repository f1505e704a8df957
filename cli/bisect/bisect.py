"""The driver of `attngate bisect` (started by the attngate binary, which passes itself as
--attngate): over two lock files, which package and which release moved each changed row; over
a git range of a team's plugin, which commit. Exit 0 answered (whatever was found), 2 bad input
(naming the file and line), 3 a failure of pip, git, a build or attngate."""
import argparse
import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import report as reports  # noqa: E402
from envs import EnvCache, EnvFailed  # noqa: E402
from locks import BadInput  # noqa: E402
from oracle import Oracle, OracleFailed  # noqa: E402

CHECKS = ("golden", "numerics", "perf", "program")


def parse(argv):
    p = argparse.ArgumentParser(prog="attngate bisect")
    p.add_argument("--attngate", required=True)
    p.add_argument("--suite", required=True)
    p.add_argument("--a-lock")
    p.add_argument("--b-lock")
    p.add_argument("--git")
    p.add_argument("--build")
    p.add_argument("--plugin")
    p.add_argument("--repo", default=".")
    p.add_argument("--case", action="append", default=[])
    p.add_argument("--kernel", action="append", default=[])
    p.add_argument("--checks", default="golden,numerics,perf")
    p.add_argument("--max-envs", type=int, default=0)
    p.add_argument("--out", default="reports/bisect")
    p.add_argument("--markdown")
    p.add_argument("--html")
    p.add_argument("--store")
    p.add_argument("--adapter")
    p.add_argument("--index-url")
    p.add_argument("--find-links", action="append", default=[])
    p.add_argument("--with", dest="extra", action="append", default=[])
    p.add_argument("--cache")
    p.add_argument("--python", default="/usr/bin/python3")
    return p.parse_args(argv)


def checks_of(text):
    checks = [c.strip() for c in text.split(",") if c.strip()]
    for c in checks:
        if c not in CHECKS:
            raise BadInput(f"--checks: unknown check '{c}' (expected some of {', '.join(CHECKS)})")
    return checks


def default_adapter():
    """The JAX adapter of the checkout bisect runs in, else the attngate-jax module of each venv."""
    here = os.path.abspath(os.path.join("kernels", "jax", "adapter.py"))
    return f"{here} --interpret auto" if os.path.exists(here) else "-m attngate_jax --interpret auto"


def write(path, text):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def main(argv):
    a = parse(argv)
    log = (lambda msg: print(f"bisect: {msg}", file=sys.stderr, flush=True))
    try:
        checks = checks_of(a.checks)
        if a.max_envs < 0:
            raise BadInput(f"--max-envs: {a.max_envs} is negative")
        cache_root = a.cache or os.path.join(os.path.expanduser("~"), ".cache", "attngate", "bisect")
        extra = (["--store", a.store] if a.store else [])
        if a.git:
            from git_bisect import GitBisect
            if a.a_lock or a.b_lock:
                raise BadInput("--git bisects commits of a plugin; --a-lock/--b-lock bisect packages: give one or the other")
            if not (a.build and a.plugin):
                raise BadInput("--git A..B needs --build \"CMD\" (run in each commit's checkout) and --plugin PATH (the .so it builds)")
            oracle = Oracle(a.attngate, a.suite, a.case, a.kernel, checks, os.path.join(cache_root, "git-ab"), extra, log)
            result = GitBisect(a, oracle, os.path.join(cache_root, "git"), log).run()
        else:
            from locks_bisect import LockBisect
            if not (a.a_lock and a.b_lock):
                raise BadInput("bisect needs --a-lock OLD --b-lock NEW (two lock files), or --git A..B with --build and --plugin")
            index = ([f"--index-url={a.index_url}"] if a.index_url else []) + [f"--find-links={f}" for f in a.find_links]
            cache = EnvCache(cache_root, index, a.python, log)
            cache.extra = list(a.extra)
            a.adapter = a.adapter or default_adapter()
            oracle = Oracle(a.attngate, a.suite, a.case, a.kernel, checks, os.path.join(cache_root, "ab"), extra, log)
            result = LockBisect(a, cache, oracle, log).run()
    except BadInput as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except OracleFailed as e:
        print(f"error: {e}", file=sys.stderr)
        return e.code
    except (EnvFailed, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 3
    write(os.path.join(a.out, "bisect.json"), json.dumps(result, indent=1) + "\n")
    write(os.path.join(a.out, "bisect.html"), reports.html_page(result))
    if a.markdown:
        write(a.markdown, reports.markdown(result))
    if a.html:
        write(a.html, reports.html_page(result))
    sys.stdout.write(reports.console(result))
    return 0


if __name__ == "__main__":
    started = time.time()
    sys.exit(main(sys.argv[1:]))
