// softmax.c — NEON online softmax (forward step, backward, whole row).
//
// Same rules as src/scalar/softmax.c and kernels.h (online normaliser:
// Milakov & Gimelshein 2018; FlashAttention), four keys per vector:
//  - which keys are blocked is decided first: the position rules (causal,
//    window, key padding) cut row r to the keys [lo, hi) of
//    mhsa_mask_view_range, whose outside is written as 0 and never read,
//    and a -INFINITY mask entry blocks its lane: the lane is replaced by
//    -INFINITY with a bit select, so NaN or inf in a blocked score never
//    reaches arithmetic that is kept; a +INFINITY mask entry makes the
//    score NaN;
//  - the running max uses FMAXNM, which (like the scalar `x > m`) lets a
//    NaN score never win the max; the NaN then reaches p and the row sum,
//    and a row whose only unblocked scores are NaN is NaN, not zeros;
//  - a row whose max is +INFINITY (scores that overflowed) shares its
//    weight among its +INFINITY keys in a pass of its own, so the usual
//    path is unchanged (one compare per row);
//  - e^x is mhsa_neon_expf (vmath.h, ~2 ulp), so p differs from scalar
//    libm expf by ~1e-7 relative; sums run in 4 lanes, then across lanes.
// Tails (n % 4 keys) go through the same vector code via small local
// buffers, so nothing past n is read or written.
#include <math.h>

#include "kernels/kernels.h"
#include "neon/neon.h"
#include "neon/vmath.h"

// Masked scores of keys j..j+cnt-1 (cnt <= 4, all inside [lo, hi)) of one
// row: s + mask, -INFINITY where a mask entry is -INFINITY, NaN where it is
// +INFINITY. Lanes >= cnt come back as -INFINITY.
static float32x4_t masked_chunk(const float *s, const float *mrow, size_t j,
                                size_t cnt)
{
    const float32x4_t ninf = vdupq_n_f32(-INFINITY);
    uint32x4_t blocked = mhsa_neon_lanes_from(cnt);
    float32x4_t x = cnt == 4 ? vld1q_f32(s + j)
                             : mhsa_neon_load_tail(s + j, cnt, 0.0f);
    if (mrow) {
        float32x4_t add = cnt == 4 ? vld1q_f32(mrow + j)
                                   : mhsa_neon_load_tail(mrow + j, cnt, 0.0f);
        blocked = vorrq_u32(blocked, vceqq_f32(add, ninf));
        x = vaddq_f32(x, add);
        // All-ones is a NaN: or-ing the +inf lanes' compare makes them NaN
        // and leaves every other lane's bits alone.
        uint32x4_t pinf = vceqq_f32(add, vdupq_n_f32(INFINITY));
        x = vreinterpretq_f32_u32(vorrq_u32(vreinterpretq_u32_f32(x), pinf));
    }
    return vbslq_f32(blocked, ninf, x);
}

// The weight of a score x in a row whose max is +INFINITY: w for the
// +INFINITY scores, NaN stays NaN, 0 for the rest (-INFINITY included).
static float32x4_t inf_row_weight(float32x4_t x, float32x4_t w)
{
    uint32x4_t top = vceqq_f32(x, vdupq_n_f32(INFINITY));
    uint32x4_t nan = vmvnq_u32(vceqq_f32(x, x));
    uint32x4_t wb = vandq_u32(top, vreinterpretq_u32_f32(w));
    uint32x4_t xb = vandq_u32(nan, vreinterpretq_u32_f32(x));
    return vreinterpretq_f32_u32(vorrq_u32(wb, xb));
}

static void store_n(float *y, size_t cnt, float32x4_t v)
{
    if (cnt == 4)
        vst1q_f32(y, v);
    else
        mhsa_neon_store_tail(y, cnt, v);
}

static float32x4_t load_n(const float *x, size_t cnt, float fill)
{
    return cnt == 4 ? vld1q_f32(x) : mhsa_neon_load_tail(x, cnt, fill);
}

static void fill_row(float *y, size_t n, float v)
{
    float32x4_t vv = vdupq_n_f32(v);
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        vst1q_f32(y + j, vv);
    for (; j < n; j++)
        y[j] = v;
}

