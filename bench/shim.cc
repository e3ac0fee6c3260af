// shim.cc — the C interface of shim.h over Google Benchmark's C++ API.
#include "shim.h"

#include <string>
#include <vector>

#include <benchmark/benchmark.h>

// The C side only ever holds a pointer; it is a benchmark::State underneath.
static benchmark::State &S(mhsa_bench_state *st)
{
    return *reinterpret_cast<benchmark::State *>(st);
}
static const benchmark::State &S(const mhsa_bench_state *st)
{
    return *reinterpret_cast<const benchmark::State *>(st);
}

extern "C" int mhsa_bench_add(const char *name, mhsa_bench_fn fn,
                              const void *ctx, int nargs,
                              const int64_t *args,
                              const char *const *arg_names)
{
    if (nargs < 0 || nargs > MHSA_BENCH_MAX_ARGS || (nargs > 0 && !args))
        return -1;
    auto *b = benchmark::RegisterBenchmark(
        name, [fn, ctx](benchmark::State &s) {
            fn(reinterpret_cast<mhsa_bench_state *>(&s), ctx);
        });
    if (nargs > 0) {
        b->Args(std::vector<int64_t>(args, args + nargs));
        if (arg_names)
            b->ArgNames(std::vector<std::string>(arg_names,
                                                 arg_names + nargs));
    }
    // OpenMP (or OpenBLAS) threads do the work: the benchmark thread's CPU
    // time would miss theirs, so time and rates are per wall-clock second.
    b->UseRealTime();
    b->Unit(benchmark::kMicrosecond);
    return 0;
}

extern "C" int64_t mhsa_bench_arg(const mhsa_bench_state *st, int i)
{
    return S(st).range(static_cast<size_t>(i));
}

extern "C" int mhsa_bench_keep_running(mhsa_bench_state *st)
{
    return S(st).KeepRunning();
}

extern "C" int mhsa_bench_keep_running_batch(mhsa_bench_state *st, int64_t n)
{
    return S(st).KeepRunningBatch(n);
}

extern "C" int64_t mhsa_bench_iterations(const mhsa_bench_state *st)
{
    return S(st).iterations();
}

extern "C" void mhsa_bench_skip(mhsa_bench_state *st, const char *msg)
{
    S(st).SkipWithError(msg);
}

extern "C" void mhsa_bench_pause(mhsa_bench_state *st) { S(st).PauseTiming(); }
extern "C" void mhsa_bench_resume(mhsa_bench_state *st)
{
    S(st).ResumeTiming();
}

extern "C" void mhsa_bench_set_items(mhsa_bench_state *st, int64_t items)
{
    S(st).SetItemsProcessed(items);
}

extern "C" void mhsa_bench_set_bytes(mhsa_bench_state *st, int64_t bytes)
{
    S(st).SetBytesProcessed(bytes);
}

extern "C" void mhsa_bench_counter(mhsa_bench_state *st, const char *name,
                                   double v)
{
    S(st).counters[name] = benchmark::Counter(v);
}

extern "C" void mhsa_bench_rate(mhsa_bench_state *st, const char *name,
                                double per_iter)
{
    // Iteration-invariant rate: Google Benchmark multiplies by the
    // iteration count and divides by the (wall-clock) time.
    S(st).counters[name] = benchmark::Counter(
        per_iter, benchmark::Counter::kIsIterationInvariantRate);
}

extern "C" void mhsa_bench_use(const void *p)
{
    benchmark::DoNotOptimize(p);
    benchmark::ClobberMemory();
}
