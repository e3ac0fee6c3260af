// small_view.c — the forward of a small attention view through the table's
// fused kernel (kernels.h: attn_small), when it has one and the view is
// one it can take: the whole view in one pass with S, P and O in
// registers, where the tiled path (attention.c) packs Q, K, V and P and
// runs the softmax and the micro-kernel over tiles mostly empty at these
// sizes (a 12-row, 12-key, 8-column view is 1/100 of one 72 x 128 tile).
// The kernel gives the tiled path's bits or declines; what it cannot
// match (fp32 K/V and compute only; its own size limits, windows and
// non-finite values) goes to the tiled path.
#include <math.h>

#include "kernels/log_f32.h"
#include "small_view.h"

// One past the last key any row of a sees (attention.c's key_end), or 0
// when the view is not one for the fused kernels (16-bit K/V or compute,
// a window cutting the first row's keys, no key at all).
static size_t fused_keys(const head_args *a)
{
    if (a->kv_dtype != MHSA_F32 || a->compute != MHSA_F32)
        return 0;
    size_t n = a->tk;
    if (a->causal && a->q_pos + a->tq < n)
        n = a->q_pos + a->tq;
    if (a->klen && a->klen < n)
        n = a->klen;
    return mhsa_window_first(a->q_pos, a->window) != 0 ? 0 : n;
}

int mhsa__head_forward_small(const mhsa_kernels *k, const head_args *a)
{
    size_t n = k->attn_small ? fused_keys(a) : 0;
    if (n == 0)
        return 0;
    float m[MHSA_SMALL_VIEW_ROWS], l[MHSA_SMALL_VIEW_ROWS];
    if (a->tq > MHSA_SMALL_VIEW_ROWS)
        return 0;
    mhsa_attn_small_args sa = {
        .tq = a->tq, .n = n, .dh = a->dh, .q = a->q, .k = a->k, .v = a->v,
        .ldq = a->ldqkv, .ldkv = a->ldqkv,
        .qscale = a->ldqkv ? a->scale : 0.0f,
        .mv = { a->mask, a->ldmask, a->q_pos, 0, a->causal, a->window,
                a->klen },
        .o = a->o, .ldo = a->ldo, .m = m, .l = l,
    };
    // The forward's case (lse and lsum kept for a backward): the kernel
    // writes m and l straight into them. That is attention.c's ending of
    // mhsa__head_forward (lse = m, lsum = l) but for rows that saw no key,
    // whose m the kernel leaves -inf (lse's -inf) and whose l = 0 becomes
    // lsum's 1 below. (A declined view's rows are written again by the
    // tiled path, or by forward.c's rerun of the call.) Going through the
    // stack and a per-row select had cost 190 instructions a 12-row view.
    if (a->lsum) {
        sa.m = a->lse;
        sa.l = a->lsum;
    }
    if (!k->attn_small(&sa))
        return 0;
    if (a->lsum) {
        for (size_t r = 0; r < a->tq; r++)
            if (a->lsum[r] == 0.0f)
                a->lsum[r] = 1.0f;
        return 1;
    }
    for (size_t r = 0; r < a->tq; r++) {
        if (l[r] == 0.0f) {
            if (a->lse)
                a->lse[r] = -INFINITY;
            if (a->lsum)
                a->lsum[r] = 1.0f;
        } else if (a->lsum) {
            a->lse[r] = m[r];
            a->lsum[r] = l[r];
        } else if (a->lse) {
            a->lse[r] = m[r] + mhsa_log_f32(l[r]);
        }
    }
    return 1;
}

int mhsa__heads_forward_small(const mhsa_kernels *k, const head_args *a,
                              size_t nh, const float *const *kh,
                              const float *const *vh)
{
    size_t n = nh >= 2 && nh <= 4 && k->attn_small_heads && !a->mask &&
                       a->lse && a->lsum && a->ldqkv
                   ? fused_keys(a)
                   : 0;
    if (!n)
        return 0;
    mhsa_attn_heads_args ha = {
        .nh = nh, .tq = a->tq, .n = n, .dh = a->dh, .q = a->q,
        .ldq = a->ldqkv, .ldkv = a->ldqkv, .qscale = a->scale,
        .mv = { NULL, 0, a->q_pos, 0, a->causal, a->window, a->klen },
        .o = a->o, .ldo = a->ldo, .m = a->lse, .l = a->lsum,
        .ldml = a->tq,
    };
    // lse = m and lsum = l straight, as mhsa__head_forward_small has it,
    // without its fix-up of rows that see no key: without a mask or a
    // window cutting the first keys every row sees key 0, so its l holds
    // exp(0) = 1 of its largest score and is at least 1.
    for (size_t hh = 0; hh < nh; hh++) {
        ha.k[hh] = kh[hh];
        ha.v[hh] = vh[hh];
    }
    return k->attn_small_heads(&ha);
}
