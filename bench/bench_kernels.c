// bench_kernels.c — kernel benchmarks: the SGEMM driver on every ISA at 1
// and 2 threads next to OpenBLAS's cblas_sgemm and oneDNN's dnnl_sgemm
// (each when the build found it), the online-softmax kernel, the head
// split/merge permute, and the decode products kv_dot / kv_acc over K/V
// caches stored as F32, F16 and BF16.
//
// Every case runs on the table mhsa_kernels_for(isa) gives, so one run
// compares all ISAs; an ISA this build or CPU lacks shows as an error line
// ("not available"), not as a missing row. SGEMM reports GFLOP/s (2*m*n*k
// per call); softmax and permute report GB/s of the bytes they must read
// and write; kv_dot / kv_acc report GB/s of the K/V bytes they read and
// the fraction of this machine's read bandwidth at that working set.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "attn/permute.h"
#include "gemm/gemm.h"
#include "kernels/kernels.h"
#include "shim.h"

#if MHSA_BENCH_OPENBLAS
#include <cblas.h>
#endif
#if MHSA_BENCH_DNNL
#include <oneapi/dnnl/dnnl.h>
#endif

static const mhsa_isa isas[] = { MHSA_ISA_SCALAR, MHSA_ISA_AVX2,
                                 MHSA_ISA_NEON, MHSA_ISA_AVX512 };
enum { N_ISAS = sizeof isas / sizeof isas[0] };

static float *alloc_floats(size_t n)
{
    void *p = NULL;
    if (n == 0)
        n = 1;
    if (posix_memalign(&p, 64, n * sizeof(float)) != 0)
        return NULL;
    return p;
}

