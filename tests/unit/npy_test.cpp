// .npy writing and reading.
#include <catch2/catch.hpp>

#include "io/npy.hpp"

using namespace attngate;

TEST_CASE("npy round-trips float, double and int32 arrays", "[npy]") {
    const std::vector<float> f = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -1e-30f};
    const auto a = make_npy(std::span<const float>(f), {2, 3});
    const std::string bytes = serialize_npy(a);
    CHECK(bytes.substr(0, 6) == std::string("\x93NUMPY", 6));
    const size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
    CHECK((10 + header_len) % 64 == 0);  // the format aligns data to 64 bytes
    auto back = parse_npy(bytes, "f.npy");
    REQUIRE(back);
    CHECK(back->descr == "<f4");
    CHECK(back->shape == std::vector<int64_t>{2, 3});
    CHECK(std::vector<float>(back->as<float>().begin(), back->as<float>().end()) == f);

    const std::vector<double> d = {0.1, 0.2};
    auto bd = parse_npy(serialize_npy(make_npy(std::span<const double>(d), {2})), "d.npy");
    REQUIRE(bd);
    CHECK(bd->descr == "<f8");
    CHECK(bd->as<double>()[1] == 0.2);

    const std::vector<int32_t> i = {-1, 2, 3};
    auto bi = parse_npy(serialize_npy(make_npy(std::span<const int32_t>(i), {1, 3})), "i.npy");
    REQUIRE(bi);
    CHECK(bi->as<int32_t>()[0] == -1);
}

TEST_CASE("npy errors name the file and the byte offset", "[npy]") {
    auto bad_magic = parse_npy("not a numpy file", "x.npy");
    REQUIRE_FALSE(bad_magic);
    CHECK_THAT(bad_magic.error().message, Catch::Contains("x.npy: byte 0"));

    const std::vector<float> f = {1, 2, 3, 4};
    std::string bytes = serialize_npy(make_npy(std::span<const float>(f), {4}));
    bytes.pop_back();
    auto truncated = parse_npy(bytes, "t.npy");
    REQUIRE_FALSE(truncated);
    CHECK_THAT(truncated.error().message, Catch::Contains("t.npy: byte 128") && Catch::Contains("expected 16 data bytes"));
}

TEST_CASE("npy headers claiming huge shapes are rejected before allocating", "[npy]") {
    const std::vector<float> f = {1, 2, 3, 4};
    const std::string good = serialize_npy(make_npy(std::span<const float>(f), {4}));
    const auto with_shape = [&](const std::string &shape) {
        std::string bytes = good;
        const size_t at = bytes.find("(4,)");
        REQUIRE(at != std::string::npos);
        std::string header_shape = shape;
        header_shape.resize(4, ' ');  // keeps the header length, so only the shape lies
        bytes.replace(at, 4, header_shape);
        return parse_npy(bytes, "h.npy");
    };
    // 1e22 does not fit int64; 2^32 x 2^32 x 4 bytes overflows; both used to abort.
    auto huge = parse_npy(std::string(good).replace(good.find("(4,)"), 4, "(10000000000000000000000,)"), "h.npy");
    REQUIRE_FALSE(huge);
    CHECK(huge.error().kind == ErrorKind::BadInput);
    CHECK_THAT(huge.error().message, Catch::StartsWith("h.npy: byte"));
    std::string wide = good;
    wide.replace(wide.find("(4,)"), 4, "(4294967296, 4294967296)");
    auto overflow = parse_npy(wide, "w.npy");
    REQUIRE_FALSE(overflow);
    CHECK_THAT(overflow.error().message, Catch::Contains("w.npy: byte") && Catch::Contains("more than 2^63"));
    auto lie = with_shape("(5,)");
    REQUIRE_FALSE(lie);
    CHECK_THAT(lie.error().message, Catch::Contains("expected 20 data bytes"));
}

