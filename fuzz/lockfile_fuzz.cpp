// Fuzz target: the lock file parsers. The first byte picks the file name (and so the
// format); the rest is the file. Whatever is recorded must serialize to valid JSON.
#include "fuzz_target.hpp"
#include "io/json_io.hpp"
#include "results/lockfile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    using namespace attngate;
    if (size == 0) return 0;
    static const char *const names[] = {"requirements.txt", "package-lock.json", "vcpkg.json", "conan.lock"};
    const std::string name = names[data[0] % 4];
    const std::string bytes(reinterpret_cast<const char *>(data) + 1, size - 1);
    auto fp = parse_lockfile_text(bytes, name);
    if (!fp) {
        // Lock file errors are reported as "--lockfile <file>: ...".
        fuzz::expect_input_error(fp.error(), "--lockfile " + name);
        return 0;
    }
    if (auto back = parse_json(pretty_json(*fp), "recorded.json"); !back) fuzz::broken("a recorded lock file is not valid JSON", back.error().message);
    return 0;
}
