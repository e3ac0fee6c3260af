// quant_ref.c — the scalar references of the quantized products
// (kernels/quant.h): the block layouts, the activations' int8 forms, the
// products every ISA is tested against, and ggml's dequantization.
//
// Block layouts (ggml-common.h; little-endian, no padding; f16 = IEEE
// binary16 scale; "lo"/"hi" the low/high nibble of a byte):
//   Q8_0  f16 d, int8 q[32]                    w = d q
//   Q4_0  f16 d, qs[16]                        w_j = d (lo(qs[j]) - 8),
//                                              w_{j+16} = d (hi(qs[j]) - 8)
//   Q4_1  f16 d, f16 m, qs[16]                 w = d q + m (Q4_0's order)
//   Q5_0  f16 d, u32 qh, qs[16]                Q4_0's nibbles with bit j
//                                              (j + 16) of qh above them,
//                                              w = d (q - 16)
//   Q5_1  f16 d, f16 m, u32 qh, qs[16]         w = d q + m
//   Q4_K  f16 d, f16 dmin, scales[12], qs[128] 8 sub-blocks of 32: j's
//         6-bit scale sc_j and min m_j packed in scales (scale_min below),
//         its quants the lo (even j) or hi (odd j) nibbles of
//         qs[32 (j / 2) ..]; w = d sc_j q - dmin m_j
//   Q5_K  f16 d, f16 dmin, scales[12], qh[32], qs[128]: Q4_K with the
//         fifth bit of element l of sub-block j at bit j of qh[l]
//   Q6_K  ql[128], qh[64], int8 scales[16], f16 d: element 128 h + 32 k
//         + l (k < 4, l < 32) has 4 low bits from ql[64 h + 32 (k % 2) +
//         l] (lo for k < 2), 2 high bits at bits 2k of qh[32 h + l]; 16
//         sub-blocks of 16, w = d sc_j (q - 32)
#include <math.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/quant.h"

static const struct {
    const char *name;
    uint32_t ggml;
    uint16_t block, bytes;
} info[MHSA_QTYPE_COUNT] = {
    [MHSA_Q8_0] = { "q8_0", 8, 32, 34 },   [MHSA_Q4_0] = { "q4_0", 2, 32, 18 },
    [MHSA_Q4_1] = { "q4_1", 3, 32, 20 },   [MHSA_Q5_0] = { "q5_0", 6, 32, 22 },
    [MHSA_Q5_1] = { "q5_1", 7, 32, 24 },   [MHSA_Q4_K] = { "q4_K", 12, 256, 144 },
    [MHSA_Q5_K] = { "q5_K", 13, 256, 176 }, [MHSA_Q6_K] = { "q6_K", 14, 256, 210 },
};

size_t mhsa_qtype_block(mhsa_qtype t) { return info[t].block; }
size_t mhsa_qtype_bytes(mhsa_qtype t) { return info[t].bytes; }
uint32_t mhsa_qtype_ggml(mhsa_qtype t) { return info[t].ggml; }
const char *mhsa_qtype_name(mhsa_qtype t) { return info[t].name; }

mhsa_qact mhsa_qtype_act(mhsa_qtype t)
{
    return info[t].block == 256 ? MHSA_QACT_256 : MHSA_QACT_32;
}

int mhsa_qtype_from_ggml(uint32_t ggml_type)
{
    for (int t = 0; t < MHSA_QTYPE_COUNT; t++)
        if (info[t].ggml == ggml_type)
            return t;
    return -1;
}

size_t mhsa_qact_bytes(mhsa_qact a)
{
    return a == MHSA_QACT_32 ? sizeof(mhsa_q8_32) : sizeof(mhsa_q8_256);
}

