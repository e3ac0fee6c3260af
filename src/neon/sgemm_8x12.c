// sgemm_8x12.c — the NEON 8x12 SGEMM micro-kernel (contract in kernels.h).
//
// Register budget (AArch64 has 32 q registers of 4 floats):
//   24 accumulators  c<row>_<cols>: 8 rows x 12 columns = 8 x 3 q
//  + 3 B vectors     b0_3, b4_7, b8_11 (one packed B row, 12 floats)
//  + 2 A vectors     a0_3, a4_7 (one packed A column, 8 floats)
//  = 29 of 32 q.
// Each k step is 24 FMAs by lane (FMLA v.4s, v.4s, v.s[i], i.e.
// vfmaq_laneq_f32) against 5 loads, so the loop is FMA-bound rather than
// load-bound. The shape is chosen for Cortex-A76 / Neoverse-N1-class cores
// (2 128-bit FMA pipes, 4-cycle FMA latency): 24 independent accumulator
// chains cover latency x pipes = 8 chains three times over, and the 5
// loads per 24 FMAs fit the two load ports. (BLIS's ARMv8 SGEMM kernel
// uses the same 8x12 shape.)
//
// Edge tiles (m < 8 or n < 12) still compute the full 8x12 tile from the
// zero-padded panels, then store only the m x n part through a local tile.
// beta == 0 never reads C; beta == 1 adds; else C = beta*C + acc with a
// separate multiply and add, like the scalar kernel. A bias row takes C's
// place in beta == 1's add (C is then not read).
#include <arm_neon.h>

#include "kernels/kernels.h"
#include "neon/neon.h"

enum { MR = 8, NR = 12 };

// Four C elements at c from one accumulator vector, per beta; in is what
// beta == 1 adds: C's own elements, or the bias's (then beta is 1).
static inline void store4(float *c, const float *in, float32x4_t acc,
                          float beta)
{
    if (beta == 0.0f)
        vst1q_f32(c, acc);
    else if (beta == 1.0f)
        vst1q_f32(c, vaddq_f32(vld1q_f32(in), acc));
    else
        vst1q_f32(c, vaddq_f32(vmulq_f32(vld1q_f32(c), vdupq_n_f32(beta)),
                               acc));
}

