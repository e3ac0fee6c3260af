// small_bwd_entry.h — the entry point of an x86 fused small backward
// (kernels.h: attn_small_bwd), written once around the ISA's kernel.
//
// Included by src/<isa>/attn_small_bwd.c after its <isa>/small_bwd.h,
// which defines MHSA_SBW_RUN_TIME_SIZES: 1 in the builds that compile one
// instance of the kernel, with its sizes at run time (kernels/asan.h says
// why), else 0. After its kernel, bwd(g, dh) (inlined, 1 done or 0
// declined), MHSA_ATTN_SMALL_BWD_ENTRY(isa) defines
// mhsa_attn_small_bwd__<isa>: tiles past the sizes declined, then bwd
// with dh a constant for the common widths 8 and 16 (the loops over the
// columns unrolled), else with dh at run time. Each instance runs the same
// operations, so the width it takes changes no bits.
#ifndef MHSA_KERNELS_SMALL_BWD_ENTRY_H
#define MHSA_KERNELS_SMALL_BWD_ENTRY_H

#include "kernels/kernel_decl.h"
#include "kernels/kernels.h"

#if MHSA_SBW_RUN_TIME_SIZES
#define MHSA_SBW_CONSTANT_WIDTHS(g, dh) ((void)0)
#else
#define MHSA_SBW_CONSTANT_WIDTHS(g, dh)                                       \
    do {                                                                      \
        if ((dh) == 8)                                                        \
            return bwd(g, 8);                                                 \
        if ((dh) == 16)                                                       \
            return bwd(g, 16);                                                \
    } while (0)
#endif

#define MHSA_ATTN_SMALL_BWD_ENTRY(isa)                                        \
    int MHSA_KNAME(attn_small_bwd, isa)(const mhsa_attn_small_bwd_args *g)    \
    {                                                                         \
        if (!mhsa_attn_small_bwd_sizes_fit(g))                                \
            return 0;                                                         \
        size_t dh = g->p->dh;                                                 \
        MHSA_SBW_CONSTANT_WIDTHS(g, dh);                                      \
        return bwd(g, dh);                                                    \
    }

#endif
