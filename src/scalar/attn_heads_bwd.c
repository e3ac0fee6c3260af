// attn_heads_bwd.c — mhsa_attn_small_heads_bwd__scalar (kernels.h:
// attn_small_heads_bwd): the scalar reference of the fused small backward
// of up to 4 heads' tiles at once, each tile through
// mhsa_attn_small_bwd__scalar, so every head has its bits by
// construction. It takes the tiles every ISA's kernel may take
// (mhsa_attn_heads_bwd_fit, every head's lse finite), of any head width
// up to MHSA_SMALL_BWD_MAX, and checks them all before writing anything.
#include "scalar/scalar.h"

int mhsa_attn_small_heads_bwd__scalar(const mhsa_attn_heads_bwd_args *a)
{
    if (a->nh == 0 || a->nh > 4 ||
        !mhsa_attn_heads_bwd_fit(a, a->h[0]->p->dh))
        return 0;
    for (size_t hh = 0; hh < a->nh; hh++)
        if (!mhsa_attn_small_bwd_fits(a->h[hh]))
            return 0;
    for (size_t hh = 0; hh < a->nh; hh++)
        mhsa_attn_small_bwd__scalar(a->h[hh]);
    return 1;
}
