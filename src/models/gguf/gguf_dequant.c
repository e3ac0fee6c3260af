// gguf_dequant.c — ggml's tensor type table and the dequantizers of F32,
// F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, the k-quants Q2_K to Q6_K and
// the non-linear 4-bit IQ4_NL and IQ4_XS (see gguf_dequant.h).
//
// The block layouts, as ggml-common.h declares them (32 elements a block,
// all fields little-endian, no padding):
//   Q4_0: f16 d, 16 bytes qs     x[j] = (lo(qs[j]) - 8) * d,
//                                x[j + 16] = (hi(qs[j]) - 8) * d
//   Q4_1: f16 d, f16 m, 16 bytes x[j] = lo(qs[j]) * d + m, x[j+16] = hi...
//   Q5_0: f16 d, u32 qh, 16 bytes qs: Q4_0 with a fifth bit, bit j of qh
//         for x[j] and bit j + 16 for x[j + 16], and an offset of 16
//   Q5_1: f16 d, f16 m, u32 qh, 16 bytes qs: Q4_1 with that fifth bit
//   Q8_0: f16 d, 32 x int8 qs    x[j] = qs[j] * d
// lo/hi are a byte's low and high nibble: the low nibbles hold the first
// half of the block. The k-quants (256 elements a block) are described
// where they are decoded below. The arithmetic is ggml's dequantize_row_*
// exactly, in its order: integers converted to float, each fp32 product
// and sum rounded (the build's -ffp-contract=off keeps the compiler from
// fusing them into an FMA, which would round once; ggml-quants.c is built
// without FMA on x86-64, in ggml-base). The f16 scales convert exactly
// (half.h), and NaNs are made quiet as ggml's conversion does, so every
// result is bit for bit ggml's, NaN included (checked against
// ggml-quants.c's functions at llama.cpp c392e50 on 800k random blocks of
// each type, NaN and infinite scales among them, and all 65536 halves:
// tools/llama-ref/dequant_check.c).
#include "gguf_dequant.h"

#include "kernels/half.h"

enum { QK = 32 };   // elements per block of Q4_0, Q4_1, Q5_0, Q5_1, Q8_0
                    // and IQ4_NL, and per sub-block of IQ4_XS

// Indexed by ggml_type (ggml.h); gaps are numbers ggml no longer defines.
static const mhsa_ggml_type_info types[] = {
    [0] = {"f32", 1, 4, 1},         [1] = {"f16", 1, 2, 1},
    [2] = {"q4_0", 32, 18, 1},      [3] = {"q4_1", 32, 20, 1},
    [6] = {"q5_0", 32, 22, 1},      [7] = {"q5_1", 32, 24, 1},
    [8] = {"q8_0", 32, 34, 1},      [9] = {"q8_1", 32, 36, 0},
    [10] = {"q2_K", 256, 84, 1},    [11] = {"q3_K", 256, 110, 1},
    [12] = {"q4_K", 256, 144, 1},   [13] = {"q5_K", 256, 176, 1},
    [14] = {"q6_K", 256, 210, 1},   [15] = {"q8_K", 256, 292, 0},
    [16] = {"iq2_xxs", 256, 66, 0}, [17] = {"iq2_xs", 256, 74, 0},
    [18] = {"iq3_xxs", 256, 98, 0}, [19] = {"iq1_s", 256, 50, 0},
    [20] = {"iq4_nl", 32, 18, 1},   [21] = {"iq3_s", 256, 110, 0},
    [22] = {"iq2_s", 256, 82, 0},   [23] = {"iq4_xs", 256, 136, 1},
    [24] = {"i8", 1, 1, 0},         [25] = {"i16", 1, 2, 0},
    [26] = {"i32", 1, 4, 0},        [27] = {"i64", 1, 8, 0},
    [28] = {"f64", 1, 8, 0},        [29] = {"iq1_m", 256, 56, 0},
    [30] = {"bf16", 1, 2, 1},
    [34] = {"tq1_0", 256, 54, 0},   [35] = {"tq2_0", 256, 66, 0},
};

const mhsa_ggml_type_info *mhsa__ggml_type(uint32_t type)
{
    if (type >= sizeof types / sizeof types[0] || !types[type].name)
        return NULL;
    return &types[type];
}

static uint16_t le16(const unsigned char *b)
{
    return (uint16_t)(b[0] | b[1] << 8);
}

