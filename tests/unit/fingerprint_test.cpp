// Unit tests of lock file parsing and the fingerprint diff.
#include <catch2/catch.hpp>

#include <fstream>

#include "io/files.hpp"
#include "results/fingerprint.hpp"
#include "results/fingerprint_shape.hpp"
#include "results/loaded_libraries.hpp"
#include "results/lockfile.hpp"
#include "test_support.hpp"

using namespace attngate;

namespace {
std::filesystem::path write(const test::TempDir &dir, const std::string &name, const std::string &text) {
    const auto p = dir / name;
    std::ofstream(p) << text;
    return p;
}
std::string version(const json::object &lock, const char *name) {
    const auto *v = lock.at("packages").get_object().if_contains(name);
    return v ? std::string(v->get_string()) : "<absent>";
}
}  // namespace

TEST_CASE("pip freeze and requirements lines parse to name and version", "[lockfile]") {
    const json::object p = parse_requirement_lines("# a comment\nnumpy==1.26.4\n-r other.txt\njax == 0.4.30 ; python_version>'3.9'\n"
                                                   "mylib @ file:///src/mylib\nrequests>=2\nexact===1.0\n");
    CHECK(p.size() == 4);
    CHECK(p.at("numpy") == "1.26.4");
    CHECK(p.at("jax") == "0.4.30");
    CHECK(p.at("mylib") == "file:///src/mylib");
    CHECK(p.at("exact") == "1.0");
}

TEST_CASE("pip-compile lock files with hashes follow continuations and name packages as PEP 503 does", "[lockfile]") {
    // Issue 24: kernels/jax/*.lock recorded jax as "0.10.2 \" (the continuation was read as version).
    const json::object p = parse_requirement_lines(
        "jax==0.10.2 \\\n    --hash=sha256:724d73c4 \\\n    --hash=sha256:bf77428a\n    # via -r requirements-new.in\n"
        "ml_dtypes==0.5.1 \\\r\n    --hash=sha256:0ac9\r\n"
        "Jax.Lib[cuda12]==0.10.2 \\\n    --hash=sha256:1fac\n"
        "# a comment ending in a backslash does not continue \\\nscipy==1.11.0\n"
        "mylib @ https://host/mylib.whl#sha256=abc\n");
    CHECK(p.size() == 5);
    CHECK(p.at("jax") == "0.10.2");
    CHECK(p.at("ml-dtypes") == "0.5.1");
    CHECK(p.at("jax-lib") == "0.10.2");
    CHECK(p.at("scipy") == "1.11.0");
    CHECK(p.at("mylib") == "https://host/mylib.whl#sha256=abc");
    // The same package in pip freeze's spelling is the same key.
    CHECK(parse_requirement_lines("ML-Dtypes==0.5.1\n").contains("ml-dtypes"));
    CHECK(normalized_package_name("ml_dtypes") == normalized_package_name("ml-dtypes"));
    CHECK(normalized_package_name("Foo__Bar..baz") == "foo-bar-baz");
    // The project's own lock files.
    for (const char *lock : {"kernels/jax/requirements-new.lock", "kernels/jax/requirements-old.lock"}) {
        auto fp = parse_lockfile(std::filesystem::path(ATTNGATE_SOURCE_DIR) / lock);
        REQUIRE(fp);
        INFO(lock);
        for (const auto &[name, v] : fp->at("packages").as_object()) {
            CHECK(v.as_string().find_first_of(" \\") == json::string::npos);
            CHECK(name == normalized_package_name(name));
        }
    }
}

TEST_CASE("package-lock.json v3 and v1 give npm package versions", "[lockfile]") {
    test::TempDir dir;
    auto v3 = parse_lockfile(write(dir, "package-lock.json",
                                   R"({"lockfileVersion": 3, "packages": {"": {"name": "app"}, "node_modules/a/node_modules/@s/b": {"version": "2.0.1"}}})"));
    REQUIRE(v3);
    CHECK(v3->at("format") == "npm");
    CHECK(version(*v3, "@s/b") == "2.0.1");
    std::filesystem::create_directories(dir / "v1");
    auto v1 = parse_lockfile(write(dir, "v1/package-lock.json", R"({"dependencies": {"left-pad": {"version": "1.3.0"}}})"));
    REQUIRE(v1);
    CHECK(version(*v1, "left-pad") == "1.3.0");
}

