// Google Benchmark JSON: every timing repetition of a run in the format of
// `--benchmark_format=json`, so Google Benchmark's own tools/compare.py can read it.
#pragma once

#include <string>

#include "results/results.hpp"

namespace attngate {

/// One benchmark entry per repetition, named "case/kernel", times in nanoseconds.
std::string gbench_serialize(const RunResults &r);

}  // namespace attngate
