#!/usr/bin/env bash
# Regenerates requirements-{new,old}.lock from the .in files with every file's sha256, for
# `pip install --require-hashes` (ci/relock.sh). Needs PyPI; run it only when bumping a pin on purpose.
# ATTNGATE_JAX_PYTHON: the interpreter to resolve for (as ci/install-deps.sh takes it).
set -euo pipefail
here=$(dirname "$0")
ATTNGATE_RELOCK_PYTHON=${ATTNGATE_JAX_PYTHON:-/usr/bin/python3} \
  exec bash "$here/../../ci/relock.sh" "$here/requirements-new" "$here/requirements-old"
