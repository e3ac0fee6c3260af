// linear.c — the block's projections (linear.h).
#include <string.h>

#include "core/threads.h"
#include "linear.h"

// y's rows start as the bias: a pass over all of y (3 MiB for the QKV
// projection of 512 tokens at D = 512), split over the threads the GEMM
// after it uses, as it was a serial section before every projection
// (docs/performance.md, phases of a forward). Copies: the bits do not depend on the split. The region
// computes nothing, yet keeps core/fpenv.h's rule like every other (through
// mhsa__team_run): a pool thread born here must leave with the caller's
// state, not the library's.
typedef struct bias_ctx {
    size_t rows, n;
    const float *b;
    float *y;
} bias_ctx;

static void bias_body(void *p)
{
    const bias_ctx *c = p;
#pragma omp for schedule(static)
    for (size_t r = 0; r < c->rows; r++)
        memcpy(c->y + r * c->n, c->b, c->n * sizeof(float));
}

static void bias_rows(const mhsa_gemm_scratch *s, size_t rows, size_t n,
                      const float *b, float *y)
{
    int nt = mhsa__threads(s->max_threads, (double)rows * (double)n, rows);
    bias_ctx c = { rows, n, b, y };
    mhsa__team_run(nt, bias_body, &c);
}

void mhsa__linear(const mhsa_kernels *k, const mhsa_gemm_scratch *s,
                  size_t rows, size_t n, size_t kdim, const float *x,
                  const void *w, mhsa_dtype wdt, const float *w_packed,
                  const float *b, mhsa_dtype cdt, float *y)
{
    int gemm = !(rows == 1 && cdt == MHSA_F32) &&
               !(wdt != MHSA_F32 && cdt == MHSA_F32 &&
                 rows <= MHSA_FEW_ROWS_16);
    if (b && gemm && mhsa_sgemm_folds_bias(k, cdt)) {
        // The GEMM's tiles add the bias (gemm.h), the same bits as
        // starting y from it, without a pass over y first.
        mhsa_sgemm_bias(k, cdt, s, 0, 1, rows, n, kdim, 1.0f, x, kdim, w,
                        wdt, kdim, w_packed, b, y, n);
        return;
    }
    if (b)   // start from the bias, then accumulate x W^T onto it
        bias_rows(s, rows, n, b, y);
    if (rows == 1 && cdt == MHSA_F32) {
        // One token: stream W once, unpacked (a GEMM tile would waste
        // mr - 1 rows).
        mhsa_gemv_rows_dt(k, s, n, kdim, w, wdt, kdim, x, y,
                          b ? 1.0f : 0.0f);
        return;
    }
    if (wdt != MHSA_F32 && cdt == MHSA_F32 && rows <= MHSA_FEW_ROWS_16) {
        // A few rows over 16-bit W: stream W once rather than widen and
        // pack all of it for them (gemm.h).
        mhsa_gemv_rows_16m(k, s, rows, n, kdim, w, wdt, kdim, x, kdim, y, n,
                           b ? 1.0f : 0.0f);
        return;
    }
    mhsa_sgemm_cd(k, cdt, s, 0, 1, rows, n, kdim, 1.0f, x, kdim, w, wdt,
                  kdim, w_packed, b ? 1.0f : 0.0f, y, n);
}
