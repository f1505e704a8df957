// The calibration workload of the perf gate: a fixed piece of work timed in the same child
// as the kernels, its repetitions interleaved with theirs, so that a baseline can store a
// kernel's time relative to the machine's speed at that moment. A machine that is
// uniformly slower today (a loaded runner, a slower instance) slows both; a slower
// kernel slows only itself.
#pragma once

namespace attngate {

/// Names the workload; stored with every calibrated baseline. Change it whenever the
/// workload changes: calibration samples of two different workloads are not comparable.
inline constexpr const char *kCalibrationWorkload = "sgemm-f32-64x64x64-v1";

/// Runs the workload once on the calling thread (about 0.26 MFLOP of plain f32
/// multiply-adds over 48 KiB, in cache like a kernel's tiles).
void run_calibration_workload();

}  // namespace attngate
