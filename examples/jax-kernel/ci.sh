#!/usr/bin/env bash
# The team's CI for its JAX kernel, from any directory, with attngate installed:
#   ci.sh WORKDIR
# 1. a fresh venv with attngate-jax and this package installed by pip;
# 2. the conformance check of its declared conventions (exit 1 names the wrong one);
# 3. its goldens (a team commits these; generated here into WORKDIR) and the gate itself,
#    with the kernel found through its entry point (attngate.kernels).
# Settings, from the environment:
#   ATTNGATE       the attngate binary (default: attngate on PATH)
#   PYTHON         the interpreter the venv is made from (default: python3)
#   ATTNGATE_JAX   what pip installs as attngate-jax: a requirement (default "attngate-jax")
#                  or the wheel attngate's build makes (target attngate_jax_wheel)
#   DEPS_VENV      offline: the new venv reuses this venv's packages (jax, numpy, ...)
#                  through a .pth file and pip installs with --no-index (attngate's own test)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=${1:?usage: ci.sh WORKDIR}
mkdir -p "$work" && work=$(cd "$work" && pwd)
attngate=${ATTNGATE:-attngate}
case $attngate in */*) attngate=$(realpath "$attngate") ;; esac
pip_args=(-q --disable-pip-version-check)

"${PYTHON:-python3}" -m venv "$work/venv"
if [ -n "${DEPS_VENV:-}" ]; then
  purelib() { "$1" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])'; }
  purelib "$DEPS_VENV/bin/python" > "$(purelib "$work/venv/bin/python")/deps-venv.pth"
  pip_args+=(--no-index --no-build-isolation)
fi
rm -rf "$work/src" && cp -r "$here" "$work/src"  # pip builds in the source tree: keep the original clean
"$work/venv/bin/pip" install "${pip_args[@]}" "${ATTNGATE_JAX:-attngate-jax}" "$work/src"

export PATH="$work/venv/bin:$PATH"  # the venv's attngate-jax-adapter, as `source venv/bin/activate` gives
cd "$work/src"
adapter="attngate-jax-adapter --interpret ${ATTNGATE_INTERPRET:-hlo}"
"$attngate" conform --adapter "$adapter --no-builtins" --kernel team-blocked --json "$work/conform.json"
"$attngate" golden generate --suite suite.json --baselines "$work/baselines"
"$attngate" run --suite suite.json --adapter "$adapter" --baselines "$work/baselines" --checks golden,memory \
  --out "$work/results.json" --markdown "$work/summary.md"
