// Reads through the team's store to the shipped data; writes to the team's store.
#include "store/layered_store.hpp"

#include <cstdlib>

#include <fmt/format.h>

#include "store/directory_store.hpp"

namespace attngate {

namespace fs = std::filesystem;

std::string LayeredStore::where(std::string_view key) const {
    return from_shipped_.contains(key) ? shipped_->where(key) : team_->where(key);
}

std::string LayeredStore::describe() const { return fmt::format("{} (then {})", team_->describe(), shipped_->describe()); }

Result<std::optional<StoredObject>> LayeredStore::get(std::string_view key) {
    auto mine = team_->get(key);
    if (!mine || *mine) {
        if (mine) from_shipped_.erase(std::string(key));
        return mine;
    }
    auto shipped = shipped_->get(key);
    if (shipped && *shipped) from_shipped_.insert(std::string(key));
    return shipped;
}

Result<std::string> LayeredStore::put(std::string_view key, std::string_view bytes, const Precondition &pre) {
    auto put = team_->put(key, bytes, pre);
    if (put) from_shipped_.erase(std::string(key));
    return put;
}

Result<std::vector<std::string>> LayeredStore::list(std::string_view prefix) {
    auto mine = team_->list(prefix);
    if (!mine || !mine->empty()) return mine;
    return shipped_->list(prefix);
}

Result<void> LayeredStore::replace_prefix(std::string_view from, std::string_view to) { return team_->replace_prefix(from, to); }

Result<void> LayeredStore::remove_prefix(std::string_view prefix) { return team_->remove_prefix(prefix); }

std::optional<fs::path> installed_data_dir() {
    std::error_code ec;
    if (const char *env = std::getenv("ATTNGATE_DATA_DIR"); env && *env) {
        if (fs::is_directory(env, ec)) return fs::path(env);
        return std::nullopt;
    }
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) return std::nullopt;
    const fs::path share = exe.parent_path().parent_path() / "share" / "attngate";
    if (exe.parent_path().filename() != "bin" || !fs::is_directory(share, ec)) return std::nullopt;
    return share;
}

Result<std::unique_ptr<Store>> open_store_over_installed(const std::string &location) {
    auto team = open_store(location);
    if (!team) return team;
    const auto data = installed_data_dir();
    if (!data) return team;
    std::error_code ec;
    const fs::path shipped = *data / "baselines";
    if (!fs::is_directory(shipped, ec)) return team;
    // Reading one's own store twice would be harmless, but says the same place twice.
    if (auto *dir = dynamic_cast<DirectoryStore *>(team->get()); dir && fs::equivalent(dir->root(), shipped, ec)) return team;
    return std::unique_ptr<Store>(std::make_unique<LayeredStore>(std::move(*team), std::make_unique<DirectoryStore>(shipped)));
}

}  // namespace attngate
