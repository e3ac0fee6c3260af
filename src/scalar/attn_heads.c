// attn_heads.c — mhsa_attn_small_heads__scalar (kernels.h:
// attn_small_heads): the scalar reference of the small-view forward of
// up to 4 heads at once, each view through mhsa_attn_small__scalar, so
// every view has its bits by construction. It takes the views every
// ISA's kernel may take (mhsa_attn_heads_fit), of any head width, and
// returns 0 (some views maybe written) as soon as one view is declined.
#include "scalar/scalar.h"

int mhsa_attn_small_heads__scalar(const mhsa_attn_heads_args *a)
{
    if (!mhsa_attn_heads_fit(a, a->dh))
        return 0;
    size_t dh = a->dh, ldq = a->ldq ? a->ldq : a->nh * dh;
    size_t ldkv = a->ldkv ? a->ldkv : dh;
    for (size_t hh = 0; hh < a->nh; hh++) {
        mhsa_attn_small_args v = {
            .tq = a->tq, .n = a->n, .dh = dh, .q = a->q + hh * dh,
            .k = a->k[hh], .v = a->v[hh], .ldq = ldq, .ldkv = ldkv,
            .qscale = a->qscale, .mv = a->mv, .o = a->o + hh * dh,
            .ldo = a->ldo, .m = a->m + hh * a->ldml,
            .l = a->l + hh * a->ldml,
        };
        if (!mhsa_attn_small__scalar(&v))
            return 0;
    }
    return 1;
}
