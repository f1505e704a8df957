#!/usr/bin/env bash
# The main job: install what building and gating need (no test tools: ci/test.sh installs
# those), build attngate without its tests, and gate the built-in kernels on the smoke
# suite. Writes reports/results.json; exits with the gate's code (0 pass, 1 drift, 2 bad
# input, 3 infrastructure).
set -euo pipefail
cd "$(dirname "$0")/.."
# The quick build (CMakeLists.txt, ATTNGATE_QUICK_BUILD): the kernels as in every build, the
# rest at -O1 in a unity build, with Ninja (ci/build.sh).
build_dir=${ATTNGATE_BUILD_DIR:-build}
ATTNGATE_DEPS=build bash ci/build.sh -DCMAKE_BUILD_TYPE=Release -DATTNGATE_QUICK_BUILD=ON -DATTNGATE_BUILD_TESTS=OFF
exec "$build_dir/attngate" run --suite suites/smoke.json --out reports/results.json "$@"