TEST_CASE("an empty array with huge other dimensions has size 0, without overflow", "[npy]") {
    // Found by fuzz/npy_fuzz: (2^62, 8, 0) is a valid empty array, but its size was computed
    // as 2^62 * 8 * 0 from the left and overflowed (UBSan) before the zero.
    const std::vector<double> none;
    const std::string bytes = serialize_npy(make_npy(std::span<const double>(none), {int64_t{1} << 62, 8, 0}));
    auto a = parse_npy(bytes, "e.npy");
    REQUIRE(a);
    CHECK(a->size() == 0);
    CHECK(a->data.empty());
}

namespace {
/// A version 1.0 .npy whose header dict is `dict` (padded to 64 bytes) and whose data is `data`.
std::string npy_with_header(const std::string &dict, const std::string &data) {
    std::string header = dict;
    header.append((64 - (10 + header.size() + 1) % 64) % 64, ' ');
    header.push_back('\n');
    std::string out("\x93NUMPY\x01\x00", 8);
    out.push_back(static_cast<char>(header.size() & 0xff));
    out.push_back(static_cast<char>(header.size() >> 8));
    return out + header + data;
}
}  // namespace

TEST_CASE("a .npy header padded past numpy's 10000-byte limit is bad input, not a crash", "[npy]") {
    // Issue 24: 40,000 spaces inside the shape tuple crashed the std::regex reader (SIGSEGV).
    const std::string data(16, '\0');
    const std::string padded = npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (" + std::string(40000, ' ') + "4,), }", data);
    auto a = parse_npy(padded, "padded.npy");
    REQUIRE_FALSE(a);
    CHECK(a.error().kind == ErrorKind::BadInput);
    CHECK_THAT(a.error().message, Catch::StartsWith("padded.npy: byte 8") && Catch::Contains("over the limit of 10000"));
    // Long padding within the limit is read, wherever Python's syntax allows it.
    const std::string spaced = npy_with_header("{ 'descr' : '<f4' ,\n'fortran_order':False,'shape':(" + std::string(9000, ' ') + "2 , 2 ) }", data);
    auto b = parse_npy(spaced, "spaced.npy");
    REQUIRE(b);
    CHECK(b->shape == std::vector<int64_t>{2, 2});
}

TEST_CASE("a .npy shape with a negative dimension is refused, not read as positive", "[npy]") {
    // The regex took the digits of (-1, 4) as (1, 4), which matched 16 data bytes.
    auto a = parse_npy(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }", std::string(16, '\0')), "neg.npy");
    REQUIRE_FALSE(a);
    CHECK_THAT(a.error().message, Catch::Contains("neg.npy: byte 61") && Catch::Contains("negative"));
}

TEST_CASE("the .npy header scanner refuses what numpy refuses, naming the byte", "[npy]") {
    const std::string data(16, '\0');
    const std::pair<std::string, std::string> cases[] = {
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4), }", "trailing comma"},
        {"{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }", "'fortran_order': False"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'descr': '<f4'}", "given twice"},
        {"{'descr': '<f4', 'fortran_order': False}", "lacks one of"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'x': 1}", "unexpected key 'x'"},
        {"{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", "expected dtype"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } junk", "only padding"},
        {"{'descr': '<f4', 'fortran_order': False, 'shape': (4,,), }", "shape dimension"},
        {"{'descr: '<f4', 'fortran_order': False, 'shape': (4,), }", "expected"},
    };
    for (const auto &[dict, words] : cases) {
        INFO(dict);
        auto a = parse_npy(npy_with_header(dict, data), "bad.npy");
        REQUIRE_FALSE(a);
        CHECK(a.error().kind == ErrorKind::BadInput);
        CHECK_THAT(a.error().message, Catch::StartsWith("bad.npy: byte ") && Catch::Contains(words));
    }
    // What numpy itself writes: a 1-tuple with its comma, a scalar's (), double quotes.
    CHECK(parse_npy(npy_with_header("{\"descr\": \"<f4\", \"fortran_order\": False, \"shape\": (4,)}", data), "ok.npy"));
    CHECK(parse_npy(npy_with_header("{'descr': '<f4', 'fortran_order': False, 'shape': (), }", std::string(4, '\0')), "ok.npy"));
}
