// Shard parsing and the balanced partition.
#include "plan/shard.hpp"

#include <algorithm>
#include <charconv>
#include <numeric>

namespace attngate {

Result<ShardSpec> parse_shard(std::string_view text) {
    const size_t slash = text.find('/');
    ShardSpec s{0, 0};
    const auto num = [](std::string_view t, int &out) {
        const auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), out);
        return ec == std::errc() && p == t.data() + t.size();
    };
    if (slash == std::string_view::npos || !num(text.substr(0, slash), s.index) || !num(text.substr(slash + 1), s.count) || s.count < 1 ||
        s.index < 1 || s.index > s.count)
        return fail(ErrorKind::Usage, "--shard {}: expected I/N with 1 <= I <= N, e.g. 2/4", text);
    return s;
}

std::vector<int> balanced_partition(const std::vector<double> &costs, int shards) {
    std::vector<size_t> order(costs.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return costs[a] > costs[b]; });
    std::vector<double> load(static_cast<size_t>(std::max(shards, 1)), 0.0);
    std::vector<int> out(costs.size(), 0);
    for (size_t item : order) {
        const auto lightest = std::min_element(load.begin(), load.end());  // first of equals: lowest shard
        out[item] = static_cast<int>(lightest - load.begin());
        *lightest += costs[item];
    }
    return out;
}

}  // namespace attngate