static float f16(const unsigned char *p)
{
    return mhsa_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

static uint32_t le32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

// ---- activations -----------------------------------------------------------

// One block of n values: the q (quant.h's rule); returns amax.
static float quant_block(const float *x, size_t n, int8_t *q)
{
    float amax = 0.0f;
    for (size_t i = 0; i < n; i++) {
        float a = fabsf(x[i]);
        amax = a > amax ? a : amax;
    }
    float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (size_t i = 0; i < n; i++)
        q[i] = (int8_t)nearbyintf(x[i] * id);
    return amax;
}

static void quantize_32(size_t n, const float *x, void *dst)
{
    mhsa_q8_32 *b = dst;
    for (size_t i = 0; i < n / 32; i++, x += 32, b++) {
        b->d = mhsa_q8_32_scale(quant_block(x, 32, b->q));
        int32_t s = 0;
        for (int j = 0; j < 32; j++)
            s += b->q[j];
        b->s = s;
    }
}

static void quantize_256(size_t n, const float *x, void *dst)
{
    mhsa_q8_256 *b = dst;
    for (size_t i = 0; i < n / 256; i++, x += 256, b++) {
        b->d = quant_block(x, 256, b->q) / 127.0f;
        for (int j = 0; j < 16; j++) {
            int s = 0;
            for (int l = 0; l < 16; l++)
                s += b->q[16 * j + l];
            b->bsum[j] = (int16_t)s;
        }
    }
}

// ---- unpacking one weight block to its integer quants ----------------------

// The 6-bit scale and min of sub-block j < 8 of Q4_K and Q5_K (ggml's
// get_scale_min_k4).
static void scale_min(int j, const unsigned char *q, int *sc, int *m)
{
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0x0f) | (q[j - 4] >> 6) << 4;
        *m = (q[j + 4] >> 4) | (q[j] >> 6) << 4;
    }
}

// The 32 unsigned quants of a Q4_0 / Q4_1 (qh NULL) or Q5_0 / Q5_1 block.
static void unpack_32(const unsigned char *qs, const unsigned char *qh,
                      int *q)
{
    uint32_t h = qh ? le32(qh) : 0;
    for (int j = 0; j < 16; j++) {
        q[j] = (qs[j] & 0x0f) | (int)((h >> j & 1) << 4);
        q[j + 16] = (qs[j] >> 4) | (int)((h >> (j + 16) & 1) << 4);
    }
}

// The 256 unsigned quants of a Q4_K / Q5_K (five) block.
static void unpack_k45(const unsigned char *b, int five, int *q)
{
    const unsigned char *qh = b + 16, *qs = b + (five ? 48 : 16);
    for (int j = 0; j < 8; j++)
        for (int l = 0; l < 32; l++) {
            int v = qs[32 * (j / 2) + l] >> 4 * (j & 1) & 0x0f;
            if (five)
                v |= (qh[l] >> j & 1) << 4;
            q[32 * j + l] = v;
        }
}

// The 256 unsigned 6-bit quants of a Q6_K block.
static void unpack_k6(const unsigned char *b, int *q)
{
    const unsigned char *ql = b, *qh = b + 128;
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 32; l++) {
                int lo = ql[64 * h + 32 * (k & 1) + l] >> 4 * (k >> 1) & 0x0f;
                int hi = qh[32 * h + l] >> 2 * k & 3;
                q[128 * h + 32 * k + l] = lo | hi << 4;
            }
}