// Uniform in [-1, 1) from a fixed xorshift stream: same inputs every run.
static void fill(float *x, size_t n, unsigned seed)
{
    unsigned s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 17;
        s ^= s << 5;
        x[i] = (float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
}

static const mhsa_kernels *table_or_skip(mhsa_bench_state *st, mhsa_isa isa)
{
    const mhsa_kernels *k = mhsa_kernels_for(isa);
    if (!k) {
        char msg[96];
        snprintf(msg, sizeof msg, "isa %s not available (build or CPU)",
                 mhsa_isa_name(isa));
        mhsa_bench_skip(st, msg);
    }
    return k;
}

// ---- SGEMM ----------------------------------------------------------------

static const int64_t gemm_shapes[][3] = {   // m, n, k
    { 64, 64, 64 },       { 256, 256, 256 },   { 512, 512, 512 },
    { 1024, 1024, 1024 }, { 4096, 1536, 512 },   // QKV projection, T*B=4096
};
enum { N_GEMM_SHAPES = sizeof gemm_shapes / sizeof gemm_shapes[0] };
static const char *const gemm_arg_names[] = { "m", "n", "k", "threads" };

typedef struct gemm_bufs {
    size_t m, n, k;
    float *a, *b, *c;   // (m, k), (k, n), (m, n), row-major
} gemm_bufs;

static int gemm_bufs_init(gemm_bufs *g, mhsa_bench_state *st)
{
    g->m = (size_t)mhsa_bench_arg(st, 0);
    g->n = (size_t)mhsa_bench_arg(st, 1);
    g->k = (size_t)mhsa_bench_arg(st, 2);
    g->a = alloc_floats(g->m * g->k);
    g->b = alloc_floats(g->k * g->n);
    g->c = alloc_floats(g->m * g->n);
    if (!g->a || !g->b || !g->c) {
        mhsa_bench_skip(st, "out of memory");
        return 0;
    }
    fill(g->a, g->m * g->k, 1);
    fill(g->b, g->k * g->n, 2);
    return 1;
}

static void gemm_bufs_free(gemm_bufs *g)
{
    free(g->a);
    free(g->b);
    free(g->c);
}

// A few entries of C against a double-precision dot product, so a broken
// kernel fails loudly instead of posting a fast time. The bound is loose
// (k-scaled fp32 rounding): this guards the benchmark, the tests check.
static int gemm_spot_check(const gemm_bufs *g, mhsa_bench_state *st)
{
    for (unsigned t = 0; t < 16; t++) {
        size_t i = (t * 7919u) % g->m, j = (t * 104729u) % g->n;
        double ref = 0.0, mag = 0.0;
        for (size_t p = 0; p < g->k; p++) {
            double v = (double)g->a[i * g->k + p] * g->b[p * g->n + j];
            ref += v;
            mag += fabs(v);
        }
        double got = g->c[i * g->n + j];
        if (!(fabs(got - ref) <= 1e-5 * (double)g->k * mag + 1e-30)) {
            char msg[128];
            snprintf(msg, sizeof msg, "wrong result: C[%zu][%zu] = %g, "
                     "expected %g", i, j, got, ref);
            mhsa_bench_skip(st, msg);
            return 0;
        }
    }
    return 1;
}

// One SGEMM of g by `run` (C = A B), checked once, then timed in the
// benchmark's loop with its GFLOP/s and fraction of `peak`.
typedef void (*gemm_run_fn)(gemm_bufs *g, const void *arg);
static void time_gemm(mhsa_bench_state *st, gemm_bufs *g, double peak,
                      gemm_run_fn run, const void *arg)
{
    run(g, arg);
    if (!gemm_spot_check(g, st))
        return;
    while (mhsa_bench_keep_running(st)) {
        run(g, arg);
        mhsa_bench_use(g->c);
    }
    double gf = 2.0 * (double)g->m * g->n * g->k * 1e-9;
    mhsa_bench_rate(st, "GFLOP", gf);
    mhsa_bench_rate(st, "frac_peak", gf / peak);
    mhsa_bench_set_items(st, mhsa_bench_iterations(st));
}

typedef struct ours_arg {
    const mhsa_kernels *kt;
    mhsa_gemm_scratch *s;
} ours_arg;

static void run_ours(gemm_bufs *g, const void *arg)
{
    const ours_arg *o = arg;
    mhsa_sgemm(o->kt, o->s, 0, 0, g->m, g->n, g->k, 1.0f, g->a, g->k, g->b,
               g->n, NULL, 0.0f, g->c, g->n);
}

static void bm_sgemm(mhsa_bench_state *st, const void *ctx)
{
    mhsa_isa isa = *(const mhsa_isa *)ctx;
    const mhsa_kernels *kt = table_or_skip(st, isa);
    if (!kt)
        return;
    int threads = (int)mhsa_bench_arg(st, 3);
    gemm_bufs g;
    if (!gemm_bufs_init(&g, st)) {
        gemm_bufs_free(&g);
        return;
    }
    // Scratch as its docs ask: one packed-A block per thread, one shared
    // packed-B panel wide enough for n columns.
    mhsa_gemm_scratch s = {
        .a = alloc_floats((size_t)threads * mhsa_gemm_a_floats(kt)),
        .b = alloc_floats(mhsa_gemm_b_floats(kt, g.n)),
        .b_floats = mhsa_gemm_b_floats(kt, g.n),
        .max_threads = threads,
    };
    double peak = mhsa_bench_peak_gflops(isa, threads);
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(threads);
    if (!s.a || !s.b) {
        mhsa_bench_skip(st, "out of memory");
    } else {
        ours_arg o = { kt, &s };
        time_gemm(st, &g, peak, run_ours, &o);
    }
    omp_set_num_threads(saved_threads);
    free(s.a);
    free(s.b);
    gemm_bufs_free(&g);
}

#if MHSA_BENCH_OPENBLAS || MHSA_BENCH_DNNL
// The fraction a library's SGEMM reaches is of the peak of the best ISA
// mhsa has here (the library may use AVX-512 where the CPU has it).
static double best_peak(int threads)
{
    static const mhsa_isa best_first[] = { MHSA_ISA_AVX512, MHSA_ISA_AVX2,
                                           MHSA_ISA_NEON, MHSA_ISA_SCALAR };
    for (int i = 0; i < 4; i++) {
        double p = mhsa_bench_peak_gflops(best_first[i], threads);
        if (p > 0.0)
            return p;
    }
    return 0.0;
}
#endif

#if MHSA_BENCH_OPENBLAS
static void run_openblas(gemm_bufs *g, const void *arg)
{
    (void)arg;
    int m = (int)g->m, n = (int)g->n, k = (int)g->k;
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.0f,
                g->a, k, g->b, n, 0.0f, g->c, n);
}

static void bm_sgemm_openblas(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int threads = (int)mhsa_bench_arg(st, 3);
    gemm_bufs g;
    if (!gemm_bufs_init(&g, st)) {
        gemm_bufs_free(&g);
        return;
    }
    double peak = best_peak(threads);
    openblas_set_num_threads(threads);
    time_gemm(st, &g, peak, run_openblas, NULL);
    gemm_bufs_free(&g);
}
#endif