TEST_CASE("vcpkg.json and conan.lock give their packages", "[lockfile]") {
    test::TempDir dir;
    auto vcpkg = parse_lockfile(write(dir, "vcpkg.json",
                                      R"({"dependencies": ["fmt", {"name": "boost-json", "version>=": "1.81"}], "overrides": [{"name": "fmt", "version": "9.1.0"}], "builtin-baseline": "abc123"})"));
    REQUIRE(vcpkg);
    CHECK(vcpkg->at("format") == "vcpkg");
    CHECK(version(*vcpkg, "fmt") == "9.1.0");
    CHECK(version(*vcpkg, "boost-json") == ">=1.81");
    CHECK(version(*vcpkg, "vcpkg-baseline") == "abc123");
    auto conan = parse_lockfile(write(dir, "conan.lock", R"({"version": "0.5", "requires": ["zlib/1.2.13#abc%1700000000.1"], "build_requires": ["cmake/3.27.0"]})"));
    REQUIRE(conan);
    CHECK(version(*conan, "zlib") == "1.2.13");
    CHECK(version(*conan, "cmake") == "3.27.0");
}

TEST_CASE("an unknown lock file is hashed and a malformed known one is an error naming it", "[lockfile]") {
    test::TempDir dir;
    const std::string text = "GEM\n  specs:\n    rake (13.0.6)\n";
    auto opaque = parse_lockfile(write(dir, "Gemfile.lock", text));
    REQUIRE(opaque);
    CHECK(opaque->at("format") == "opaque");
    CHECK(opaque->at("sha256").as_string() == sha256_hex(text));
    auto bad = parse_lockfile(write(dir, "conan.lock", "{\"requires\": ["));
    REQUIRE_FALSE(bad);
    CHECK(bad.error().kind == ErrorKind::BadInput);
    CHECK_THAT(bad.error().message, Catch::Contains((dir / "conan.lock").string()));
    auto missing = parse_lockfile(dir / "nope.txt");
    REQUIRE_FALSE(missing);
    CHECK_THAT(missing.error().message, Catch::Contains("nope.txt"));
}

TEST_CASE("the fingerprint diff lists added removed and changed leaves and flag sets", "[fingerprint]") {
    const json::object before = json::parse(R"({"libraries": {"boost": "1.81.0", "blas": "none"}, "cpu": {"flags": ["avx", "sse2"]},
                                               "lockfiles": {"r.txt": {"packages": {"numpy": "1.26.0", "scipy": "1.11"}}}})").as_object();
    const json::object after = json::parse(R"({"libraries": {"boost": "1.83.0", "blas": "none"}, "cpu": {"flags": ["avx", "avx2"]},
                                              "lockfiles": {"r.txt": {"packages": {"numpy": "1.26.0", "jaxlib": "0.4.30"}}}})").as_object();
    const auto changes = diff_fingerprints(before, after);
    REQUIRE(changes.size() == 4);
    CHECK(describe_change(changes[0]) == "libraries.boost: 1.81.0 → 1.83.0");
    CHECK(describe_change(changes[1]) == "lockfiles.r.txt.packages.jaxlib: added 0.4.30");
    CHECK(describe_change(changes[2]) == "lockfiles.r.txt.packages.scipy: removed (was 1.11)");
    CHECK(describe_change(changes[3]) == "cpu.flags: +avx2 -sse2");  // the machine's, last
    CHECK(machine_changes(changes) == 1);
    CHECK(changes[3].machine);
    CHECK(diff_fingerprints(after, after).empty());
}

