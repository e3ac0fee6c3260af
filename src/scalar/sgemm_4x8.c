// sgemm_4x8.c — the scalar 4x8 micro-kernels: A from a packed panel
// (sgemm_ukr) or row-major from the caller's matrix (sgemm_ukr_ra). 32
// accumulators in locals; the compiler keeps them in registers and may
// vectorise the j loop with SSE2, which does not change the result (no
// contraction: -ffp-contract=off).
//
// The row-major kernel copies A, 64 depth steps at a time, into a 4-row
// panel on the stack (fl(alpha a), as pack_a stores it) and runs the very
// loop the packed kernel runs on it, with the accumulators carried over:
// so the same bits by construction. Reading the four rows directly in the
// loop made GCC's -O3 code 2-3x slower than the packed kernel's.
#include <string.h>

#include "kernels/kernels.h"
#include "scalar/scalar.h"

enum { MR = 4, NR = 8, KB = 64 };

// Both tiles run one copy of accumulate and store (noinline): when two
// operands of a multiply or add are NaN, x86 returns the first operand's,
// and the compiler picks the operand order per copy of the code; two
// inlined copies gave NaNs of different payloads for one element.
//
// acc += the k steps of the panels ap (MR a step) and bp (NR a step),
// summed in a local copy: through the acc pointer itself the compiler
// must assume the panels alias it and loads and stores it every step
// (5-7x slower).
static __attribute__((noinline)) void
accumulate(size_t k, const float *ap, const float *bp, float acc[MR][NR])
{
    float t[MR][NR];
    memcpy(t, acc, sizeof t);
    for (size_t kk = 0; kk < k; kk++) {
        const float *a = ap + kk * MR, *b = bp + kk * NR;
        for (int i = 0; i < MR; i++)
            for (int j = 0; j < NR; j++)
                t[i][j] += a[i] * b[j];
    }
    memcpy(acc, t, sizeof t);
}

// s + c with s's NaN when s is NaN, else c's (when c is): the AVX kernels'
// rule, made explicit, since even one copy of store has two loops for its
// add (the compiler versions it for c aliasing C, which it does when bias
// is NULL), and they ordered the operands differently.
static inline float sum_first(float s, float c) { return s != s ? s : s + c; }

// C (m x n) from acc; bias: NULL, or the row each C row's beta term reads
// (with beta 1).
static __attribute__((noinline)) void
store(float acc[MR][NR], float *c, size_t ldc, size_t m, size_t n,
      float beta, const float *bias)
{
    if (bias)
        beta = 1.0f;
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        const float *in = bias ? bias : ci;
        if (beta == 0.0f)
            for (size_t j = 0; j < n; j++)
                ci[j] = acc[i][j];
        else if (beta == 1.0f)
            for (size_t j = 0; j < n; j++)
                ci[j] = sum_first(acc[i][j], in[j]);
        else
            for (size_t j = 0; j < n; j++)
                ci[j] = sum_first(acc[i][j], beta * ci[j]);
    }
}

void mhsa_sgemm_4x8__scalar(size_t k, const float *ap, const float *bp,
                            float *c, size_t ldc, size_t m, size_t n,
                            float beta, const float *bias)
{
    float acc[MR][NR] = {{0}};
    accumulate(k, ap, bp, acc);
    store(acc, c, ldc, m, n, beta, bias);
}

void mhsa_sgemm_ra_4x8__scalar(size_t k, const float *a, size_t lda,
                               float alpha, const float *bp, float *c,
                               size_t ldc, size_t m, size_t n, float beta,
                               const float *bias)
{
    if (m == 0 || n == 0)
        return;
    float acc[MR][NR] = {{0}};
    float panel[KB * MR];
    for (size_t k0 = 0; k0 < k; k0 += KB) {
        size_t kb = k - k0 < KB ? k - k0 : KB;
        for (size_t i = 0; i < MR; i++) {
            // rows >= m: zeros, as pack_a pads (their sums are dropped)
            const float *row = i < m ? a + i * lda + k0 : NULL;
            for (size_t kk = 0; kk < kb; kk++)
                panel[kk * MR + i] = row ? alpha * row[kk] : 0.0f;
        }
        accumulate(kb, panel, bp + k0 * NR, acc);
    }
    store(acc, c, ldc, m, n, beta, bias);
}
