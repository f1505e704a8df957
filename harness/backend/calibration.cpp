// The calibration workload: a fixed 64x64x64 f32 matrix product in plain loops.
#include "backend/calibration.hpp"

#include <array>

namespace attngate {

namespace {
constexpr int kN = 64;
using Matrix = std::array<float, kN * kN>;

Matrix filled(float seed) {
    Matrix m{};
    for (int i = 0; i < kN * kN; ++i) m[i] = seed + static_cast<float>(i % 17) * 0.03125f;
    return m;
}
}  // namespace

void run_calibration_workload() {
    static const Matrix a = filled(0.5f), b = filled(-0.25f);
    static Matrix c;
    for (int i = 0; i < kN; ++i)
        for (int k = 0; k < kN; ++k) {
            const float aik = a[i * kN + k];
            for (int j = 0; j < kN; ++j) c[i * kN + j] += aik * b[k * kN + j];
        }
    // Keeps the product observable so the compiler cannot drop the work.
    static volatile float sink;
    sink = c[kN * kN - 1];
    (void)sink;
}

}  // namespace attngate