// half.h's conversion keeps a signalling NaN's bits as they are; ggml's
// (F16C's vcvtph2ps, and its portable C) makes it quiet. Same otherwise.
static float f16_as_ggml(uint16_t h)
{
    float x = mhsa_f16_to_f32(h);
    if ((h & 0x7c00u) == 0x7c00u && (h & 0x3ffu))
        x = mhsa_bits_f32(mhsa_f32_bits(x) | 0x400000u);
    return x;
}

static void dequant_f32(const unsigned char *src, size_t n, float *dst)
{
    for (size_t i = 0; i < n; i++, src += 4)
        dst[i] = mhsa_bits_f32((uint32_t)src[0] | (uint32_t)src[1] << 8 |
                               (uint32_t)src[2] << 16 |
                               (uint32_t)src[3] << 24);
}

static void dequant_f16(const unsigned char *src, size_t n, float *dst)
{
    for (size_t i = 0; i < n; i++, src += 2)
        dst[i] = f16_as_ggml(le16(src));
}

static void dequant_bf16(const unsigned char *src, size_t n, float *dst)
{
    for (size_t i = 0; i < n; i++, src += 2)
        dst[i] = mhsa_bf16_to_f32(le16(src));
}

static void dequant_q4_0(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 18, dst += QK) {
        const float d = f16_as_ggml(le16(src));
        const unsigned char *qs = src + 2;
        for (int j = 0; j < QK / 2; j++) {
            dst[j] = (float)((qs[j] & 0x0f) - 8) * d;
            dst[j + QK / 2] = (float)((qs[j] >> 4) - 8) * d;
        }
    }
}

// x * d + m for Q4_1 and Q5_1, with x * d's NaN when both terms are NaN:
// ggml's `x0*d + m` compiles (x86-64, ggml-base) to an addss whose first
// operand, the product, is the NaN it keeps. A compiler may order a
// commutative sum either way (this build's vectorised loop took m's NaN
// in 200 of 6.4M random values), so the choice is spelled out.
static inline float scale_add_min(float x, float d, float m)
{
    float prod = x * d;
    return prod != prod ? prod : prod + m;
}

static void dequant_q4_1(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 20, dst += QK) {
        const float d = f16_as_ggml(le16(src));
        const float m = f16_as_ggml(le16(src + 2));
        const unsigned char *qs = src + 4;
        for (int j = 0; j < QK / 2; j++) {
            dst[j] = scale_add_min((float)(qs[j] & 0x0f), d, m);
            dst[j + QK / 2] = scale_add_min((float)(qs[j] >> 4), d, m);
        }
    }
}

static uint32_t le32(const unsigned char *b)
{
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
           (uint32_t)b[3] << 24;
}

// Q5_0 and Q5_1: the low nibble's fifth bit is bit j of qh, the high
// nibble's bit j + 16 (ggml's xh_0, xh_1).
static void dequant_q5_0(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 22, dst += QK) {
        const float d = f16_as_ggml(le16(src));
        const uint32_t qh = le32(src + 2);
        const unsigned char *qs = src + 6;
        for (int j = 0; j < QK / 2; j++) {
            int x0 = (int)((qs[j] & 0x0f) | ((qh >> j) << 4 & 0x10)) - 16;
            int x1 = (int)((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10)) - 16;
            dst[j] = (float)x0 * d;
            dst[j + QK / 2] = (float)x1 * d;
        }
    }
}

static void dequant_q5_1(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 24, dst += QK) {
        const float d = f16_as_ggml(le16(src));
        const float m = f16_as_ggml(le16(src + 2));
        const uint32_t qh = le32(src + 4);
        const unsigned char *qs = src + 8;
        for (int j = 0; j < QK / 2; j++) {
            int x0 = (int)((qs[j] & 0x0f) | ((qh >> j) << 4 & 0x10));
            int x1 = (int)((qs[j] >> 4) | ((qh >> (j + 12)) & 0x10));
            dst[j] = scale_add_min((float)x0, d, m);
            dst[j + QK / 2] = scale_add_min((float)x1, d, m);
        }
    }
}

static void dequant_q8_0(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 34, dst += QK) {
        const float d = f16_as_ggml(le16(src));
        for (int j = 0; j < QK; j++) {
            int q = src[2 + j];   // two's complement int8, portably
            dst[j] = (float)(q < 128 ? q : q - 256) * d;
        }
    }
}

// ---- the k-quants: super-blocks of 256 elements in sub-blocks of 16 or 32,
// each sub-block with its own small integer scale (and min) that a
// super-block's f16 d (and dmin) scales.

