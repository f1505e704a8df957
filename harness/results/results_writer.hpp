// Writing results.json after every case, noticing another writer: two runs given the same
// --out used to replace each other's results without a word. Compare-and-rename: the file
// must still be what this run last saw or wrote.
#pragma once

#include <filesystem>
#include <functional>
#include <string>

#include "results/results.hpp"

namespace attngate {

class ResultsWriter {
public:
    explicit ResultsWriter(std::filesystem::path path);
    ~ResultsWriter();
    ResultsWriter(const ResultsWriter &) = delete;
    ResultsWriter &operator=(const ResultsWriter &) = delete;

    /// Writes `r` atomically; a Conflict when the file changed since this writer last saw it. The
    /// file written stays flock()ed until the next save or the writer's end, so that a second
    /// run with this --out sees a live writer before it starts (replaceable_results).
    Result<void> save(const RunResults &r);

    /// Called once, after the first save has replaced what was at the path: what was written
    /// from the results it replaced (reports) describes another run from then on.
    void on_first_save(std::function<Result<void>()> then) { first_save_ = std::move(then); }

private:
    /// sha256 of the file now; empty when there is none (or it cannot be read: the write will say why).
    std::string fingerprint() const;

    std::filesystem::path path_;
    std::string seen_;
    int held_ = -1;  ///< the descriptor holding the lock on the file last written
    std::function<Result<void>()> first_save_;
};

}  // namespace attngate
