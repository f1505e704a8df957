// File reading, atomic writing and hashing.
#include "io/files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <cstdint>
#include <fstream>

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <openssl/evp.h>
#include <unistd.h>

namespace attngate {

Result<std::string> read_file(const std::filesystem::path &path, size_t max_bytes) {
    // O_NONBLOCK: opening a FIFO for reading must not wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return fail(ErrorKind::BadInput, "{}: cannot open: {}", path.string(), std::strerror(errno));
    struct Closer {
        int fd;
        ~Closer() { ::close(fd); }
    } closer{fd};
    struct stat st {};
    if (::fstat(fd, &st) != 0) return fail(ErrorKind::BadInput, "{}: cannot stat: {}", path.string(), std::strerror(errno));
    if (!S_ISREG(st.st_mode)) return fail(ErrorKind::BadInput, "{}: expected a regular file", path.string());
    if (static_cast<uint64_t>(st.st_size) > max_bytes)
        return fail(ErrorKind::BadInput, "{}: {} bytes, over the limit of {} bytes for an input file", path.string(),
                    static_cast<uint64_t>(st.st_size), max_bytes);
    std::string out;
    out.resize(static_cast<size_t>(st.st_size));
    size_t done = 0;
    // Reads to the end, not to st_size: a file that grows meanwhile is still bounded.
    for (;;) {
        if (done == out.size()) {
            if (out.size() >= max_bytes + 1) break;
            out.resize(std::min(max_bytes + 1, std::max<size_t>(out.size() * 2, 4096)));
        }
        const ssize_t n = ::read(fd, out.data() + done, out.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(ErrorKind::BadInput, "{}: read error: {}", path.string(), std::strerror(errno));
        if (n == 0) break;
        done += static_cast<size_t>(n);
    }
    if (done > max_bytes)
        return fail(ErrorKind::BadInput, "{}: over the limit of {} bytes for an input file", path.string(), max_bytes);
    out.resize(done);
    return out;
}

std::error_code create_directories_0755(const std::filesystem::path &dir) {
    std::error_code ec;
    if (dir.empty() || std::filesystem::is_directory(dir, ec)) return {};
    if (dir.has_parent_path() && dir.parent_path() != dir)
        if (auto e = create_directories_0755(dir.parent_path())) return e;
    if (::mkdir(dir.c_str(), 0755) != 0) {
        const int e = errno;
        if (e == EEXIST && std::filesystem::is_directory(dir, ec)) return {};  // made meanwhile by another writer
        return {e, std::generic_category()};
    }
    // The mode, not the umask: a kernel run in this process (--no-isolation) may have set umask(0777).
    if (::chmod(dir.c_str(), 0755) != 0) return {errno, std::generic_category()};
    return {};
}

std::filesystem::path absolute_path(const std::filesystem::path &path) {
    if (path.empty()) return path;
    std::error_code ec;
    std::filesystem::path abs = std::filesystem::absolute(path, ec);
    return ec ? path : abs.lexically_normal();
}

namespace {

/// write_file_atomic's steps; with `locked`, the new file is flock()ed before it is renamed into
/// place and its descriptor returned open (else -1).
Result<int> write_atomic(const std::filesystem::path &path, std::string_view bytes, bool locked) {
    if (path.has_parent_path())
        if (auto ec = create_directories_0755(path.parent_path()))
            return fail(ErrorKind::Infra, "{}: cannot create directory: {}", path.parent_path().string(), ec.message());
    // rename() would replace a symlink, /dev/null or a FIFO with a regular file: refuse instead.
    if (struct stat st {}; ::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
        return fail(ErrorKind::BadInput, "{}: not a regular file (a symlink, directory, device or FIFO); refusing to replace it",
                    path.string());
    // A fresh name made with O_CREAT | O_EXCL (mkostemp) beside path: a symlink or file planted
    // at a guessable name cannot redirect the write, since O_EXCL never follows or reuses one.
    std::string tmp = path.string() + ".tmp-XXXXXX";
    const int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
    if (fd < 0) return fail(ErrorKind::Infra, "{}: cannot write: {}", tmp, std::strerror(errno));
    // 0644 whatever the umask: a kernel run in this process may have set umask(0777).
    if (::fchmod(fd, 0644) != 0) {
        const int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return fail(ErrorKind::Infra, "{}: cannot set its mode: {}", tmp, std::strerror(e));
    }
    if (locked && ::flock(fd, LOCK_EX) != 0) {  // a name nobody else has opened: never waits
        const int e = errno;
        ::close(fd);
        ::unlink(tmp.c_str());
        return fail(ErrorKind::Infra, "{}: cannot lock it: {}", tmp, std::strerror(e));
    }
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            const int e = errno;
            ::close(fd);
            ::unlink(tmp.c_str());
            return fail(ErrorKind::Infra, "{}: write failed: {}", tmp, std::strerror(e));
        }
        done += static_cast<size_t>(n);
    }
    if (::fsync(fd) != 0 || (!locked && ::close(fd) != 0)) {
        const int e = errno;
        if (locked) ::close(fd);
        ::unlink(tmp.c_str());
        return fail(ErrorKind::Infra, "{}: flush failed: {}", tmp, std::strerror(e));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        if (locked) ::close(fd);
        ::unlink(tmp.c_str());
        return fail(ErrorKind::Infra, "{}: rename failed: {}", path.string(), std::strerror(e));
    }
    return locked ? fd : -1;
}

}  // namespace

Result<void> write_file_atomic(const std::filesystem::path &path, std::string_view bytes) {
    auto w = write_atomic(path, bytes, false);
    if (!w) return std::unexpected(w.error());
    return {};
}

Result<int> write_file_atomic_locked(const std::filesystem::path &path, std::string_view bytes) { return write_atomic(path, bytes, true); }

bool locked_by_a_writer(const std::filesystem::path &path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOFOLLOW);
    if (fd < 0) return false;
    const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
    ::close(fd);
    return held;
}

