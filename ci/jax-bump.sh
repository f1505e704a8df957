#!/usr/bin/env bash
# A JAX bump, gated: the adapter's venv made from the lock file at BASE (side A) and from
# the one in the working tree (side B), then a paired A/B of the suite's adapter kernels
# across the two (numerics bit for bit, goldens, compile time, paired timings); when that A/B
# fails, `attngate bisect` names the package and release that moved each row. What both
# CI templates' JAX-bump job runs.
#
#   bash ci/jax-bump.sh BASE_REV [more `attngate ab` options: --store, --out, --markdown ...]
#
# ATTNGATE_JAX_LOCK   the lock file (default kernels/jax/requirements-new.lock)
# ATTNGATE_JAX_SUITE  the suite (default jax-smoke)
# ATTNGATE_INTERPRET  how Pallas kernels run (default auto: the TPU interpreter on a CPU
#                     runner; none on a self-hosted TPU runner: compiled for the TPU)
# ATTNGATE_BUILD_DIR  where the built attngate is (default build)
# A venv is named by its lock's hash and kept (cache .venv/ between runs); one already made
# from the same lock, under any name, is used as it is. The same lock at BASE and in the
# tree: nothing to gate, exit 0.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bash ci/jax-bump.sh BASE_REV [attngate ab options]" >&2; exit 2; }
base=$1
shift
lock=${ATTNGATE_JAX_LOCK:-kernels/jax/requirements-new.lock}
mkdir -p .venv/locks
if ! git show "$base:$lock" > .venv/locks/base.lock; then
  echo "jax-bump: $lock is not in $base: nothing to compare the head's lock with" >&2
  exit 2
fi
if cmp -s .venv/locks/base.lock "$lock"; then
  echo "jax-bump: $lock is the same at $base and in the tree: no JAX bump to gate"
  exit 0
fi

# The venv made from this lock: one that holds its hash already, else .venv/lock-<hash>.
venv_for() {
  local sha marker
  sha=$(sha256sum "$1" | cut -d' ' -f1)
  for marker in .venv/*/.attngate-lock-sha256; do
    if [ "$(cat "$marker" 2>/dev/null)" = "$sha" ]; then
      basename "$(dirname "$marker")"
      return
    fi
  done
  echo "lock-${sha:0:16}"
}
cp "$lock" .venv/locks/head.lock
a=$(venv_for .venv/locks/base.lock)
b=$(venv_for .venv/locks/head.lock)
ATTNGATE_DEPS=venvs ATTNGATE_VENVS="$a=.venv/locks/base.lock $b=.venv/locks/head.lock" bash ci/install-deps.sh

adapter="kernels/jax/adapter.py --interpret ${ATTNGATE_INTERPRET:-auto}"
attngate="${ATTNGATE_BUILD_DIR:-build}/attngate"
status=0
"$attngate" ab --suite "${ATTNGATE_JAX_SUITE:-jax-smoke}" \
  --a-adapter ".venv/$a/bin/python $adapter" --b-adapter ".venv/$b/bin/python $adapter" "$@" || status=$?

# The bump moved a row: which package and release did it (docs/bisect.md), in Markdown for the PR
# comment (ATTNGATE_BISECT_MARKDOWN, default jax-bisect.md). ATTNGATE_BISECT=0 skips it;
# ATTNGATE_BISECT_MAX_ENVS bounds it (default 20). Its own failure never changes the verdict.
# It bisects the rows the A/B gated, with its goldens: ab's --case, --kernel and --store go to bisect
# too (the store else from ATTNGATE_STORE).
if [ "$status" = 1 ] && [ "${ATTNGATE_BISECT:-1}" != 0 ]; then
  given=("$@") same=()
  for ((i = 0; i < ${#given[@]}; i++)); do
    case "${given[i]}" in
      --case|--kernel|--store) same+=("${given[i]}" "${given[i + 1]:-}"); i=$((i + 1)) ;;
      --case=*|--kernel=*|--store=*) same+=("${given[i]}") ;;
    esac
  done
  if [ -n "${ATTNGATE_STORE:-}" ] && [[ " ${same[*]} " != *" --store"* ]]; then same+=(--store "$ATTNGATE_STORE"); fi
  "$attngate" bisect --suite "${ATTNGATE_JAX_SUITE:-jax-smoke}" --a-lock .venv/locks/base.lock --b-lock .venv/locks/head.lock \
    --adapter "$adapter" --checks golden,numerics --max-envs "${ATTNGATE_BISECT_MAX_ENVS:-20}" "${same[@]}" \
    --out reports/jax-bisect --markdown "${ATTNGATE_BISECT_MARKDOWN:-jax-bisect.md}" ||
    echo "jax-bump: bisect could not say which package moved the rows (above); the A/B verdict stands" >&2
fi
exit "$status"
