// attn_small.c — mhsa_attn_small__scalar (kernels.h: attn_small): the
// scalar reference of the fused small-view forward, the bits of the
// scalar table's tiled path (attention.c on sgemm_4x8, softmax_online and
// scale_copy of this directory), operation for operation:
//  - S: each score is sgemm_4x8's chain, a product then a sum over the dh
//    columns in order from +0, for the keys the row's panel of 4 rows can
//    see (attention.c's diag_scores); q multiplied by qscale on load when
//    it is read in place, fl(qscale * q), as the split rounds it;
//  - the softmax of the one tile: mhsa_softmax_online__scalar itself, from
//    m = -inf and l = 0, with no output to rescale yet (dv 0);
//  - O: sgemm_4x8's chain over the keys the row's panel sees (diag_pv),
//    stored as the first tile stores it (+0 + sum), then times fl(1 / l)
//    as scale_copy multiplies (a plain copy when that is 1), and +0 for a
//    row that sees no key.
// Declined (return 0), having maybe written o, m and l: more than 16 rows
// or keys, a non-finite Q (after the scaling), K or V row among the n keys
// (the tiled path makes NaN scores of the first and sums the last in
// loops of its own), a non-finite score, a NaN or +inf masked score, or a
// non-finite O sum. Any dh.
#include <math.h>

#include "scalar/scalar.h"

enum { MR = 4, MAX_ROWS = 16, MAX_KEYS = 16 };

// q[r][d] as the tiled path reads it: scaled on load or pre-scaled.
static inline float q_at(const mhsa_attn_small_args *a, size_t ldq, size_t r,
                         size_t d)
{
    float x = a->q[r * ldq + d];
    return a->qscale != 0.0f ? a->qscale * x : x;
}

static int rows_finite(size_t rows, size_t cols, const float *x, size_t ld)
{
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < cols; c++)
            if (!isfinite(x[r * ld + c]))
                return 0;
    return 1;
}

// The keys [0, result) a panel of rows [0, row_end) can see, k0 being 0
// (attn/tiles.h: mhsa__attn_panel_keys): all n without the causal mask.
static size_t panel_keys(const mhsa_mask_view *mv, size_t n, size_t row_end)
{
    if (!mv->causal)
        return n;
    size_t last = mv->q0 + row_end;
    return last < n ? last : n;
}

int mhsa_attn_small__scalar(const mhsa_attn_small_args *a)
{
    size_t tq = a->tq, n = a->n, dh = a->dh;
    if (tq == 0 || tq > MAX_ROWS || n == 0 || n > MAX_KEYS || dh == 0 ||
        a->mv.k0 != 0)
        return 0;
    size_t ldq = a->ldq ? a->ldq : dh, ldkv = a->ldkv ? a->ldkv : dh;
    for (size_t r = 0; r < tq; r++)
        for (size_t d = 0; d < dh; d++)
            if (!isfinite(q_at(a, ldq, r, d)))
                return 0;
    if (!rows_finite(n, dh, a->k, ldkv) || !rows_finite(n, dh, a->v, ldkv))
        return 0;

    // S, rows MAX_KEYS apart; a panel's columns past its keys are blocked
    // for all its rows and never read (softmax_online writes their p = 0).
    float s[MAX_ROWS * MAX_KEYS];
    for (size_t i = 0; i < tq; i += MR) {
        size_t h = tq - i < MR ? tq - i : MR;
        size_t ni = panel_keys(&a->mv, n, i + h);
        for (size_t r = i; r < i + h; r++)
            for (size_t j = 0; j < n; j++) {
                float sum = 0.0f;
                for (size_t d = 0; j < ni && d < dh; d++)   // +0 past ni
                    sum += q_at(a, ldq, r, d) * a->k[j * ldkv + d];
                if (!isfinite(sum))
                    return 0;
                s[r * MAX_KEYS + j] = sum;
            }
    }
    // The masked scores the softmax will read: none NaN or +-inf.
    for (size_t r = 0; a->mv.mask && r < tq; r++) {
        size_t lo, hi;
        mhsa_mask_view_range(&a->mv, r, n, &lo, &hi);
        for (size_t j = lo; j < hi; j++) {
            float add = a->mv.mask[r * a->mv.ldmask + j];
            if (add != -INFINITY && !isfinite(s[r * MAX_KEYS + j] + add))
                return 0;
        }
    }
    for (size_t r = 0; r < tq; r++) {
        a->m[r] = -INFINITY;
        a->l[r] = 0.0f;
    }
    mhsa_softmax_args sa = {
        .rows = tq, .n = n, .s = s, .lds = MAX_KEYS, .mv = a->mv,
        .m = a->m, .l = a->l, .o = a->o, .ldo = a->ldo, .dv = 0,
        .s_room = MAX_KEYS,
    };
    mhsa_softmax_online__scalar(&sa);   // s = P

    for (size_t i = 0; i < tq; i += MR) {
        size_t h = tq - i < MR ? tq - i : MR;
        size_t ki = panel_keys(&a->mv, n, i + h);
        for (size_t r = i; r < i + h; r++) {
            float *o = a->o + r * a->ldo;
            for (size_t d = 0; d < dh; d++) {
                float sum = 0.0f;
                for (size_t j = 0; j < ki; j++)
                    sum += s[r * MAX_KEYS + j] * a->v[j * ldkv + d];
                if (!isfinite(sum))
                    return 0;
                o[d] = sum;
            }
        }
    }
    for (size_t r = 0; r < tq; r++) {
        float *o = a->o + r * a->ldo;
        if (a->l[r] == 0.0f) {   // every key blocked: O = +0
            for (size_t d = 0; d < dh; d++)
                o[d] = 0.0f;
            continue;
        }
        float inv = 1.0f / a->l[r];
        if (inv != 1.0f)
            for (size_t d = 0; d < dh; d++)
                o[d] = inv * o[d];
    }
    return 1;
}
