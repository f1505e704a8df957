// `attngate time --serve`: an A/B side's build kept running for the whole run, so that the
// two builds can alternate case by case (a burst of machine noise then lands on both sides
// of a pair) and each sample comes from a warm process with each case's inputs generated
// once. One JSON object per line:
//   on start, the server writes  {"rows": [["case", "kernel"], ...]}
//   each request                 {"rows": [i, ...], "repetitions": n, "min_time_s": t}
//   is answered with             {"samples_s": [[seconds per call, ...], ...]}  (request order)
//                           or   {"error": "..."}
// until its input ends. After a row's first request the server times it with a fixed count
// of calls per repetition (what min_time_s took then), so that no later sample pays for
// Google Benchmark's estimate of that count.
#pragma once

#include <cstdio>

#include "io/error.hpp"
#include "run/plan_timer.hpp"

namespace attngate {

/// Answers requests read from `in` on reply_fd until `in` ends. An error only when the
/// reply channel fails; a bad request or a timing error is answered as {"error": ...}.
Result<void> serve_timing(PlanTimer &timer, const TimingRequest &base, std::FILE *in, int reply_fd);

}  // namespace attngate
