#!/usr/bin/env bash
# Regenerates requirements-{new,old}.lock from the .in files with every file's sha256, for
# `pip install --require-hashes` (ci/relock.sh). Needs PyPI; run it only when bumping a pin on purpose.
set -euo pipefail
here=$(dirname "$0")
exec bash "$here/../../ci/relock.sh" "$here/requirements-new" "$here/requirements-old"