std::string sha256_hex(std::string_view bytes) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
    static const char *hex = "0123456789abcdef";
    std::string out;
    out.reserve(len * 2);
    for (unsigned int i = 0; i < len; ++i) {
        out.push_back(hex[digest[i] >> 4]);
        out.push_back(hex[digest[i] & 15]);
    }
    return out;
}

std::string sha256_base64(std::string_view bytes) {
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    EVP_Digest(bytes.data(), bytes.size(), digest, &len, EVP_sha256(), nullptr);
    unsigned char out[4 * ((EVP_MAX_MD_SIZE + 2) / 3) + 1];
    const int n = EVP_EncodeBlock(out, digest, static_cast<int>(len));
    return std::string(reinterpret_cast<const char *>(out), static_cast<size_t>(n));
}

Result<void> replaceable_output(std::string_view flag, const std::filesystem::path &path, std::string_view what, OutputMark mark) {
    std::error_code ec;
    const auto status = std::filesystem::symlink_status(path, ec);
    if (ec || status.type() == std::filesystem::file_type::not_found) return {};  // nothing there (or unreadable: the write says why)
    if (std::filesystem::is_directory(status)) return fail(ErrorKind::Usage, "{} {}: is a directory; give a file's path", flag, path.string());
    if (!std::filesystem::is_regular_file(status))  // refused now, not by the write after the run
        return fail(ErrorKind::Usage, "{} {}: not a regular file (a symlink, device or FIFO); refusing to replace it", flag, path.string());
    std::ifstream in(path, std::ios::binary);
    if (!in.is_open()) return fail(ErrorKind::Usage, "{} {}: cannot be read, so whether it is {} cannot be told", flag, path.string(), what);
    std::string head(kOutputMarkBytes, '\0');
    head.resize(static_cast<size_t>(in.read(head.data(), static_cast<std::streamsize>(head.size())).gcount()));
    if (!in.bad() && (head.empty() || (head.starts_with(mark.start) && head.find(mark.mark) != std::string::npos) ||
                      (!mark.nothing.empty() && head == mark.nothing)))
        return {};
    return fail(ErrorKind::Usage, "{} {}: holds something other than {}, which this command would replace; choose another path or move "
                "the file away", flag, path.string(), what);
}

Result<void> replaceable_output_dir(std::string_view flag, const std::filesystem::path &dir, const OutputDir &kind) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(dir, ec))) return {};
    if (!fs::is_directory(dir, ec))  // a link to a directory is one
        return fail(ErrorKind::Usage, "{} {}: not a directory (the output is several files: give a directory's path)", flag, dir.string());
    // An index vouches for the directory only when it holds one: an empty file proves nothing,
    // so the data files are looked at as when there is none.
    if (const auto size = fs::file_size(dir / kind.index, ec); !ec && size > 0) {
        if (!replaceable_output(flag, dir / kind.index, kind.writer, kind.mark))
            return fail(ErrorKind::Usage, "{} {}: its {} is not one {} wrote, and would be replaced; choose another directory", flag,
                        dir.string(), kind.index, kind.writer);
        return {};
    } else if (fs::exists(fs::symlink_status(dir / kind.index, ec)) && !fs::is_regular_file(fs::symlink_status(dir / kind.index, ec))) {
        return fail(ErrorKind::Usage, "{} {}: its {} is not a regular file, and would be replaced; choose another directory", flag, dir.string(),
                    kind.index);
    }
    for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
        if (it->path().extension() == kind.data)
            return fail(ErrorKind::Usage, "{} {}: holds {}, which is not an {} output (no {} of ours) and could be replaced; choose "
                        "another directory", flag, dir.string(), it->path().filename().string(), kind.writer, kind.index);
    return {};
}

}  // namespace attngate
