// The team's store over the data attngate ships: reads find an object in the team's store
// first and in the installed share/attngate/baselines second (pricing, workloads, the
// built-in suites' goldens and memory baselines); every write goes to the team's store.
#pragma once

#include <filesystem>
#include <memory>
#include <set>
#include <string>

#include "store/store.hpp"

namespace attngate {

class LayeredStore final : public Store {
public:
    /// `shipped` is only read from.
    LayeredStore(std::unique_ptr<Store> team, std::unique_ptr<Store> shipped) : team_(std::move(team)), shipped_(std::move(shipped)) {}

    std::string where(std::string_view key) const override;
    std::string describe() const override;
    Result<std::optional<StoredObject>> get(std::string_view key) override;
    Result<std::string> put(std::string_view key, std::string_view bytes, const Precondition &pre) override;
    /// The team's keys under `prefix` when it has any; otherwise the shipped ones. A prefix
    /// (a suite's goldens, a machine class's baselines) comes whole from one layer.
    Result<std::vector<std::string>> list(std::string_view prefix) override;
    Result<void> replace_prefix(std::string_view from, std::string_view to) override;
    Result<void> remove_prefix(std::string_view prefix) override;

private:
    std::unique_ptr<Store> team_;
    std::unique_ptr<Store> shipped_;
    /// Keys last read from the shipped layer: where() names that file, so that an error about
    /// the installed pricing.json names it, not a file the team's store does not have.
    std::set<std::string, std::less<>> from_shipped_;
};

/// The directory of the data attngate ships: $ATTNGATE_DATA_DIR when set, else
/// <prefix>/share/attngate beside the running binary's <prefix>/bin; nullopt when there is
/// none (a build tree).
std::optional<std::filesystem::path> installed_data_dir();

/// The team's store at `location` (open_store), over installed_data_dir()/baselines when
/// there is one.
Result<std::unique_ptr<Store>> open_store_over_installed(const std::string &location);

}  // namespace attngate