void mhsa_sgemm_8x12__neon(size_t k, const float *ap, const float *bp,
                           float *c, size_t ldc, size_t m, size_t n,
                           float beta, const float *bias)
{
    float32x4_t c0_0 = vdupq_n_f32(0.0f), c0_4 = c0_0, c0_8 = c0_0;
    float32x4_t c1_0 = c0_0, c1_4 = c0_0, c1_8 = c0_0;
    float32x4_t c2_0 = c0_0, c2_4 = c0_0, c2_8 = c0_0;
    float32x4_t c3_0 = c0_0, c3_4 = c0_0, c3_8 = c0_0;
    float32x4_t c4_0 = c0_0, c4_4 = c0_0, c4_8 = c0_0;
    float32x4_t c5_0 = c0_0, c5_4 = c0_0, c5_8 = c0_0;
    float32x4_t c6_0 = c0_0, c6_4 = c0_0, c6_8 = c0_0;
    float32x4_t c7_0 = c0_0, c7_4 = c0_0, c7_8 = c0_0;

    for (size_t kk = 0; kk < k; kk++) {
        float32x4_t a0_3 = vld1q_f32(ap), a4_7 = vld1q_f32(ap + 4);
        float32x4_t b0_3 = vld1q_f32(bp), b4_7 = vld1q_f32(bp + 4);
        float32x4_t b8_11 = vld1q_f32(bp + 8);
        ap += MR;
        bp += NR;
        c0_0 = vfmaq_laneq_f32(c0_0, b0_3, a0_3, 0);
        c0_4 = vfmaq_laneq_f32(c0_4, b4_7, a0_3, 0);
        c0_8 = vfmaq_laneq_f32(c0_8, b8_11, a0_3, 0);
        c1_0 = vfmaq_laneq_f32(c1_0, b0_3, a0_3, 1);
        c1_4 = vfmaq_laneq_f32(c1_4, b4_7, a0_3, 1);
        c1_8 = vfmaq_laneq_f32(c1_8, b8_11, a0_3, 1);
        c2_0 = vfmaq_laneq_f32(c2_0, b0_3, a0_3, 2);
        c2_4 = vfmaq_laneq_f32(c2_4, b4_7, a0_3, 2);
        c2_8 = vfmaq_laneq_f32(c2_8, b8_11, a0_3, 2);
        c3_0 = vfmaq_laneq_f32(c3_0, b0_3, a0_3, 3);
        c3_4 = vfmaq_laneq_f32(c3_4, b4_7, a0_3, 3);
        c3_8 = vfmaq_laneq_f32(c3_8, b8_11, a0_3, 3);
        c4_0 = vfmaq_laneq_f32(c4_0, b0_3, a4_7, 0);
        c4_4 = vfmaq_laneq_f32(c4_4, b4_7, a4_7, 0);
        c4_8 = vfmaq_laneq_f32(c4_8, b8_11, a4_7, 0);
        c5_0 = vfmaq_laneq_f32(c5_0, b0_3, a4_7, 1);
        c5_4 = vfmaq_laneq_f32(c5_4, b4_7, a4_7, 1);
        c5_8 = vfmaq_laneq_f32(c5_8, b8_11, a4_7, 1);
        c6_0 = vfmaq_laneq_f32(c6_0, b0_3, a4_7, 2);
        c6_4 = vfmaq_laneq_f32(c6_4, b4_7, a4_7, 2);
        c6_8 = vfmaq_laneq_f32(c6_8, b8_11, a4_7, 2);
        c7_0 = vfmaq_laneq_f32(c7_0, b0_3, a4_7, 3);
        c7_4 = vfmaq_laneq_f32(c7_4, b4_7, a4_7, 3);
        c7_8 = vfmaq_laneq_f32(c7_8, b8_11, a4_7, 3);
    }

    // C row i's elements from column j, and what its beta term reads.
    size_t ldin = bias ? 0 : ldc;
    const float *cin = bias ? bias : c;
    if (bias)
        beta = 1.0f;
#define ST(i, j, acc) store4(c + (i) * ldc + (j), cin + (i) * ldin + (j), \
                             acc, beta)
    if (m == MR && n == NR) {
        ST(0, 0, c0_0);
        ST(0, 4, c0_4);
        ST(0, 8, c0_8);
        ST(1, 0, c1_0);
        ST(1, 4, c1_4);
        ST(1, 8, c1_8);
        ST(2, 0, c2_0);
        ST(2, 4, c2_4);
        ST(2, 8, c2_8);
        ST(3, 0, c3_0);
        ST(3, 4, c3_4);
        ST(3, 8, c3_8);
        ST(4, 0, c4_0);
        ST(4, 4, c4_4);
        ST(4, 8, c4_8);
        ST(5, 0, c5_0);
        ST(5, 4, c5_4);
        ST(5, 8, c5_8);
        ST(6, 0, c6_0);
        ST(6, 4, c6_4);
        ST(6, 8, c6_8);
        ST(7, 0, c7_0);
        ST(7, 4, c7_4);
        ST(7, 8, c7_8);
        return;
    }
#undef ST

    // Edge tile: spill the accumulators, then touch only m x n of C.
    float t[MR][NR];
    vst1q_f32(t[0], c0_0); vst1q_f32(t[0] + 4, c0_4); vst1q_f32(t[0] + 8, c0_8);
    vst1q_f32(t[1], c1_0); vst1q_f32(t[1] + 4, c1_4); vst1q_f32(t[1] + 8, c1_8);
    vst1q_f32(t[2], c2_0); vst1q_f32(t[2] + 4, c2_4); vst1q_f32(t[2] + 8, c2_8);
    vst1q_f32(t[3], c3_0); vst1q_f32(t[3] + 4, c3_4); vst1q_f32(t[3] + 8, c3_8);
    vst1q_f32(t[4], c4_0); vst1q_f32(t[4] + 4, c4_4); vst1q_f32(t[4] + 8, c4_8);
    vst1q_f32(t[5], c5_0); vst1q_f32(t[5] + 4, c5_4); vst1q_f32(t[5] + 8, c5_8);
    vst1q_f32(t[6], c6_0); vst1q_f32(t[6] + 4, c6_4); vst1q_f32(t[6] + 8, c6_8);
    vst1q_f32(t[7], c7_0); vst1q_f32(t[7] + 4, c7_4); vst1q_f32(t[7] + 8, c7_8);
    for (size_t i = 0; i < m; i++) {
        float *ci = c + i * ldc;
        const float *in = cin + i * ldin;
        size_t j = 0;
        for (; j + 4 <= n; j += 4)
            store4(ci + j, in + j, vld1q_f32(t[i] + j), beta);
        for (; j < n; j++)
            ci[j] = beta == 0.0f ? t[i][j]
                  : beta == 1.0f ? in[j] + t[i][j]
                  : beta * ci[j] + t[i][j];
    }
}
