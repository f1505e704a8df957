// The Store seam: key confinement, and the directory store's get, list and conditional
// put (a stale version or an existing object is a conflict, nothing is overwritten).
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "store/directory_store.hpp"
#include "store/keys.hpp"
#include "store/layered_store.hpp"
#include "test_support.hpp"

using namespace attngate;

TEST_CASE("keys stay inside the store", "[store]") {
    CHECK_FALSE(invalid_key("goldens/smoke/manifest.json"));
    CHECK_FALSE(invalid_key("perf/"));
    CHECK(invalid_key(""));
    CHECK(invalid_key("/etc/passwd"));
    CHECK(invalid_key("goldens/../../x"));
    CHECK(invalid_key("goldens//x"));
    CHECK(invalid_key("./x"));
    CHECK(invalid_key("a\\b"));
    CHECK(*golden_key("smoke", "manifest.json") == "goldens/smoke/manifest.json");
    CHECK_FALSE(golden_key("..", "manifest.json"));
    CHECK_THAT(golden_key("..", "x").error().message, Catch::Contains("cannot name a stored object"));
    CHECK_FALSE(golden_key("smoke", "a/b.npy"));
    CHECK(*baseline_key(CheckName::Perf, "smoke", "Intel(R) Xeon(R) x2") == "perf/Intel_R__Xeon_R__x2/smoke.json");
    CHECK(*baseline_key(CheckName::Memory, "smoke") == "memory/smoke.json");
    CHECK(key_component("..") == "_..");
    CHECK(key_component("") == "_");
}

TEST_CASE("directory store reads, lists and writes with preconditions", "[store]") {
    test::TempDir dir;
    DirectoryStore store(dir.path());
    CHECK_FALSE(*store.get("a/b.json"));
    auto v1 = store.put("a/b.json", "one", Precondition::must_not_exist());
    REQUIRE(v1);
    auto got = store.get("a/b.json");
    REQUIRE(got);
    REQUIRE(*got);
    CHECK((*got)->bytes == "one");
    CHECK((*got)->version == *v1);

    // A second "create" of other bytes conflicts; of the same bytes it does not.
    auto again = store.put("a/b.json", "two", Precondition::must_not_exist());
    REQUIRE_FALSE(again);
    CHECK(again.error().kind == ErrorKind::Conflict);
    CHECK(store.put("a/b.json", "one", Precondition::must_not_exist()));

    // Two writers read version 1; the first wins, the second gets a conflict, and the
    // first writer's bytes are still there.
    REQUIRE(store.put("a/b.json", "first", Precondition::matches(*v1)));
    auto second = store.put("a/b.json", "second", Precondition::matches(*v1));
    REQUIRE_FALSE(second);
    CHECK(second.error().kind == ErrorKind::Conflict);
    CHECK_THAT(second.error().message, Catch::Contains("changed since it was read"));
    CHECK((*store.get("a/b.json"))->bytes == "first");
    CHECK(exit_code_for(second.error().kind) == kExitInfra);

    REQUIRE(store.put("a/c/d.json", "x", Precondition::none()));
    test::write_text(dir / "a" / "e.json.tmp-123", "partial");
    CHECK(*store.list("a/") == std::vector<std::string>{"a/b.json", "a/c/d.json"});
    CHECK(store.list("missing/")->empty());
    CHECK_FALSE(store.put("../escape", "x", Precondition::none()));
    CHECK_FALSE(store.get("/etc/passwd"));
}

TEST_CASE("concurrent conditional writers in separate processes never lose an update", "[store]") {
    // Eight processes each append their line 20 times with read, modify, conditional put,
    // retrying on conflict: every one of the 160 lines must be there at the end.
    test::TempDir dir;
    constexpr int kWriters = 8, kAppends = 20;
    std::vector<pid_t> children;
    for (int w = 0; w < kWriters; ++w) {
        const pid_t pid = ::fork();
        REQUIRE(pid >= 0);
        if (pid == 0) {
            DirectoryStore store(dir.path());
            for (int i = 0; i < kAppends; ++i)
                for (;;) {
                    auto cur = store.get("log.txt");
                    if (!cur) ::_exit(2);
                    const std::string before = *cur ? (*cur)->bytes : "";
                    auto put = store.put("log.txt", before + fmt::format("{}:{}\n", w, i),
                                         Precondition::matches(*cur ? (*cur)->version : ""));
                    if (put) break;
                    if (put.error().kind != ErrorKind::Conflict) ::_exit(3);
                }
            ::_exit(0);
        }
        children.push_back(pid);
    }
    for (pid_t pid : children) {
        int status = 0;
        ::waitpid(pid, &status, 0);
        CHECK(WIFEXITED(status));
        CHECK(WEXITSTATUS(status) == 0);
    }
    DirectoryStore store(dir.path());
    const std::string log = (*store.get("log.txt"))->bytes;
    CHECK(std::count(log.begin(), log.end(), '\n') == kWriters * kAppends);
}

TEST_CASE("a folder replaces another whole, and a staged folder is never listed", "[store]") {
    test::TempDir dir;
    DirectoryStore store(dir.path());
    REQUIRE(store.put("g/s/old.npy", "old", Precondition::none()));
    REQUIRE(store.put("g/s/manifest.json", "old manifest", Precondition::none()));
    REQUIRE(store.put("g/s.tmp-1/manifest.json", "new manifest", Precondition::none()));
    CHECK(*store.list("") == std::vector<std::string>{"g/s/manifest.json", "g/s/old.npy"});
    REQUIRE(store.replace_prefix("g/s.tmp-1/", "g/s/"));
    CHECK(*store.list("") == std::vector<std::string>{"g/s/manifest.json"});
    CHECK((*store.get("g/s/manifest.json"))->bytes == "new manifest");
    CHECK_FALSE(std::filesystem::exists(dir / "g" / "s.tmp-1"));
    // The first generation has nothing to replace.
    REQUIRE(store.put("g/t.tmp-2/a.npy", "a", Precondition::none()));
    REQUIRE(store.replace_prefix("g/t.tmp-2/", "g/t/"));
    CHECK((*store.get("g/t/a.npy"))->bytes == "a");
    REQUIRE(store.remove_prefix("g/t/"));
    CHECK(store.list("g/t/")->empty());
    CHECK(store.remove_prefix("g/none/"));
}

TEST_CASE("the layered store names the file a read came from, the installed one when the team's lacks it", "[store]") {
    test::TempDir dir;
    auto shipped = std::make_unique<DirectoryStore>(dir / "share");
    REQUIRE(shipped->put("pricing.json", "{}", Precondition::none()));
    LayeredStore store(std::make_unique<DirectoryStore>(dir / "team"), std::move(shipped));
    CHECK(store.where("pricing.json") == (dir / "team" / "pricing.json").string());  // nothing read yet: where a write goes
    REQUIRE(store.get("pricing.json").value());
    CHECK(store.where("pricing.json") == (dir / "share" / "pricing.json").string());  // an error about it names this file
    REQUIRE(store.put("pricing.json", "{\"team\": 1}", Precondition::none()));
    CHECK(store.where("pricing.json") == (dir / "team" / "pricing.json").string());
    REQUIRE(store.get("pricing.json").value());
    CHECK(store.where("pricing.json") == (dir / "team" / "pricing.json").string());
}
