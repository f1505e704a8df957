#!/usr/bin/env bash
# The main job: install, build, and gate the built-in kernels on the smoke suite.
# Writes reports/results.json; exits with the gate's code (0 pass, 1 drift, 2 bad input,
# 3 infrastructure).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
exec build/attngate run --suite suites/smoke.json --out reports/results.json "$@"
