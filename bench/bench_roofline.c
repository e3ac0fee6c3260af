// bench_roofline.c — this machine's limits, measured in the same run as the
// kernels: peak fp32 throughput per ISA from independent FMA chains
// held in registers, and read bandwidth at working sets from L1 to DRAM, at
// 1 and all threads. Other files divide their rates by these
// (bench_util.h); the roofline/* cases show the limits themselves, with
// their frac counter (a measurement over the remembered best) telling how
// noisy the machine is right now.
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#include "bench_util.h"
#include "kernels/kernels.h"
#include "shim.h"

float *mhsa_bench_floats(size_t n)
{
    void *p = NULL;
    if (n == 0)
        n = 1;
    if (posix_memalign(&p, 64, n * sizeof(float)) != 0)
        return NULL;
    return p;
}

void mhsa_bench_fill(float *x, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x[i] = (float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int mhsa_bench_thread_counts(int64_t counts[2])
{
    int maxt = omp_get_max_threads();
    counts[0] = 1;
    counts[1] = maxt;
    return maxt > 1 ? 2 : 1;
}

// ---- peak FLOP/s ------------------------------------------------------------

// Runtime constants the compiler cannot fold (x * 1 and x + 0 would vanish).
static volatile float one = 1.0f, tiny = 1e-7f;

// Every kernel runs `iters` steps of CHAINS independent dependency chains,
// enough to cover latency x pipes on current cores (FMA: 4 cycles x 2
// pipes), and returns the FLOPs done. The result is stored so nothing is
// dropped.
static volatile float sink;

#if defined(__x86_64__)
// Named registers, not an array: an array of vectors ends up on the stack,
// and the chains then wait on store-to-load forwarding.
#define STEP12(op, m, c)                                                     \
    do {                                                                     \
        a0 = op(a0, m, c); a1 = op(a1, m, c); a2 = op(a2, m, c);             \
        a3 = op(a3, m, c); a4 = op(a4, m, c); a5 = op(a5, m, c);             \
        a6 = op(a6, m, c); a7 = op(a7, m, c); a8 = op(a8, m, c);             \
        a9 = op(a9, m, c); a10 = op(a10, m, c); a11 = op(a11, m, c);         \
    } while (0)

__attribute__((target("avx2,fma")))
static double fma_avx2(long iters)
{
    __m256 m = _mm256_set1_ps(one), c = _mm256_set1_ps(tiny);
    __m256 a0 = _mm256_set1_ps(0.0f), a1 = _mm256_set1_ps(1.0f),
           a2 = _mm256_set1_ps(2.0f), a3 = _mm256_set1_ps(3.0f),
           a4 = _mm256_set1_ps(4.0f), a5 = _mm256_set1_ps(5.0f),
           a6 = _mm256_set1_ps(6.0f), a7 = _mm256_set1_ps(7.0f),
           a8 = _mm256_set1_ps(8.0f), a9 = _mm256_set1_ps(9.0f),
           a10 = _mm256_set1_ps(10.0f), a11 = _mm256_set1_ps(11.0f);
    for (long it = 0; it < iters; it++)
        STEP12(_mm256_fmadd_ps, m, c);
    a0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1),
                                     _mm256_add_ps(a2, a3)),
                       _mm256_add_ps(_mm256_add_ps(a4, a5),
                                     _mm256_add_ps(a6, a7)));
    a8 = _mm256_add_ps(_mm256_add_ps(a8, a9), _mm256_add_ps(a10, a11));
    sink = _mm256_cvtss_f32(_mm256_add_ps(a0, a8));
    return (double)iters * 12 * 8 * 2;
}

