// gemv_n.c — NEON y = beta*y + A x for one-row work (decoding one
// token), streaming A once, unpacked (contract in kernels.h).
#include <arm_neon.h>

#include "kernels/kernels.h"
#include "neon/neon.h"

// y[j] = beta*y[j] + a[j,:] . x, four rows at a time (4 FMA chains).
void mhsa_gemv_n__neon(size_t n, size_t d, const float *a, size_t lda,
                       const float *x, float *y, float beta)
{
    size_t d4 = d & ~(size_t)3;
    size_t j = 0;
    for (; j + 4 <= n; j += 4) {
        const float *r[4] = { a + j * lda, a + (j + 1) * lda,
                              a + (j + 2) * lda, a + (j + 3) * lda };
        float32x4_t acc[4] = { vdupq_n_f32(0), vdupq_n_f32(0),
                               vdupq_n_f32(0), vdupq_n_f32(0) };
        for (size_t i = 0; i < d4; i += 4) {
            float32x4_t xv = vld1q_f32(x + i);
            for (int q = 0; q < 4; q++)
                acc[q] = vfmaq_f32(acc[q], vld1q_f32(r[q] + i), xv);
        }
        for (int q = 0; q < 4; q++) {
            float s = vaddvq_f32(acc[q]);
            for (size_t i = d4; i < d; i++)   // scalar tail: never past d
                s += r[q][i] * x[i];
            y[j + q] = beta == 0.0f ? s : beta * y[j + q] + s;
        }
    }
    for (; j < n; j++) {
        const float *r0 = a + j * lda;
        float32x4_t acc = vdupq_n_f32(0);
        for (size_t i = 0; i < d4; i += 4)
            acc = vfmaq_f32(acc, vld1q_f32(r0 + i), vld1q_f32(x + i));
        float s = vaddvq_f32(acc);
        for (size_t i = d4; i < d; i++)
            s += r0[i] * x[i];
        y[j] = beta == 0.0f ? s : beta * y[j] + s;
    }
}
