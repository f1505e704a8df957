// The default store: a directory on this machine (baselines/), nothing to start. A
// conditional write holds an exclusive lock on the object's directory while it compares
// the current bytes with the version that was read and renames the new file into place,
// so two attngate processes never lose each other's update.
#pragma once

#include <filesystem>

#include "io/files.hpp"
#include "store/store.hpp"

namespace attngate {

class DirectoryStore final : public Store {
public:
    /// root is made absolute now: a kernel in this process (--no-isolation) may chdir().
    explicit DirectoryStore(const std::filesystem::path &root) : root_(absolute_path(root)) {}

    std::string where(std::string_view key) const override;
    std::string describe() const override;
    Result<std::optional<StoredObject>> get(std::string_view key) override;
    Result<std::string> put(std::string_view key, std::string_view bytes, const Precondition &pre) override;
    Result<std::vector<std::string>> list(std::string_view prefix) override;
    Result<void> replace_prefix(std::string_view from, std::string_view to) override;
    Result<void> remove_prefix(std::string_view prefix) override;

    const std::filesystem::path &root() const { return root_; }

private:
    std::filesystem::path root_;
};

}  // namespace attngate
