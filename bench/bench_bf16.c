// bench_bf16.c — the bf16-compute GEMM (gemm/gemm_bf16.h) on each bf16 tile
// set (AMX, AVX512-BF16) at the bf16 targets' shapes, 512x1536x512 (a QKV
// projection of 512 tokens, D 512) and 1024^3, at 1 and 2 threads, with
// mhsa's fp32 GEMM on the active table beside it in the same run. A set this
// CPU (or OS, or build) cannot run natively is skipped with the reason; the
// test-only emulation is never timed.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/cpu_features.h"
#include "gemm/gemm.h"
#include "gemm/gemm_bf16.h"
#include "kernels/kernels.h"
#include "shim.h"

static const int64_t shapes[][3] = { { 512, 1536, 512 },
                                     { 1024, 1024, 1024 } };
static const char *const arg_names[] = { "m", "n", "k", "threads" };
static const char *const sets[] = { "amx_bf16", "avx512_bf16", "fp32" };

static float *alloc_filled(size_t n, unsigned seed)
{
    float *x = malloc(n * sizeof(float) + 64);
    if (!x)
        return NULL;
    unsigned s = seed * 2654435761u + 1;
    for (size_t i = 0; i < n; i++) {
        s = s * 1103515245u + 12345u;
        x[i] = (float)(s >> 8) * (2.0f / 16777216.0f) - 1.0f;
    }
    return x;
}

// The table whose set `name` runs natively here, or NULL with the reason.
static const mhsa_kernels *native_table(const char *name, char *why,
                                        size_t whylen)
{
    const mhsa_kernels *k = mhsa__kernels();
    if (strcmp(name, "fp32") == 0)
        return k;
    const mhsa_cpu_features *f = mhsa__cpu_features();
    int amx = strcmp(name, "amx_bf16") == 0;
    const char *lack = !f->avx512 ? "AVX-512"
                     : !f->avx512_bf16 ? "AVX512_BF16"
                     : amx && !f->amx_bf16 ? "AMX-BF16"
                     : amx && !mhsa__amx_permitted()
                         ? "the OS tile data permission" : NULL;
    if (lack) {
        snprintf(why, whylen, "%s not run: this CPU lacks %s (only the "
                 "test-only emulation runs here)", name, lack);
        return NULL;
    }
    if (!k->bf16) {
        snprintf(why, whylen, "%s: the active table (%s) has no bf16 tiles",
                 name, k->name);
        return NULL;
    }
    for (const mhsa_bf16_tiles *const *t = k->bf16; *t; t++)
        if (strcmp((*t)->name, name) == 0) {
            if (!mhsa_gemm_bf16_runnable(*t)) {
                snprintf(why, whylen, "%s: not runnable here", name);
                return NULL;
            }
            if (!mhsa_gemm_bf16_fits(k, *t)) {
                snprintf(why, whylen, "%s: blocking does not fit the %s "
                         "scratch", name, k->name);
                return NULL;
            }
            return k;
        }
    snprintf(why, whylen, "%s: not in this build (compiler flags)", name);
    return NULL;
}

static void bm_bf16(mhsa_bench_state *st, const void *ctx)
{
    const char *name = *(const char *const *)ctx;
    char why[160];
    const mhsa_kernels *k = native_table(name, why, sizeof why);
    if (!k) {
        mhsa_bench_skip(st, why);
        return;
    }
    int fp32 = strcmp(name, "fp32") == 0;
    if (!fp32 && mhsa__bf16_select(name) != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
        return;
    }
    size_t m = (size_t)mhsa_bench_arg(st, 0), n = (size_t)mhsa_bench_arg(st, 1);
    size_t kd = (size_t)mhsa_bench_arg(st, 2);
    int threads = (int)mhsa_bench_arg(st, 3);
    float *a = alloc_filled(m * kd, 1), *b = alloc_filled(kd * n, 2);
    float *c = alloc_filled(m * n, 3);
    mhsa_gemm_scratch s = {
        .a = malloc((size_t)threads * mhsa_gemm_a_floats(k) * sizeof(float)),
        .b = malloc(mhsa_gemm_b_floats(k, n) * sizeof(float)),
        .b_floats = mhsa_gemm_b_floats(k, n),
        .max_threads = threads,
    };
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    if (!a || !b || !c || !s.a || !s.b) {
        mhsa_bench_skip(st, "out of memory");
    } else {
        while (mhsa_bench_keep_running(st)) {
            if (fp32)
                mhsa_sgemm(k, &s, 0, 0, m, n, kd, 1.0f, a, kd, b, n, NULL,
                           0.0f, c, n);
            else
                mhsa_sgemm_bf16(k, &s, 0, 0, m, n, kd, 1.0f, a, kd, b,
                                MHSA_F32, n, NULL, 0.0f, c, n);
            mhsa_bench_use(c);
        }
        mhsa_bench_rate(st, "GFLOP", 2.0 * (double)m * n * kd * 1e-9);
    }
    omp_set_num_threads(saved);
    if (!fp32)
        mhsa__bf16_select("auto");
    free(a);
    free(b);
    free(c);
    free(s.a);
    free(s.b);
}

void mhsa_bench_register_bf16(void)
{
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++) {
        char name[64];
        snprintf(name, sizeof name, "sgemm_bf16/%s", sets[i]);
        for (size_t sh = 0; sh < sizeof shapes / sizeof shapes[0]; sh++)
            for (int64_t t = 1; t <= 2; t++) {
                int64_t args[4] = { shapes[sh][0], shapes[sh][1],
                                    shapes[sh][2], t };
                mhsa_bench_add(name, bm_bf16, &sets[i], 4, args, arg_names);
            }
    }
}
