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

/// c += a b, and keeps c observable so that the compiler cannot drop the work.
void multiply_into(Matrix &c) {
    static const Matrix a = filled(0.5f), b = filled(-0.25f);
    for (int i = 0; i < kN; ++i)
        for (int k = 0; k < kN; ++k) {
            const float aik = a[i * kN + k];
            for (int j = 0; j < kN; ++j) c[i * kN + j] += aik * b[k * kN + j];
        }
    static thread_local volatile float sink;
    sink = c[kN * kN - 1];
    (void)sink;
}
}  // namespace

void run_calibration_workload() {
    static Matrix c;
    multiply_into(c);
}

ParallelCalibration::ParallelCalibration(int threads) {
    for (int w = 1; w < threads; ++w) workers_.emplace_back([this] { work(); });
}

ParallelCalibration::~ParallelCalibration() {
    {
        std::lock_guard lock(mutex_);
        stop_ = true;
    }
    wake_.notify_all();
    workers_.clear();  // joined here, while the mutex and condition variables they use still live
}

void ParallelCalibration::run() {
    {
        std::lock_guard lock(mutex_);
        busy_ = workers_.size();
        ++generation_;
    }
    wake_.notify_all();
    thread_local Matrix c{};  // each thread its own product: no shared line is written
    multiply_into(c);
    std::unique_lock lock(mutex_);
    ++done_count_;
    done_.wait(lock, [this] { return busy_ == 0; });
}

uint64_t ParallelCalibration::workloads_done() {
    std::lock_guard lock(mutex_);
    return done_count_;
}

void ParallelCalibration::work() {
    thread_local Matrix c{};
    uint64_t seen = 0;
    for (;;) {
        {
            std::unique_lock lock(mutex_);
            wake_.wait(lock, [&] { return stop_ || generation_ != seen; });
            if (stop_) return;
            seen = generation_;
        }
        multiply_into(c);
        std::lock_guard lock(mutex_);
        ++done_count_;
        if (--busy_ == 0) done_.notify_one();
    }
}

}  // namespace attngate
