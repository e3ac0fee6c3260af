// scale_copy.c — AVX-512 row copy with scale (the row of the split/merge
// permute, src/attn/permute.c; the body: src/kernels/vrow_body.h).
#include "kernels/kernels.h"
#include "avx512/vrow.h"

void mhsa_scale_copy__avx512(size_t n, const float *src, float *dst,
                             float scale)
{
    vr_scale_copy(n, src, dst, scale);
}
