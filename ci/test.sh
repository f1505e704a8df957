#!/usr/bin/env bash
# Every test: install, build, and run all of attngate's own tests through ctest; then the
# unit tests once more under AddressSanitizer and UndefinedBehaviorSanitizer (any report
# fails the run), and the fuzz targets for a bounded time.
set -euo pipefail
cd "$(dirname "$0")/.."
# Tests on explicitly: a build/ that ci/smoke.sh configured has them off.
bash ci/build.sh -DATTNGATE_BUILD_TESTS=ON -DATTNGATE_QUICK_BUILD=OFF  # after ci/smoke.sh in the same build/: not its quick build
# --timeout: a test without its own limit that hangs fails by name instead of holding CI.
# -LE slow: opt-in tests (e2e_bisect_jax, e2e_jax_bump_bisect: the real locks bisected over PyPI, minutes cold); `ctest -L slow` runs them.
(cd build && ctest --output-on-failure --no-tests=error --timeout 900 -j"$(nproc)" -LE slow)

# The sanitizer build uses clang-19 (a second compiler) so that it can also build the
# libFuzzer targets of the input readers (fuzz/); each runs ATTNGATE_LIBFUZZER_SECONDS (10 s).
# Only what its tests run is built: the unit tests and the fuzz targets, not the CLI.
CC=clang-19 CXX=clang++-19 ATTNGATE_BUILD_DIR=build-sanitize ATTNGATE_BUILD_TARGETS="attngate_unit_tests attngate_fuzz_targets" \
  bash ci/build.sh -DATTNGATE_SANITIZE=ON -DATTNGATE_FUZZ=ON
(cd build-sanitize && ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
  ctest --output-on-failure --no-tests=error --timeout 900 -j"$(nproc)" -L "unit|libfuzzer")
