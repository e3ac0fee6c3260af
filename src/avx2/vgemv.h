// vgemv.h — the AVX2/FMA/F16C register tile of the one-row products
// gemv_n (fp32 rows) and gemv_n16 (F16 / BF16 rows), run by the streaming
// plan of src/kernels/gemv_plan.h. Included only by src/avx2/gemv_n.c and
// gemv_n16.c, compiled with -mavx2 -mfma -mf16c.
//
// Bits: each row is one 8-lane accumulator: FMAs over the chunks i = 0, 8,
// ... in order, the tail chunk masked (its missing lanes 0), then
// mhsa_hsum_ps__avx2; kv_dot with fp32 rows gives the same (kernels.h). A
// 16-bit chunk is widened exactly (vcvtph2ps; BF16 by a zero-extension and
// a shift) before its FMA, so a 16-bit row has the bits of the fp32 row
// holding the same values.
#ifndef MHSA_AVX2_VGEMV_H
#define MHSA_AVX2_VGEMV_H

#include <immintrin.h>

#include "kernels/gemv_plan.h"
#include "avx2/vhalf.h"
#include "avx2/vmath.h"

// Loops over the rows and chunks of a step unrolled in full: left to
// itself GCC keeps them loops, slower from L2 (docs/performance.md,
// "Measurements behind the code").
#define MHSA_UNROLL _Pragma("GCC unroll 32")

// The plan's tile: R (<= MHSA_GEMV_STREAMS) rows `stride` bytes apart, one
// chain each (R independent FMA chains), 32 elements of every row a step
// (a line of each 16-bit row; unrolled by hand so the loads of the R
// streams interleave).
MHSA_AVX2_INLINE void mhsa_gemv_rows__avx2(size_t R, size_t d, const char *a,
                                           size_t stride, mhsa_dtype dt,
                                           const float *x, float *y,
                                           size_t ys, float beta)
{
    __m256 acc[MHSA_GEMV_STREAMS];
    for (size_t r = 0; r < R; r++)
        acc[r] = _mm256_setzero_ps();
    size_t i = 0;
    for (; i + 32 <= d; i += 32)
        MHSA_UNROLL for (size_t q = 0; q < 32; q += 8) {
            __m256 xv = _mm256_loadu_ps(x + i + q);
            MHSA_UNROLL for (size_t r = 0; r < R; r++)
                acc[r] = _mm256_fmadd_ps(
                    mhsa_load8_as_ps__avx2(a + r * stride, i + q, dt), xv,
                    acc[r]);
        }
    for (; i + 8 <= d; i += 8) {
        __m256 xv = _mm256_loadu_ps(x + i);
        for (size_t r = 0; r < R; r++)
            acc[r] = _mm256_fmadd_ps(
                mhsa_load8_as_ps__avx2(a + r * stride, i, dt), xv, acc[r]);
    }
    if (i < d) {
        __m256i mk = mhsa_tail_mask__avx2(d - i);
        __m256 xv = _mm256_maskload_ps(x + i, mk);
        for (size_t r = 0; r < R; r++)
            acc[r] = _mm256_fmadd_ps(
                mhsa_load_tail_as_ps__avx2(a + r * stride, i, d - i, mk, dt),
                xv, acc[r]);
    }
    for (size_t r = 0; r < R; r++) {
        float s = mhsa_hsum_ps__avx2(acc[r]);
        y[r * ys] = beta == 0.0f ? s : beta * y[r * ys] + s;
    }
}

#endif
