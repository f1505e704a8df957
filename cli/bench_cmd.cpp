// `attngate bench`: parse the options, run the bench library, print the table.
#include <fmt/format.h>

#include "attngate/kernel_tools.hpp"
#include "command.hpp"
#include "common.hpp"
#include "run/bench.hpp"
#include "run/sgemm_ceiling.hpp"

namespace attngate::cli {

namespace {

struct BenchArgs {
    BenchOptions options;
    bool quick = false;
    std::vector<std::string> dtypes, masks;
};

int bench(BenchArgs a, const Console &console) {
    BenchOptions &o = a.options;
    if (a.quick) {
        o.seqs = {2048};
        o.head_dims = {128};
    }
    if (!a.dtypes.empty()) {
        o.dtypes.clear();
        for (const auto &d : a.dtypes) o.dtypes.push_back(d == "bf16" ? ATTNGATE_DTYPE_BF16 : ATTNGATE_DTYPE_F32);
    }
    if (!a.masks.empty()) {
        o.causal.clear();
        for (const auto &m : a.masks) o.causal.push_back(m == "causal");
    }
    const KernelRegistry reg = KernelRegistry::with_builtins();
    const int all = kernels::default_threads();
    const auto configs = bench_configs(o, all);
    console.say("attngate bench: B = 1, Sq = Sk = S, Hq = Hkv = heads, Dv = D; GFLOP/s = 2 (D + Dv) x kept scores / time\n");
    console.say("kernel path: {} (CPU supports {}); {} CPUs; BLAS: {}\n", kernels::active_path(), kernels::detected_path(), all,
                blas_description());
    console.say("flash's bf16 products: {}\n", kernels::bf16_products());
    console.say("sgemm ceiling: one head's two products (Q K^T, then S V; 512-row blocks) by OpenBLAS on the same thread "
                "count, same run; ratio = GFLOP/s / ceiling\n");
    console.say("measuring {} configurations, {} repetitions each (median), interleaved...\n\n", configs.size(), o.repetitions);
    auto rows = run_bench(reg, configs, o);
    if (!rows) return report_error(rows.error());
    console.say("{}\n", bench_header());
    for (const auto &r : *rows) console.say("{}\n", format_bench_row(r));
    return kExitPass;
}

}  // namespace

Command add_bench_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<BenchArgs>();
    BenchOptions &o = a->options;
    auto *cmd = app.add_subcommand("bench", "GFLOP/s of the built-in kernels beside the BLAS sgemm ceiling, same run");
    cmd->add_flag("--quick", a->quick, "only S = 2048, D = 128");
    cmd->add_option("--s", o.seqs, "sequence lengths (Sq = Sk)")->delimiter(',')->capture_default_str();
    cmd->add_option("--d", o.head_dims, "head dims (D = Dv)")->delimiter(',')->capture_default_str();
    cmd->add_option("--threads", o.threads, "thread counts; 0: all CPUs")->delimiter(',')->capture_default_str();
    cmd->add_option("--kernel", o.kernels, "kernels")->delimiter(',')->capture_default_str();
    cmd->add_option("--dtype", a->dtypes, "f32, bf16 (default both)")->delimiter(',')->check(CLI::IsMember({"f32", "bf16"}));
    cmd->add_option("--mask", a->masks, "full, causal (default both)")->delimiter(',')->check(CLI::IsMember({"full", "causal"}));
    cmd->add_option("--repetitions", o.repetitions, "samples per configuration")->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--min-time", o.min_time_s, "minimum seconds per sample")->check(finite_number(0, 60))->capture_default_str();
    cmd->add_option("--native-max-mib", o.native_max_mib, "skip native where its score matrix per head is larger")->capture_default_str();
    return {cmd, [a, &console] { return bench(*a, console); }};
}

}  // namespace attngate::cli