TEST_CASE("one lock file on each side under two names is compared pin by pin, and a lock file is counted by its pins", "[fingerprint]") {
    // An A/B whose sides' lock files are requirements-old.lock and requirements.lock: it said
    // one was removed and the other added, "(2 entries)" each, the JSON's keys, not the pins.
    const json::object a = json::parse(R"({"lockfiles": {"requirements-old.lock": {"format": "pip",
        "packages": {"jax": "0.7.2", "jaxlib": "0.7.2", "numpy": "2.2.0"}}}})").as_object();
    const json::object b = json::parse(R"({"lockfiles": {"requirements.lock": {"format": "pip",
        "packages": {"jax": "0.10.2", "jaxlib": "0.10.2", "numpy": "2.2.0"}}}})").as_object();
    const auto changes = diff_fingerprints(a, b);
    REQUIRE(changes.size() == 2);
    CHECK(describe_change(changes[0]) == "lockfiles.requirements.lock.packages.jax: 0.7.2 → 0.10.2");
    CHECK(describe_change(changes[1]) == "lockfiles.requirements.lock.packages.jaxlib: 0.7.2 → 0.10.2");
    // Two lock files on one side: each name is its own lock; one new one is counted by its pins.
    json::object two = b;
    two["lockfiles"].as_object()["constraints.lock"] = json::object{{"format", "pip"}, {"packages", json::object{{"absl-py", "2.1.0"}}}};
    const auto added = diff_fingerprints(b, two);
    REQUIRE(added.size() == 1);
    CHECK(describe_change(added[0]) == "lockfiles.constraints.lock: added (1 package pinned)");
}

TEST_CASE("the fingerprint diff puts the bump first and the machine after it, and lists nothing that did not move", "[fingerprint]") {
    // A baseline recorded on another machine by an older attngate: no "loaded" section, a
    // library this build does not link, flags in another order, an empty plugins object.
    const json::object baseline = json::parse(R"({"toolchain": {"compiler": "g++ 12.2.0"},
        "libraries": {"boost": "1.81.0", "catch2": "2.13.10"},
        "cpu": {"model": "Intel(R) Xeon(R) Processor", "cores": 2, "flags": ["avx512f", "sse2"]}, "os": {"kernel": "Linux 6.1"},
        "kernels": {"flash": "2.1.0"},
        "lockfiles": {"requirements.lock": {"packages": {"jax": "0.10.2", "numpy": "2.2.0"}}}})").as_object();
    json::object fresh = json::parse(R"({"toolchain": {"compiler": "g++ 12.2.0"},
        "libraries": {"boost": "1.81.0"},
        "cpu": {"model": "AMD EPYC", "cores": 2, "flags": ["sse2", "sse4a"]}, "os": {"kernel": "Linux 6.18"},
        "kernels": {"flash": "2.1.0"}, "plugins": {},
        "lockfiles": {"requirements.lock": {"packages": {"numpy": "2.2.0", "jax": "0.10.2"}}}})").as_object();
    auto changes = diff_fingerprints(baseline, fresh);
    CHECK(machine_changes(changes) == changes.size());  // no dependency moved: catch2 is not linked, plugins records nothing
    CHECK(changes.size() == 3);
    // A one-package bump on the same machine: the first line, and the only one outside the machine's group.
    fresh["lockfiles"].as_object()["requirements.lock"].as_object()["packages"].as_object()["jax"] = "0.11.0";
    changes = diff_fingerprints(baseline, fresh);
    REQUIRE(changes.size() == 4);
    CHECK(describe_change(changes[0]) == "lockfiles.requirements.lock.packages.jax: 0.10.2 → 0.11.0");
    CHECK_FALSE(changes[0].machine);
    CHECK(machine_changes(changes) == 3);
    // A section the baseline's attngate did not record is one line, not one per leaf.
    fresh["loaded"] = json::object{{"libc.so.6", json::object{{"path", "/lib/libc.so.6"}, {"package", "libc6"}, {"version", "2.36"}}},
                                   {"libm.so.6", json::object{{"path", "/lib/libm.so.6"}, {"package", "libc6"}, {"version", "2.36"}}}};
    changes = diff_fingerprints(baseline, fresh);
    REQUIRE(changes.size() == 5);
    CHECK(describe_change(changes[0]) == "loaded: added (2 entries)");  // the libraries loaded come before the lock files
    json::object more = fresh;
    more["loaded"].as_object()["libz.so.1"] = json::object{{"path", "/lib/libz.so.1"}, {"package", "zlib1g"}, {"version", "1.2.13"}};
    CHECK(describe_change(diff_fingerprints(fresh, more).at(0)) == "loaded.libz.so.1: added zlib1g 1.2.13");
}

