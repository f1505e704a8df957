// Perf targets: selection and timing through their backends.
#include "run/perf_targets.hpp"

#include <algorithm>

namespace attngate {

bool perf_selected(const Suite &suite, const CaseSpec &c, const std::string &label) {
    return c.timed && (suite.perf.kernels.empty() ||
                       std::find(suite.perf.kernels.begin(), suite.perf.kernels.end(), label) != suite.perf.kernels.end());
}

std::vector<TimingOutcome> time_targets(const std::vector<PerfTarget> &targets, Backends &backends, const TimingRequest &req) {
    std::vector<TimingOutcome> out(targets.size());
    const size_t reps = static_cast<size_t>(std::max(req.repetitions, 0)), total = targets.size() * reps;
    size_t before = 0;  // repetitions of the backends timed so far
    for (const auto &b : backends.all()) {
        std::vector<size_t> mine;
        std::vector<Invocation> invs;
        for (size_t i = 0; i < targets.size(); ++i)
            if (backends.host_of(targets[i].kernel->spec.kernel) == b.get()) mine.push_back(i), invs.push_back(targets[i].inv);
        if (invs.empty()) continue;
        TimingRequest mine_req = req;
        if (req.on_progress)  // one count over every backend
            mine_req.on_progress = [&req, before, total](size_t done, size_t) { req.on_progress(before + done, total); };
        if (!req.iterations.empty()) {
            mine_req.iterations.clear();
            for (size_t i : mine) mine_req.iterations.push_back(req.iterations.at(i));
        }
        auto got = b->time(invs, mine_req);
        ATTNGATE_CHECK(got.size() == invs.size());
        // A set that failed (a crashed timing child, a lost adapter) timed nothing: the count says so.
        before += reps * static_cast<size_t>(std::count_if(got.begin(), got.end(), [](const auto &o) { return o.error.empty(); }));
        for (size_t j = 0; j < mine.size(); ++j) out[mine[j]] = std::move(got[j]);
        if (req.on_progress) req.on_progress(before, total);
    }
    return out;
}

}  // namespace attngate
