// heads_bwd.h — what the x86 backward kernels for several heads of width
// 8 (src/avx2/attn_heads_bwd.c, src/avx512/attn_heads_bwd.c) do alike,
// written once around each one's own vectors and layout.
//
// MHSA_HEADS_BWD_COLUMNS uses the including file's DH (the head width)
// and group_columns(w, g, x, ld, xs, t): the (row, head) columns of group
// g of the heads' rows side by side (x, ld) or each head's own (xs).
#ifndef MHSA_KERNELS_HEADS_BWD_H
#define MHSA_KERNELS_HEADS_BWD_H

#include "kernels/kernels.h"

// The start of a kernel's take of the tiles: 0 when they are not ones it
// takes (mhsa_attn_heads_bwd_fit), else 1 with *t their shared view.
static inline int mhsa_heads_bwd_take(const mhsa_attn_heads_bwd_args *a,
                                      size_t dh, mhsa_heads_bwd_tiles *t)
{
    if (!mhsa_attn_heads_bwd_fit(a, dh))
        return 0;
    mhsa_heads_bwd_tiles_of(a, t);
    return 1;
}

// In group_weights (w the view, its tiles w->t): qt and dot, DH vectors
// each, the group's Q and dO columns; delta (set to +0 by the caller) +=
// dO * O per lane, mhsa__attn_deltas' products summed in the order of the
// columns; add and mul are the ISA's vector add and multiply.
#define MHSA_HEADS_BWD_COLUMNS(w, g, qt, dot, delta, add, mul)                \
    do {                                                                      \
        __typeof__(delta) ot_[DH];                                            \
        group_columns(w, g, NULL, 0, (w)->t.q, qt);                           \
        group_columns(w, g, (w)->t.dout, (w)->t.lddo, NULL, dot);             \
        group_columns(w, g, (w)->t.o, (w)->t.ldo, NULL, ot_);                 \
        for (size_t c_ = 0; c_ < DH; c_++)                                    \
            delta = add(delta, mul(dot[c_], ot_[c_]));                        \
    } while (0)

#endif