TEST_CASE("the collected fingerprint names the toolchain libraries machine and kernels", "[fingerprint]") {
    const Backends backends = test::builtin_backends();
    auto fp = collect_fingerprint(backends.kernels(), backends.fingerprint(), {});
    REQUIRE(fp);
    const auto flat = flatten_fingerprint(*fp);
    const auto has = [&](std::string_view key) {
        return std::any_of(flat.begin(), flat.end(), [&](const auto &kv) { return kv.first == key && !kv.second.empty(); });
    };
    for (const char *key : {"toolchain.compiler", "toolchain.cxx_stdlib", "toolchain.glibc", "toolchain.build_type", "toolchain.cxx_flags",
                            "libraries.boost", "libraries.libcurl", "libraries.openssl", "libraries.sleef", "libraries.openblas.path",
                            "libraries.google_benchmark", "cpu.model", "cpu.cores", "os.kernel", "kernels.reference", "kernels.flash"})
        CHECK(has(key));
    // Catch2 links the tests only: not a dependency of what the gate runs.
    CHECK_FALSE(fp->at("libraries").as_object().contains("catch2"));
    CHECK_THAT(std::string(fp->at("toolchain").at("cxx_flags").as_string()), Catch::Contains("-ffp-contract=off"));
}

TEST_CASE("the fingerprint names the compiler that built it, not always g++", "[fingerprint]") {
    auto fp = collect_fingerprint({}, {}, {});
    REQUIRE(fp);
    const std::string compiler(fp->at("toolchain").at("compiler").as_string());
#if defined(__clang__)
    CHECK(compiler.starts_with(fmt::format("clang {}.", __clang_major__)));
#else
    CHECK(compiler.starts_with(fmt::format("g++ {}.", __GNUC__)));
#endif
}

TEST_CASE("the fingerprint lists the shared objects loaded with their packages", "[fingerprint]") {
    auto fp = collect_fingerprint({}, {}, {});
    REQUIRE(fp);
    const json::object &loaded = fp->at("loaded").as_object();
    // Linked by the harness, so loaded in every attngate process, under their sonames.
    for (const char *soname : {"libc.so.6", "libcurl.so.4", "libsleef.so.3"}) {
        INFO(soname);
        REQUIRE(loaded.contains(soname));
        const json::object &lib = loaded.at(soname).as_object();
        CHECK(std::filesystem::path(std::string(lib.at("path").as_string())).is_absolute());
        if (std::filesystem::exists("/var/lib/dpkg/status") && !std::getenv("DPKG_ADMINDIR")) {
            CHECK(lib.contains("package"));
            CHECK_FALSE(std::string(lib.at("version").as_string()).empty());
        }
    }
    if (std::filesystem::exists("/var/lib/dpkg/status") && !std::getenv("DPKG_ADMINDIR"))
        CHECK(loaded.at("libc.so.6").at("package").as_string() == "libc6");
    CHECK_FALSE(loaded.contains(""));  // neither the program nor the vDSO
}

TEST_CASE("file origins come from dpkg's file lists and status, else from the file's bytes", "[fingerprint]") {
    test::TempDir dir;
    const auto lib = write(dir, "libfake.so.1.2", "ELF, say");
    const auto other = write(dir, "libother.so.7", "other bytes");
    std::filesystem::create_symlink(lib, dir / "libfake.so.1");
    std::filesystem::create_directories(dir / "admin" / "info");
    write(dir, "admin/info/libfake1:amd64.list", "/.\n" + std::filesystem::canonical(lib).string() + "\n");
    write(dir, "admin/info/unrelated.list", "/usr/bin/unrelated\n");
    write(dir, "admin/status",
          "Package: unrelated\nStatus: install ok installed\nArchitecture: all\nVersion: 9\n\n"
          "Package: libfake1\nStatus: deinstall ok config-files\nArchitecture: i386\nVersion: 0.1\n\n"
          "Package: libfake1\nStatus: install ok installed\nArchitecture: amd64\nVersion: 1.2-3+deb12u1\n");
    const char *was = std::getenv("DPKG_ADMINDIR");
    const std::string saved = was ? was : "";
    ::setenv("DPKG_ADMINDIR", (dir / "admin").c_str(), 1);
    const auto origins = file_origins({dir / "libfake.so.1", other, dir / "gone.so"});
    if (was) ::setenv("DPKG_ADMINDIR", saved.c_str(), 1);
    else ::unsetenv("DPKG_ADMINDIR");
    REQUIRE(origins.size() == 3);
    CHECK(origins[0].at("path").as_string() == std::filesystem::canonical(lib).string());  // through the symlink
    CHECK(origins[0].at("package").as_string() == "libfake1");
    CHECK(origins[0].at("version").as_string() == "1.2-3+deb12u1");
    CHECK_FALSE(origins[1].contains("package"));
    CHECK(origins[1].at("sha256").as_string() == sha256_hex("other bytes"));
    CHECK(origins[2].at("missing").as_bool());
}

