// .npy serialisation.
#include "io/npy.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "io/sizes.hpp"

namespace attngate {

namespace {
template <typename T>
NpyArray make(std::span<const T> v, std::vector<int64_t> shape, const char *descr) {
    NpyArray a{descr, std::move(shape), std::string(reinterpret_cast<const char *>(v.data()), v.size_bytes())};
    ATTNGATE_CHECK(a.size() == static_cast<int64_t>(v.size()));
    return a;
}

size_t item_size(const std::string &descr) { return descr == "<f8" ? 8 : 4; }
}  // namespace

int64_t NpyArray::size() const {
    // A zero anywhere makes an empty array, whatever the other dimensions (a file may claim
    // (2^62, 8, 0)); otherwise the product saturates like the reader's size check.
    if (std::ranges::find(shape, 0) != shape.end()) return 0;
    int64_t n = 1;
    for (int64_t d : shape) n = saturating_mul(n, d);
    return n;
}

NpyArray make_npy(std::span<const float> v, std::vector<int64_t> shape) { return make(v, std::move(shape), "<f4"); }
NpyArray make_npy(std::span<const double> v, std::vector<int64_t> shape) { return make(v, std::move(shape), "<f8"); }
NpyArray make_npy(std::span<const int32_t> v, std::vector<int64_t> shape) { return make(v, std::move(shape), "<i4"); }

std::string serialize_npy(const NpyArray &a) {
    std::string shape = a.shape.size() == 1 ? fmt::format("({},)", a.shape[0])
                                            : fmt::format("({})", fmt::join(a.shape, ", "));
    std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}", a.descr, shape);
    const size_t unpadded = 10 + header.size() + 1;
    header.append((64 - unpadded % 64) % 64, ' ');
    header.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    const uint16_t len = static_cast<uint16_t>(header.size());
    out.push_back(static_cast<char>(len & 0xff));
    out.push_back(static_cast<char>(len >> 8));
    out += header;
    out += a.data;
    return out;
}

Result<NpyArray> parse_npy(std::string_view bytes, const std::string &file) {
    if (bytes.size() < 10 || bytes.substr(0, 6) != std::string_view("\x93NUMPY", 6))
        return fail(ErrorKind::BadInput, "{}: byte 0: expected the .npy magic \\x93NUMPY", file);
    const unsigned major = static_cast<unsigned char>(bytes[6]);
    size_t header_len, offset;
    if (major == 1) {
        header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
        offset = 10;
    } else if (major == 2 || major == 3) {
        if (bytes.size() < 12) return fail(ErrorKind::BadInput, "{}: byte 8: truncated header length", file);
        uint32_t l;
        std::memcpy(&l, bytes.data() + 8, 4);
        header_len = l;
        offset = 12;
    } else {
        return fail(ErrorKind::BadInput, "{}: byte 6: unsupported .npy version {}", file, major);
    }
    if (bytes.size() < offset + header_len) return fail(ErrorKind::BadInput, "{}: byte {}: truncated header", file, offset);
    const std::string header(bytes.substr(offset, header_len));
    std::smatch m;
    static const std::regex descr_re("'descr':\\s*'([^']*)'");
    static const std::regex order_re("'fortran_order':\\s*(True|False)");
    static const std::regex shape_re("'shape':\\s*\\(([^)]*)\\)");
    if (!std::regex_search(header, m, descr_re)) return fail(ErrorKind::BadInput, "{}: byte {}: header has no 'descr'", file, offset);
    NpyArray a;
    a.descr = m[1];
    if (a.descr != "<f4" && a.descr != "<f8" && a.descr != "<i4")
        return fail(ErrorKind::BadInput, "{}: byte {}: expected dtype <f4, <f8 or <i4, got {}", file, offset, a.descr);
    if (!std::regex_search(header, m, order_re) || m[1] == "True")
        return fail(ErrorKind::BadInput, "{}: byte {}: expected 'fortran_order': False", file, offset);
    if (!std::regex_search(header, m, shape_re)) return fail(ErrorKind::BadInput, "{}: byte {}: header has no 'shape'", file, offset);
    const std::string dims = m[1];
    static const std::regex int_re("\\d+");
    // The header is checked against the file before anything is allocated: a shape of
    // 1e22 or (2^32, 2^32) is a bad file, not a length_error.
    int64_t elements = 1;
    for (auto it = std::sregex_iterator(dims.begin(), dims.end(), int_re); it != std::sregex_iterator(); ++it) {
        int64_t d = 0;
        const std::string digits = it->str();
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), d);
        if (ec != std::errc() || end != digits.data() + digits.size())
            return fail(ErrorKind::BadInput, "{}: byte {}: shape dimension {} is out of range", file, offset, digits);
        a.shape.push_back(d);
        elements = saturating_mul(elements, d);
    }
    const size_t data_at = offset + header_len;
    const int64_t want_bytes = saturating_mul(elements, static_cast<int64_t>(item_size(a.descr)));
    if (want_bytes == kSaturated || static_cast<uint64_t>(want_bytes) != bytes.size() - data_at)
        return fail(ErrorKind::BadInput, "{}: byte {}: expected {} data bytes for shape ({}), found {}", file, data_at,
                    want_bytes == kSaturated ? std::string("more than 2^63") : std::to_string(want_bytes),
                    fmt::join(a.shape, ", "), bytes.size() - data_at);
    a.data = std::string(bytes.substr(data_at));
    return a;
}

}  // namespace attngate
