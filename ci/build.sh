#!/usr/bin/env bash
# Installs dependencies (ATTNGATE_DEPS groups, see install-deps.sh; default all) and builds
# attngate into build/ (or $ATTNGATE_BUILD_DIR). Extra arguments go to cmake's configure step.
# The harness, reporters and CLI are compiled as unity files (ATTNGATE_UNITY, about half the
# CPU time of a fresh build: the first run's longest step); an argument can turn it off.
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
build_dir=${ATTNGATE_BUILD_DIR:-build}
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DATTNGATE_UNITY=ON "$@" >/dev/null
cmake --build "$build_dir" -j"$(nproc)"
