// Input, output and comparison watches around kernel calls.
#include "backend/watch.hpp"

#include <bit>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

namespace attngate {

namespace {

constexpr uint32_t kGuardBits = 0x7FA5A5A5u;                      // a NaN no kernel writes by chance
constexpr uint32_t kPoisonBits[2] = {0x7FC0DEADu, 0x7FC0BEEFu};  // quiet NaNs with a payload

template <typename T>
void check_tensor(const char *name, const std::vector<T> &pristine, std::vector<T> &mine, std::vector<std::string> &out) {
    // An absent tensor (no bias, no segments) has no data pointer to compare.
    if (mine.empty() || mine.size() != pristine.size() || std::memcmp(mine.data(), pristine.data(), mine.size() * sizeof(T)) == 0) return;
    size_t changed = 0, first = mine.size();
    for (size_t i = 0; i < mine.size(); ++i)
        if (std::memcmp(&mine[i], &pristine[i], sizeof(T)) != 0) {
            ++changed;
            first = std::min(first, i);
        }
    out.push_back(fmt::format("wrote to its input {}: {} of {} elements changed, first at element {}", name, changed, mine.size(), first));
    mine = pristine;
}

}  // namespace

void PrivateInputs::check(std::vector<std::string> &violations) {
    const bool bf16 = pristine_.dtype == ATTNGATE_DTYPE_BF16;
    // The kernel sees the bf16 bits for a bf16 case and the floats otherwise.
    if (bf16) {
        check_tensor("q", pristine_.q_bf16, mine_.q_bf16, violations);
        check_tensor("k", pristine_.k_bf16, mine_.k_bf16, violations);
        check_tensor("v", pristine_.v_bf16, mine_.v_bf16, violations);
    } else {
        check_tensor("q", pristine_.q, mine_.q, violations);
        check_tensor("k", pristine_.k, mine_.k, violations);
        check_tensor("v", pristine_.v, mine_.v, violations);
    }
    check_tensor("bias", pristine_.bias, mine_.bias, violations);
    check_tensor("segment_ids_q", pristine_.segment_ids_q, mine_.segment_ids_q, violations);
    check_tensor("segment_ids_kv", pristine_.segment_ids_kv, mine_.segment_ids_kv, violations);
}

GuardedOutput::GuardedOutput(size_t elements) : buffer_(elements + 2 * kGuard), elements_(elements) { poison(0); }

void GuardedOutput::poison(int pattern) {
    const float guard = std::bit_cast<float>(kGuardBits), fill = std::bit_cast<float>(kPoisonBits[pattern & 1]);
    std::fill(buffer_.begin(), buffer_.begin() + kGuard, guard);
    std::fill(buffer_.begin() + kGuard, buffer_.end() - kGuard, fill);
    std::fill(buffer_.end() - kGuard, buffer_.end(), guard);
}

void GuardedOutput::check(std::vector<std::string> &violations) {
    size_t before = 0, after = 0;
    for (size_t i = 0; i < kGuard; ++i) {
        if (std::bit_cast<uint32_t>(buffer_[kGuard - 1 - i]) != kGuardBits) before = i + 1;
        if (std::bit_cast<uint32_t>(buffer_[kGuard + elements_ + i]) != kGuardBits) after = i + 1;
    }
    if (after) violations.push_back(fmt::format("out-of-bounds write, {} bytes past out", after * sizeof(float)));
    if (before) violations.push_back(fmt::format("out-of-bounds write, {} bytes before out", before * sizeof(float)));
}

OutputDifference compare_outputs(std::span<const float> a, std::span<const float> b) {
    OutputDifference d;
    for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
        if (std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i])) continue;
        ++d.elements;
        if (std::isfinite(a[i]) && std::isfinite(b[i])) d.max_abs = std::max(d.max_abs, std::fabs(static_cast<double>(a[i]) - b[i]));
    }
    return d;
}

}  // namespace attngate
