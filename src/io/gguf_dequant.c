// gguf_dequant.c — ggml's tensor type table and the dequantizers of F32,
// F16, BF16, Q4_0, Q4_1 and Q8_0 (see gguf_dequant.h).
//
// The block layouts, as ggml-common.h declares them (32 elements a block,
// all fields little-endian, no padding):
//   Q4_0: f16 d, 16 bytes qs     x[j] = (lo(qs[j]) - 8) * d,
//                                x[j + 16] = (hi(qs[j]) - 8) * d
//   Q4_1: f16 d, f16 m, 16 bytes x[j] = lo(qs[j]) * d + m, x[j+16] = hi...
//   Q8_0: f16 d, 32 x int8 qs    x[j] = qs[j] * d
// lo/hi are a byte's low and high nibble: the low nibbles hold the first
// half of the block. The arithmetic is ggml's dequantize_row_* exactly:
// the integer quant converted to float, one fp32 product, and for Q4_1 one
// fp32 sum after it, each rounded (the build's -ffp-contract=off keeps the
// compiler from fusing them into an FMA, which would round once). The f16
// scales convert exactly (half.h), and NaNs are made quiet as ggml's
// conversion does, so every result is bit for bit ggml's, NaN included
// (checked once against ggml-quants.c's functions at llama.cpp c392e50 on
// 800k random blocks of each type and all 65536 halves).
#include "gguf_dequant.h"

#include "kernels/half.h"

enum { QK = 32 };   // elements per block of Q4_0, Q4_1, Q8_0

// Indexed by ggml_type (ggml.h); gaps are numbers ggml no longer defines.
static const mhsa_ggml_type_info types[] = {
    [0] = {"f32", 1, 4, 1},         [1] = {"f16", 1, 2, 1},
    [2] = {"q4_0", 32, 18, 1},      [3] = {"q4_1", 32, 20, 1},
    [6] = {"q5_0", 32, 22, 0},      [7] = {"q5_1", 32, 24, 0},
    [8] = {"q8_0", 32, 34, 1},      [9] = {"q8_1", 32, 36, 0},
    [10] = {"q2_K", 256, 84, 0},    [11] = {"q3_K", 256, 110, 0},
    [12] = {"q4_K", 256, 144, 0},   [13] = {"q5_K", 256, 176, 0},
    [14] = {"q6_K", 256, 210, 0},   [15] = {"q8_K", 256, 292, 0},
    [16] = {"iq2_xxs", 256, 66, 0}, [17] = {"iq2_xs", 256, 74, 0},
    [18] = {"iq3_xxs", 256, 98, 0}, [19] = {"iq1_s", 256, 50, 0},
    [20] = {"iq4_nl", 32, 18, 0},   [21] = {"iq3_s", 256, 110, 0},
    [22] = {"iq2_s", 256, 82, 0},   [23] = {"iq4_xs", 256, 136, 0},
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

static void dequant_q4_1(const unsigned char *src, size_t n, float *dst)
{
    for (size_t b = 0; b < n; b++, src += 20, dst += QK) {
        const float d = f16_as_ggml(le16(src));
        const float m = f16_as_ggml(le16(src + 2));
        const unsigned char *qs = src + 4;
        for (int j = 0; j < QK / 2; j++) {
            dst[j] = (float)(qs[j] & 0x0f) * d + m;
            dst[j + QK / 2] = (float)(qs[j] >> 4) * d + m;
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

void mhsa__ggml_dequant(uint32_t type, const unsigned char *src,
                        size_t n_blocks, float *dst)
{
    switch (type) {
    case 0:  dequant_f32(src, n_blocks, dst); break;
    case 1:  dequant_f16(src, n_blocks, dst); break;
    case 2:  dequant_q4_0(src, n_blocks, dst); break;
    case 3:  dequant_q4_1(src, n_blocks, dst); break;
    case 8:  dequant_q8_0(src, n_blocks, dst); break;
    case 30: dequant_bf16(src, n_blocks, dst); break;
    default: break;   // callers check info->dequant first
    }
}
