// .npy serialisation.
#include "io/npy.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>

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

namespace {

/// numpy's default max_header_size: a longer header is refused before it is read.
constexpr size_t kMaxHeaderBytes = 10000;

/// The header dict of a .npy file, {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), },
/// read by a scanner (Python literal syntax, the subset numpy writes). A regex over it
/// recursed once per padding byte and crashed on a long one, and read (-1, 4) as (1, 4).
class HeaderScanner {
public:
    HeaderScanner(std::string_view text, size_t offset, const std::string &file) : text_(text), offset_(offset), file_(file) {}

    Result<NpyArray> scan() {
        NpyArray a;
        bool descr = false, order = false, shape = false;
        if (!eat('{')) return expected("'{' opening the header dict");
        while (!eat('}')) {
            const size_t key_at = at_;
            auto key = string();
            if (!key) return std::unexpected(key.error());
            if (!eat(':')) return expected("':' after a key");
            bool *seen = *key == "descr" ? &descr : *key == "fortran_order" ? &order : *key == "shape" ? &shape : nullptr;
            if (!seen) return bad(key_at, fmt::format("unexpected key '{}' (expected 'descr', 'fortran_order' and 'shape')", *key));
            if (*seen) return bad(key_at, fmt::format("key '{}' given twice", *key));
            *seen = true;
            auto r = *key == "descr" ? descr_value(a) : *key == "shape" ? shape_value(a) : order_value();
            if (!r) return std::unexpected(r.error());
            if (!eat(',')) {
                if (!eat('}')) return expected("',' or '}' after a value");
                break;
            }
        }
        skip_space();
        if (at_ != text_.size()) return expected("only padding after the header dict");
        if (!descr || !order || !shape) return bad(0, "header lacks one of 'descr', 'fortran_order' and 'shape'");
        return a;
    }

private:
    Error error_at(size_t at, const std::string &what) const {
        return Error{ErrorKind::BadInput, fmt::format("{}: byte {}: {}", file_, offset_ + at, what)};
    }
    std::unexpected<Error> bad(size_t at, const std::string &what) const { return std::unexpected(error_at(at, what)); }
    std::unexpected<Error> expected(const char *what) const { return bad(at_, fmt::format("expected {}", what)); }

    void skip_space() {
        while (at_ < text_.size() && (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r')) ++at_;
    }
    bool eat(char c) {
        skip_space();
        if (at_ >= text_.size() || text_[at_] != c) return false;
        ++at_;
        return true;
    }
    bool eat_word(std::string_view w) {
        skip_space();
        if (text_.substr(at_, w.size()) != w) return false;
        at_ += w.size();
        return true;
    }
    Result<std::string> string() {
        skip_space();
        if (at_ >= text_.size() || (text_[at_] != '\'' && text_[at_] != '"')) return expected("a quoted string");
        const char quote = text_[at_];
        const size_t end = text_.find(quote, at_ + 1);
        if (end == std::string_view::npos) return expected("a closing quote");
        std::string s(text_.substr(at_ + 1, end - at_ - 1));
        at_ = end + 1;
        return s;
    }
    Result<void> descr_value(NpyArray &a) {
        const size_t value_at = at_;
        auto d = string();
        if (!d) return expected("a dtype string such as '<f4'");
        if (*d != "<f4" && *d != "<f8" && *d != "<i4") return bad(value_at, fmt::format("expected dtype <f4, <f8 or <i4, got {}", *d));
        a.descr = std::move(*d);
        return {};
    }
    Result<void> order_value() {
        if (eat_word("False")) return {};
        return expected("'fortran_order': False");
    }
    /// A tuple of non-negative dimensions: (), (3,), (2, 3) or (2, 3,).
    Result<void> shape_value(NpyArray &a) {
        if (!eat('(')) return expected("a shape tuple");
        while (!eat(')')) {
            skip_space();
            const size_t dim_at = at_;
            size_t end = at_;
            while (end < text_.size() && std::isdigit(static_cast<unsigned char>(text_[end]))) ++end;
            if (end == at_)
                return text_.substr(at_, 1) == "-" ? bad(dim_at, "shape dimension is negative") : expected("a shape dimension");
            int64_t d = 0;
            const auto [stop, ec] = std::from_chars(text_.data() + at_, text_.data() + end, d);
            if (ec != std::errc() || stop != text_.data() + end)
                return bad(dim_at, fmt::format("shape dimension {} is out of range", text_.substr(at_, end - at_)));
            a.shape.push_back(d);
            at_ = end;
            if (eat(',')) continue;
            if (!eat(')')) return expected("',' or ')' in the shape");
            if (a.shape.size() == 1) return bad(dim_at, "a one-dimensional shape needs its trailing comma, (n,)");
            break;
        }
        return {};
    }

    std::string_view text_;
    size_t offset_;
    const std::string &file_;
    size_t at_ = 0;
};

}  // namespace

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
    if (header_len > kMaxHeaderBytes)
        return fail(ErrorKind::BadInput, "{}: byte 8: a header of {} bytes, over the limit of {} (numpy's max_header_size)", file,
                    header_len, kMaxHeaderBytes);
    if (bytes.size() < offset + header_len) return fail(ErrorKind::BadInput, "{}: byte {}: truncated header", file, offset);
    auto scanned = HeaderScanner(bytes.substr(offset, header_len), offset, file).scan();
    if (!scanned) return std::unexpected(scanned.error());
    NpyArray a = std::move(*scanned);
    // The header is checked against the file before anything is allocated: a shape of
    // 1e22 or (2^32, 2^32) is a bad file, not a length_error.
    int64_t elements = 1;
    for (const int64_t d : a.shape) elements = saturating_mul(elements, d);
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
