// The one seam to stored state: goldens, baselines, pricing, workloads and history are
// objects under store-relative keys ("goldens/smoke/manifest.json"), kept in a directory
// (the default, nothing to start) or behind an HTTP server shared by a fleet of runners.
// Writes carry a precondition, so two writers never silently lose an update.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/error.hpp"

namespace attngate {

/// An object's bytes and the version they were read at (an HTTP ETag, or the SHA-256 of
/// the bytes in a directory): what a conditional write names.
struct StoredObject {
    std::string bytes;
    std::string version;
};

/// What must hold for a put to apply.
struct Precondition {
    enum class Kind { None, MustNotExist, Version };
    Kind kind = Kind::None;
    std::string version;  ///< for Kind::Version: the version that was read

    static Precondition none() { return {}; }
    static Precondition must_not_exist() { return {Kind::MustNotExist, {}}; }
    /// The object must still be at `version`; an empty version means "did not exist".
    static Precondition matches(std::string version) {
        return version.empty() ? must_not_exist() : Precondition{Kind::Version, std::move(version)};
    }
};

class Store {
public:
    virtual ~Store() = default;

    /// Where a key lives, for messages: a path or a URL, never a credential.
    virtual std::string where(std::string_view key) const = 0;
    /// The store itself, for messages and results ("directory baselines", "http://host/base/").
    virtual std::string describe() const = 0;

    /// The object, or nullopt when there is none. Infra errors when the store fails.
    virtual Result<std::optional<StoredObject>> get(std::string_view key) = 0;

    /// Writes the object when the precondition holds and returns its new version (empty
    /// when the store did not say). A failed precondition is ErrorKind::Conflict and
    /// nothing is written; writing the bytes that are already there is never a conflict.
    virtual Result<std::string> put(std::string_view key, std::string_view bytes, const Precondition &pre) = 0;

    /// Every key under `prefix` (a key ending in '/', or "" for all), recursively, sorted.
    virtual Result<std::vector<std::string>> list(std::string_view prefix) = 0;

    /// Puts everything written under the prefix `from` in place of everything under `to`
    /// (both end in '/') in one step: a reader sees all the old objects or all the new, never
    /// a mix (a directory: one rename; WebDAV: one MOVE). `from` is gone afterwards.
    virtual Result<void> replace_prefix(std::string_view from, std::string_view to) = 0;
    /// Removes everything under `prefix` (ending in '/'); none there is not an error.
    virtual Result<void> remove_prefix(std::string_view prefix) = 0;
};

/// Why `key` is not a store-relative key (absolute, empty component, ".", "..", a
/// backslash or a control character), or nullopt when it is one.
std::optional<std::string> invalid_key(std::string_view key);

/// Joins components into a key; each must be a valid single component (no '/'). An
/// invalid one is bad input naming `what` it came from.
Result<std::string> make_key(std::initializer_list<std::string_view> parts, std::string_view what);

/// A free-form name (a machine class such as "Intel(R) Xeon(R) x2") as one key
/// component: letters, digits, '-' and '.' stay, anything else becomes '_'; "." and ".."
/// cannot result.
std::string key_component(std::string_view raw);

/// Opens the store at `location`: an http:// or https:// URL (token and limits from the
/// ATTNGATE_STORE_* environment, see http_store.hpp), or a directory.
Result<std::unique_ptr<Store>> open_store(const std::string &location);

}  // namespace attngate
