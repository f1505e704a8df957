#!/usr/bin/env bash
# Every test: install, build, and run all of attngate's own tests through ctest; then the
# unit tests once more under AddressSanitizer and UndefinedBehaviorSanitizer (any report
# fails the run).
set -euo pipefail
cd "$(dirname "$0")/.."
bash ci/build.sh
(cd build && ctest --output-on-failure -j"$(nproc)")

ATTNGATE_BUILD_DIR=build-asan bash ci/build.sh -DATTNGATE_SANITIZE=ON
(cd build-asan && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --output-on-failure -j"$(nproc)" -L unit)