// Q2_K: scales[16] (low nibble the scale, high the min of sub-block s of
// 16 elements), qs[64], f16 d, f16 dmin. Element 128 h + 32 k + l (h < 2,
// k < 4, l < 32) is bits 2k..2k+1 of qs[32 h + l], sub-block 8 h + 2 k +
// l / 16; x = (d * sc) * q - dmin * m.
static void dequant_q2_k(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 84) {
        const unsigned char *sc = src, *q = src + 16;
        const float d = f16_as_ggml(le16(src + 80));
        const float dmin = f16_as_ggml(le16(src + 82));
        for (int h = 0; h < 2; h++, q += 32)
            for (int k = 0; k < 4; k++)
                for (int half = 0; half < 2; half++) {
                    int s = 8 * h + 2 * k + half;
                    const float dl = d * (float)(sc[s] & 0x0f);
                    const float ml = dmin * (float)(sc[s] >> 4);
                    for (int l = 0; l < 16; l++)
                        *dst++ = dl * (float)(q[16 * half + l] >> 2 * k & 3) -
                                 ml;
                }
    }
}

// Q3_K: hmask[32], qs[64], scales[12] (sixteen 6-bit scales, offset 32),
// f16 d. Element 128 h + 32 k + l: low bits 2k..2k+1 of qs[32 h + l],
// minus 4 unless bit 4 h + k of hmask[l] is set; sub-block 8 h + 2 k +
// l / 16; x = (d * (scale - 32)) * q.
static int q3_k_scale(const unsigned char *s, int i)
{
    // Scale i's low 4 bits: the low nibble of byte i (i < 8) or the high
    // nibble of byte i - 8; its high 2 bits: bits 2 (i / 4), 2 (i / 4) + 1
    // of byte 8 + i % 4 (ggml's kmask1/kmask2 unpacking).
    int lo = i < 8 ? s[i] & 0x0f : s[i - 8] >> 4;
    int hi = s[8 + i % 4] >> 2 * (i / 4) & 3;
    return (lo | hi << 4) - 32;
}

static void dequant_q3_k(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 110) {
        const unsigned char *hm = src, *q = src + 32, *scales = src + 96;
        const float d = f16_as_ggml(le16(src + 108));
        for (int h = 0; h < 2; h++, q += 32)
            for (int k = 0; k < 4; k++)
                for (int half = 0; half < 2; half++) {
                    int s = 8 * h + 2 * k + half;
                    const float dl = d * (float)q3_k_scale(scales, s);
                    int bit = 4 * h + k;
                    for (int l = 16 * half; l < 16 * half + 16; l++) {
                        int v = (q[l] >> 2 * k & 3) -
                                (hm[l] >> bit & 1 ? 0 : 4);
                        *dst++ = dl * (float)v;
                    }
                }
    }
}

// The 6-bit scale and min of sub-block j < 8 of Q4_K and Q5_K from their
// 12 bytes (ggml's get_scale_min_k4): j < 4 in the low 6 bits of bytes j
// and j + 4; j >= 4 in the nibbles of byte j + 4 with the top 2 bits of
// bytes j - 4 and j.
static void scale_min_k4(int j, const unsigned char *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4;
        *m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
    }
}

// Q4_K: f16 d, f16 dmin, scales[12], qs[128]. Sub-block j of 32 elements:
// the low (even j) or high (odd j) nibbles of qs[32 (j / 2) ..];
// x = (d * sc) * q - dmin * m. Q5_K adds qh[32] (after scales): the fifth
// bit of element l of sub-block j is bit j of qh[l].
static void dequant_q45_k(const unsigned char *src, size_t n, float *dst,
                          int five)
{
    size_t bytes = five ? 176 : 144;
    for (size_t b = 0; b < n; b++, src += bytes) {
        const float d = f16_as_ggml(le16(src));
        const float dmin = f16_as_ggml(le16(src + 2));
        const unsigned char *scales = src + 4, *qh = src + 16;
        const unsigned char *qs = src + (five ? 48 : 16);
        for (int j = 0; j < 8; j++) {
            int sc, m;
            scale_min_k4(j, scales, &sc, &m);
            const float dl = d * (float)sc, ml = dmin * (float)m;
            const unsigned char *q = qs + 32 * (j / 2);
            int shift = 4 * (j & 1);
            for (int l = 0; l < 32; l++) {
                int v = q[l] >> shift & 0x0f;
                if (five)
                    v += qh[l] >> j & 1 ? 16 : 0;
                *dst++ = dl * (float)v - ml;
            }
        }
    }
}

