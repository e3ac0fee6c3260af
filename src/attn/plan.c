// plan.c — the sizes of plan.h.
#include "plan.h"

#include "core/alloc.h"
#include "attention.h"

size_t mhsa__decode_partial_floats(size_t batch, size_t H, size_t t,
                                   size_t dh)
{
    size_t chunks = mhsa__decode_chunks(0, t), f;
    if (!mhsa__mul3(batch, H, chunks, &f) || !mhsa__mul(f, dh + 2, &f))
        return 0;
    return f;
}

size_t mhsa__tile_floats(size_t dh, size_t group)
{
    size_t most = 0;
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
        const mhsa_kernels *k = mhsa_kernels_for(i);
        if (k && mhsa__attn_tile_floats(k, dh) > most)
            most = mhsa__attn_tile_floats(k, dh);
    }
    size_t dec;
    if (!mhsa__mul(group, MHSA_DECODE_CHUNK, &dec))
        return 0;
    return dec > most ? dec : most;
}