// 512-bit FMAs: on Zen 5 and Intel server cores two full-width pipes, on
// Zen 4 the 256-bit pipes twice (double-pumped: the same FLOPs per cycle as
// AVX2; docs/architecture.md, "Dispatch").
__attribute__((target("avx512f")))
static double fma_avx512(long iters)
{
    __m512 m = _mm512_set1_ps(one), c = _mm512_set1_ps(tiny);
    __m512 a0 = _mm512_set1_ps(0.0f), a1 = _mm512_set1_ps(1.0f),
           a2 = _mm512_set1_ps(2.0f), a3 = _mm512_set1_ps(3.0f),
           a4 = _mm512_set1_ps(4.0f), a5 = _mm512_set1_ps(5.0f),
           a6 = _mm512_set1_ps(6.0f), a7 = _mm512_set1_ps(7.0f),
           a8 = _mm512_set1_ps(8.0f), a9 = _mm512_set1_ps(9.0f),
           a10 = _mm512_set1_ps(10.0f), a11 = _mm512_set1_ps(11.0f);
    for (long it = 0; it < iters; it++)
        STEP12(_mm512_fmadd_ps, m, c);
    a0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1),
                                     _mm512_add_ps(a2, a3)),
                       _mm512_add_ps(_mm512_add_ps(a4, a5),
                                     _mm512_add_ps(a6, a7)));
    a8 = _mm512_add_ps(_mm512_add_ps(a8, a9), _mm512_add_ps(a10, a11));
    sink = _mm512_reduce_add_ps(_mm512_add_ps(a0, a8));
    return (double)iters * 12 * 16 * 2;
}

// The scalar table is built for baseline x86-64 without contraction: its
// best case is SSE2 multiplies and adds, each on its own pipes (6 chains
// of each: 3-cycle latency x 2 pipes).
#define MUL_ADD(x, m, c) ((void)(c), _mm_mul_ps(x, m))
#define ADD_MUL(x, m, c) ((void)(m), _mm_add_ps(x, c))
static double fma_scalar(long iters)
{
    __m128 m = _mm_set1_ps(one), c = _mm_set1_ps(tiny);
    __m128 a0 = _mm_set1_ps(0.0f), a1 = _mm_set1_ps(1.0f),
           a2 = _mm_set1_ps(2.0f), a3 = _mm_set1_ps(3.0f),
           a4 = _mm_set1_ps(4.0f), a5 = _mm_set1_ps(5.0f),
           a6 = _mm_set1_ps(6.0f), a7 = _mm_set1_ps(7.0f),
           a8 = _mm_set1_ps(8.0f), a9 = _mm_set1_ps(9.0f),
           a10 = _mm_set1_ps(10.0f), a11 = _mm_set1_ps(11.0f);
    for (long it = 0; it < iters; it++) {
        a0 = MUL_ADD(a0, m, c); a1 = MUL_ADD(a1, m, c);
        a2 = MUL_ADD(a2, m, c); a3 = MUL_ADD(a3, m, c);
        a4 = MUL_ADD(a4, m, c); a5 = MUL_ADD(a5, m, c);
        a6 = ADD_MUL(a6, m, c); a7 = ADD_MUL(a7, m, c);
        a8 = ADD_MUL(a8, m, c); a9 = ADD_MUL(a9, m, c);
        a10 = ADD_MUL(a10, m, c); a11 = ADD_MUL(a11, m, c);
    }
    a0 = _mm_add_ps(_mm_add_ps(_mm_add_ps(a0, a1), _mm_add_ps(a2, a3)),
                    _mm_add_ps(_mm_add_ps(a4, a5), _mm_add_ps(a6, a7)));
    a8 = _mm_add_ps(_mm_add_ps(a8, a9), _mm_add_ps(a10, a11));
    sink = _mm_cvtss_f32(_mm_add_ps(a0, a8));
    return (double)iters * 12 * 4;   // 12 ops of 4 lanes, 1 FLOP each
}
#elif defined(__aarch64__)
enum { FMA_CHAINS = 16, MA_CHAINS = 8 };

static double fma_neon(long iters)
{
    float32x4_t m = vdupq_n_f32(one), c = vdupq_n_f32(tiny);
    float32x4_t a[FMA_CHAINS];
    for (int i = 0; i < FMA_CHAINS; i++)
        a[i] = vdupq_n_f32((float)i);
    for (long it = 0; it < iters; it++) {
        for (int i = 0; i < FMA_CHAINS; i++)
            a[i] = vfmaq_f32(c, a[i], m);
        __asm__ volatile("" : "+w"(a[0]), "+w"(a[1]));
    }
    float32x4_t s = a[0];
    for (int i = 1; i < FMA_CHAINS; i++)
        s = vaddq_f32(s, a[i]);
    sink = vgetq_lane_f32(s, 0);
    return (double)iters * FMA_CHAINS * 4 * 2;
}

