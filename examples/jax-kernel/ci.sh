#!/usr/bin/env bash
# Gates the team's kernel as its CI would (run from attngate's repository root):
#   examples/jax-kernel/ci.sh WORKDIR [ATTNGATE]
# 1. a clean venv with the team's package installed by pip; its dependencies (jax, ...) are
#    those of the pinned venv (kernels/jax/requirements-new.lock), reached through a .pth
#    file, so pip resolves them offline and downloads nothing;
# 2. the conformance check of its declared conventions (exit 1 names the wrong one);
# 3. its goldens (a team commits these; generated here into WORKDIR) and the gate itself,
#    with the kernel found through its entry point (attngate.kernels).
set -euo pipefail
work=${1:?usage: examples/jax-kernel/ci.sh WORKDIR [ATTNGATE]}
attngate=${2:-build/attngate}
base=${ATTNGATE_JAX_VENV:-.venv/jax-new}
here=examples/jax-kernel
mkdir -p "$work"

"$base/bin/python" -m venv "$work/venv"
purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
purelib "$base/bin/python" > "$(purelib "$work/venv/bin/python")/attngate-pinned-jax.pth"
rm -rf "$work/src" && cp -r "$here" "$work/src"  # pip builds in the source tree: keep the checkout clean
"$work/venv/bin/pip" install -q --no-index --no-build-isolation --disable-pip-version-check "$work/src"

adapter="$work/venv/bin/python kernels/jax/adapter.py --interpret ${ATTNGATE_INTERPRET:-hlo}"
"$attngate" conform --adapter "$adapter --no-builtins" --kernel team-blocked --json "$work/conform.json"
"$attngate" golden generate --suite "$here/suite.json" --baselines "$work/baselines"
"$attngate" run --suite "$here/suite.json" --adapter "$adapter" --baselines "$work/baselines" --checks golden,memory \
  --out "$work/results.json" --markdown "$work/summary.md"
