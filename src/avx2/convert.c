// convert.c — the storage-type conversions for the avx2 table. Plain C for
// now, the same arithmetic as the scalar reference; vectorised versions
// replace these.
#include <string.h>

#include "half.h"
#include "avx2/avx2.h"

void mhsa_cvt_from_f32__avx2(size_t n, const float *src, void *dst,
                             mhsa_dtype dt)
{
    uint16_t *h = dst;
    if (dt == MHSA_F32)
        memcpy(dst, src, n * sizeof(float));
    else if (dt == MHSA_F16)
        for (size_t i = 0; i < n; i++)
            h[i] = mhsa_f32_to_f16(src[i]);
    else
        for (size_t i = 0; i < n; i++)
            h[i] = mhsa_f32_to_bf16(src[i]);
}

void mhsa_cvt_to_f32__avx2(size_t n, const void *src, mhsa_dtype dt,
                           float *dst)
{
    if (dt == MHSA_F32)
        memcpy(dst, src, n * sizeof(float));
    else
        for (size_t i = 0; i < n; i++)
            dst[i] = mhsa_load_as_f32(src, i, dt);
}
