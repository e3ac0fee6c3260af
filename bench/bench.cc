// bench.cc — main of ./bench: registers the C benchmark files' cases (see
// shim.h) and hands the command line to Google Benchmark, so every
// --benchmark_* flag works (--benchmark_filter=sgemm, --benchmark_min_time=0.2
// in plain seconds for libbenchmark 1.7, --benchmark_format=json, ...),
// --headlines for the table of every headline figure (see shim.h),
// --summary for the short table of the issue rows with the kernels chosen
// (bench_summary.c), and --tune for the GEMM tuning harness (bench_tune.c).
#include <benchmark/benchmark.h>

#include <cstring>

#include "mhsa.h"
#include "shim.h"

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (std::strcmp(argv[i], "--tune") == 0)
            return mhsa_bench_tune(argc, argv);
        else if (std::strcmp(argv[i], "--summary") == 0)
            return mhsa_bench_summary(argc, argv);
    mhsa_bench_register_roofline();
    mhsa_bench_register_attention();
    mhsa_bench_register_latency();
    mhsa_bench_register_decode();
    mhsa_bench_register_step();
    mhsa_bench_register_variants();
    mhsa_bench_register_bf16();
    mhsa_bench_register_gpt();
    mhsa_bench_register_adversarial();
    mhsa_bench_register_compute_bf16();
    mhsa_bench_register_phases();
    mhsa_bench_register_threads();
    mhsa_bench_register_quant();
    mhsa_bench_register_kernels();   // last: OpenBLAS's spinning pool

    benchmark::AddCustomContext("mhsa_version", mhsa_version());
    benchmark::AddCustomContext("mhsa_active_isa",
                                mhsa_isa_name(mhsa_active_isa()));
    return mhsa_bench_main(argc, argv);
}
