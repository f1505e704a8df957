// Making the goldens of a suite: the fp64 reference's output of every case, with the
// straightforward implementation's error that calibrates its tolerance (checks/golden_check.hpp).
#pragma once

#include <functional>
#include <span>

#include "plan/suite.hpp"
#include "store/golden.hpp"
#include "store/store.hpp"

namespace attngate {

/// Fills output_max_abs and the straightforward implementation's max abs and RMS errors
/// (over the elements where both are finite) from the golden and that implementation's output.
void calibrate_golden(GoldenEntry &e, std::span<const double> golden, std::span<const float> straightforward);

/// Computes every case's golden and writes the .npy files, the manifest and the fingerprint
/// (when given) all or nothing: the old goldens stay whole until every case succeeded.
/// `progress` is told each case id as it is done.
Result<GoldenManifest> generate_goldens(const Suite &suite, Store &store, const std::function<void(const GoldenEntry &)> &progress,
                                        const json::object *fingerprint = nullptr);

}  // namespace attngate
