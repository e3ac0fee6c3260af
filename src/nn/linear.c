// linear.c — the fully connected layer y = x W^T + b (PyTorch's nn.Linear,
// W stored (out, in)), forward and backward through the library's one
// packed SGEMM driver (gemm.h), which never splits K by thread count.
//
// Forward:   y  = [add +] b + x W^T        (N, OC); one row (N = 1, a
//            decoding step) through the table's gemv_n instead (gemv_n16
//            for a W stored as F16 / BF16: 16-bit weights)
// Backward:  dx = or += dy W                (N, C)
//            dW += dy^T x                   (OC, C)
//            db += sum over rows of dy      (OC)
#include <string.h>

#include "core/fpenv.h"
#include "layers.h"

// db (OC) += sum over the N rows of dy (N, OC), in row order.
MHSA_CLONES static void column_sums(float *db, const float *dy, size_t N,
                                    size_t OC)
{
    for (size_t n = 0; n < N; n++) {
        const float *g = dy + n * OC;                       // (OC)
        for (size_t o = 0; o < OC; o++)
            db[o] += g[o];
    }
}

// Row n of y (N, OC) = add + b, add, or b (add may be y itself).
static void start_row(float *y, const float *add, const float *b, size_t OC,
                      size_t n)
{
    float *yn = y + n * OC;                         // (OC)
    if (!add) {
        memcpy(yn, b, OC * sizeof(float));
    } else if (b) {
        const float *an = add + n * OC;             // (OC)
        for (size_t o = 0; o < OC; o++)
            yn[o] = an[o] + b[o];
    } else if (add != y) {
        memcpy(yn, add + n * OC, OC * sizeof(float));
    }
}

void mhsa__linear_forward(const mhsa_kernels *k, const mhsa_gemm_scratch *gs,
                          mhsa_dtype cdt, float *y, const float *add,
                          const float *x, const float *w, const float *b,
                          size_t N, size_t C, size_t OC)
{
    mhsa__linear_forward_dt(k, gs, cdt, y, add, x, w, MHSA_F32, b, N, C, OC);
}

void mhsa__linear_forward_dt(const mhsa_kernels *k,
                             const mhsa_gemm_scratch *gs, mhsa_dtype cdt,
                             float *y, const float *add, const float *x,
                             const void *w, mhsa_dtype wdt, const float *b,
                             size_t N, size_t C, size_t OC)
{
    // C of the GEMM starts as (add + b) and the product is added to it.
    if (add || b) {
        int nt = mhsa__layer_threads(N, OC);
        if (nt <= 1) {   // no parallel region below the threshold (rows.c)
            for (size_t n = 0; n < N; n++)
                start_row(y, add, b, OC, n);
        } else {
#pragma omp parallel num_threads(nt)
            {
                mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
                for (size_t n = 0; n < N; n++)
                    start_row(y, add, b, OC, n);
                mhsa__fp_leave_team(fp);
            }
        }
    }
    float beta = add || b ? 1.0f : 0.0f;
    // One row (a decoding step): a GEMM would pack all of W for one use.
    // (Each row of gemv_n / gemv_n16 sums alone, so its chunks give the
    // same bits as one call over all OC rows.)
    if (N == 1 && cdt == MHSA_F32)
        mhsa_gemv_rows_dt(k, gs, OC, C, w, wdt, C, x, y, beta);
    else
        mhsa_sgemm_cd(k, cdt, gs, 0, 1, N, OC, C, 1.0f, x, C, w, wdt, C,
                      NULL, beta, y, OC);
}

void mhsa__linear_backward(const mhsa_kernels *k,
                           const mhsa_gemm_scratch *gs, mhsa_dtype cdt,
                           float *dx, float *dw,
                           float *db, const float *dy, const float *x,
                           const float *w, size_t N, size_t C, size_t OC,
                           int accumulate_dx)
{
    if (dx)
        mhsa_sgemm_cd(k, cdt, gs, 0, 0, N, C, OC, 1.0f, dy, OC, w, MHSA_F32,
                      C, NULL, accumulate_dx ? 1.0f : 0.0f, dx, C);
    mhsa_sgemm_cd(k, cdt, gs, 1, 0, OC, C, N, 1.0f, dy, OC, x, MHSA_F32, C,
                  NULL, 1.0f, dw, C);
    if (db)
        column_sums(db, dy, N, OC);
}
