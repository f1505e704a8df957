// .npy reading and writing (format version 1.0), so numpy.load reads every golden and
// input the tool writes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "io/error.hpp"

namespace attngate {

/// A little-endian C-order array: descr is "<f4", "<f8" or "<i4".
struct NpyArray {
    std::string descr;
    std::vector<int64_t> shape;
    std::string data;  ///< raw bytes, element count × item size

    int64_t size() const;
    template <typename T>
    std::span<const T> as() const {
        return {reinterpret_cast<const T *>(data.data()), data.size() / sizeof(T)};
    }
};

NpyArray make_npy(std::span<const float> v, std::vector<int64_t> shape);
NpyArray make_npy(std::span<const double> v, std::vector<int64_t> shape);
NpyArray make_npy(std::span<const int32_t> v, std::vector<int64_t> shape);

/// The bytes of a .npy file holding a.
std::string serialize_npy(const NpyArray &a);
/// Parses .npy bytes; errors name `file` and the byte offset.
Result<NpyArray> parse_npy(std::string_view bytes, const std::string &file);

}  // namespace attngate