// Q6_K: ql[128], qh[64], int8 scales[16], f16 d. Element 128 h + 32 k + l
// (k < 4): 4 low bits from ql[64 h + 32 (k % 2) + l] (low nibble for
// k < 2), 2 high bits from bits 2k of qh[32 h + l], offset 32; sub-block
// 8 h + 2 k + l / 16; x = (d * scale) * q.
static void dequant_q6_k(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 210) {
        const unsigned char *ql = src, *qh = src + 128, *sc = src + 192;
        const float d = f16_as_ggml(le16(src + 208));
        for (int h = 0; h < 2; h++)
            for (int k = 0; k < 4; k++)
                for (int l = 0; l < 32; l++) {
                    int lo = ql[64 * h + 32 * (k & 1) + l] >> 4 * (k >> 1) &
                             0x0f;
                    int hi = qh[32 * h + l] >> 2 * k & 3;
                    int s = sc[8 * h + 2 * k + l / 16];   // int8, portably
                    float scale = d * (float)(s < 128 ? s : s - 256);
                    *dst++ = scale * (float)((lo | hi << 4) - 32);
                }
    }
}

// ---- the non-linear 4-bit types: a nibble picks one of 16 levels
// (ggml's kvalues_iq4nl), times the block's scale.
static const signed char iq4_levels[16] = {
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
};

// IQ4_NL: f16 d, 16 bytes qs (Q4_0's nibble order); x = d * level.
static void dequant_iq4_nl(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 18, dst += QK) {
        const float d = f16_as_ggml(le16(src));
        const unsigned char *qs = src + 2;
        for (int j = 0; j < QK / 2; j++) {
            dst[j] = d * (float)iq4_levels[qs[j] & 0x0f];
            dst[j + QK / 2] = d * (float)iq4_levels[qs[j] >> 4];
        }
    }
}

// IQ4_XS: f16 d, u16 scales_h, scales_l[4], qs[128]: eight IQ4_NL-ordered
// sub-blocks of 32, sub-block s with the 6-bit scale (nibble s % 2 of
// scales_l[s / 2], bits 2s, 2s + 1 of scales_h above it) offset by 32;
// x = (d * (scale - 32)) * level.
static void dequant_iq4_xs(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 136) {
        const float d = f16_as_ggml(le16(src));
        const unsigned hi = le16(src + 2);
        for (int s = 0; s < 8; s++, dst += QK) {
            int ls = (src[4 + s / 2] >> 4 * (s % 2) & 0x0f) |
                     (int)(hi >> 2 * s & 3) << 4;
            const float dl = d * (float)(ls - 32);
            const unsigned char *qs = src + 8 + 16 * s;
            for (int j = 0; j < QK / 2; j++) {
                dst[j] = dl * (float)iq4_levels[qs[j] & 0x0f];
                dst[j + QK / 2] = dl * (float)iq4_levels[qs[j] >> 4];
            }
        }
    }
}

void mhsa__ggml_dequant(uint32_t type, const unsigned char *src,
                        size_t n_blocks, float *dst)
{
    switch (type) {
    case 0:  dequant_f32(src, n_blocks, dst); break;
    case 1:  dequant_f16(src, n_blocks, dst); break;
    case 2:  dequant_q4_0(src, n_blocks, dst); break;
    case 3:  dequant_q4_1(src, n_blocks, dst); break;
    case 6:  dequant_q5_0(src, n_blocks, dst); break;
    case 7:  dequant_q5_1(src, n_blocks, dst); break;
    case 8:  dequant_q8_0(src, n_blocks, dst); break;
    case 10: dequant_q2_k(src, n_blocks, dst); break;
    case 11: dequant_q3_k(src, n_blocks, dst); break;
    case 12: dequant_q45_k(src, n_blocks, dst, 0); break;
    case 13: dequant_q45_k(src, n_blocks, dst, 1); break;
    case 14: dequant_q6_k(src, n_blocks, dst); break;
    case 20: dequant_iq4_nl(src, n_blocks, dst); break;
    case 23: dequant_iq4_xs(src, n_blocks, dst); break;
    case 30: dequant_bf16(src, n_blocks, dst); break;
    default: break;   // callers check info->dequant first
    }
}
