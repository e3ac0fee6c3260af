// kv.c — decode products over cached K/V rows and the storage-type
// conversions for the avx2 table. Plain C for now, the same arithmetic as
// the scalar reference; vectorised versions replace these.
#include <string.h>

#include "half.h"
#include "avx2/avx2.h"

void mhsa_kv_dot__avx2(size_t m, size_t n, size_t d, const float *q,
                       size_t ldq, const void *k, size_t ldk, mhsa_dtype dt,
                       float *s, size_t lds)
{
    if (dt == MHSA_F32) {
        for (size_t r = 0; r < m; r++)
            mhsa_gemv_n__avx2(n, d, k, ldk, q + r * ldq, s + r * lds, 0.0f);
        return;
    }
    size_t es = mhsa_dtype_size(dt);
    for (size_t j = 0; j < n; j++) {
        const void *row = (const char *)k + j * ldk * es;
        for (size_t r = 0; r < m; r++) {
            float sum = 0.0f;
            for (size_t i = 0; i < d; i++)
                sum += mhsa_load_as_f32(row, i, dt) * q[r * ldq + i];
            s[r * lds + j] = sum;
        }
    }
}

void mhsa_kv_acc__avx2(size_t m, size_t n, size_t d, const float *p,
                       size_t ldp, const void *v, size_t ldv, mhsa_dtype dt,
                       float *o, size_t ldo)
{
    if (dt == MHSA_F32) {
        for (size_t r = 0; r < m; r++)
            mhsa_gemv_t__avx2(n, d, p + r * ldp, v, ldv, o + r * ldo);
        return;
    }
    size_t es = mhsa_dtype_size(dt);
    for (size_t j = 0; j < n; j++) {
        const void *row = (const char *)v + j * ldv * es;
        for (size_t r = 0; r < m; r++)
            for (size_t i = 0; i < d; i++)
                o[r * ldo + i] += p[r * ldp + j] * mhsa_load_as_f32(row, i, dt);
    }
}

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
