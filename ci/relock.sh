#!/usr/bin/env bash
# Regenerates each NAME.lock from NAME.in beside it, with every file's sha256, for
# `pip install --require-hashes`. Needs PyPI; run it only when bumping a pin on purpose.
#   bash ci/relock.sh ci/tools kernels/jax/requirements-new ...
# ATTNGATE_RELOCK_PYTHON: the interpreter to resolve for (default Debian's python3;
# kernels/jax/relock.sh passes ATTNGATE_JAX_PYTHON).
set -euo pipefail
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
"${ATTNGATE_RELOCK_PYTHON:-/usr/bin/python3}" -m venv "$tools/venv"
"$tools/venv/bin/pip" install -q pip-tools==7.6.2
for name in "$@"; do
  # In the file's own directory, so the lock names its .in as before; --no-emit-find-links:
  # a machine's own pip configuration must not leak into the lock.
  (cd "$(dirname "$name")" && "$tools/venv/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras --no-header \
    --no-emit-find-links --output-file "$(basename "$name").lock" "$(basename "$name").in")
done