// Sets every non-NaN element of y[0..n) to 0 and keeps the NaNs; returns
// whether there was one.
static int zero_keep_nan(float *y, size_t n)
{
    const float32x4_t zero = vdupq_n_f32(0.0f);
    uint32x4_t seen = vdupq_n_u32(0);
    for (size_t j = 0; j < n; j += 4) {
        size_t cnt = n - j < 4 ? n - j : 4;
        float32x4_t v = load_n(y + j, cnt, 0.0f);
        uint32x4_t nan = vmvnq_u32(vceqq_f32(v, v));
        seen = vorrq_u32(seen, nan);
        store_n(y + j, cnt, vbslq_f32(nan, v, zero));
    }
    return vmaxvq_u32(seen) != 0;
}

// Whether x[0..n) holds a NaN.
static int any_nan(const float *x, size_t n)
{
    uint32x4_t seen = vdupq_n_u32(0);
    for (size_t j = 0; j < n; j += 4) {
        float32x4_t v = load_n(x + j, n - j < 4 ? n - j : 4, 0.0f);
        seen = vorrq_u32(seen, vmvnq_u32(vceqq_f32(v, v)));
    }
    return vmaxvq_u32(seen) != 0;
}

// Zeros y outside the keys [lo, hi) a row may see.
static void zero_outside(float *y, size_t lo, size_t hi, size_t n)
{
    fill_row(y, lo, 0.0f);
    fill_row(y + hi, n - hi, 0.0f);
}

void mhsa_softmax_online__neon(const mhsa_softmax_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    size_t n = a->n;
    for (size_t r = 0; r < a->rows; r++) {
        float *s = a->s + r * a->lds;
        const float *mrow = mv->mask ? mv->mask + r * mv->ldmask : NULL;
        size_t lo, hi;
        mhsa_mask_view_range(mv, r, n, &lo, &hi);
        float m_old = a->m[r];

        // Pass 1: masked scores into s, row max over unblocked keys.
        float32x4_t vmax = vdupq_n_f32(m_old);
        for (size_t j = lo; j < hi; j += 4) {
            size_t cnt = hi - j < 4 ? hi - j : 4;
            float32x4_t x = masked_chunk(s, mrow, j, cnt);
            vmax = vmaxnmq_f32(vmax, x);
            store_n(s + j, cnt, x);
        }
        zero_outside(s, lo, hi, n);
        float m_new = vmaxnmvq_f32(vmax);
        if (m_new == -INFINITY) {   // nothing unblocked and finite yet
            // Unblocked NaN scores still poison the row (NaN weights, l).
            if (zero_keep_nan(s + lo, hi - lo))
                a->l[r] = NAN;
            continue;
        }

        float32x4_t vsum = vdupq_n_f32(0.0f);
        float alpha;
        if (m_new == INFINITY) {
            // Overflowed scores: each +INFINITY key weighs 1, the rest 0;
            // l counts them. alpha = 1 while the max stays +INFINITY.
            const float32x4_t one = vdupq_n_f32(1.0f);
            for (size_t j = lo; j < hi; j += 4) {
                size_t cnt = hi - j < 4 ? hi - j : 4;
                float32x4_t p = inf_row_weight(load_n(s + j, cnt, -INFINITY),
                                               one);
                vsum = vaddq_f32(vsum, p);
                store_n(s + j, cnt, p);
            }
            alpha = m_old == INFINITY ? 1.0f : 0.0f;
        } else {
            // Pass 2: p = e^(x - m_new); -INFINITY (blocked) gives exact 0.
            float32x4_t vm = vdupq_n_f32(m_new);
            for (size_t j = lo; j < hi; j += 4) {
                size_t cnt = hi - j < 4 ? hi - j : 4;
                float32x4_t x = load_n(s + j, cnt, -INFINITY);
                float32x4_t p = mhsa_neon_expf(vsubq_f32(x, vm));
                vsum = vaddq_f32(vsum, p);
                store_n(s + j, cnt, p);
            }
            // One scalar expf per row: alpha is bitwise the scalar
            // kernel's (0 on the first unblocked tile).
            alpha = expf(m_old - m_new);
        }
        float sum = vaddvq_f32(vsum);
        a->m[r] = m_new;
        a->l[r] = a->l[r] * alpha + sum;
        if (alpha != 1.0f) {
            float *o = a->o + r * a->ldo;
            float32x4_t va = vdupq_n_f32(alpha);
            size_t d = 0;
            for (; d + 4 <= a->dv; d += 4)
                vst1q_f32(o + d, vmulq_f32(vld1q_f32(o + d), va));
            for (; d < a->dv; d++)
                o[d] *= alpha;
        }
    }
}

