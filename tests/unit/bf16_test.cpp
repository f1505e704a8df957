// bf16 rounding: round-to-nearest-even, NaN, infinity, overflow and subnormals.
#include <bit>
#include <cmath>
#include <limits>

#include <catch2/catch.hpp>

#include "attngate/bf16.hpp"

using attngate::bf16_to_float;
using attngate::float_to_bf16;

static std::uint16_t bits(std::uint32_t f32_bits) { return float_to_bf16(std::bit_cast<float>(f32_bits)); }

TEST_CASE("bf16 keeps exactly representable values", "[bf16]") {
    CHECK(float_to_bf16(1.0f) == 0x3f80);
    CHECK(float_to_bf16(-2.0f) == 0xc000);
    CHECK(float_to_bf16(0.0f) == 0x0000);
    CHECK(float_to_bf16(-0.0f) == 0x8000);
    CHECK(bf16_to_float(0x3f80) == 1.0f);
}

TEST_CASE("bf16 rounds ties to even", "[bf16]") {
    CHECK(bits(0x3f808000) == 0x3f80);  // halfway, lower neighbour is even: down
    CHECK(bits(0x3f818000) == 0x3f82);  // halfway, upper neighbour is even: up
    CHECK(bits(0x3f808001) == 0x3f81);  // just above halfway: up
    CHECK(bits(0x3f807fff) == 0x3f80);  // just below halfway: down
    CHECK(bits(0xbf818000) == 0xbf82);  // negative values mirror
}

TEST_CASE("bf16 NaN stays NaN and keeps its sign", "[bf16]") {
    CHECK(std::isnan(bf16_to_float(float_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
    // A signalling NaN whose payload sits only in the low 16 bits must not become inf.
    CHECK(std::isnan(bf16_to_float(bits(0x7f800001))));
    CHECK(bits(0x7f800001) != 0x7f80);
    CHECK((bits(0xffc00000) & 0x8000) == 0x8000);
    CHECK(std::isnan(bf16_to_float(bits(0xffc00000))));
}

TEST_CASE("bf16 infinities and overflow", "[bf16]") {
    CHECK(float_to_bf16(std::numeric_limits<float>::infinity()) == 0x7f80);
    CHECK(float_to_bf16(-std::numeric_limits<float>::infinity()) == 0xff80);
    CHECK(bits(0x7f7fffff) == 0x7f80);  // FLT_MAX rounds up past the largest bf16
    CHECK(bits(0x7f7f7fff) == 0x7f7f);  // largest bf16 stays
}

TEST_CASE("bf16 subnormals round like any value", "[bf16]") {
    CHECK(bits(0x00000001) == 0x0000);  // smallest f32 subnormal rounds to zero
    CHECK(bits(0x00008000) == 0x0000);  // tie to even (zero)
    CHECK(bits(0x00018000) == 0x0002);  // tie to even (up)
    CHECK(bits(0x00010000) == 0x0001);  // exact bf16 subnormal
    CHECK(bf16_to_float(0x0001) == std::bit_cast<float>(0x00010000u));
    CHECK(bf16_to_float(0x0001) > 0.0f);
}

TEST_CASE("every bf16 value survives a round trip through float", "[bf16]") {
    for (std::uint32_t b = 0; b <= 0xffff; ++b) {
        const float f = bf16_to_float(static_cast<std::uint16_t>(b));
        if (std::isnan(f)) {
            REQUIRE(std::isnan(bf16_to_float(float_to_bf16(f))));
        } else {
            REQUIRE(float_to_bf16(f) == b);
        }
    }
}
