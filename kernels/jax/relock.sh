#!/usr/bin/env bash
# Regenerates requirements-{new,old}.lock from the .in files with every file's sha256, for
# `pip install --require-hashes`. Needs PyPI; run it only when bumping a pin on purpose.
# ATTNGATE_JAX_PYTHON: the interpreter to resolve for (as ci/install-deps.sh takes it).
set -euo pipefail
cd "$(dirname "$0")"
tools=$(mktemp -d)
trap 'rm -rf "$tools"' EXIT
"${ATTNGATE_JAX_PYTHON:-/usr/bin/python3}" -m venv "$tools/venv"
"$tools/venv/bin/pip" install -q pip-tools==7.6.2
for line in new old; do
  # --no-emit-find-links: a machine's own pip configuration must not leak into the lock.
  "$tools/venv/bin/pip-compile" -q --generate-hashes --allow-unsafe --strip-extras --no-header \
    --no-emit-find-links --output-file "requirements-$line.lock" "requirements-$line.in"
done
