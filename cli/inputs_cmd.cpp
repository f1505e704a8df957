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

int write_inputs(const InputsArgs &a, const Console &console) {
    auto suite = resolve_suite(a.suite);
    if (!suite) return report_error(suite.error());
    const CaseSpec *c = suite->find_case(a.case_id);
    if (!c) return report_error(Error{ErrorKind::Usage, fmt::format("--case {}: not a case of {}", a.case_id, suite->file.string())});
    if (auto ok = replaceable_output_dir("--out", a.out, kCaseInputsDir); !ok) return report_error(ok.error());
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