void mhsa_softmax_grad__neon(const mhsa_softmax_grad_args *a)
{
    const mhsa_mask_view *mv = &a->mv;
    size_t n = a->n;
    const float32x4_t zero = vdupq_n_f32(0.0f);
    const float32x4_t ninf = vdupq_n_f32(-INFINITY);
    for (size_t r = 0; r < a->rows; r++) {
        float *s = a->s + r * a->lds, *dp = a->dp + r * a->lddp;
        const float *mrow = mv->mask ? mv->mask + r * mv->ldmask : NULL;
        float lse = a->lse[r];
        size_t lo = 0, hi = 0;   // lse == -inf: the row saw no key, p = 0
        if (lse != -INFINITY)
            mhsa_mask_view_range(mv, r, n, &lo, &hi);
        // lse == +inf: the forward's max was +INFINITY; each +INFINITY
        // score weighs inf_w[r], the others 0.
        int inf_row = lse == INFINITY;
        float32x4_t vlse = vdupq_n_f32(lse), vdelta = vdupq_n_f32(a->delta[r]);
        float32x4_t vw = vdupq_n_f32(inf_row ? a->inf_w[r] : 0.0f);
        for (size_t j = lo; j < hi; j += 4) {
            size_t cnt = hi - j < 4 ? hi - j : 4;
            float32x4_t x = masked_chunk(s, mrow, j, cnt);
            float32x4_t p;
            if (inf_row) {
                p = inf_row_weight(x, vw);
            } else {
                // Blocked lanes are 0 whatever lse holds (even NaN).
                uint32x4_t blocked = vceqq_f32(x, ninf);
                p = mhsa_neon_expf(vsubq_f32(x, vlse));
                p = vbslq_f32(blocked, zero, p);
            }
            float32x4_t g = load_n(dp + j, cnt, 0.0f);
            float32x4_t ds = vmulq_f32(p, vsubq_f32(g, vdelta));
            // p == 0 gives ds = 0 exactly, even if dp holds inf or NaN.
            ds = vbslq_f32(vceqq_f32(p, zero), zero, ds);
            store_n(s + j, cnt, p);
            store_n(dp + j, cnt, ds);
        }
        zero_outside(s, lo, hi, n);
        zero_outside(dp, lo, hi, n);
    }
}

void mhsa_softmax_row__neon(size_t n, const float *x, float *y)
{
    float32x4_t vmax = vdupq_n_f32(-INFINITY);
    for (size_t j = 0; j < n; j += 4) {
        size_t cnt = n - j < 4 ? n - j : 4;
        vmax = vmaxnmq_f32(vmax, load_n(x + j, cnt, -INFINITY));
    }
    float m = vmaxnmvq_f32(vmax);
    if (m == -INFINITY) {   // all blocked (zeros), or NaN: all NaN
        fill_row(y, n, any_nan(x, n) ? NAN : 0.0f);
        return;
    }
    float32x4_t vm = vdupq_n_f32(m), vsum = vdupq_n_f32(0.0f);
    const float32x4_t one = vdupq_n_f32(1.0f);
    for (size_t j = 0; j < n; j += 4) {
        size_t cnt = n - j < 4 ? n - j : 4;
        float32x4_t v = load_n(x + j, cnt, -INFINITY);
        // m == +inf: overflowed scores share the weight.
        float32x4_t p = m == INFINITY ? inf_row_weight(v, one)
                                      : mhsa_neon_expf(vsubq_f32(v, vm));
        vsum = vaddq_f32(vsum, p);
        store_n(y + j, cnt, p);   // in place is fine: x[j..] already read
    }
    float32x4_t inv = vdupq_n_f32(1.0f / vaddvq_f32(vsum));
    size_t j = 0;
    for (; j + 4 <= n; j += 4)
        vst1q_f32(y + j, vmulq_f32(vld1q_f32(y + j), inv));
    float inv1 = vgetq_lane_f32(inv, 0);
    for (; j < n; j++)
        y[j] *= inv1;
}
