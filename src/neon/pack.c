// pack.c — NEON packing of GEMM operands into 8-row A and 12-column B
// micro-panels (layouts in kernels.h) for mhsa_sgemm_8x12__neon.
//
// The strided side of each layout goes through 4x4 transposes (TRN1/TRN2
// on 32- then 64-bit lanes); the contiguous side is plain 4-float loads.
// Partial panels (m < 8, n < 12) and the k % 4 remainder use scalar loops,
// so nothing outside the m x k / k x n block is read. Values are the scalar
// packer's bit for bit: alpha * x is the same single multiply.
#include <arm_neon.h>

#include "kernels/kernels.h"
#include "neon/neon.h"

// In-place transpose of the 4x4 block held in r0..r3 (rows -> columns).
static inline void transpose4(float32x4_t *r0, float32x4_t *r1,
                              float32x4_t *r2, float32x4_t *r3)
{
    float32x4_t t0 = vtrn1q_f32(*r0, *r1), t1 = vtrn2q_f32(*r0, *r1);
    float32x4_t t2 = vtrn1q_f32(*r2, *r3), t3 = vtrn2q_f32(*r2, *r3);
    *r0 = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t0),
                                           vreinterpretq_f64_f32(t2)));
    *r1 = vreinterpretq_f32_f64(vtrn1q_f64(vreinterpretq_f64_f32(t1),
                                           vreinterpretq_f64_f32(t3)));
    *r2 = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t0),
                                           vreinterpretq_f64_f32(t2)));
    *r3 = vreinterpretq_f32_f64(vtrn2q_f64(vreinterpretq_f64_f32(t1),
                                           vreinterpretq_f64_f32(t3)));
}

// Writes columns kk..kk+3 of four rows (rows[i] points at row i, column 0)
// into a panel with row stride `ld` as four 4-float groups at p, p + ld, ...
// Multiplies by `scale` only when `scaled`: B is copied bitwise (NaN
// payloads included), as the scalar packer does.
static inline void pack_4x4(const float *const rows[4], size_t kk,
                            int scaled, float32x4_t scale, float *p,
                            size_t ld)
{
    float32x4_t r0 = vld1q_f32(rows[0] + kk), r1 = vld1q_f32(rows[1] + kk);
    float32x4_t r2 = vld1q_f32(rows[2] + kk), r3 = vld1q_f32(rows[3] + kk);
    if (scaled) {
        r0 = vmulq_f32(r0, scale);
        r1 = vmulq_f32(r1, scale);
        r2 = vmulq_f32(r2, scale);
        r3 = vmulq_f32(r3, scale);
    }
    transpose4(&r0, &r1, &r2, &r3);
    vst1q_f32(p, r0);
    vst1q_f32(p + ld, r1);
    vst1q_f32(p + 2 * ld, r2);
    vst1q_f32(p + 3 * ld, r3);
}

void mhsa_pack_a_mr8__neon(size_t m, size_t k, const float *a, size_t lda,
                           int trans, float alpha, float *ap)
{
    enum { MR = 8 };
    if (trans) {   // op(A)[i][kk] = a[kk*lda + i]: rows of a are contiguous
        float32x4_t va = vdupq_n_f32(alpha);
        for (size_t kk = 0; kk < k; kk++) {
            const float *src = a + kk * lda;
            float *dst = ap + kk * MR;
            if (m == MR) {
                vst1q_f32(dst, vmulq_f32(vld1q_f32(src), va));
                vst1q_f32(dst + 4, vmulq_f32(vld1q_f32(src + 4), va));
            } else {
                for (size_t i = 0; i < MR; i++)
                    dst[i] = i < m ? alpha * src[i] : 0.0f;
            }
        }
        return;
    }
    // op(A)[i][kk] = a[i*lda + kk]: 4x4 transposes of two 4-row groups.
    if (m == MR) {
        const float *lo[4] = { a, a + lda, a + 2 * lda, a + 3 * lda };
        const float *hi[4] = { a + 4 * lda, a + 5 * lda, a + 6 * lda,
                               a + 7 * lda };
        float32x4_t va = vdupq_n_f32(alpha);
        size_t kk = 0;
        for (; kk + 4 <= k; kk += 4) {
            pack_4x4(lo, kk, 1, va, ap + kk * MR, MR);
            pack_4x4(hi, kk, 1, va, ap + kk * MR + 4, MR);
        }
        for (; kk < k; kk++)
            for (size_t i = 0; i < MR; i++)
                ap[kk * MR + i] = alpha * a[i * lda + kk];
        return;
    }
    for (size_t kk = 0; kk < k; kk++)
        for (size_t i = 0; i < MR; i++)
            ap[kk * MR + i] = i < m ? alpha * a[i * lda + kk] : 0.0f;
}

void mhsa_pack_b_nr12__neon(size_t k, size_t n, const float *b, size_t ldb,
                            int trans, float *bp)
{
    enum { NR = 12 };
    if (!trans) {   // op(B)[kk][j] = b[kk*ldb + j]: rows are contiguous
        for (size_t kk = 0; kk < k; kk++) {
            const float *src = b + kk * ldb;
            float *dst = bp + kk * NR;
            if (n == NR) {
                vst1q_f32(dst, vld1q_f32(src));
                vst1q_f32(dst + 4, vld1q_f32(src + 4));
                vst1q_f32(dst + 8, vld1q_f32(src + 8));
            } else {
                for (size_t j = 0; j < NR; j++)
                    dst[j] = j < n ? src[j] : 0.0f;
            }
        }
        return;
    }
    // op(B)[kk][j] = b[j*ldb + kk]: 4x4 transposes of three 4-column groups.
    if (n == NR) {
        float32x4_t unused = vdupq_n_f32(1.0f);
        size_t kk = 0;
        for (; kk + 4 <= k; kk += 4)
            for (size_t g = 0; g < 3; g++) {
                const float *rows[4] = { b + (4 * g) * ldb,
                                         b + (4 * g + 1) * ldb,
                                         b + (4 * g + 2) * ldb,
                                         b + (4 * g + 3) * ldb };
                pack_4x4(rows, kk, 0, unused, bp + kk * NR + 4 * g, NR);
            }
        for (; kk < k; kk++)
            for (size_t j = 0; j < NR; j++)
                bp[kk * NR + j] = b[j * ldb + kk];
        return;
    }
    for (size_t kk = 0; kk < k; kk++)
        for (size_t j = 0; j < NR; j++)
            bp[kk * NR + j] = j < n ? b[j * ldb + kk] : 0.0f;
}