static int32_t idot(const int *a, const int8_t *b, int n)
{
    int32_t s = 0;
    for (int i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

// ---- one block's term of the dot (quant.h's table), in fp32 ----------------

static float term(mhsa_qtype t, const unsigned char *w, const void *xb)
{
    int q[256];
    if (mhsa_qtype_act(t) == MHSA_QACT_32) {
        const mhsa_q8_32 *x = xb;
        float dw = f16(w);
        switch (t) {
        case MHSA_Q8_0: {
            int32_t s = 0;
            for (int i = 0; i < 32; i++)
                s += (int8_t)w[2 + i] * x->q[i];
            return dw * x->d * (float)s;
        }
        case MHSA_Q4_0:
            unpack_32(w + 2, NULL, q);
            return dw * x->d * (float)(idot(q, x->q, 32) - 8 * x->s);
        case MHSA_Q5_0:
            unpack_32(w + 6, w + 2, q);
            return dw * x->d * (float)(idot(q, x->q, 32) - 16 * x->s);
        case MHSA_Q4_1:
            unpack_32(w + 4, NULL, q);
            return dw * x->d * (float)idot(q, x->q, 32) +
                   f16(w + 2) * x->d * (float)x->s;
        default:   // MHSA_Q5_1
            unpack_32(w + 8, w + 4, q);
            return dw * x->d * (float)idot(q, x->q, 32) +
                   f16(w + 2) * x->d * (float)x->s;
        }
    }
    const mhsa_q8_256 *x = xb;
    if (t == MHSA_Q6_K) {
        unpack_k6(w, q);
        const signed char *sc = (const signed char *)w + 192;
        int32_t s = 0;
        for (int j = 0; j < 16; j++)
            s += sc[j] * (idot(q + 16 * j, x->q + 16 * j, 16) -
                          32 * x->bsum[j]);
        return f16(w + 208) * x->d * (float)s;
    }
    unpack_k45(w, t == MHSA_Q5_K, q);
    int32_t s = 0, mins = 0;
    for (int j = 0; j < 8; j++) {
        int sc, m;
        scale_min(j, w + 4, &sc, &m);
        s += sc * idot(q + 32 * j, x->q + 32 * j, 32);
        mins += m * (x->bsum[2 * j] + x->bsum[2 * j + 1]);
    }
    return f16(w) * x->d * (float)s - f16(w + 2) * x->d * (float)mins;
}

// The blocks' terms added in order, one fp32 sum per element.
#define QMM_REF(name, T)                                                      \
    static void name(size_t nb, const void *w, size_t ldw, size_t nw,         \
                     const void *x, size_t ldx, size_t m, float *y,           \
                     size_t ldy, int add)                                     \
    {                                                                         \
        size_t wb = info[T].bytes, xb = mhsa_qact_bytes(mhsa_qtype_act(T));  \
        for (size_t j = 0; j < m; j++)                                        \
            for (size_t r = 0; r < nw; r++) {                                 \
                const unsigned char *wr =                                     \
                    (const unsigned char *)w + r * ldw;                       \
                const unsigned char *xr = (const unsigned char *)x + j * ldx; \
                float acc = 0.0f;                                             \
                for (size_t b = 0; b < nb; b++)                               \
                    acc += term(T, wr + b * wb, xr + b * xb);                 \
                float *o = &y[j * ldy + r];                                   \
                *o = add ? *o + acc : acc;                                    \
            }                                                                 \
    }

QMM_REF(qmm_q8_0, MHSA_Q8_0)
QMM_REF(qmm_q4_0, MHSA_Q4_0)
QMM_REF(qmm_q4_1, MHSA_Q4_1)
QMM_REF(qmm_q5_0, MHSA_Q5_0)
QMM_REF(qmm_q5_1, MHSA_Q5_1)
QMM_REF(qmm_q4_k, MHSA_Q4_K)
QMM_REF(qmm_q5_k, MHSA_Q5_K)
QMM_REF(qmm_q6_k, MHSA_Q6_K)

const mhsa_qkernels mhsa_qkernels_scalar = {
    .name = "scalar",
    .quantize = { quantize_32, quantize_256 },
    .qmm = { qmm_q8_0, qmm_q4_0, qmm_q4_1, qmm_q5_0, qmm_q5_1, qmm_q4_k,
             qmm_q5_k, qmm_q6_k },
};

// ---- dequantization (ggml's dequantize_row_*: the same fp32 operations
// in its order) -------------------------------------------------------------

void mhsa_q_dequant(mhsa_qtype t, size_t nb, const void *w, float *dst)
{
    const unsigned char *b = w;
    int q[256];
    for (size_t i = 0; i < nb; i++, b += info[t].bytes) {
        switch (t) {
        case MHSA_Q8_0:
            for (int l = 0; l < 32; l++)
                *dst++ = (float)(int8_t)b[2 + l] * f16(b);
            break;
        case MHSA_Q4_0:
        case MHSA_Q5_0: {
            int five = t == MHSA_Q5_0;
            unpack_32(b + (five ? 6 : 2), five ? b + 2 : NULL, q);
            for (int l = 0; l < 32; l++)
                *dst++ = (float)(q[l] - (five ? 16 : 8)) * f16(b);
            break;
        }
        case MHSA_Q4_1:
        case MHSA_Q5_1: {
            int five = t == MHSA_Q5_1;
            unpack_32(b + (five ? 8 : 4), five ? b + 4 : NULL, q);
            for (int l = 0; l < 32; l++)
                *dst++ = (float)q[l] * f16(b) + f16(b + 2);
            break;
        }
        case MHSA_Q4_K:
        case MHSA_Q5_K:
            unpack_k45(b, t == MHSA_Q5_K, q);
            for (int j = 0; j < 8; j++) {
                int sc, m;
                scale_min(j, b + 4, &sc, &m);
                float dl = f16(b) * (float)sc, ml = f16(b + 2) * (float)m;
                for (int l = 0; l < 32; l++)
                    *dst++ = dl * (float)q[32 * j + l] - ml;
            }
            break;
        default:   // MHSA_Q6_K
            unpack_k6(b, q);
            for (int l = 0; l < 256; l++) {
                float s = f16(b + 208) *
                          (float)((const signed char *)b)[192 + l / 16];
                *dst++ = s * (float)(q[l] - 32);
            }
            break;
        }
    }
}
