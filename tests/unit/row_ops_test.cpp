// The vector row operations of each instruction-set path this CPU runs, against the
// portable ones: bit-exact where the formula is exact, within a few ulp for exp and tanh.
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <catch2/catch.hpp>

#include "attngate/bf16.hpp"
#include "cpu_dispatch.hpp"
#include "io/rng.hpp"
#include "row_ops.hpp"

using namespace attngate;
using namespace attngate::kernels;

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

/// A row of n values in [-8, 8) with -inf at every 7th place and, if asked, one NaN.
std::vector<float> row(int64_t n, uint64_t stream, bool with_nan) {
    const CounterRng rng(5, "row_ops");
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t j = 0; j < n; ++j) v[j] = j % 7 == 3 ? -kInf : 8.0f * rng.uniform(stream * 1000 + j);
    if (with_nan && n > 2) v[n / 2] = std::numeric_limits<float>::quiet_NaN();
    return v;
}

bool close(float a, float b, float rel) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    return a == b || std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b));
}

std::vector<const RowOps *> simd_tables() {
    std::vector<const RowOps *> t;
    if (detected_isa() >= Isa::Avx2) t.push_back(&row_ops_avx2());
    if (detected_isa() >= Isa::Avx512) t.push_back(&row_ops_avx512());
    if (t.empty()) WARN("this CPU has no AVX2: only the portable row operations are tested");
    return t;
}

}  // namespace

TEST_CASE("vector row operations agree with the portable ones on every length and tail", "[kernels][row_ops]") {
    const RowOps &ref = row_ops_portable();
    for (const RowOps *ops : simd_tables()) {
        for (int64_t n = 0; n <= 70; ++n) {
            INFO("n = " << n);
            for (bool with_nan : {false, true}) {
                const auto x = row(n, static_cast<uint64_t>(n), with_nan);
                bool nan_a = false, nan_b = false;
                const float ma = ref.max(x.data(), n, &nan_a), mb = ops->max(x.data(), n, &nan_b);
                CHECK(ma == mb);
                CHECK(nan_a == nan_b);
                CHECK(ref.all_finite(x.data(), n) == ops->all_finite(x.data(), n));

                for (bool round : {false, true}) {
                    auto a = x, b = x;
                    const float m = std::isfinite(ma) ? ma : 0.0f;
                    const float la = ref.exp_sum(a.data(), n, m, round), lb = ops->exp_sum(b.data(), n, m, round);
                    CHECK(close(la, lb, 1e-5f));
                    // SLEEF's exp is within 1 ulp, so a bf16 rounding may go the other way.
                    for (int64_t j = 0; j < n; ++j) CHECK(close(a[j], b[j], round ? 1.0f / 128 : 4e-7f));
                    if (round)
                        for (int64_t j = 0; j < n; ++j) CHECK((std::isnan(b[j]) || b[j] == round_to_bf16(b[j])));
                    b = a;  // from equal inputs, division and rounding are exact
                    ref.normalize(a.data(), n, 3.0f, round);
                    ops->normalize(b.data(), n, 3.0f, round);
                    for (int64_t j = 0; j < n; ++j) CHECK((a[j] == b[j] || (std::isnan(a[j]) && std::isnan(b[j]))));
                }
            }
            const auto x = row(n, 77 + static_cast<uint64_t>(n), false);
            std::vector<float> bias(static_cast<size_t>(n) + 1, 0.0f);
            for (int64_t j = 0; j <= n; ++j) bias[j] = 0.25f * static_cast<float>(j % 5);
            for (float cap : {0.0f, 5.0f})
                for (int64_t stride : {0, 1}) {
                    auto a = x, b = x;
                    ref.finish(a.data(), n, 0.3f, cap, bias.data(), stride);
                    ops->finish(b.data(), n, 0.3f, cap, bias.data(), stride);
                    // tanh within a few ulp of its own scale, before the bias is added.
                    for (int64_t j = 0; j < n; ++j)
                        CHECK((a[j] == b[j] || (cap > 0 && std::fabs(a[j] - b[j]) <= 4e-6f * cap) ||
                               (std::isnan(a[j]) && std::isnan(b[j]))));
                }
            auto a = x, b = x;
            for (auto &v : a) v = std::isfinite(v) ? v : 1.0f;
            b = a;
            ref.scale(a.data(), n, 0.7f);
            ops->scale(b.data(), n, 0.7f);
            CHECK(a == b);
            std::vector<float> da(static_cast<size_t>(n)), db(static_cast<size_t>(n));
            ref.divide(a.data(), n, 3.0f, da.data());
            ops->divide(a.data(), n, 3.0f, db.data());
            CHECK(da == db);
            std::vector<uint16_t> bits(static_cast<size_t>(n));
            for (int64_t j = 0; j < n; ++j) bits[j] = float_to_bf16(a[j]);
            ref.widen_bf16(bits.data(), n, da.data());
            ops->widen_bf16(bits.data(), n, db.data());
            CHECK(da == db);
        }
    }
}

TEST_CASE("vector bf16 rounding is round-to-nearest-even and keeps NaN a NaN", "[kernels][row_ops]") {
    for (const RowOps *ops : simd_tables()) {
        // Ties: 1 + 2^-8 rounds to 1 (even), 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
        std::vector<float> x = {1.0f + 0x1p-8f, 1.0f + 3 * 0x1p-8f, 0.1f, 3.0e38f, kInf,
                                std::numeric_limits<float>::quiet_NaN(), 1e-39f, 0.0f, 0.7f};
        std::vector<float> y = x;
        ops->normalize(y.data(), static_cast<int64_t>(y.size()), 1.0f, true);
        for (size_t i = 0; i < x.size(); ++i) {
            if (std::isnan(x[i])) CHECK(std::isnan(y[i]));
            else CHECK(y[i] == round_to_bf16(x[i]));
        }
    }
}
