// File reading, atomic writing and hashing.
#include "io/files.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <fcntl.h>
#include <openssl/evp.h>
#include <unistd.h>

namespace attngate {

Result<std::string> read_file(const std::filesystem::path &path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return fail(ErrorKind::BadInput, "{}: cannot open: {}", path.string(), std::strerror(errno));
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) return fail(ErrorKind::BadInput, "{}: read error", path.string());
    return ss.str();
}

Result<void> write_file_atomic(const std::filesystem::path &path, std::string_view bytes) {
    std::error_code ec;
    if (path.has_parent_path()) {
        std::filesystem::create_directories(path.parent_path(), ec);
        if (ec) return fail(ErrorKind::Infra, "{}: cannot create directory: {}", path.parent_path().string(), ec.message());
    }
    const std::string tmp = path.string() + ".tmp-" + std::to_string(::getpid());
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return fail(ErrorKind::Infra, "{}: cannot write: {}", tmp, std::strerror(errno));
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
    if (::fsync(fd) != 0 || ::close(fd) != 0) {
        ::unlink(tmp.c_str());
        return fail(ErrorKind::Infra, "{}: flush failed: {}", tmp, std::strerror(errno));
    }
    if (::rename(tmp.c_str(), path.c_str()) != 0) {
        const int e = errno;
        ::unlink(tmp.c_str());
        return fail(ErrorKind::Infra, "{}: rename failed: {}", path.string(), std::strerror(e));
    }
    return {};
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

}  // namespace attngate
