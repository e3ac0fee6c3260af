// attn_small_bwd.c — mhsa_attn_small_bwd__scalar (kernels.h:
// attn_small_bwd): the scalar reference of the fused small backward, the
// three calls it stands in for (attn/small_bwd.c) made by it, on this
// directory's kernels: delta = rowsum(dO * O), each row's products summed
// in order from +0 (kernels/bwd_delta.h, as the tiled path), then
// mhsa_small_bwd_scores__scalar, mhsa_softmax_grad__scalar and
// mhsa_small_bwd_grads__scalar on score rows of its own (their bits do
// not depend on the rows' stride). So the bits of the three calls by
// construction. Declined (return 0, nothing written): the tiles
// mhsa_attn_small_bwd_fits refuses.
#include "kernels/bwd_delta.h"
#include "scalar/scalar.h"

enum { MAX = MHSA_SMALL_BWD_MAX };

int mhsa_attn_small_bwd__scalar(const mhsa_attn_small_bwd_args *g)
{
    if (!mhsa_attn_small_bwd_fits(g))
        return 0;
    const mhsa_small_bwd_args *p = g->p;
    float s[MAX * MAX], dp[MAX * MAX], delta[MAX];
    mhsa_bwd_delta(p->tq, p->dh, g->o, g->ldo, p->dout, p->lddo, delta);
    mhsa_small_bwd_args b = *p;
    b.s = s, b.lds = MAX, b.dp = dp, b.lddp = MAX;
    mhsa_small_bwd_scores__scalar(&b);
    mhsa_softmax_grad_args ga = { p->tq, p->n, s,       MAX,   dp, MAX,
                                  g->mv, g->lse, delta, NULL };
    mhsa_softmax_grad__scalar(&ga);   // s = P, dp = dS
    mhsa_small_bwd_grads__scalar(&b);
    return 1;
}