TEST_CASE("a loaded plugin's toolchain: its .comment compilers and its DT_NEEDED as the loader resolved them", "[fingerprint]") {
    // libsleef is loaded in every attngate process: it stands for a plugin here.
    auto fp = collect_fingerprint({}, {}, {});
    REQUIRE(fp);
    const std::string sleef(fp->at("loaded").at("libsleef.so.3").at("path").as_string());
    auto plugins = plugin_toolchains({"built-in", "/nonexistent/libgone.so", "http://127.0.0.1:1/adapter", sleef});
    REQUIRE(plugins);
    const std::string key = std::filesystem::path(sleef).filename().string();
    REQUIRE(plugins->size() == 1);  // only what this process loaded
    REQUIRE(plugins->contains(key));
    const json::object &p = plugins->at(key).as_object();
    CHECK(p.at("compilers").is_array());  // Debian strips .comment from its packages: often empty
    const json::object &needed = p.at("needed").as_object();
    REQUIRE(needed.contains("libc.so.6"));  // its one DT_NEEDED, resolved to the libc this process runs
    CHECK(needed.at("libc.so.6").at("path").as_string() == fp->at("loaded").at("libc.so.6").at("path").as_string());
    if (std::filesystem::exists("/var/lib/dpkg/status") && !std::getenv("DPKG_ADMINDIR"))
        CHECK(needed.at("libc.so.6").at("package").as_string() == "libc6");
}

TEST_CASE("the fingerprint records each loaded plugin's toolchain under plugins", "[fingerprint]") {
    KernelInfo builtin;
    builtin.name = "flash";
    builtin.origin = "built-in";
    auto fp = collect_fingerprint({&builtin}, {}, {});
    REQUIRE(fp);
    CHECK(fp->at("plugins").as_object().empty());  // the built-ins are attngate's own toolchain
}

TEST_CASE("a collected fingerprint has its schema's shape, and each wrong type is named by path", "[fingerprint]") {
    const Backends backends = test::builtin_backends();
    auto fp = collect_fingerprint(backends.kernels(), backends.fingerprint(), {});
    REQUIRE(fp);
    CHECK_FALSE(fingerprint_shape_error(*fp));
    json::object bad = *fp;
    bad["kernels"].as_object()["flash"] = 2147483648LL;  // what e2e_fuzz found copied into results.json
    CHECK(fingerprint_shape_error(bad) == "$.kernels.flash: expected a string");
    bad = *fp;
    bad["cpu"].as_object()["cores"] = -2;
    CHECK(fingerprint_shape_error(bad, "$.fp") == "$.fp.cpu.cores: expected a count of cores");
    bad = *fp;
    bad["loaded"].as_object()["libc.so.6"].as_object().erase("path");
    CHECK(fingerprint_shape_error(bad) == "$.loaded.libc.so.6: expected a field \"path\"");
    bad = *fp;
    bad["lockfiles"] = json::object{{"r.txt", json::object{{"format", "yarn"}}}};
    CHECK(fingerprint_shape_error(bad) == "$.lockfiles.r.txt.format: expected pip, npm, vcpkg, conan or opaque");
    CHECK(fingerprint_shape_error(json::object{}) == std::nullopt);
}
