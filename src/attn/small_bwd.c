// small_bwd.c — the backward of a small block through the table's unpacked
// products (kernels.h: small_bwd_scores / small_bwd_grads), when it has
// them and the block is one they can take: one key tile of at most
// MHSA_SMALL_BWD_MAX keys and rows, finite fp32 operands and no +inf
// log-sum-exp. They replace the packs and micro-kernel calls of the tiled
// path (attention.c), which cost several times the arithmetic at these
// sizes. Each sum runs over the rows or keys the tiled path's panels give
// it (attention.c's diag_keys, diag_pv), so the bits are the tiled path's.
// A table with their fused form (kernels.h: attn_small_bwd) runs that
// first: scores, softmax gradient and products in one call, without the
// score rows in between; what it declines takes the three calls.
#include <math.h>

#include "small_bwd.h"

// Whether the block's backward is one tile the small products can take,
// but for the lse (lse_below_inf), which the fused kernel checks itself.
static int small_tile(const mhsa_kernels *k, const head_args *a, int safe,
                      size_t j0, size_t jend, size_t kend, size_t bc)
{
    return k->small_bwd_scores && safe && a->compute == MHSA_F32 &&
           a->tq <= MHSA_SMALL_BWD_MAX && a->dh <= MHSA_SMALL_BWD_MAX &&
           j0 < jend && jend - j0 <= bc && kend - j0 <= MHSA_SMALL_BWD_MAX;
}

// No row's log-sum-exp is +inf (the three calls' condition).
static int lse_below_inf(const head_args *a)
{
    for (size_t r = 0; r < a->tq; r++)
        if (a->lse[r] == INFINITY)
            return 0;
    return 1;
}

// The chains' ranges of the tile [j0, j0 + n) (attention.c's panels):
// r0[j], the first row of key j's dv / dk sums (diag_keys, per panel of
// mr keys), and ke[r], the keys in row r's dq sum (diag_pv, per panel of
// mr rows).
static void tile_ranges(const mhsa_kernels *k, const head_args *a, size_t j0,
                        size_t n, size_t *r0, size_t *ke)
{
    size_t tq = a->tq, mr = (size_t)k->mr;
    int diag = mhsa__attn_panel_keys(a, j0, n, 1) < n;
    // Panel by panel, not j / mr per key: a division each was tens of
    // cycles, 24 of them a 12 x 12 block.
    for (size_t p = 0; p < n; p += mr) {
        size_t key = j0 + p, first = diag && key > a->q_pos ? key - a->q_pos
                                                            : 0;
        for (size_t j = p; j < n && j < p + mr; j++)
            r0[j] = first;
    }
    for (size_t i = 0; i < tq; i += mr) {
        size_t h = tq - i < mr ? tq - i : mr;
        size_t end = diag ? mhsa__attn_panel_keys(a, j0, n, i + h) : n;
        for (size_t r = i; r < i + h; r++)
            ke[r] = end;
    }
}

// The products' arguments of block a's tile [j0, j0 + n), and their fused
// form's (its mask view is attention.c's mask_view for the tile).
static void tile_args(const head_args *a, size_t j0, size_t n, size_t bc,
                      const size_t *r0, const size_t *ke,
                      mhsa_small_bwd_args *sb, mhsa_attn_small_bwd_args *fa)
{
    size_t dh = a->dh;
    mhsa_small_bwd_args b = {
        a->tq, n, dh, a->q, a->k + j0 * dh, a->v + j0 * dh, a->dout,
        a->lddo, NULL, bc, NULL, bc, a->scale, a->dq, a->dk + j0 * a->ldg,
        a->dv + j0 * a->ldg, a->ldg, r0, ke, !a->skip_dq, !a->skip_dkv,
    };
    *sb = b;
    mhsa_mask_view mv = { a->mask ? a->mask + j0 : NULL, a->ldmask,
                          a->q_pos, j0, a->causal, a->window, a->klen };
    mhsa_attn_small_bwd_args f = { sb, mv, a->lse, a->o, a->ldo };
    *fa = f;
}

int mhsa__head_backward_small(const mhsa_kernels *k, const head_args *a,
                              int safe, size_t j0, size_t jend, size_t kend,
                              size_t bc, float *tiles)
{
    if (!small_tile(k, a, safe, j0, jend, kend, bc))
        return 0;
    size_t tq = a->tq, dh = a->dh, n = kend - j0;
    size_t r0[MHSA_SMALL_BWD_MAX], ke[MHSA_SMALL_BWD_MAX];
    tile_ranges(k, a, j0, n, r0, ke);
    mhsa_small_bwd_args sb;
    mhsa_attn_small_bwd_args fa;
    tile_args(a, j0, n, bc, r0, ke, &sb, &fa);
    if (k->attn_small_bwd && k->attn_small_bwd(&fa))
        return 1;
    if (!lse_below_inf(a))
        return 0;
    float *s, *dp, *delta;
    mhsa__attn_bwd_rows(k, dh, tiles, &s, &dp, &delta);
    sb.s = s, sb.dp = dp;
    mhsa__attn_deltas(a, delta);
    k->small_bwd_scores(&sb);
    mhsa_softmax_grad_args ga = { tq, n, s, bc, dp, bc, fa.mv, a->lse,
                                  delta, NULL };
    k->softmax_grad(&ga);   // s = P, dp = dS
    k->small_bwd_grads(&sb);
    return 1;
}

int mhsa__heads_backward_small(const mhsa_kernels *k, const head_args *a,
                               size_t nh, size_t j0, size_t jend,
                               size_t kend, size_t bc)
{
    if (!k->attn_small_heads_bwd || nh < 2 || nh > 4)
        return 0;
    for (size_t hh = 0; hh < nh; hh++)
        if (!small_tile(k, &a[hh], 1, j0, jend, kend, bc))
            return 0;
    size_t n = kend - j0;
    // The heads share their rows' positions, so one set of ranges.
    size_t r0[MHSA_SMALL_BWD_MAX], ke[MHSA_SMALL_BWD_MAX];
    tile_ranges(k, a, j0, n, r0, ke);
    mhsa_small_bwd_args sb[4];
    mhsa_attn_small_bwd_args fa[4];
    mhsa_attn_heads_bwd_args ha = { nh, { NULL } };
    for (size_t hh = 0; hh < nh; hh++) {
        tile_args(&a[hh], j0, n, bc, r0, ke, &sb[hh], &fa[hh]);
        ha.h[hh] = &fa[hh];
    }
    return k->attn_small_heads_bwd(&ha);
}
