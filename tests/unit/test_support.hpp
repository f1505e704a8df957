// Helpers shared by the unit tests: temporary directories and small cases.
#pragma once

#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "backend/in_process_backend.hpp"
#include "io/rng.hpp"
#include "plan/suite.hpp"
#include "results/results.hpp"

namespace attngate::test {

/// A fresh directory under /tmp, removed with everything in it on scope exit.
class TempDir {
public:
    TempDir() {
        std::random_device rd;
        path_ = std::filesystem::temp_directory_path() / ("attngate-test-" + std::to_string(rd()) + std::to_string(rd()));
        std::filesystem::create_directories(path_);
    }
    ~TempDir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    const std::filesystem::path &path() const { return path_; }
    std::filesystem::path operator/(const std::string &name) const { return path_ / name; }

private:
    std::filesystem::path path_;
};

inline void write_text(const std::filesystem::path &p, const std::string &text) {
    std::ofstream(p, std::ios::binary) << text;
}

/// A small f32 case; tests switch features on from here.
inline CaseSpec small_case(std::string id, int64_t sq, int64_t sk, int64_t hq, int64_t hkv, int64_t d) {
    CaseSpec c;
    c.id = std::move(id);
    c.seq_q = sq;
    c.seq_k = sk;
    c.heads_q = hq;
    c.heads_kv = hkv;
    c.head_dim = d;
    c.head_dim_v = d;
    return c;
}

/// The built-in kernels as a run's only backend.
inline Backends builtin_backends() {
    Backends b;
    auto in_process = InProcessBackend::create({});
    if (!in_process || !b.add(std::move(*in_process))) std::abort();
    return b;
}

/// n timing samples near `center`, each center x (1 + spread x u) with u uniform on
/// [-1, 1) from the named CounterRng stream: deterministic synthetic timings.
inline std::vector<double> jittered_times(double center, double spread, int n, const char *stream, uint64_t seed = 7) {
    const CounterRng rng(seed, stream);
    std::vector<double> v;
    for (int i = 0; i < n; ++i) v.push_back(center * (1.0 + spread * rng.uniform(static_cast<uint64_t>(i))));
    return v;
}

/// A complete run of suite "unit" holding the given case x kernel results.
inline RunResults results_with(std::vector<CaseResult> cases) {
    RunResults r;
    r.suite = "unit";
    r.complete = true;
    r.results = std::move(cases);
    return r;
}

}  // namespace attngate::test
