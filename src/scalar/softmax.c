// softmax.c — scalar online softmax (forward step, backward, whole row).
//
// The reference for the SIMD versions: same blocking rules (kernels.h), libm
// expf. Blocked keys are decided from their positions (causal, window,
// padding: mhsa_mask_view_range) and -INFINITY mask entries only, before
// any score is read, so NaN in a blocked score (e.g. from a NaN key) never
// reaches the output. Rows whose largest score is +INFINITY share their
// weight among their +INFINITY keys (kernels.h, "Scores that overflow").
#include <math.h>

#include "scalar/scalar.h"
#include "kernels/softmax_row.h"

// Score plus mask for (r, j), or -INFINITY when the key is blocked by the
// mask (NaN for a +INFINITY entry: see kernels.h); keys outside [lo, hi)
// are handled by the callers.
static float masked_score(const mhsa_mask_view *mv, const float *s, size_t r,
                          size_t j)
{
    if (mv->mask) {
        float add = mv->mask[r * mv->ldmask + j];
        if (add == -INFINITY)
            return -INFINITY;
        if (add == INFINITY)
            return NAN;
        return s[j] + add;
    }
    return s[j];
}

// exp(x - m) for a score x of a row whose max is m; when m is +INFINITY
// the +INFINITY scores weigh 1 and the rest 0 (NaN stays NaN).
static float weight(float x, float m)
{
    if (m == INFINITY)
        return x == INFINITY ? 1.0f : (x != x ? x : 0.0f);
    return x == -INFINITY ? 0.0f : expf(x - m);
}

void mhsa_softmax_online__scalar(const mhsa_softmax_args *a)
{
    for (size_t r = 0; r < a->rows; r++) {
        float *s = a->s + r * a->lds;
        size_t lo, hi;
        mhsa_mask_view_range(&a->mv, r, a->n, &lo, &hi);
        float m_old = a->m[r], m_new = m_old;
        for (size_t j = 0; j < a->n; j++) {
            float x = j < lo || j >= hi ? -INFINITY
                                        : masked_score(&a->mv, s, r, j);
            s[j] = x;
            if (x > m_new)        // NaN never wins: NaN reaches p below
                m_new = x;
        }
        if (m_new == -INFINITY) {   // nothing unblocked and finite yet
            // Unblocked NaN scores still poison the row (NaN weights, l).
            int nan_seen = 0;
            for (size_t j = 0; j < a->n; j++) {
                nan_seen |= s[j] != s[j];
                s[j] = s[j] != s[j] ? s[j] : 0.0f;
            }
            if (nan_seen)
                a->l[r] = NAN;
            continue;
        }
        float sum = 0.0f;
        for (size_t j = 0; j < a->n; j++) {
            float p = weight(s[j], m_new);
            s[j] = p;
            sum += p;
        }
        // 0 on the first unblocked tile; 1 while the max stays +INFINITY.
        float alpha = m_old == m_new ? 1.0f : expf(m_old - m_new);
        a->m[r] = m_new;
        a->l[r] = a->l[r] * alpha + sum;
        if (alpha != 1.0f) {
            float *o = a->o + r * a->ldo;
            for (size_t d = 0; d < a->dv; d++)
                o[d] *= alpha;
        }
    }
}

void mhsa_softmax_grad__scalar(const mhsa_softmax_grad_args *a)
{
    for (size_t r = 0; r < a->rows; r++) {
        float *s = a->s + r * a->lds, *dp = a->dp + r * a->lddp;
        float lse = a->lse[r], delta = a->delta[r];
        size_t lo, hi;
        mhsa_mask_view_range(&a->mv, r, a->n, &lo, &hi);
        for (size_t j = 0; j < a->n; j++) {
            float x = j < lo || j >= hi ? -INFINITY
                                        : masked_score(&a->mv, s, r, j);
            float p;
            if (x == -INFINITY || lse == -INFINITY)
                p = 0.0f;
            else if (lse == INFINITY)   // the forward's max was +INFINITY
                p = x == INFINITY ? a->inf_w[r] : (x != x ? x : 0.0f);
            else
                p = expf(x - lse);
            s[j] = p;
            dp[j] = p == 0.0f ? 0.0f : p * (dp[j] - delta);
        }
    }
}

void mhsa_softmax_row__scalar(size_t n, const float *x, float *y)
{
    float m = -INFINITY;
    for (size_t j = 0; j < n; j++)
        if (x[j] > m)
            m = x[j];
    if (m == -INFINITY) {   // all blocked (zeros), or NaN: all NaN
        mhsa_softmax_row_no_max(n, x, y);
        return;
    }
    float sum = 0.0f;
    for (size_t j = 0; j < n; j++) {
        float p = weight(x[j], m);
        y[j] = p;
        sum += p;
    }
    float inv = 1.0f / sum;
    for (size_t j = 0; j < n; j++)
        y[j] *= inv;
}
