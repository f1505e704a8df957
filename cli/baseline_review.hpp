// The review of `baseline update`: the changed rows' table, one question per row, and
// what the answers decide. Only the rows that changed are asked about (as `cargo insta
// review` asks only about pending snapshots); the unchanged ones are kept as stored.
#pragma once

#include <string>
#include <vector>

#include "console.hpp"
#include "store/baseline_update.hpp"

namespace attngate::cli {

/// What a review decided for one check's rows.
struct Review {
    std::vector<UpdateRow> accepted;  ///< to write
    bool quit = false;                ///< `q`: write what was accepted, review nothing more
    bool closed = false;              ///< stdin ended mid-review: write nothing
    size_t unanswered = 0;            ///< rows not decided because of either
    size_t refused = 0;               ///< rows whose golden check failed, not accepted without --force
};

/// "3 of 174 rows changed ..." and the table of the rows to review (all of them with `all`).
void print_review_table(const std::string &check, const std::vector<UpdateRow> &rows, bool all, const Console &console);

/// Decides each row to review: asks on the terminal unless `yes`; refuses a row whose
/// golden check failed unless `force`.
Review review(const std::vector<UpdateRow> &rows, bool all, bool yes, bool force, const Console &console);

}  // namespace attngate::cli
