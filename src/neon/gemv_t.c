// gemv_t.c — NEON y += p A for one-row work (decoding one token),
// streaming A once, unpacked (contract in kernels.h).
#include <arm_neon.h>

#include "kernels/kernels.h"
#include "neon/neon.h"

// y[i] += sum_j p[j] a[j, i], 32 columns of y in 8 registers at a time.
void mhsa_gemv_t__neon(size_t n, size_t d, const float *p, const float *a,
                       size_t lda, float *y)
{
    size_t i = 0;
    for (; i + 32 <= d; i += 32) {
        float32x4_t acc[8];
        for (int q = 0; q < 8; q++)
            acc[q] = vld1q_f32(y + i + 4 * q);
        for (size_t j = 0; j < n; j++) {
            float32x4_t pj = vdupq_n_f32(p[j]);
            const float *row = a + j * lda + i;
            for (int q = 0; q < 8; q++)
                acc[q] = vfmaq_f32(acc[q], pj, vld1q_f32(row + 4 * q));
        }
        for (int q = 0; q < 8; q++)
            vst1q_f32(y + i + 4 * q, acc[q]);
    }
    for (; i + 4 <= d; i += 4) {
        float32x4_t acc = vld1q_f32(y + i);
        for (size_t j = 0; j < n; j++)
            acc = vfmaq_f32(acc, vdupq_n_f32(p[j]),
                            vld1q_f32(a + j * lda + i));
        vst1q_f32(y + i, acc);
    }
    for (; i < d; i++) {
        float acc = y[i];
        for (size_t j = 0; j < n; j++)
            acc += p[j] * a[j * lda + i];
        y[i] = acc;
    }
}
