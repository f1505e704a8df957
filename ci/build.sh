#!/usr/bin/env bash
# Installs dependencies (ATTNGATE_DEPS groups, see install-deps.sh; default all) and builds
# attngate into build/ (or $ATTNGATE_BUILD_DIR). Extra arguments go to cmake's configure step;
# ATTNGATE_BUILD_TARGETS (space-separated) builds only those targets instead of all.
#
# A new build directory is configured for Ninja, which compiles a library's objects while
# the ones it links are still building (Make waits for each target): on 2 cores the main
# job's quick build took 2.2x less wall time. A build directory made earlier keeps its
# generator (cmake refuses to change it).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/install-deps.sh
build_dir=${ATTNGATE_BUILD_DIR:-build}
generator=()
[ -f "$build_dir/CMakeCache.txt" ] || generator=(-G Ninja)
cmake -S . -B "$build_dir" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
targets=()
for t in ${ATTNGATE_BUILD_TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" -j"$(nproc)" "${targets[@]}"