#if MHSA_BENCH_DNNL
// oneDNN's dnnl_sgemm (row-major, like ours), on OpenMP like mhsa: the
// thread count is OpenMP's. It picks its own kernels for the CPU (AVX-512
// where present, else AVX2).
static void run_dnnl(gemm_bufs *g, const void *arg)
{
    (void)arg;
    dnnl_dim_t m = (dnnl_dim_t)g->m, n = (dnnl_dim_t)g->n;
    dnnl_dim_t k = (dnnl_dim_t)g->k;
    dnnl_sgemm('N', 'N', m, n, k, 1.0f, g->a, k, g->b, n, 0.0f, g->c, n);
}

static void bm_sgemm_dnnl(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int threads = (int)mhsa_bench_arg(st, 3);
    gemm_bufs g;
    if (!gemm_bufs_init(&g, st)) {
        gemm_bufs_free(&g);
        return;
    }
    double peak = best_peak(threads);
    int saved_threads = omp_get_max_threads();
    omp_set_num_threads(threads);
    dnnl_dim_t m = (dnnl_dim_t)g.m, n = (dnnl_dim_t)g.n, k = (dnnl_dim_t)g.k;
    if (dnnl_sgemm('N', 'N', m, n, k, 1.0f, g.a, k, g.b, n, 0.0f, g.c, n) !=
        dnnl_success) {
        mhsa_bench_skip(st, "dnnl_sgemm failed");
    } else {
        time_gemm(st, &g, peak, run_dnnl, NULL);
    }
    omp_set_num_threads(saved_threads);
    gemm_bufs_free(&g);
}
#endif

// ---- online softmax -------------------------------------------------------