// The scalar table without contraction: separate multiplies and adds.
static double fma_scalar(long iters)
{
    float32x4_t m = vdupq_n_f32(one), c = vdupq_n_f32(tiny);
    float32x4_t p[MA_CHAINS], s[MA_CHAINS];
    for (int i = 0; i < MA_CHAINS; i++) {
        p[i] = vdupq_n_f32((float)i);
        s[i] = vdupq_n_f32((float)i);
    }
    for (long it = 0; it < iters; it++) {
        for (int i = 0; i < MA_CHAINS; i++) {
            p[i] = vmulq_f32(p[i], m);
            s[i] = vaddq_f32(s[i], c);
        }
        __asm__ volatile("" : "+w"(p[0]), "+w"(s[0]));
    }
    float32x4_t t = vdupq_n_f32(0.0f);
    for (int i = 0; i < MA_CHAINS; i++)
        t = vaddq_f32(t, vaddq_f32(p[i], s[i]));
    sink = vgetq_lane_f32(t, 0);
    return (double)iters * MA_CHAINS * 2 * 4;
}
#else
enum { MA_CHAINS = 8 };
static double fma_scalar(long iters)
{
    float p[MA_CHAINS], s[MA_CHAINS];
    float m = one, c = tiny;
    for (int i = 0; i < MA_CHAINS; i++)
        p[i] = s[i] = (float)i;
    for (long it = 0; it < iters; it++)
        for (int i = 0; i < MA_CHAINS; i++) {
            p[i] *= m;
            s[i] += c;
        }
    float t = 0.0f;
    for (int i = 0; i < MA_CHAINS; i++)
        t += p[i] + s[i];
    sink = t;
    return (double)iters * MA_CHAINS * 2;
}
#endif

typedef double (*flop_fn)(long iters);

static flop_fn flop_kernel(mhsa_isa isa)
{
    if (!mhsa_kernels_for(isa))
        return NULL;
    switch (isa) {
    case MHSA_ISA_SCALAR:
        return fma_scalar;
#if defined(__x86_64__)
    case MHSA_ISA_AVX2:
        return fma_avx2;
    case MHSA_ISA_AVX512:
        return fma_avx512;
#elif defined(__aarch64__)
    case MHSA_ISA_NEON:
        return fma_neon;
#endif
    default:
        return NULL;
    }
}

// One trial: every thread runs `iters` steps; GFLOP/s of all of them.
static double flop_trial(flop_fn f, int threads, long iters)
{
    double t0 = 0.0, t1 = 0.0, flops = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : flops)
    {
#pragma omp barrier
#pragma omp master
        t0 = now_s();
        flops += f(iters);
#pragma omp barrier
#pragma omp master
        t1 = now_s();
    }
    return flops / (t1 - t0) * 1e-9;
}

enum { MAX_T = 64, N_ISA = MHSA_ISA_AVX512 + 1 };
static double peak_memo[N_ISA][MAX_T + 1];

double mhsa_bench_peak_gflops(mhsa_isa isa, int threads)
{
    if ((int)isa < 0 || (int)isa >= N_ISA || threads < 1 || threads > MAX_T)
        return 0.0;
    flop_fn f = flop_kernel(isa);
    if (!f)
        return 0.0;
    if (peak_memo[isa][threads] > 0.0)
        return peak_memo[isa][threads];
    // Many short trials (~0.2 ms on a 4 GHz core): on a shared machine
    // some of them still find every thread running, which long trials
    // rarely do.
    long iters = 1 << 17;
    double best = 0.0;
    flop_trial(f, threads, iters * 8);   // wake the threads and the clock
    for (int t = 0; t < 100; t++) {
        double g = flop_trial(f, threads, iters);
        if (g > best)
            best = g;
    }
    peak_memo[isa][threads] = best;
    return best;
}

// ---- read bandwidth -------------------------------------------------------

// XOR of every 8-byte word: the loads are the work, and integer XOR runs on
// more ports than FP adds, so the loop is bound by the loads even in L1.
static uint64_t read_generic(const uint64_t *p, size_t words)
{
    uint64_t a[8] = { 0 };
    for (size_t i = 0; i + 8 <= words; i += 8)
        for (int j = 0; j < 8; j++)
            a[j] ^= p[i + j];
    return a[0] ^ a[1] ^ a[2] ^ a[3] ^ a[4] ^ a[5] ^ a[6] ^ a[7];
}

