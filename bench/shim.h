// shim.h — a plain-C face of Google Benchmark, so benchmarks are written in
// C next to the library while the driver stays Google Benchmark (C++).
//
// A benchmark is a C function run with a state handle:
//
//   static void bm_foo(mhsa_bench_state *st, const void *ctx)
//   {
//       size_t n = (size_t)mhsa_bench_arg(st, 0);
//       ... set up, outside the timed loop ...
//       while (mhsa_bench_keep_running(st))
//           foo(n);
//       mhsa_bench_rate(st, "GFLOP", 2.0 * n * n * n * 1e-9);
//   }
//   mhsa_bench_add("foo", bm_foo, NULL, 1, (int64_t[]){ 512 },
//                  (const char *[]){ "n" });
//
// Benchmark files register their cases from one function each (declared
// below and called by main in bench.cc), before the run starts. Every case
// is timed in wall-clock time, since OpenMP threads do the work.
#ifndef MHSA_BENCH_SHIM_H
#define MHSA_BENCH_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mhsa_bench_state mhsa_bench_state;   // a benchmark::State
typedef void (*mhsa_bench_fn)(mhsa_bench_state *st, const void *ctx);

enum { MHSA_BENCH_MAX_ARGS = 8 };

// Registers `fn` under `name` with nargs (<= MHSA_BENCH_MAX_ARGS) integer
// arguments, shown as name/arg_name:value (arg_names may be NULL: values
// only). ctx is passed to fn unchanged and must outlive the run. Returns 0,
// or -1 for a bad nargs.
int mhsa_bench_add(const char *name, mhsa_bench_fn fn, const void *ctx,
                   int nargs, const int64_t *args,
                   const char *const *arg_names);

int64_t mhsa_bench_arg(const mhsa_bench_state *st, int i);

// The timed loop: while (mhsa_bench_keep_running(st)) { one iteration }.
int mhsa_bench_keep_running(mhsa_bench_state *st);
// For kernels of a few ns, where the call above costs as much as the work:
// while (mhsa_bench_keep_running_batch(st, n)) { n iterations }.
int mhsa_bench_keep_running_batch(mhsa_bench_state *st, int64_t n);
// Iterations run so far (after the loop: all of them).
int64_t mhsa_bench_iterations(const mhsa_bench_state *st);

// Marks the case as failed with msg (e.g. an ISA this CPU lacks) and skips
// its timed loop: call it before the loop and return.
void mhsa_bench_skip(mhsa_bench_state *st, const char *msg);

// Stop and restart the clock inside the loop (costly: for setup only).
void mhsa_bench_pause(mhsa_bench_state *st);
void mhsa_bench_resume(mhsa_bench_state *st);

// Totals over all iterations, shown per second (Google Benchmark's own
// items_per_second and bytes_per_second).
void mhsa_bench_set_items(mhsa_bench_state *st, int64_t items);
void mhsa_bench_set_bytes(mhsa_bench_state *st, int64_t bytes);

// A plain counter shown as it is.
void mhsa_bench_counter(mhsa_bench_state *st, const char *name, double v);
// A rate counter: per_iter is the amount one iteration does, in the unit
// `name` gives; it is shown per second of wall-clock time, so
// mhsa_bench_rate(st, "GFLOP", 2e-9 * m * n * k) prints "GFLOP=123.4/s".
void mhsa_bench_rate(mhsa_bench_state *st, const char *name, double per_iter);

// Keeps the compiler from dropping work whose result is never read.
void mhsa_bench_use(const void *p);

// ---- headline figures: the rows of `./bench --headlines` --------------

// What a headline row is checked against (the kernel targets).
typedef enum mhsa_bench_goal {
    MHSA_GOAL_NONE,          // shown only
    MHSA_GOAL_FRAC_MIN,      // the frac counter's median >= target
    MHSA_GOAL_US_MAX,        // median wall time per iteration <= target us
    MHSA_GOAL_SPEEDUP_MIN,   // value / value of the row labelled ref >= target
} mhsa_bench_goal;

typedef struct mhsa_bench_headline {
    const char *label;   // the row's title (copied)
    const char *value;   // rate counter shown, e.g. "GFLOP" (per second)
    const char *frac;    // fraction-of-limit counter shown, or NULL
    mhsa_bench_goal goal;
    double target;
    const char *ref;     // MHSA_GOAL_SPEEDUP_MIN: label of the 1x row
    // Optional: rows with the same pivot (e.g. one decode shape and thread
    // count) are shown again side by side, one column group per `column`
    // (e.g. the cache dtype), after the main table; NULL for none.
    const char *pivot, *column;
} mhsa_bench_headline;

// mhsa_bench_add, and the case becomes a row of the summary table.
int mhsa_bench_add_headline(const mhsa_bench_headline *h, const char *name,
                            mhsa_bench_fn fn, const void *ctx, int nargs,
                            const int64_t *args,
                            const char *const *arg_names);

// A row of the "side by side" table printed after the summary: median time
// of the headline row labelled num over that of den (both must run);
// met when <= max (max 0: shown only). Labels are copied.
int mhsa_bench_add_ratio(const char *label, const char *num,
                         const char *den, double max);

// A case may set the counter "lim_speedup" (the ratio of its limit at its
// thread count to the limit at 1 thread, e.g. DRAM bandwidth at 2 threads
// over 1): MHSA_GOAL_SPEEDUP_MIN rows show it beside their target.

// Registration functions of the benchmark files, called by main in this
// order (the roofline first, so the limits are measured on a quiet
// machine before anything else has warmed it).
void mhsa_bench_register_roofline(void);
void mhsa_bench_register_attention(void);
void mhsa_bench_register_decode(void);
void mhsa_bench_register_step(void);
void mhsa_bench_register_variants(void);
void mhsa_bench_register_kernels(void);
void mhsa_bench_register_gpt(void);
void mhsa_bench_register_adversarial(void);
void mhsa_bench_register_bf16(void);
void mhsa_bench_register_phases(void);
// ./bench --tune ...: the GEMM tuning harness (bench_tune.c), instead of
// Google Benchmark's run.
int mhsa_bench_tune(int argc, char **argv);
// ./bench --summary [--rounds N] [--window-ms W]: the short table of the
// headline rows with the kernel dispatch chose beside each
// (bench_summary.c), instead of Google Benchmark's run.
int mhsa_bench_summary(int argc, char **argv);
void mhsa_bench_register_compute_bf16(void);
void mhsa_bench_register_latency(void);
void mhsa_bench_register_threads(void);
void mhsa_bench_register_quant(void);

#ifdef __cplusplus
}

// main's body after registration (C++ only): Google Benchmark's flags plus
// --headlines, which runs only the headline cases, repeated, and prints
// one table of their medians against their targets.
int mhsa_bench_main(int argc, char **argv);
#endif

#endif