// One call updates `rows` query rows with a tile of n keys and a dv-wide
// accumulator. s is overwritten with p, which the next iteration takes as
// its scores: still finite, same work, and m stays the first tile's max, so
// no denormals appear.
static void bm_softmax_online(mhsa_bench_state *st, const void *ctx)
{
    mhsa_isa isa = *(const mhsa_isa *)ctx;
    const mhsa_kernels *kt = table_or_skip(st, isa);
    if (!kt)
        return;
    size_t rows = (size_t)mhsa_bench_arg(st, 0);
    size_t n = (size_t)mhsa_bench_arg(st, 1);
    int causal = (int)mhsa_bench_arg(st, 2);
    const size_t dv = 64;
    float *s = alloc_floats(rows * n), *m = alloc_floats(rows),
          *l = alloc_floats(rows), *o = alloc_floats(rows * dv);
    if (!s || !m || !l || !o) {
        mhsa_bench_skip(st, "out of memory");
        goto out;
    }
    fill(s, rows * n, 3);
    for (size_t i = 0; i < rows * n; i++)
        s[i] *= 4.0f;
    fill(o, rows * dv, 4);
    for (size_t r = 0; r < rows; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    // Causal: the rows are the last `rows` positions of an n-key block, so
    // each row sees a different prefix, as on the diagonal of attention.
    mhsa_softmax_args a = {
        .rows = rows, .n = n, .s = s, .lds = n,
        .mv = { .mask = NULL, .ldmask = 0, .q0 = n - rows, .k0 = 0,
                .causal = causal },
        .m = m, .l = l, .o = o, .ldo = dv, .dv = dv,
    };
    // Tiny calls (one decode row) go 64 to a batch: the shim's per-iteration
    // cost would otherwise be part of the time.
    int64_t batch = rows * n < 4096 ? 64 : 1;
    while (mhsa_bench_keep_running_batch(st, batch)) {
        for (int64_t i = 0; i < batch; i++)
            kt->softmax_online(&a);
        mhsa_bench_use(s);
    }
    double bytes = (2.0 * rows * n + 2.0 * rows * dv + 4.0 * rows) * 4.0;
    mhsa_bench_rate(st, "GB", bytes * 1e-9);
    mhsa_bench_set_bytes(st, (int64_t)(bytes * mhsa_bench_iterations(st)));
out:
    free(s);
    free(m);
    free(l);
    free(o);
}

// ---- permute ----------------------------------------------------------------

// Split: Q of a (B, T, 3D) QKV buffer, viewed (B, T, H, dh), to (B, H, T, dh)
// with the 1/sqrt(dh) scale folded in. Merge: (B, H, T, dh) to (B, T, D).
static void bm_permute(mhsa_bench_state *st, const void *ctx)
{
    mhsa_isa isa = *(const mhsa_isa *)ctx;
    const mhsa_kernels *kt = table_or_skip(st, isa);
    if (!kt)
        return;
    size_t B = (size_t)mhsa_bench_arg(st, 0);
    size_t T = (size_t)mhsa_bench_arg(st, 1);
    size_t D = (size_t)mhsa_bench_arg(st, 2);
    size_t H = (size_t)mhsa_bench_arg(st, 3);
    int merge = (int)mhsa_bench_arg(st, 4);
    size_t dh = D / H;
    float *qkv = alloc_floats(B * T * 3 * D), *heads = alloc_floats(B * T * D),
          *y = alloc_floats(B * T * D);
    if (!qkv || !heads || !y) {
        mhsa_bench_skip(st, "out of memory");
        goto out;
    }
    fill(qkv, B * T * 3 * D, 5);
    fill(heads, B * T * D, 6);
    mhsa_permute_args a;
    if (!merge) {
        a = (mhsa_permute_args){
            .n0 = B, .n1 = T, .n2 = H, .n3 = dh,
            .src = qkv, .src_s0 = T * 3 * D, .src_s1 = 3 * D, .src_s2 = dh,
            .dst = heads, .dst_s0 = H * T * dh, .dst_s1 = dh,
            .dst_s2 = T * dh,
            .scale = 1.0f / sqrtf((float)dh),
        };
    } else {
        a = (mhsa_permute_args){
            .n0 = B, .n1 = T, .n2 = H, .n3 = dh,
            .src = heads, .src_s0 = H * T * dh, .src_s1 = dh,
            .src_s2 = T * dh,
            .dst = y, .dst_s0 = T * D, .dst_s1 = D, .dst_s2 = dh,
            .scale = 1.0f,
        };
    }
    while (mhsa_bench_keep_running(st)) {
        mhsa__permute_4d(kt, &a);
        mhsa_bench_use(a.dst);
    }
    double bytes = 2.0 * B * T * D * 4.0;
    mhsa_bench_rate(st, "GB", bytes * 1e-9);
    mhsa_bench_set_bytes(st, (int64_t)(bytes * mhsa_bench_iterations(st)));
out:
    free(qkv);
    free(heads);
    free(y);
}

// ---- decode products over a K/V cache ---------------------------------------

// One call per kv head, as decode makes them: kv_dot of the group's m query
// rows against the head's L keys, kv_acc of m weight rows over its L value
// rows, or both (dot on K, then acc on V: the K/V bytes of a decode step,
// without the softmax between). Heads lie one after another (L rows of dh
// each, the cache's layout), so one iteration streams H*L*dh elements per
// operand; with H*L*dh*size above the last-level cache they come from DRAM.
// The fraction is of the single-thread read bandwidth measured at the same
// working set (bench_util.h).
typedef enum kv_op { KV_DOT, KV_ACC, KV_BOTH } kv_op;
static const char *const kv_op_names[] = { "kv_dot", "kv_acc", "kv_dot+acc" };
static const char *const kv_dt_names[] = { "f32", "f16", "bf16" };

static void bm_kv(mhsa_bench_state *st, const void *ctx)
{
    mhsa_isa isa = *(const mhsa_isa *)ctx;
    const mhsa_kernels *kt = table_or_skip(st, isa);
    if (!kt)
        return;
    kv_op op = (kv_op)mhsa_bench_arg(st, 0);
    mhsa_dtype dt = (mhsa_dtype)mhsa_bench_arg(st, 1);
    size_t H = (size_t)mhsa_bench_arg(st, 2);
    size_t m = (size_t)mhsa_bench_arg(st, 3);
    size_t dh = (size_t)mhsa_bench_arg(st, 4);
    size_t L = (size_t)mhsa_bench_arg(st, 5);
    size_t es = mhsa_dtype_size(dt), elems = H * L * dh;
    int two = op == KV_BOTH;
    // F32 values, stored through the table's own conversion.
    float *src = alloc_floats(elems);
    void *cache = alloc_floats((two ? 2 : 1) * elems * es / 4 + 1);
    float *q = alloc_floats(H * m * dh), *sp = alloc_floats(H * m * L);
    float *o = alloc_floats(H * m * dh);
    if (!src || !cache || !q || !sp || !o) {
        mhsa_bench_skip(st, "out of memory");
        goto out;
    }
    char *kc = cache, *vc = kc + (two ? elems * es : 0);
    fill(src, elems, 7);
    kt->cvt_from_f32(elems, src, kc, dt);
    if (two) {
        fill(src, elems, 8);
        kt->cvt_from_f32(elems, src, vc, dt);
    }
    fill(q, H * m * dh, 9);
    // Weights in [0, 1/L): o stays bounded over any number of iterations.
    fill(sp, H * m * L, 10);
    for (size_t i = 0; i < H * m * L; i++)
        sp[i] = (sp[i] + 1.0f) * 0.5f / (float)L;
    fill(o, H * m * dh, 11);
    size_t head = L * dh * es;
    while (mhsa_bench_keep_running(st)) {
        for (size_t h = 0; h < H; h++) {
            float *sh = sp + h * m * L;
            if (op != KV_ACC)
                kt->kv_dot(m, L, dh, q + h * m * dh, dh, kc + h * head, dh, dt,
                           sh, L);
            if (op != KV_DOT)
                kt->kv_acc(m, L, dh, sh, L, (two ? vc : kc) + h * head, dh,
                           dt, o + h * m * dh, dh);
        }
        mhsa_bench_use(sp);
        mhsa_bench_use(o);
    }
    {
        double bytes = (two ? 2.0 : 1.0) * (double)elems * (double)es;
        double bw = mhsa_bench_read_gbs((size_t)bytes, 1);
        mhsa_bench_rate(st, "KV_GB", bytes * 1e-9);
        if (bw > 0.0)
            mhsa_bench_rate(st, "frac_bw", bytes * 1e-9 / bw);
        mhsa_bench_set_bytes(st, (int64_t)(bytes * mhsa_bench_iterations(st)));
    }
out:
    free(src);
    free(cache);
    free(q);
    free(sp);
    free(o);
}

static void register_kv(void)
{
    // H (kv heads), m (query rows per kv head), dh, L
    static const int64_t shapes[][4] = {
        { 32, 1, 128, 8192 },   // decode H32 dh128 L8192 (DRAM)
        { 8, 1, 64, 2048 },     // H8 dh64 L2048 (4 MiB in F16)
        { 8, 4, 128, 8192 },    // GQA H32/Hkv8 dh128 L8192
    };
    static const char *const names[] = { "op", "dtype", "H", "m", "dh", "L" };
    static const mhsa_isa kv_isas[] = { MHSA_ISA_SCALAR, MHSA_ISA_AVX2,
                                        MHSA_ISA_NEON, MHSA_ISA_AVX512 };
    char name[64];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int op = KV_DOT; op <= KV_BOTH; op++)
            for (int dt = MHSA_F32; dt <= MHSA_BF16; dt++)
                for (size_t i = 0; i < sizeof kv_isas / sizeof kv_isas[0];
                     i++) {
                    // scalar: the small case only (it exists to compare)
                    if (kv_isas[i] == MHSA_ISA_SCALAR && s != 1)
                        continue;
                    snprintf(name, sizeof name, "%s/%s/%s", kv_op_names[op],
                             kv_dt_names[dt], mhsa_isa_name(kv_isas[i]));
                    int64_t args[6] = { op, dt, shapes[s][0], shapes[s][1],
                                        shapes[s][2], shapes[s][3] };
                    mhsa_bench_add(name, bm_kv, &kv_isas[i], 6, args, names);
                }
}

