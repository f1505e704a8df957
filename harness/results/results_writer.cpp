// The results file written after every case, compare-and-rename.
#include "results/results_writer.hpp"

#include <unistd.h>
#include <utility>

#include "io/files.hpp"

namespace attngate {

ResultsWriter::ResultsWriter(std::filesystem::path path) : path_(std::move(path)), seen_(fingerprint()) {}

ResultsWriter::~ResultsWriter() {
    if (held_ >= 0) ::close(held_);
}

Result<void> ResultsWriter::save(const RunResults &r) {
    if (fingerprint() != seen_)
        return fail(ErrorKind::Conflict, "{}: replaced by another writer while this run was writing it (another run with the same --out?); "
                    "this run stops rather than overwrite it", path_.string());
    const std::string bytes = pretty_json(to_json(r));
    auto w = write_file_atomic_locked(path_, bytes);
    if (!w) return std::unexpected(w.error());
    if (held_ >= 0) ::close(held_);  // the replaced file's lock: the new one holds the name now
    held_ = *w;
    seen_ = sha256_hex(bytes);
    if (auto then = std::exchange(first_save_, nullptr)) return then();
    return {};
}

std::string ResultsWriter::fingerprint() const {
    auto bytes = read_file(path_);
    return bytes ? sha256_hex(*bytes) : std::string();
}

}  // namespace attngate
