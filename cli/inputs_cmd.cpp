// `attngate inputs`: one case's inputs as .npy files plus case.json.
#include <filesystem>

#include <fmt/format.h>

#include "command.hpp"
#include "common.hpp"
#include "io/json_io.hpp"
#include "plan/inputs.hpp"

namespace attngate::cli {

namespace {

struct InputsArgs {
    std::string suite, case_id, out;
};

/// Whether `dir` may receive a case's inputs: absent, or a directory that holds no .npy or
/// case.json but an earlier `attngate inputs` output's. Anything else would lose a file.
Result<void> inputs_dir_replaceable(const std::filesystem::path &dir) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(dir, ec))) return {};
    if (!fs::is_directory(dir, ec))
        return fail(ErrorKind::Usage, "--out {}: not a directory (the inputs are several files: give a directory's path)", dir.string());
    const fs::path desc = dir / "case.json";
    bool ours = false;
    if (fs::exists(desc, ec)) {
        auto doc = load_json_file(desc);
        ours = doc && doc->is_object() && doc->as_object().contains("generator_version") && doc->as_object().contains("inputs_sha256");
        if (!ours)
            return fail(ErrorKind::Usage, "--out {}: its case.json is not one `attngate inputs` wrote, and would be replaced; choose "
                        "another directory", dir.string());
    }
    if (!ours)
        for (auto it = fs::directory_iterator(dir, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
            if (it->path().extension() == ".npy")
                return fail(ErrorKind::Usage, "--out {}: holds {}, which is not an `attngate inputs` output (no case.json of ours) and "
                            "could be replaced; choose another directory", dir.string(), it->path().filename().string());
    return {};
}

int write_inputs(const InputsArgs &a, const Console &console) {
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    const CaseSpec *c = suite->find_case(a.case_id);
    if (!c) return report_error(Error{ErrorKind::Usage, fmt::format("--case {}: not a case of {}", a.case_id, suite->file.string())});
    if (auto ok = inputs_dir_replaceable(a.out); !ok) return report_error(ok.error());
    if (auto w = write_case_inputs(*suite, *c, a.out); !w) return report_error(w.error());
    console.say("wrote the inputs of {}/{} to {}\n", suite->name, a.case_id, a.out);
    return kExitPass;
}

}  // namespace

Command add_inputs_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<InputsArgs>();
    auto *cmd = app.add_subcommand("inputs", "write one case's inputs as .npy plus case.json");
    add_suite_option(cmd, a->suite);
    cmd->add_option("--case", a->case_id, "case id")->required();
    add_out_option(cmd, a->out, "output directory")->required();
    return {cmd, [a, &console] { return write_inputs(*a, console); }};
}

}  // namespace attngate::cli
