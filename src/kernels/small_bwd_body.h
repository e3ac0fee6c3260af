// small_bwd_body.h — the small attention-backward products (kernels.h:
// mhsa_small_bwd_args) in plain C, parametrised by the rounding of a
// product, for ISAs whose own file does not write them in intrinsics
// (today the scalar table; src/avx2/small_bwd.c and src/avx512/small_bwd.c
// have their own, a generic fmaf version was 2x slower on AVX2).
//
// Included by src/<isa>/small_bwd.c after defining
//   MHSA_SB_ISA        the name suffix (scalar, avx2, ...)
//   MHSA_SB_MAC(c,a,b) c plus the product a*b, rounded as that ISA's
//                      sgemm_ukr rounds it (fmaf(a, b, c) or c + a * b)
// (optionally MHSA_SB_HAVE_COPIES with its own sb_transpose and sb_rows),
// and compiled with that ISA's flags, so that the fixed-width loops over
// MHSA_SMALL_BWD_MAX lanes below vectorise (each lane its own sum, in
// order: vectorising changes no bits). Operands are copied into padded
// local tiles first (K and V transposed for the scores, dO and Q as rows
// MHSA_SMALL_BWD_MAX wide): the lanes past n or dh multiply zeros and are
// never stored, and no row is read past its dh elements.
#include <string.h>

#include "kernels/kernel_decl.h"

enum { SB = MHSA_SMALL_BWD_MAX };

#ifndef MHSA_SB_HAVE_COPIES   // else the ISA file defined them
// t[c][r] = x[r*ld + c] for r < rows, c < cols; 0 for r >= rows.
// (Loops of fixed width with the bound inside: no memcpy / memset calls,
// which cost more than these few elements.)
static void sb_transpose(const float *x, size_t rows, size_t cols, size_t ld,
                         float t[SB][SB])
{
    for (size_t c = 0; c < cols; c++)
        for (size_t r = 0; r < SB; r++)
            t[c][r] = r < rows ? x[r * ld + c] : 0.0f;
}

// t[r][c] = x[r*ld + c] for r < rows, c < cols; 0 for c >= cols.
static void sb_rows(const float *x, size_t rows, size_t cols, size_t ld,
                    float t[SB][SB])
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < SB; c++)
            t[r][c] = c < cols ? x[r * ld + c] : 0.0f;
}
#endif

// out[j] = sum over d < depth of x[d] * b[d][j], j < SB, from +0.
static void sb_row_times(const float *x, size_t depth, const float b[SB][SB],
                         float *out)
{
    float acc[SB];
    for (size_t j = 0; j < SB; j++)
        acc[j] = 0.0f;
    for (size_t d = 0; d < depth; d++) {
        float xd = x[d];
        for (size_t j = 0; j < SB; j++)
            acc[j] = MHSA_SB_MAC(acc[j], xd, b[d][j]);
    }
    for (size_t j = 0; j < SB; j++)
        out[j] = acc[j];
}

void MHSA_KNAME(small_bwd_scores, MHSA_SB_ISA)(const mhsa_small_bwd_args *a)
{
    float kt[SB][SB], vt[SB][SB];
    sb_transpose(a->k, a->n, a->dh, a->dh, kt);
    sb_transpose(a->v, a->n, a->dh, a->dh, vt);
    for (size_t r = 0; r < a->tq; r++) {
        sb_row_times(a->q + r * a->dh, a->dh, kt, a->s + r * a->lds);
        sb_row_times(a->dout + r * a->lddo, a->dh, vt, a->dp + r * a->lddp);
    }
}

// dst[d] = dst[d] + acc[d], d < dh: the ukr's beta == 1.
static void sb_add_row(float *dst, const float *acc, size_t dh)
{
    for (size_t d = 0; d < dh; d++)
        dst[d] = dst[d] + acc[d];
}

void MHSA_KNAME(small_bwd_grads, MHSA_SB_ISA)(const mhsa_small_bwd_args *a)
{
    size_t tq = a->tq, n = a->n, dh = a->dh;
    if (a->do_dkv) {
        float dor[SB][SB], qr[SB][SB];
        sb_rows(a->dout, tq, dh, a->lddo, dor);
        sb_rows(a->q, tq, dh, dh, qr);
        for (size_t j = 0; j < n; j++) {
            if (a->r0[j] >= tq)
                continue;
            float av[SB], ak[SB];
            for (size_t d = 0; d < SB; d++)
                av[d] = ak[d] = 0.0f;
            for (size_t r = a->r0[j]; r < tq; r++) {
                float p = a->s[r * a->lds + j], ds = a->dp[r * a->lddp + j];
                for (size_t d = 0; d < SB; d++) {
                    av[d] = MHSA_SB_MAC(av[d], p, dor[r][d]);
                    ak[d] = MHSA_SB_MAC(ak[d], ds, qr[r][d]);
                }
            }
            sb_add_row(a->dv + j * a->ldg, av, dh);
            sb_add_row(a->dk + j * a->ldg, ak, dh);
        }
    }
    if (!a->do_dq)
        return;
    float kr[SB][SB];
    sb_rows(a->k, n, dh, dh, kr);
    for (size_t r = 0; r < tq; r++) {
        if (a->kend[r] == 0)
            continue;
        float acc[SB];
        for (size_t d = 0; d < SB; d++)
            acc[d] = 0.0f;
        const float *ds = a->dp + r * a->lddp;
        for (size_t j = 0; j < a->kend[r]; j++) {
            float x = a->scale * ds[j];
            for (size_t d = 0; d < SB; d++)
                acc[d] = MHSA_SB_MAC(acc[d], x, kr[j][d]);
        }
        sb_add_row(a->dq + r * a->ldg, acc, dh);
    }
}
