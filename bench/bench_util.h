// bench_util.h — what the benchmark files share: aligned buffers, fixed
// random inputs, and this machine's limits (the roofline), measured in the
// same run by bench_roofline.c, which every case divides its rate by.
#ifndef MHSA_BENCH_UTIL_H
#define MHSA_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include <omp.h>

#include "mhsa.h"

// 64-byte aligned floats (at least one); free() them. NULL if out of memory.
float *mhsa_bench_floats(size_t n);
// Uniform in [-1, 1) from a fixed xorshift stream: the same inputs every run.
void mhsa_bench_fill(float *x, size_t n, unsigned seed);

// Peak fp32 throughput of `threads` threads, each running independent FMA
// chains in registers with the vectors of `isa` (scalar: the baseline SSE2
// multiplies and adds the scalar table is compiled to, 1 FLOP per lane
// each), in GFLOP/s. 0 if this build or CPU lacks the ISA. The best of 100
// short trials, measured once per run and then remembered: noise only
// lowers a trial, so the best is the machine's limit.
double mhsa_bench_peak_gflops(mhsa_isa isa, int threads);

// Read bandwidth of `threads` threads streaming through a buffer of `bytes`
// in total (each its own contiguous part, over and over, so the working set
// sits in whichever cache level it fits), in GB/s (1e9 bytes). Best of
// 100 short trials, remembered per (bytes, threads); a working set of
// 64 MiB or more is read 16 MiB at a time, in turn, so it still streams
// from DRAM.
double mhsa_bench_read_gbs(size_t bytes, int threads);

// The median of the same 100 trials. On a shared machine DRAM bandwidth
// swings with the neighbours' traffic, and the best of 100 short trials
// catches the quiet moments: a step's median time set against it reads
// low. The median is the like-for-like limit for a median time.
double mhsa_bench_read_gbs_median(size_t bytes, int threads);

// Read bandwidth of whole passes: `threads` threads read a buffer of
// `bytes` once through, each its own contiguous part, best of 5 passes
// after one that warms the TLB; remembered per (bytes, threads). For a
// working set larger than the caches this is the speed one sustained
// stream over that many bytes gets, which on a shared machine can sit
// well under the best of short trials (docs/performance.md, "AMD EPYC
// Zen 4", "Small problems and the one-token step").
double mhsa_bench_read_pass_gbs(size_t bytes, int threads);

// The thread counts every case runs at: 1 and, if more, all of OpenMP's.
// Returns how many (1 or 2).
int mhsa_bench_thread_counts(int64_t counts[2]);

// A case's OpenMP thread count: threads_begin sets it, threads_end puts
// back what was set before.
typedef struct thread_scope { int saved; } thread_scope;
static inline thread_scope threads_begin(int threads)
{
    thread_scope s = { omp_get_max_threads() };
    omp_set_num_threads(threads);
    return s;
}
static inline void threads_end(thread_scope s)
{
    omp_set_num_threads(s.saved);
}

#endif