#if defined(__x86_64__)
__attribute__((target("avx2")))
static uint64_t read_avx2(const uint64_t *p, size_t words)
{
    const __m256i *v = (const __m256i *)(const void *)p;
    __m256i a0 = _mm256_setzero_si256(), a1 = a0, a2 = a0, a3 = a0,
            a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    size_t n = words / 4;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        a0 = _mm256_xor_si256(a0, _mm256_load_si256(v + i + 0));
        a1 = _mm256_xor_si256(a1, _mm256_load_si256(v + i + 1));
        a2 = _mm256_xor_si256(a2, _mm256_load_si256(v + i + 2));
        a3 = _mm256_xor_si256(a3, _mm256_load_si256(v + i + 3));
        a4 = _mm256_xor_si256(a4, _mm256_load_si256(v + i + 4));
        a5 = _mm256_xor_si256(a5, _mm256_load_si256(v + i + 5));
        a6 = _mm256_xor_si256(a6, _mm256_load_si256(v + i + 6));
        a7 = _mm256_xor_si256(a7, _mm256_load_si256(v + i + 7));
    }
    a0 = _mm256_xor_si256(_mm256_xor_si256(a0, a1), _mm256_xor_si256(a2, a3));
    a4 = _mm256_xor_si256(_mm256_xor_si256(a4, a5), _mm256_xor_si256(a6, a7));
    a0 = _mm256_xor_si256(a0, a4);
    return (uint64_t)_mm256_extract_epi64(a0, 0) ^
           (uint64_t)_mm256_extract_epi64(a0, 3);
}
#endif

typedef uint64_t (*read_fn)(const uint64_t *p, size_t words);

static read_fn read_kernel(void)
{
#if defined(__x86_64__)
    if (mhsa_kernels_for(MHSA_ISA_AVX2))
        return read_avx2;
#endif
    return read_generic;
}

static volatile uint64_t read_sink;

// Each thread reads its 256-byte-aligned share of buf `passes` times.
static double read_trial(const uint64_t *buf, size_t bytes, int threads,
                         int passes)
{
    read_fn f = read_kernel();
    size_t share = bytes / (size_t)threads / 256 * 256;
    double t0 = 0.0, t1 = 0.0;
    uint64_t x = 0;
#pragma omp parallel num_threads(threads) reduction(^ : x)
    {
        const uint64_t *p = buf + (size_t)omp_get_thread_num() * share / 8;
#pragma omp barrier
#pragma omp master
        t0 = now_s();
        for (int r = 0; r < passes; r++)
            x ^= f(p, share / 8);
#pragma omp barrier
#pragma omp master
        t1 = now_s();
    }
    read_sink = x;
    return (double)share * threads * passes / (t1 - t0) * 1e-9;
}

// Fills buf with the same thread split the trials use (first touch), so
// each thread's share is its own on a NUMA machine.
static uint64_t *read_buffer(size_t bytes, int threads)
{
    uint64_t *buf = (uint64_t *)(void *)mhsa_bench_floats(bytes / 4 + 64);
    if (!buf)
        return NULL;
    size_t words = bytes / 8;
#pragma omp parallel for schedule(static) num_threads(threads)
    for (size_t i = 0; i < words; i++)
        buf[i] = i * 0x9E3779B97F4A7C15ull;
    return buf;
}

static int read_passes(size_t bytes)
{
    size_t want = (size_t)64 << 20;   // read at least 64 MiB per trial
    return bytes >= want ? 1 : (int)(want / bytes);
}

enum { N_BW_MEMO = 128 };
typedef struct bw_kept {
    int pass;   // 1: mhsa_bench_read_pass_gbs's whole passes (no median)
    size_t bytes;
    int threads;
    double gbs, median;
} bw_kept;
static bw_kept bw_memo[N_BW_MEMO];
static int n_bw_memo;