// ---- registration ---------------------------------------------------------

void mhsa_bench_register_kernels(void)
{
    char name[64];
    for (int s = 0; s < N_GEMM_SHAPES; s++) {
        for (int i = 0; i < N_ISAS; i++) {
            snprintf(name, sizeof name, "sgemm/%s", mhsa_isa_name(isas[i]));
            for (int64_t t = 1; t <= 2; t++) {
                int64_t args[4] = { gemm_shapes[s][0], gemm_shapes[s][1],
                                    gemm_shapes[s][2], t };
                if (isas[i] == MHSA_ISA_SCALAR || s < 3 ||
                    !mhsa_kernels_for(isas[i])) {
                    mhsa_bench_add(name, bm_sgemm, &isas[i], 4, args,
                                   gemm_arg_names);
                    continue;
                }
                // The kernel targets' shapes: rows of the summary table.
                char label[96];
                snprintf(label, sizeof label, "sgemm %s %dx%dx%d, %d thread%s",
                         mhsa_isa_name(isas[i]), (int)args[0], (int)args[1],
                         (int)args[2], (int)t, t > 1 ? "s" : "");
                mhsa_bench_headline h = {
                    label, "GFLOP", "frac_peak",
                    t == 1 && (isas[i] == MHSA_ISA_AVX2 ||
                               isas[i] == MHSA_ISA_AVX512)
                        ? MHSA_GOAL_FRAC_MIN : MHSA_GOAL_NONE,
                    0.88, NULL };
                mhsa_bench_add_headline(&h, name, bm_sgemm, &isas[i], 4,
                                        args, gemm_arg_names);
            }
        }
    }

    static const int64_t sm_shapes[][3] = {   // rows, n, causal
        { 1, 64, 0 }, { 1, 1024, 0 }, { 64, 64, 0 }, { 64, 256, 0 },
        { 64, 256, 1 }, { 128, 1024, 0 },
    };
    static const char *const sm_names[] = { "rows", "n", "causal" };
    for (int i = 0; i < N_ISAS; i++) {
        snprintf(name, sizeof name, "softmax_online/%s",
                 mhsa_isa_name(isas[i]));
        for (size_t s = 0; s < sizeof sm_shapes / sizeof sm_shapes[0]; s++)
            mhsa_bench_add(name, bm_softmax_online, &isas[i], 3,
                           sm_shapes[s], sm_names);
    }

    register_kv();

    static const int64_t pm_shapes[][5] = {   // B, T, D, H, merge
        { 1, 128, 512, 8, 0 }, { 4, 1024, 512, 8, 0 }, { 4, 1024, 512, 8, 1 },
    };
    static const char *const pm_names[] = { "B", "T", "D", "H", "merge" };
    for (int i = 0; i < N_ISAS; i++) {
        snprintf(name, sizeof name, "permute/%s", mhsa_isa_name(isas[i]));
        for (size_t s = 0; s < sizeof pm_shapes / sizeof pm_shapes[0]; s++)
            mhsa_bench_add(name, bm_permute, &isas[i], 5, pm_shapes[s],
                           pm_names);
    }

#if MHSA_BENCH_DNNL
    for (int s = 0; s < N_GEMM_SHAPES; s++) {
        for (int64_t t = 1; t <= 2; t++) {
            int64_t args[4] = { gemm_shapes[s][0], gemm_shapes[s][1],
                                gemm_shapes[s][2], t };
            if (s < 3) {
                mhsa_bench_add("sgemm/onednn", bm_sgemm_dnnl, NULL, 4, args,
                               gemm_arg_names);
                continue;
            }
            char label[96];
            snprintf(label, sizeof label, "sgemm onednn %dx%dx%d, %d thread%s",
                     (int)args[0], (int)args[1], (int)args[2], (int)t,
                     t > 1 ? "s" : "");
            mhsa_bench_headline h = { label, "GFLOP", "frac_peak",
                                      MHSA_GOAL_NONE, 0.0, NULL };
            mhsa_bench_add_headline(&h, "sgemm/onednn", bm_sgemm_dnnl, NULL,
                                    4, args, gemm_arg_names);
        }
    }
#endif

#if MHSA_BENCH_OPENBLAS
    // OpenBLAS last: its pthread pool spins for a while after each call,
    // which would steal a core from any mhsa case run right after it.
    for (int s = 0; s < N_GEMM_SHAPES; s++) {
        for (int64_t t = 1; t <= 2; t++) {
            int64_t args[4] = { gemm_shapes[s][0], gemm_shapes[s][1],
                                gemm_shapes[s][2], t };
            if (s < 3) {
                mhsa_bench_add("sgemm/openblas", bm_sgemm_openblas, NULL, 4,
                               args, gemm_arg_names);
                continue;
            }
            char label[96];
            snprintf(label, sizeof label, "sgemm openblas %dx%dx%d, %d thread%s",
                     (int)args[0], (int)args[1], (int)args[2], (int)t,
                     t > 1 ? "s" : "");
            mhsa_bench_headline h = { label, "GFLOP", "frac_peak",
                                      MHSA_GOAL_NONE, 0.0, NULL };
            mhsa_bench_add_headline(&h, "sgemm/openblas", bm_sgemm_openblas,
                                    NULL, 4, args, gemm_arg_names);
        }
    }
#endif
}
