// Directory store: files under a root, versions are SHA-256 of the bytes, conditional
// writes are compare-and-rename under flock(2) on the parent directory (local file
// systems; the lock leaves no file behind).
#include "store/directory_store.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <cstdio>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include "io/files.hpp"

namespace attngate {

namespace fs = std::filesystem;

namespace {

/// An exclusive flock on a directory, released when it goes out of scope.
class DirectoryLock {
public:
    explicit DirectoryLock(const fs::path &dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
        if (fd_ >= 0)
            while (::flock(fd_, LOCK_EX) != 0 && errno == EINTR) {
            }
    }
    ~DirectoryLock() {
        if (fd_ >= 0) ::close(fd_);  // closing releases the lock
    }
    DirectoryLock(const DirectoryLock &) = delete;
    DirectoryLock &operator=(const DirectoryLock &) = delete;
    bool locked() const { return fd_ >= 0; }

private:
    int fd_;
};

Result<void> valid(std::string_view key) {
    if (auto why = invalid_key(key)) return fail(ErrorKind::BadInput, "store key \"{}\" has {}", key, *why);
    return {};
}

/// The current bytes at path, or nullopt when there is no file.
Result<std::optional<std::string>> read_if_exists(const fs::path &path) {
    std::error_code ec;
    if (!fs::exists(path, ec)) return std::optional<std::string>();
    auto bytes = read_file(path);
    if (!bytes) return fail(ErrorKind::Infra, "{}", bytes.error().message);
    return std::optional<std::string>(std::move(*bytes));
}

}  // namespace

std::string DirectoryStore::where(std::string_view key) const { return (root_ / fs::path(std::string(key))).string(); }

std::string DirectoryStore::describe() const { return "directory " + root_.string(); }

Result<std::optional<StoredObject>> DirectoryStore::get(std::string_view key) {
    if (auto v = valid(key); !v) return std::unexpected(v.error());
    auto bytes = read_if_exists(where(key));
    if (!bytes) return std::unexpected(bytes.error());
    if (!*bytes) return std::optional<StoredObject>();
    const std::string version = sha256_hex(**bytes);
    return std::optional<StoredObject>(StoredObject{std::move(**bytes), version});
}

Result<std::string> DirectoryStore::put(std::string_view key, std::string_view bytes, const Precondition &pre) {
    if (auto v = valid(key); !v) return std::unexpected(v.error());
    const fs::path path = where(key);
    if (auto ec = create_directories_0755(path.parent_path()))
        return fail(ErrorKind::Infra, "{}: cannot create directory: {}", path.parent_path().string(), ec.message());
    const std::string version = sha256_hex(bytes);
    if (pre.kind == Precondition::Kind::None) {
        if (auto w = write_file_atomic(path, bytes); !w) return std::unexpected(w.error());
        return version;
    }
    DirectoryLock lock(path.parent_path());
    if (!lock.locked()) return fail(ErrorKind::Infra, "{}: cannot lock: {}", path.parent_path().string(), std::strerror(errno));
    auto current = read_if_exists(path);
    if (!current) return std::unexpected(current.error());
    if (*current && **current == bytes) return version;  // already there: applying twice is harmless
    if (pre.kind == Precondition::Kind::MustNotExist && *current)
        return fail(ErrorKind::Conflict, "{}: exists already (written by someone else since it was read as absent)", path.string());
    if (pre.kind == Precondition::Kind::Version) {
        if (!*current) return fail(ErrorKind::Conflict, "{}: was removed since it was read", path.string());
        if (const std::string now = sha256_hex(**current); now != pre.version)
            return fail(ErrorKind::Conflict, "{}: changed since it was read (version {} then, {} now)", path.string(),
                        pre.version.substr(0, 12), now.substr(0, 12));
    }
    if (auto w = write_file_atomic(path, bytes); !w) return std::unexpected(w.error());
    return version;
}

Result<std::vector<std::string>> DirectoryStore::list(std::string_view prefix) {
    if (!prefix.empty())
        if (auto v = valid(prefix); !v) return std::unexpected(v.error());
    const fs::path dir = prefix.empty() ? root_ : root_ / fs::path(std::string(prefix));
    std::vector<std::string> keys;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) return keys;
    for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
        if (!it->is_regular_file()) continue;
        std::string key = fs::relative(it->path(), root_).generic_string();
        if (key.find(".tmp-") != std::string::npos) continue;  // a write in progress, or in a folder being staged
        keys.push_back(std::move(key));
    }
    if (ec) return fail(ErrorKind::Infra, "{}: cannot list: {}", dir.string(), ec.message());
    std::sort(keys.begin(), keys.end());
    return keys;
}

Result<void> DirectoryStore::replace_prefix(std::string_view from, std::string_view to) {
    if (auto v = valid(from); !v) return std::unexpected(v.error());
    if (auto v = valid(to); !v) return std::unexpected(v.error());
    const fs::path src = fs::path(where(from)).parent_path(), dst = fs::path(where(to)).parent_path();  // drop the '/'
    if (auto ec = create_directories_0755(dst.parent_path()))
        return fail(ErrorKind::Infra, "{}: cannot create directory: {}", dst.parent_path().string(), ec.message());
    // Swap the two folders in one step when there is an old one, then remove it (now at src).
    if (::renameat2(AT_FDCWD, src.c_str(), AT_FDCWD, dst.c_str(), RENAME_EXCHANGE) != 0) {
        const bool first = errno == ENOENT && fs::exists(src);
        if (!first || ::rename(src.c_str(), dst.c_str()) != 0)
            return fail(ErrorKind::Infra, "{}: cannot put {} in its place: {}", dst.string(), src.string(), std::strerror(errno));
        return {};
    }
    return remove_prefix(from);
}

Result<void> DirectoryStore::remove_prefix(std::string_view prefix) {
    if (auto v = valid(prefix); !v) return std::unexpected(v.error());
    const fs::path dir = fs::path(where(prefix)).parent_path();
    std::error_code ec;
    fs::remove_all(dir, ec);
    if (ec) return fail(ErrorKind::Infra, "{}: cannot remove: {}", dir.string(), ec.message());
    return {};
}

}  // namespace attngate
