// quant.c — the NEON activation quantizers (kernels/quant.h: the scalar
// reference's bits exactly) and the quantized products with a plain-NEON
// integer dot, for AArch64 CPUs without the dotprod extension (the
// products: src/neon/quant_body.h; with SDOT: src/neon/quant_dot.c).
#include <arm_neon.h>

#include "neon/neon.h"

// 16 products of int8 summed in pairs into int16 (SMULL, SMLAL2) and
// pairwise into the int32 lanes (SADALP): exact, since each quant pair
// gives |qw qx| <= 128 * 127 and two of them fit an int16.
static inline __attribute__((always_inline)) int32x4_t
qn_dot_plain(int32x4_t acc, int8x16_t a, int8x16_t b)
{
    int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
    return vpadalq_s16(acc, vmlal_high_s8(p, a, b));
}

#define QN_DOT(acc, a, b) qn_dot_plain(acc, a, b)
#include "neon/quant_body.h"

// ---- activations ------------------------------------------------------------
// The scalar reference's operations lane by lane: amax as the largest
// |x| (FMAX of FABS: exact), one fp32 division 127 / amax and d = amax /
// 127, each x * id rounded to the nearest integer, ties to even (FCVTNS,
// nearbyintf in the default rounding mode). |x id| <= 127 (rounded), so
// the narrowing to int8 is exact.

// The largest |x_i| of n (a multiple of 16) values.
static float amax_of(const float *x, size_t n)
{
    float32x4_t m0 = vabsq_f32(vld1q_f32(x)), m1 = vabsq_f32(vld1q_f32(x + 4)),
                m2 = vabsq_f32(vld1q_f32(x + 8)),
                m3 = vabsq_f32(vld1q_f32(x + 12));
    for (size_t i = 16; i < n; i += 16) {
        m0 = vmaxq_f32(m0, vabsq_f32(vld1q_f32(x + i)));
        m1 = vmaxq_f32(m1, vabsq_f32(vld1q_f32(x + i + 4)));
        m2 = vmaxq_f32(m2, vabsq_f32(vld1q_f32(x + i + 8)));
        m3 = vmaxq_f32(m3, vabsq_f32(vld1q_f32(x + i + 12)));
    }
    return vmaxvq_f32(vmaxq_f32(vmaxq_f32(m0, m1), vmaxq_f32(m2, m3)));
}

// 16 values times id, rounded to int8.
static inline int8x16_t round16(const float *x, float id)
{
    int32x4_t q0 = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x), id));
    int32x4_t q1 = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 4), id));
    int32x4_t q2 = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 8), id));
    int32x4_t q3 = vcvtnq_s32_f32(vmulq_n_f32(vld1q_f32(x + 12), id));
    int16x8_t h0 = vmovn_high_s32(vmovn_s32(q0), q1);
    int16x8_t h1 = vmovn_high_s32(vmovn_s32(q2), q3);
    return vmovn_high_s16(vmovn_s16(h0), h1);
}

void mhsa_qquantize_32__neon(size_t n, const float *x, void *dst)
{
    mhsa_q8_32 *b = dst;
    for (size_t i = 0; i < n / 32; i++, x += 32, b++) {
        float amax = amax_of(x, 32);
        float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        int8x16_t q0 = round16(x, id), q1 = round16(x + 16, id);
        vst1q_s8(b->q, q0);
        vst1q_s8(b->q + 16, q1);
        b->d = mhsa_q8_32_scale(amax);
        b->s = vaddlvq_s8(q0) + vaddlvq_s8(q1);
    }
}

void mhsa_qquantize_256__neon(size_t n, const float *x, void *dst)
{
    mhsa_q8_256 *b = dst;
    for (size_t i = 0; i < n / 256; i++, x += 256, b++) {
        float amax = amax_of(x, 256);
        float id = amax != 0.0f ? 127.0f / amax : 0.0f;
        for (int j = 0; j < 16; j++) {
            int8x16_t q = round16(x + 16 * j, id);
            vst1q_s8(b->q + 16 * j, q);
            b->bsum[j] = vaddlvq_s8(q);
        }
        b->d = amax / 127.0f;
    }
}

const mhsa_qkernels mhsa_qkernels_neon = {
    .name = "neon",
    .quantize = { mhsa_qquantize_32__neon, mhsa_qquantize_256__neon },
    .qmm = QN_QMM_FNS,
};
