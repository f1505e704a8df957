// `attngate bench`: parse the options, run the bench library, print the tables (or one JSON document).
#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "attngate/kernel_tools.hpp"
#include "command.hpp"
#include "common.hpp"
#include "io/json_io.hpp"
#include "run/bench.hpp"
#include "run/memory_bandwidth.hpp"
#include "run/sgemm_ceiling.hpp"

namespace attngate::cli {

namespace {

struct BenchArgs {
    BenchOptions options;
    bool quick = false, json = false;
    std::vector<std::string> dtypes, masks, rows;
    int64_t stream_mib = 0;
};

double gib(int64_t bytes) { return static_cast<double>(bytes) / static_cast<double>(int64_t{1} << 30); }

/// Where the figures were measured, for the JSON document.
json::object bench_machine(int cpus) {
    return json::object{{"kernel_path", kernels::active_path()}, {"detected_path", kernels::detected_path()}, {"cpus", cpus},
                        {"blas", blas_description()}, {"bf16_products", kernels::bf16_products()},
                        {"last_level_cache_bytes", last_level_cache_bytes()}};
}

void print_tables(const BenchOptions &o, const BenchResults &r, const Console &console) {
    if (o.attention_rows) {
        console.say("{}\n", bench_header());
        for (const auto &row : r.rows) console.say("{}\n", format_bench_row(row));
    }
    if (o.decode_rows) {
        console.say("\ndecode: one query per sequence over a paged KV cache (scattered pages); KV GB/s = K and V bytes read "
                    "once / time; ratio = KV GB/s / the better of STREAM copy and triad, same threads, same run\n");
        console.say("{}\n", decode_header());
        for (const auto &row : r.decode) console.say("{}\n", format_decode_row(row));
    }
}

/// The command line's lists into the bench library's options; a usage error when they disagree.
Result<void> apply_args(BenchArgs &a) {
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
    if (!a.rows.empty()) {
        o.attention_rows = std::find(a.rows.begin(), a.rows.end(), "attention") != a.rows.end();
        o.decode_rows = std::find(a.rows.begin(), a.rows.end(), "decode") != a.rows.end();
    }
    o.stream_bytes = a.stream_mib << 20;
    if (o.decode.heads_q % o.decode.heads_kv != 0)
        return fail(ErrorKind::Usage, "--decode-kv-heads {}: expected a divisor of --decode-heads {}", o.decode.heads_kv, o.decode.heads_q);
    return {};
}

int bench(BenchArgs a, const Console &console) {
    if (auto ok = apply_args(a); !ok) return report_error(ok.error());
    const BenchOptions &o = a.options;
    const KernelRegistry reg = KernelRegistry::with_builtins();
    const int all = kernels::default_threads();
    const auto configs = bench_configs(o, all);
    // Every size is in range, but their products can still exceed the machine (14.7 GB for a
    // decode row inside every documented range): refused before anything is allocated.
    if (const BenchBytes need = bench_bytes(o, configs, all); need.total() > available_memory_bytes())
        return report_error(Error{ErrorKind::Usage,
                                  fmt::format("bench: needs about {:.1f} GiB at once ({:.1f} for the attention rows of --s and --d, "
                                              "{:.1f} for the decode rows of --decode-*, {:.1f} for the STREAM arrays of --stream-mib), "
                                              "over the {:.1f} GiB this machine has available; choose smaller sizes",
                                              gib(need.total()), gib(need.attention), gib(need.decode), gib(need.stream),
                                              gib(available_memory_bytes()))});
    if (a.json) {  // one JSON document on stdout, nothing else
        auto results = run_bench(reg, configs, o);
        if (!results) return report_error(results.error());
        json::object doc = bench_json(*results);
        doc["machine"] = bench_machine(all);
        doc["repetitions"] = o.repetitions;
        console.data(pretty_json(doc) + "\n");
        return kExitPass;
    }
    console.say("attngate bench: B = 1, Sq = Sk = S, Hq = Hkv = heads, Dv = D; GFLOP/s = 2 (D + Dv) x kept scores / time\n");
    console.say("kernel path: {} (CPU supports {}); {} CPUs; BLAS: {}\n", kernels::active_path(), kernels::detected_path(), all,
                blas_description());
    console.say("flash's bf16 products: {}\n", kernels::bf16_products());
    console.say("sgemm ceiling: one head's two products (Q K^T, then S V; 512-row blocks) by OpenBLAS on the same thread "
                "count, same run; ratio = GFLOP/s / ceiling\n");
    console.say("measuring {} configurations, {} repetitions each (median), interleaved...\n\n", configs.size(), o.repetitions);
    std::fflush(stdout);
    auto results = run_bench(reg, configs, o);
    if (!results) return report_error(results.error());
    print_tables(o, *results, console);
    return kExitPass;
}

void add_decode_options(CLI::App *cmd, BenchArgs &a) {
    BenchOptions &o = a.options;
    cmd->add_option("--rows", a.rows, "attention, decode (default both)")->delimiter(',')->check(CLI::IsMember({"attention", "decode"}));
    cmd->add_option("--decode-kernel", o.decode_kernels, "kernels of the decode rows")->delimiter(',')->capture_default_str();
    cmd->add_option("--decode-sequences", o.decode.sequences, "decode rows: sequences")->check(CLI::Range(1, 4096))->capture_default_str();
    cmd->add_option("--decode-kv-len", o.decode.kv_len, "decode rows: keys per sequence")->check(CLI::Range(1, 1 << 22))->capture_default_str();
    cmd->add_option("--decode-heads", o.decode.heads_q, "decode rows: query heads")->check(CLI::Range(1, 1024))->capture_default_str();
    cmd->add_option("--decode-kv-heads", o.decode.heads_kv, "decode rows: kv heads (divides the query heads)")
        ->check(CLI::Range(1, 1024))->capture_default_str();
    cmd->add_option("--decode-d", o.decode.head_dim, "decode rows: head dim")->check(CLI::Range(1, 1024))->capture_default_str();
    cmd->add_option("--decode-page-size", o.decode.page_size, "decode rows: slots per page")->check(CLI::Range(1, 1 << 16))->capture_default_str();
    cmd->add_option("--stream-mib", a.stream_mib, "MiB per STREAM array; 0: four times the last-level cache (64 MiB .. 1 GiB)")
        ->check(CLI::Range(0, 1 << 16))->capture_default_str();
}

}  // namespace

Command add_bench_command(CLI::App &app, Console &console) {
    auto a = std::make_shared<BenchArgs>();
    BenchOptions &o = a->options;
    auto *cmd = app.add_subcommand("bench", "GFLOP/s of the built-in kernels beside the BLAS sgemm ceiling, same run");
    cmd->add_flag("--quick", a->quick, "only S = 2048, D = 128");
    cmd->add_option("--s", o.seqs, "sequence lengths (Sq = Sk)")->delimiter(',')->check(CLI::Range(1, 1 << 20))->capture_default_str();
    cmd->add_option("--d", o.head_dims, "head dims (D = Dv)")->delimiter(',')->check(CLI::Range(1, 1024))->capture_default_str();
    cmd->add_option("--threads", o.threads, "thread counts; 0: all CPUs")->delimiter(',')->check(CLI::Range(0, 1024))->capture_default_str();
    cmd->add_option("--kernel", o.kernels, "kernels")->delimiter(',')->capture_default_str();
    cmd->add_option("--dtype", a->dtypes, "f32, bf16 (default both)")->delimiter(',')->check(CLI::IsMember({"f32", "bf16"}));
    cmd->add_option("--mask", a->masks, "full, causal (default both)")->delimiter(',')->check(CLI::IsMember({"full", "causal"}));
    cmd->add_option("--repetitions", o.repetitions, "samples per configuration")->check(CLI::PositiveNumber)->capture_default_str();
    cmd->add_option("--min-time", o.min_time_s, "minimum seconds per sample")->check(finite_number(0, 60))->capture_default_str();
    cmd->add_option("--native-max-mib", o.native_max_mib, "skip native where its score matrix per head is larger")
        ->check(CLI::Range(int64_t{0}, int64_t{1} << 24))->capture_default_str();
    add_decode_options(cmd, *a);
    cmd->add_flag("--json", a->json, "print every figure as one JSON document instead of the tables");
    return {cmd, [a, &console] { return bench(*a, console); }};
}

}  // namespace attngate::cli
