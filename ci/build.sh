#!/usr/bin/env bash
# Installs dependencies (ATTNGATE_DEPS groups, see install-deps.sh; default all) and builds
# attngate into build/ (or $ATTNGATE_BUILD_DIR). Extra arguments go to cmake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
build_dir=${ATTNGATE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