// The remembered figures of (pass, bytes, threads), or NULL.
static const bw_kept *bw_memo_find(int pass, size_t bytes, int threads)
{
    for (int i = 0; i < n_bw_memo; i++)
        if (bw_memo[i].pass == pass && bw_memo[i].bytes == bytes &&
            bw_memo[i].threads == threads)
            return &bw_memo[i];
    return NULL;
}

static void bw_memo_keep(int pass, size_t bytes, int threads, double gbs,
                         double median)
{
    if (n_bw_memo < N_BW_MEMO) {
        bw_memo[n_bw_memo].pass = pass;
        bw_memo[n_bw_memo].bytes = bytes;
        bw_memo[n_bw_memo].threads = threads;
        bw_memo[n_bw_memo].gbs = gbs;
        bw_memo[n_bw_memo].median = median;
        n_bw_memo++;
    }
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// The best and the median of the trials below, measured once per (bytes,
// threads) and remembered; 0 when they cannot be measured.
static void read_gbs(size_t bytes, int threads, double *best_out,
                     double *median_out)
{
    *best_out = *median_out = 0.0;
    if (threads < 1 || bytes < (size_t)threads * 256)
        return;
    const bw_kept *kept = bw_memo_find(0, bytes, threads);
    if (kept) {
        *best_out = kept->gbs;
        *median_out = kept->median;
        return;
    }
    uint64_t *buf = read_buffer(bytes, threads);
    if (!buf)
        return;
    // Short trials, many of them, as for the peak. A working set that fits
    // the caches is read whole, a few times per trial (>= 16 MiB read); a
    // larger one a 16 MiB slice per trial, the slices in turn, so that a
    // slice was last read 3 or more slices ago and comes from DRAM.
    const size_t slice = (size_t)16 << 20;
    int sliced = bytes >= 4 * slice;
    size_t win = sliced ? slice : bytes;
    int passes = sliced ? 1 : (int)((slice + bytes - 1) / bytes);
    enum { TRIALS = 100 };
    double g[TRIALS];
    read_trial(buf, bytes, threads, 1);   // warm caches and TLB
    for (int t = 0; t < TRIALS; t++) {
        size_t off = sliced ? (size_t)t % (bytes / slice) * slice : 0;
        g[t] = read_trial(buf + off / 8, win, threads, passes);
    }
    free(buf);
    qsort(g, TRIALS, sizeof g[0], cmp_double);
    *best_out = g[TRIALS - 1];
    *median_out = (g[TRIALS / 2 - 1] + g[TRIALS / 2]) / 2;
    bw_memo_keep(0, bytes, threads, *best_out, *median_out);
}

double mhsa_bench_read_gbs(size_t bytes, int threads)
{
    double best, median;
    read_gbs(bytes, threads, &best, &median);
    return best;
}

double mhsa_bench_read_gbs_median(size_t bytes, int threads)
{
    double best, median;
    read_gbs(bytes, threads, &best, &median);
    return median;
}

double mhsa_bench_read_pass_gbs(size_t bytes, int threads)
{
    if (threads < 1 || bytes < (size_t)threads * 256)
        return 0.0;
    const bw_kept *kept = bw_memo_find(1, bytes, threads);
    if (kept)
        return kept->gbs;
    uint64_t *buf = read_buffer(bytes, threads);
    if (!buf)
        return 0.0;
    double best = 0.0;
    read_trial(buf, bytes, threads, 1);   // TLB (and caches, if it fits)
    for (int t = 0; t < 5; t++) {
        double g = read_trial(buf, bytes, threads, 1);
        if (g > best)
            best = g;
    }
    free(buf);
    bw_memo_keep(1, bytes, threads, best, 0.0);
    return best;
}

// ---- the roofline cases ---------------------------------------------------

static const mhsa_isa isas[] = { MHSA_ISA_SCALAR, MHSA_ISA_AVX2,
                                 MHSA_ISA_NEON, MHSA_ISA_AVX512 };

static void bm_peak(mhsa_bench_state *st, const void *ctx)
{
    mhsa_isa isa = *(const mhsa_isa *)ctx;
    int threads = (int)mhsa_bench_arg(st, 0);
    flop_fn f = flop_kernel(isa);
    if (!f) {
        mhsa_bench_skip(st, "isa not available (build or CPU)");
        return;
    }
    double peak = mhsa_bench_peak_gflops(isa, threads);
    long iters = 1 << 16;
    double flops = 0.0;
    while (mhsa_bench_keep_running(st)) {
        double fl = 0.0;
#pragma omp parallel num_threads(threads) reduction(+ : fl)
        fl += f(iters);
        flops = fl;
    }
    mhsa_bench_rate(st, "GFLOP", flops * 1e-9);
    mhsa_bench_rate(st, "frac_peak", flops * 1e-9 / peak);
    mhsa_bench_counter(st, "best_GFLOP/s", peak);
}

static void bm_read(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    size_t bytes = (size_t)mhsa_bench_arg(st, 0) << 10;
    int threads = (int)mhsa_bench_arg(st, 1);
    double best = mhsa_bench_read_gbs(bytes, threads);
    uint64_t *buf = read_buffer(bytes, threads);
    if (!buf || best <= 0.0) {
        mhsa_bench_skip(st, "out of memory");
        free(buf);
        return;
    }
    int passes = read_passes(bytes);
    size_t share = bytes / (size_t)threads / 256 * 256;
    read_fn f = read_kernel();
    while (mhsa_bench_keep_running(st)) {
        uint64_t x = 0;
#pragma omp parallel num_threads(threads) reduction(^ : x)
        {
            const uint64_t *p = buf + (size_t)omp_get_thread_num() * share / 8;
            for (int r = 0; r < passes; r++)
                x ^= f(p, share / 8);
        }
        read_sink = x;
    }
    double gb = (double)share * threads * passes * 1e-9;
    mhsa_bench_rate(st, "GB", gb);
    mhsa_bench_rate(st, "frac_bw", gb / best);
    mhsa_bench_counter(st, "best_GB/s", best);
    free(buf);
}

// Working sets: L1 (32 KiB), L2 (512 KiB), within L3 (8 MiB, the size of
// the H=8 decode cache at 2048 tokens) and DRAM (256 MiB, the H=32 dh=128
// cache at 8192 tokens), in KiB.
static const int64_t read_kib[] = { 32, 512, 8 << 10, 256 << 10 };

void mhsa_bench_register_roofline(void)
{
    static const char *const t_names[] = { "threads" };
    static const char *const r_names[] = { "kib", "threads" };
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    char name[64];
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        snprintf(name, sizeof name, "roofline/peak/%s",
                 mhsa_isa_name(isas[i]));
        if (!flop_kernel(isas[i])) {
            // Built for this architecture but not on this CPU (AVX-512 on
            // a Zen 3): an error line says so; other architectures' ISAs
            // are left out.
            if (mhsa_kernels_for(MHSA_ISA_AVX2) && isas[i] == MHSA_ISA_AVX512)
                mhsa_bench_add(name, bm_peak, &isas[i], 1, &tc[0], t_names);
            continue;
        }
        for (int c = 0; c < ntc; c++) {
            int64_t t = tc[c];
            char label[64];
            snprintf(label, sizeof label, "peak %s, %d thread%s",
                     mhsa_isa_name(isas[i]), (int)t, t > 1 ? "s" : "");
            mhsa_bench_headline h = { label, "GFLOP", "frac_peak",
                                      MHSA_GOAL_NONE, 0.0, NULL };
            mhsa_bench_add_headline(&h, name, bm_peak, &isas[i], 1, &t,
                                    t_names);
        }
    }
    for (size_t i = 0; i < sizeof read_kib / sizeof read_kib[0]; i++)
        for (int c = 0; c < ntc; c++) {
            int64_t t = tc[c];
            int64_t args[2] = { read_kib[i], t };
            char label[64];
            if (read_kib[i] >= 1024)
                snprintf(label, sizeof label, "read %d MiB, %d thread%s",
                         (int)(read_kib[i] >> 10), (int)t, t > 1 ? "s" : "");
            else
                snprintf(label, sizeof label, "read %d KiB, %d thread%s",
                         (int)read_kib[i], (int)t, t > 1 ? "s" : "");
            mhsa_bench_headline h = { label, "GB", "frac_bw",
                                      MHSA_GOAL_NONE, 0.0, NULL };
            mhsa_bench_add_headline(&h, "roofline/read", bm_read, NULL, 2,
                                    args, r_names);
        }
}
