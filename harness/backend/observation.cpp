// Observation helpers.
#include "backend/observation.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace attngate {

std::string CrashInfo::describe() const {
    std::string what = kind == "timeout" ? fmt::format("hung: killed after {:.1f} s time limit", seconds)
                       : kind == "exit"  ? fmt::format("exited with code {} after {:.2f} s", exit_code, seconds)
                       : kind == "lost"  ? fmt::format("kernel host lost after {:.2f} s: {}", seconds, message)
                                         : fmt::format("crashed with {} after {:.2f} s", signal, seconds);
    if (!stderr_tail.empty()) {
        std::string tail = stderr_tail;
        std::replace(tail.begin(), tail.end(), '\n', ' ');
        what += fmt::format("; stderr: {}", tail.size() > 300 ? tail.substr(tail.size() - 300) : tail);
    }
    return what;
}

}  // namespace attngate
