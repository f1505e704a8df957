#!/usr/bin/env bash
# Every test: install, build, and run all of attngate's own tests through ctest; then the
# unit tests once more under AddressSanitizer and UndefinedBehaviorSanitizer (any report
# fails the run), and the fuzz targets for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests on explicitly: a build/ that ci/smoke.sh configured has them off.
bash ci/build.sh -DATTNGATE_BUILD_TESTS=ON
(cd build && ctest --output-on-failure --no-tests=error -j"$(nproc)")

# The sanitizer build uses clang-19 (a second compiler) so that it can also build the
# libFuzzer targets of the input readers (fuzz/); each runs ATTNGATE_LIBFUZZER_SECONDS (10 s).
CC=clang-19 CXX=clang++-19 ATTNGATE_BUILD_DIR=build-sanitize bash ci/build.sh -DATTNGATE_SANITIZE=ON -DATTNGATE_FUZZ=ON
(cd build-sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --output-on-failure -j"$(nproc)" -L "unit|libfuzzer")
