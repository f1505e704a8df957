#!/usr/bin/env bash
# Every test: install, build, and run all of attngate's own tests through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
cd build
ctest --output-on-failure -j"$(nproc)"
