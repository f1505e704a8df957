// `attngate bench`: parse the options, run the bench library, print the table.
#include "bench_cmd.hpp"

#include <algorithm>
#include <memory>

#include <fmt/format.h>

#include "attngate/kernel_tools.hpp"
#include "run/bench.hpp"
#include "io/json_io.hpp"
#include "run/memory_bandwidth.hpp"
#include "run/sgemm_ceiling.hpp"
#include "common.hpp"

namespace attngate::cli {
namespace {

struct BenchArgs {
    BenchOptions options;
    bool quick = false, json = false;
    std::vector<std::string> dtypes, masks, rows;
    int64_t stream_mib = 0;
};

/// Where the figures were measured, for the JSON document.
json::object bench_machine(int cpus) {
    return json::object{{"kernel_path", kernels::active_path()}, {"detected_path", kernels::detected_path()}, {"cpus", cpus},
                        {"blas", blas_description()}, {"bf16_products", kernels::bf16_products()},
                        {"last_level_cache_bytes", last_level_cache_bytes()}};
}

void print_tables(const BenchOptions &o, const BenchResults &r) {
    if (o.attention_rows) {
        fmt::print("{}\n", bench_header());
        for (const auto &row : r.rows) fmt::print("{}\n", format_bench_row(row));
    }
    if (o.decode_rows) {
        fmt::print("\ndecode: one query per sequence over a paged KV cache (scattered pages); KV GB/s = K and V bytes read "
                   "once / time; ratio = KV GB/s / the better of STREAM copy and triad, same threads, same run\n");
        fmt::print("{}\n", decode_header());
        for (const auto &row : r.decode) fmt::print("{}\n", format_decode_row(row));
    }
}

int cmd_bench(BenchArgs a) {
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
        return report_error(fail(ErrorKind::Usage, "--decode-kv-heads {}: expected a divisor of --decode-heads {}", o.decode.heads_kv,
                                 o.decode.heads_q).error());
    const KernelRegistry reg = KernelRegistry::with_builtins();
    const int all = kernels::default_threads();
    const auto configs = bench_configs(o, all);
    if (a.json) {  // one JSON document on stdout, nothing else
        auto results = run_bench(reg, configs, o);
        if (!results) return report_error(results.error());
        json::object doc = bench_json(*results);
        doc["machine"] = bench_machine(all);
        doc["repetitions"] = o.repetitions;
        fmt::print("{}\n", pretty_json(doc));
        return 0;
    }
    fmt::print("attngate bench: B = 1, Sq = Sk = S, Hq = Hkv = heads, Dv = D; GFLOP/s = 2 (D + Dv) x kept scores / time\n");
    fmt::print("kernel path: {} (CPU supports {}); {} CPUs; BLAS: {}\n", kernels::active_path(), kernels::detected_path(), all,
               blas_description());
    fmt::print("flash's bf16 products: {}\n", kernels::bf16_products());
    fmt::print("sgemm ceiling: one head's two products (Q K^T, then S V; 512-row blocks) by OpenBLAS on the same thread "
               "count, same run; ratio = GFLOP/s / ceiling\n");
    fmt::print("measuring {} configurations, {} repetitions each (median), interleaved...\n\n", configs.size(), o.repetitions);
    std::fflush(stdout);
    auto results = run_bench(reg, configs, o);
    if (!results) return report_error(results.error());
    print_tables(o, *results);
    return 0;
}

}  // namespace

std::function<int()> add_bench_command(CLI::App &app) {
    auto args = std::make_shared<BenchArgs>();
    BenchOptions &o = args->options;
    auto *bench = app.add_subcommand("bench", "GFLOP/s of the built-in kernels beside the BLAS sgemm ceiling, same run");
    bench->add_flag("--quick", args->quick, "only S = 2048, D = 128");
    bench->add_option("--s", o.seqs, "sequence lengths (Sq = Sk)")->delimiter(',')->capture_default_str();
    bench->add_option("--d", o.head_dims, "head dims (D = Dv)")->delimiter(',')->capture_default_str();
    bench->add_option("--threads", o.threads, "thread counts; 0: all CPUs")->delimiter(',')->capture_default_str();
    bench->add_option("--kernel", o.kernels, "kernels")->delimiter(',')->capture_default_str();
    bench->add_option("--dtype", args->dtypes, "f32, bf16 (default both)")->delimiter(',')->check(CLI::IsMember({"f32", "bf16"}));
    bench->add_option("--mask", args->masks, "full, causal (default both)")->delimiter(',')->check(CLI::IsMember({"full", "causal"}));
    bench->add_option("--repetitions", o.repetitions, "samples per configuration")->check(CLI::PositiveNumber)->capture_default_str();
    bench->add_option("--min-time", o.min_time_s, "minimum seconds per sample")->check(cli::finite_number(0, 60))->capture_default_str();
    bench->add_option("--native-max-mib", o.native_max_mib, "skip native where its score matrix per head is larger")
        ->capture_default_str();
    bench->add_option("--rows", args->rows, "attention, decode (default both)")->delimiter(',')->check(CLI::IsMember({"attention", "decode"}));
    bench->add_option("--decode-kernel", o.decode_kernels, "kernels of the decode rows")->delimiter(',')->capture_default_str();
    bench->add_option("--decode-sequences", o.decode.sequences, "decode rows: sequences")->check(CLI::Range(1, 4096))->capture_default_str();
    bench->add_option("--decode-kv-len", o.decode.kv_len, "decode rows: keys per sequence")->check(CLI::Range(1, 1 << 22))->capture_default_str();
    bench->add_option("--decode-heads", o.decode.heads_q, "decode rows: query heads")->check(CLI::Range(1, 1024))->capture_default_str();
    bench->add_option("--decode-kv-heads", o.decode.heads_kv, "decode rows: kv heads (divides the query heads)")
        ->check(CLI::Range(1, 1024))->capture_default_str();
    bench->add_option("--decode-d", o.decode.head_dim, "decode rows: head dim")->check(CLI::Range(1, 1024))->capture_default_str();
    bench->add_option("--decode-page-size", o.decode.page_size, "decode rows: slots per page")->check(CLI::Range(1, 1 << 16))->capture_default_str();
    bench->add_option("--stream-mib", args->stream_mib, "MiB per STREAM array; 0: four times the last-level cache (64 MiB .. 1 GiB)")
        ->check(CLI::Range(0, 1 << 16))->capture_default_str();
    bench->add_flag("--json", args->json, "print every figure as one JSON document instead of the tables");
    return [=]() -> int { return *bench ? cmd_bench(*args) : -1; };
}

}  // namespace attngate::cli
