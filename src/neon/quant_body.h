// quant_body.h — the NEON products of quantized weight blocks and int8
// activations (contract: kernels/quant.h), written once and compiled
// twice: by src/neon/quant.c with a plain-NEON integer dot (any AArch64
// CPU) and by src/neon/quant_dot.c with SDOT (ARMv8.2 dotprod, built with
// its own flags and run only where the CPU has it: kernels/dispatch.c).
//
// The including file defines, before including this:
//   QN_DOT(acc, a, b)  int32x4_t acc plus the 16 products of the int8x16_t
//                      a and b, summed into the lanes in groups of four
//                      (which product lands in which lane is the dot's
//                      own business: every sum below is an exact integer);
// and then defines its mhsa_qkernels with QN_QMM_FNS as the qmm slots.
//
// Numerics. Each block's integer dot (with the zero points, sub-block
// scales and mins folded in as quant.h's table says) is exact in int32,
// however it is split between lanes and added up. Only the fp32 part
// fixes the bits, and it is one step per block, lane by lane (qn_step
// below): with dw, dx the block's weight and activation scales,
//   acc = fma(float(isum), dw * dx, acc)               (every type)
//   acc = fma(float(s),    mw * dx, acc)               (Q4_1, Q5_1)
//   acc = fma(-float(mins), dmin * dx, acc)            (Q4_K, Q5_K)
// from acc = +0, blocks in order; then y = acc, or y + acc with add. Each
// lane is one element (weight row r, activation row j), and the tiles
// below only choose which elements share a vector: four weight rows of
// one activation row, or four activation rows of one weight row. Both
// run the same steps in every lane, so an element's bits depend on its
// two rows and nb only, whatever tile or remainder it lands in.
//
// Tiles. The 32-element types take four weight rows in the lanes and up
// to four activation rows per pass: each block of the four rows is
// unpacked to int8 once and met by every activation row (decode, m = 1,
// streams four rows at once; prefill reuses the unpacked block m times
// from registers). The k-quants unpack 256 elements a block, too many to
// hold for four rows: prefill takes one weight row against four
// activation rows in the lanes, decode (and the m % 4 activation rows
// left over) four weight rows against one. Weight rows past nw repeat the
// last row (its lanes are computed and not stored), so the remainder is
// the same code. Activation rows are taken in chunks that stay in L2
// while every weight row passes over them.
#ifndef MHSA_NEON_QUANT_BODY_H
#define MHSA_NEON_QUANT_BODY_H

#include <arm_neon.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "kernels/quant.h"

#define QN_INLINE static inline __attribute__((always_inline))
// The loops over the few rows, activation rows and vectors of a tile are
// unrolled, so that their vectors stay in registers.
#define QN_UNROLL _Pragma("GCC unroll 8")

// Bytes of activation rows a chunk may hold (they stay in L2 while the
// weight rows stream past them).
#define QN_ACT_CHUNK_BYTES (192u * 1024u)

QN_INLINE uint16_t qn_u16(const unsigned char *p)
{
    uint16_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

QN_INLINE uint32_t qn_u32(const unsigned char *p)
{
    uint32_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

// The f16 scales at p0..p3 (unaligned) in the four lanes. FCVTL is exact
// and ignores FPCR.FZ (kernels.h), like the scalar reference's integer
// conversion.
QN_INLINE float32x4_t qn_f16x4(const unsigned char *p0,
                               const unsigned char *p1,
                               const unsigned char *p2,
                               const unsigned char *p3)
{
    uint16x4_t h = vdup_n_u16(qn_u16(p0));
    h = vset_lane_u16(qn_u16(p1), h, 1);
    h = vset_lane_u16(qn_u16(p2), h, 2);
    h = vset_lane_u16(qn_u16(p3), h, 3);
    return vcvt_f32_f16(vreinterpret_f16_u16(h));
}

QN_INLINE float32x4_t qn_f16x1(const unsigned char *p)
{
    return vdupq_n_f32(
        vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(
                           qn_u16(p)))),
                       0));
}

// [sum a, sum b, sum c, sum d]: four integer dots to one lane each.
QN_INLINE int32x4_t qn_hadd4(int32x4_t a, int32x4_t b, int32x4_t c,
                             int32x4_t d)
{
    return vpaddq_s32(vpaddq_s32(a, b), vpaddq_s32(c, d));
}

// THE per-block step (see the top): acc + float(isum) * (sa * sb), lane
// by lane, one product and one fused multiply-add. Every tile calls it
// with the element's own scales in the element's lane.
QN_INLINE float32x4_t qn_step(float32x4_t acc, int32x4_t isum,
                              float32x4_t sa, float32x4_t sb)
{
    return vfmaq_f32(acc, vcvtq_f32_s32(isum), vmulq_f32(sa, sb));
}

// ... and the k-quants' min term: acc - float(mins) * (dmin * dx).
QN_INLINE float32x4_t qn_step_sub(float32x4_t acc, int32x4_t mins,
                                  float32x4_t sa, float32x4_t sb)
{
    return vfmsq_f32(acc, vcvtq_f32_s32(mins), vmulq_f32(sa, sb));
}

// y[0..n) = acc's first n lanes, or y + acc with add (one fp32 add).
QN_INLINE void qn_store(float *y, int n, float32x4_t acc, int add)
{
    if (n == 4) {
        vst1q_f32(y, add ? vaddq_f32(vld1q_f32(y), acc) : acc);
        return;
    }
    float v[4];
    vst1q_f32(v, acc);
    for (int i = 0; i < n; i++)
        y[i] = add ? y[i] + v[i] : v[i];
}

// ... the same to y[0], y[ld], ..., y[(n-1) ld].
QN_INLINE void qn_store_strided(float *y, size_t ld, int n, float32x4_t acc,
                                int add)
{
    float v[4];
    vst1q_f32(v, acc);
    for (int i = 0; i < n; i++)
        y[i * ld] = add ? y[i * ld] + v[i] : v[i];
}

// Bytes of one block of t (quant.h's mhsa_qtype_bytes, as a constant).
QN_INLINE size_t qn_wbytes(mhsa_qtype t)
{
    switch (t) {
    case MHSA_Q8_0: return 34;
    case MHSA_Q4_0: return 18;
    case MHSA_Q4_1: return 20;
    case MHSA_Q5_0: return 22;
    case MHSA_Q5_1: return 24;
    case MHSA_Q4_K: return 144;
    case MHSA_Q5_K: return 176;
    default:        return 210;   // MHSA_Q6_K
    }
}

// Activation rows per chunk: a multiple of 4, at least 4.
QN_INLINE size_t qn_act_chunk(size_t row_bytes)
{
    size_t mc = row_bytes ? QN_ACT_CHUNK_BYTES / row_bytes : 4;
    mc &= ~(size_t)3;
    return mc < 4 ? 4 : mc;
}

// ---- the 32-element types ---------------------------------------------------

// Bit i of qh (i < 32) as 0 or 0x10 in byte i of lo (i < 16) / hi.
QN_INLINE void qn_high_bits(uint32_t qh, uint8x16_t *lo, uint8x16_t *hi)
{
    static const uint8_t idx[32] = { 0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1,
                                     1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2,
                                     2, 2, 3, 3, 3, 3, 3, 3, 3, 3 };
    static const uint8_t bit[16] = { 1, 2, 4, 8, 16, 32, 64, 128,
                                     1, 2, 4, 8, 16, 32, 64, 128 };
    uint8x16_t bytes = vreinterpretq_u8_u32(vdupq_n_u32(qh));
    uint8x16_t b = vld1q_u8(bit), h = vdupq_n_u8(0x10);
    *lo = vandq_u8(vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(idx)), b), h);
    *hi = vandq_u8(vtstq_u8(vqtbl1q_u8(bytes, vld1q_u8(idx + 16)), b), h);
}

// The block's 32 quants as int8, elements 0..15 in lo and 16..31 in hi,
// with Q4_0's 8 and Q5_0's 16 subtracted (so the dot is quant.h's
// sum(qw qx) - 8 s or - 16 s directly).
QN_INLINE void qn_unpack32(mhsa_qtype t, const unsigned char *b,
                           int8x16_t *lo, int8x16_t *hi)
{
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    uint8x16_t v, l, h, hl, hh;
    switch (t) {
    case MHSA_Q8_0:
        *lo = vld1q_s8((const int8_t *)b + 2);
        *hi = vld1q_s8((const int8_t *)b + 18);
        return;
    case MHSA_Q4_0:
        v = vld1q_u8(b + 2);
        *lo = vsubq_s8(vreinterpretq_s8_u8(vandq_u8(v, m4)), vdupq_n_s8(8));
        *hi = vsubq_s8(vreinterpretq_s8_u8(vshrq_n_u8(v, 4)), vdupq_n_s8(8));
        return;
    case MHSA_Q4_1:
        v = vld1q_u8(b + 4);
        *lo = vreinterpretq_s8_u8(vandq_u8(v, m4));
        *hi = vreinterpretq_s8_u8(vshrq_n_u8(v, 4));
        return;
    case MHSA_Q5_0:
        qn_high_bits(qn_u32(b + 2), &hl, &hh);
        v = vld1q_u8(b + 6);
        l = vorrq_u8(vandq_u8(v, m4), hl);
        h = vorrq_u8(vshrq_n_u8(v, 4), hh);
        *lo = vsubq_s8(vreinterpretq_s8_u8(l), vdupq_n_s8(16));
        *hi = vsubq_s8(vreinterpretq_s8_u8(h), vdupq_n_s8(16));
        return;
    default:   // MHSA_Q5_1
        qn_high_bits(qn_u32(b + 4), &hl, &hh);
        v = vld1q_u8(b + 8);
        *lo = vreinterpretq_s8_u8(vorrq_u8(vandq_u8(v, m4), hl));
        *hi = vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(v, 4), hh));
        return;
    }
}

// Four weight rows w[0..3] (nb blocks of type t) against A activation
// rows (ldx bytes apart from x): acc[a] holds the four rows' sums for
// activation row a.
QN_INLINE void qn_rows4_32(mhsa_qtype t, int A, size_t nb,
                           const unsigned char *const w[4],
                           const unsigned char *x, size_t ldx,
                           float32x4_t *acc)
{
    const size_t wb = qn_wbytes(t);
    const int has_min = t == MHSA_Q4_1 || t == MHSA_Q5_1;
    float32x4_t s[4];   // (acc itself would be stored every block)
    QN_UNROLL
    for (int a = 0; a < A; a++)
        s[a] = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb; b++) {
        const unsigned char *w0 = w[0] + b * wb, *w1 = w[1] + b * wb,
                            *w2 = w[2] + b * wb, *w3 = w[3] + b * wb;
        int8x16_t lo[4], hi[4];
        qn_unpack32(t, w0, &lo[0], &hi[0]);
        qn_unpack32(t, w1, &lo[1], &hi[1]);
        qn_unpack32(t, w2, &lo[2], &hi[2]);
        qn_unpack32(t, w3, &lo[3], &hi[3]);
        float32x4_t dw = qn_f16x4(w0, w1, w2, w3);
        float32x4_t mw = has_min ? qn_f16x4(w0 + 2, w1 + 2, w2 + 2, w3 + 2)
                                 : dw;
        QN_UNROLL
        for (int a = 0; a < A; a++) {
            const mhsa_q8_32 *xb = (const mhsa_q8_32 *)(x + a * ldx) + b;
            int8x16_t xl = vld1q_s8(xb->q), xh = vld1q_s8(xb->q + 16);
            int32x4_t p[4];
            QN_UNROLL
            for (int r = 0; r < 4; r++)
                p[r] = QN_DOT(QN_DOT(vdupq_n_s32(0), lo[r], xl), hi[r], xh);
            float32x4_t dx = vdupq_n_f32(xb->d);
            s[a] = qn_step(s[a], qn_hadd4(p[0], p[1], p[2], p[3]), dw, dx);
            if (has_min)
                s[a] = qn_step(s[a], vdupq_n_s32(xb->s), mw, dx);
        }
    }
    QN_UNROLL
    for (int a = 0; a < A; a++)
        acc[a] = s[a];
}

// Weight rows r .. r + 3 (those past nw repeat the last) into rows[];
// returns how many are real, 1..4.
QN_INLINE int qn_row_group(const unsigned char *wp, size_t ldw, size_t nw,
                           size_t r, const unsigned char *rows[4])
{
    int nr = nw - r < 4 ? (int)(nw - r) : 4;
    QN_UNROLL
    for (int i = 0; i < 4; i++)
        rows[i] = wp + (r + (size_t)(i < nr ? i : nr - 1)) * ldw;
    return nr;
}

// One chunk of the 32-element types, activation rows [j0, j1): row groups
// of four, activation rows four at a time (then the 1..3 left).
QN_INLINE void qn_chunk32(mhsa_qtype t, size_t nb, const unsigned char *wp,
                          size_t ldw, size_t nw, const unsigned char *xp,
                          size_t ldx, size_t j0, size_t j1, float *y,
                          size_t ldy, int add)
{
    for (size_t r = 0; r < nw; r += 4) {
        const unsigned char *rows[4];
        int nr = qn_row_group(wp, ldw, nw, r, rows);
        size_t j = j0;
        for (; j + 4 <= j1; j += 4) {
            float32x4_t acc[4];
            qn_rows4_32(t, 4, nb, rows, xp + j * ldx, ldx, acc);
            QN_UNROLL
            for (int a = 0; a < 4; a++)
                qn_store(y + (j + a) * ldy + r, nr, acc[a], add);
        }
        float32x4_t acc[3];
        switch (j1 - j) {
        case 3:
            qn_rows4_32(t, 3, nb, rows, xp + j * ldx, ldx, acc);
            break;
        case 2:
            qn_rows4_32(t, 2, nb, rows, xp + j * ldx, ldx, acc);
            break;
        case 1:
            qn_rows4_32(t, 1, nb, rows, xp + j * ldx, ldx, acc);
            break;
        default:
            break;
        }
        for (size_t a = 0; a < j1 - j; a++)
            qn_store(y + (j + a) * ldy + r, nr, acc[a], add);
    }
}

// ---- the k-quants -----------------------------------------------------------
//
// A block is taken in groups of four sub-blocks (Q4_K, Q5_K: two groups
// of 128 elements, sub-blocks of 32; Q6_K: four groups of 64, sub-blocks
// of 16): a group of one weight row is unpacked to int8 (8 or 4
// vectors), its four sub-block dots go to four lanes (qn_hadd4) and are
// scaled there by the four scales at once (one MLA). Four activation rows
// share one unpacked group; four weight rows share one group of
// activations (whose vectors the compiler then keeps in registers).

// An empty asm that makes the pointer p look computed from the vector v
// (it emits nothing): the loads through p can then neither move above
// the code that computes v nor merge with earlier loads of the same
// bytes. Without it GCC hoists every group's loads to the top of the
// block and spills what it cannot hold; with it each group's vectors
// live only while the group is computed (out-of-order cores issue the
// loads early all the same).
#define QN_AFTER(p, v) __asm__("" : "+r"(p) : "w"(v))

// Groups per block and elements per group.
#define QN_K_GROUPS(t) ((t) == MHSA_Q6_K ? 4 : 2)
#define QN_K_GROUP_ELEMS(t) ((t) == MHSA_Q6_K ? 64 : 128)
// Offset of the block's f16 d (and, for Q4_K and Q5_K, dmin just after).
#define QN_K_D(t) ((t) == MHSA_Q6_K ? 208 : 0)

// Four bytes as int32 lanes, unsigned or signed.
QN_INLINE int32x4_t qn_u8x4_s32(uint32_t v)
{
    uint16x8_t h = vmovl_u8(vcreate_u8(v));
    return vreinterpretq_s32_u32(vmovl_u16(vget_low_u16(h)));
}

QN_INLINE int32x4_t qn_s8x4_s32(uint32_t v)
{
    int16x8_t h = vmovl_s8(vcreate_s8(v));
    return vmovl_s16(vget_low_s16(h));
}

// The scales of group g's four sub-blocks. Q4_K, Q5_K: the 6-bit scales
// of quant_ref.c's scale_min, four bytes at a time (group 0: the low six
// bits of bytes 0..3; group 1: the low nibbles of bytes 8..11 with the
// top two bits of bytes 0..3 above them). Q6_K: int8 scales[4g ..].
QN_INLINE int32x4_t qn_k_scales(mhsa_qtype t, const unsigned char *b, int g)
{
    if (t == MHSA_Q6_K)
        return qn_s8x4_s32(qn_u32(b + 192 + 4 * g));
    uint32_t u0 = qn_u32(b + 4);
    if (g == 0)
        return qn_u8x4_s32(u0 & 0x3f3f3f3fu);
    uint32_t u2 = qn_u32(b + 12);
    return qn_u8x4_s32((u2 & 0x0f0f0f0fu) | ((u0 >> 6) & 0x03030303u) << 4);
}

// Q4_K, Q5_K: the mins term of one block and one activation block,
// sum_j m_j bsum_j, spread over the lanes. The mins' bytes (scale_min):
// 4..7 low six bits; then the high nibbles of 8..11 with the top two bits
// of 4..7 above them.
QN_INLINE int32x4_t qn_k_mins(const unsigned char *b, const mhsa_q8_256 *x)
{
    uint32_t u1 = qn_u32(b + 8), u2 = qn_u32(b + 12);
    uint32_t lo = u1 & 0x3f3f3f3fu;
    uint32_t hi = ((u2 >> 4) & 0x0f0f0f0fu) | ((u1 >> 6) & 0x03030303u) << 4;
    int16x8_t mins = vreinterpretq_s16_u16(
        vmovl_u8(vcreate_u8((uint64_t)hi << 32 | lo)));
    // bsum per sub-block of 32: |sum| <= 32 * 127, an int16.
    int16x8_t bs = vpaddq_s16(vld1q_s16(x->bsum), vld1q_s16(x->bsum + 8));
    return vmlal_high_s16(vmull_s16(vget_low_s16(mins), vget_low_s16(bs)),
                          mins, bs);
}

// Group g of a block unpacked to int8, the vectors in element order.
// Q4_K, Q5_K (8 vectors): sub-block 4g + k is the low (k even) or high
// nibbles of qs[64 g + 32 (k / 2) ..][0..31], with (Q5_K) the fifth bit
// of its element l at bit 4g + k of qh[l]. Q6_K (4 vectors, 32 subtracted
// so the dot is sum(qw qx) - 32 bsum): element 128 h + 32 k + l (g = 2h
// + k / 2) has its low bits in ql[64 h + 32 (k % 2) + l] (the low nibble
// for k < 2) and bits 2k, 2k + 1 of qh[32 h + l] above them.
QN_INLINE void qn_k_unpack(mhsa_qtype t, const unsigned char *b, int g,
                           int8x16_t *w)
{
    const uint8x16_t m4 = vdupq_n_u8(0x0f);
    if (t == MHSA_Q6_K) {
        const int h = g / 2;
        const uint8x16_t m2 = vdupq_n_u8(0x30);
        const unsigned char *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        uint8x16_t l0 = vld1q_u8(ql), l1 = vld1q_u8(ql + 16),
                   l2 = vld1q_u8(ql + 32), l3 = vld1q_u8(ql + 48);
        uint8x16_t h0 = vld1q_u8(qh), h1 = vld1q_u8(qh + 16);
        uint8x16_t q[4];
        if (g % 2 == 0) {
            q[0] = vorrq_u8(vandq_u8(l0, m4), vandq_u8(vshlq_n_u8(h0, 4), m2));
            q[1] = vorrq_u8(vandq_u8(l1, m4), vandq_u8(vshlq_n_u8(h1, 4), m2));
            q[2] = vorrq_u8(vandq_u8(l2, m4), vandq_u8(vshlq_n_u8(h0, 2), m2));
            q[3] = vorrq_u8(vandq_u8(l3, m4), vandq_u8(vshlq_n_u8(h1, 2), m2));
        } else {
            q[0] = vorrq_u8(vshrq_n_u8(l0, 4), vandq_u8(h0, m2));
            q[1] = vorrq_u8(vshrq_n_u8(l1, 4), vandq_u8(h1, m2));
            q[2] = vorrq_u8(vshrq_n_u8(l2, 4), vandq_u8(vshrq_n_u8(h0, 2), m2));
            q[3] = vorrq_u8(vshrq_n_u8(l3, 4), vandq_u8(vshrq_n_u8(h1, 2), m2));
        }
        QN_UNROLL
        for (int i = 0; i < 4; i++)
            w[i] = vsubq_s8(vreinterpretq_s8_u8(q[i]), vdupq_n_s8(32));
        return;
    }
    const unsigned char *qs = b + (t == MHSA_Q5_K ? 48 : 16) + 64 * g;
    uint8x16_t v0 = vld1q_u8(qs), v1 = vld1q_u8(qs + 16),
               v2 = vld1q_u8(qs + 32), v3 = vld1q_u8(qs + 48);
    uint8x16_t q[8] = { vandq_u8(v0, m4),  vandq_u8(v1, m4),
                        vshrq_n_u8(v0, 4), vshrq_n_u8(v1, 4),
                        vandq_u8(v2, m4),  vandq_u8(v3, m4),
                        vshrq_n_u8(v2, 4), vshrq_n_u8(v3, 4) };
    if (t == MHSA_Q5_K) {
        const uint8x16_t h5 = vdupq_n_u8(0x10);
        uint8x16_t g0 = vld1q_u8(b + 16), g1 = vld1q_u8(b + 32);
        if (g) {
            g0 = vshrq_n_u8(g0, 4);
            g1 = vshrq_n_u8(g1, 4);
        }
        q[0] = vorrq_u8(q[0], vandq_u8(vshlq_n_u8(g0, 4), h5));
        q[1] = vorrq_u8(q[1], vandq_u8(vshlq_n_u8(g1, 4), h5));
        q[2] = vorrq_u8(q[2], vandq_u8(vshlq_n_u8(g0, 3), h5));
        q[3] = vorrq_u8(q[3], vandq_u8(vshlq_n_u8(g1, 3), h5));
        q[4] = vorrq_u8(q[4], vandq_u8(vshlq_n_u8(g0, 2), h5));
        q[5] = vorrq_u8(q[5], vandq_u8(vshlq_n_u8(g1, 2), h5));
        q[6] = vorrq_u8(q[6], vandq_u8(vshlq_n_u8(g0, 1), h5));
        q[7] = vorrq_u8(q[7], vandq_u8(vshlq_n_u8(g1, 1), h5));
    }
    QN_UNROLL
    for (int i = 0; i < 8; i++)
        w[i] = vreinterpretq_s8_u8(q[i]);
}

// S + the group's four sub-block dots (w unpacked, xq the activation
// quants of the group) times their scales sc, lane by lane: exact.
QN_INLINE int32x4_t qn_k_group_dot(mhsa_qtype t, const int8x16_t *w,
                                   const int8_t *xq, int32x4_t sc,
                                   int32x4_t S)
{
    int32x4_t d[4];
    const int per = t == MHSA_Q6_K ? 1 : 2;   // vectors per sub-block
    QN_UNROLL
    for (int k = 0; k < 4; k++) {
        d[k] = QN_DOT(vdupq_n_s32(0), w[per * k], vld1q_s8(xq + 16 * per * k));
        if (per == 2)
            d[k] = QN_DOT(d[k], w[2 * k + 1], vld1q_s8(xq + 32 * k + 16));
    }
    return vmlaq_s32(S, qn_hadd4(d[0], d[1], d[2], d[3]), sc);
}

// Group g (a constant: the callers unroll the groups) of the blocks of
// four weight rows wr[0..3] against one activation block: S[r] += ...
QN_INLINE void qn_rows4_k_group(mhsa_qtype t, int g,
                                const unsigned char *const *wr,
                                const mhsa_q8_256 *xb, int32x4_t *S)
{
    const int8_t *xq = xb->q + QN_K_GROUP_ELEMS(t) * g;
    QN_AFTER(xq, S[3]);
    QN_UNROLL
    for (int r = 0; r < 4; r++) {
        const unsigned char *b = wr[r];
        QN_AFTER(b, S[r > 0 ? r - 1 : 3]);
        int8x16_t q[8];
        qn_k_unpack(t, b, g, q);
        S[r] = qn_k_group_dot(t, q, xq, qn_k_scales(t, b, g), S[r]);
    }
}

// ... and of the block of one weight row against four activation
// blocks: S[a] += ...
QN_INLINE void qn_acts4_k_group(mhsa_qtype t, int g, const unsigned char *wr,
                                const mhsa_q8_256 *const *xb, int32x4_t *S)
{
    QN_AFTER(wr, S[3]);
    int8x16_t q[8];
    qn_k_unpack(t, wr, g, q);
    int32x4_t sc = qn_k_scales(t, wr, g);
    QN_UNROLL
    for (int a = 0; a < 4; a++) {
        const int8_t *xq = xb[a]->q + QN_K_GROUP_ELEMS(t) * g;
        QN_AFTER(xq, S[a > 0 ? a - 1 : 3]);
        S[a] = qn_k_group_dot(t, q, xq, sc, S[a]);
    }
}

// Four weight rows w[0..3] against one activation row: the rows' sums in
// the lanes.
QN_INLINE float32x4_t qn_rows4_k(mhsa_qtype t, size_t nb,
                                 const unsigned char *const w[4],
                                 const unsigned char *x)
{
    const size_t wb = qn_wbytes(t), od = QN_K_D(t);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb; b++) {
        const mhsa_q8_256 *xb = (const mhsa_q8_256 *)x + b;
        const unsigned char *wr[4];
        int32x4_t S[4];
        QN_UNROLL
        for (int r = 0; r < 4; r++) {
            wr[r] = w[r] + b * wb;
            S[r] = vdupq_n_s32(0);
        }
        qn_rows4_k_group(t, 0, wr, xb, S);
        qn_rows4_k_group(t, 1, wr, xb, S);
        if (QN_K_GROUPS(t) == 4) {
            qn_rows4_k_group(t, 2, wr, xb, S);
            qn_rows4_k_group(t, 3, wr, xb, S);
        }
        float32x4_t dx = vdupq_n_f32(xb->d);
        acc = qn_step(acc, qn_hadd4(S[0], S[1], S[2], S[3]),
                      qn_f16x4(wr[0] + od, wr[1] + od, wr[2] + od, wr[3] + od),
                      dx);
        if (t != MHSA_Q6_K)
            acc = qn_step_sub(acc,
                              qn_hadd4(qn_k_mins(wr[0], xb),
                                       qn_k_mins(wr[1], xb),
                                       qn_k_mins(wr[2], xb),
                                       qn_k_mins(wr[3], xb)),
                              qn_f16x4(wr[0] + 2, wr[1] + 2, wr[2] + 2,
                                       wr[3] + 2),
                              dx);
    }
    return acc;
}

// One weight row against four activation rows (ldx bytes apart): the
// four sums in the lanes.
QN_INLINE float32x4_t qn_acts4_k(mhsa_qtype t, size_t nb,
                                 const unsigned char *w,
                                 const unsigned char *x, size_t ldx)
{
    const size_t wb = qn_wbytes(t), od = QN_K_D(t);
    float32x4_t acc = vdupq_n_f32(0.0f);
    for (size_t b = 0; b < nb; b++) {
        const mhsa_q8_256 *xb[4];
        float dxs[4];
        int32x4_t S[4];
        QN_UNROLL
        for (int a = 0; a < 4; a++) {
            xb[a] = (const mhsa_q8_256 *)(x + a * ldx) + b;
            dxs[a] = xb[a]->d;
            S[a] = vdupq_n_s32(0);
        }
        const unsigned char *wr = w + b * wb;
        qn_acts4_k_group(t, 0, wr, xb, S);
        qn_acts4_k_group(t, 1, wr, xb, S);
        if (QN_K_GROUPS(t) == 4) {
            qn_acts4_k_group(t, 2, wr, xb, S);
            qn_acts4_k_group(t, 3, wr, xb, S);
        }
        float32x4_t dx = vld1q_f32(dxs);
        acc = qn_step(acc, qn_hadd4(S[0], S[1], S[2], S[3]),
                      qn_f16x1(wr + od), dx);
        if (t != MHSA_Q6_K)
            acc = qn_step_sub(acc,
                              qn_hadd4(qn_k_mins(wr, xb[0]),
                                       qn_k_mins(wr, xb[1]),
                                       qn_k_mins(wr, xb[2]),
                                       qn_k_mins(wr, xb[3])),
                              qn_f16x1(wr + 2), dx);
    }
    return acc;
}

// One chunk of the k-quants, activation rows [j0, j1): each weight row
// against them four at a time, then the 1..3 left over against row groups
// of four.
QN_INLINE void qn_chunkk(mhsa_qtype t, size_t nb, const unsigned char *wp,
                         size_t ldw, size_t nw, const unsigned char *xp,
                         size_t ldx, size_t j0, size_t j1, float *y,
                         size_t ldy, int add)
{
    size_t j4 = j0 + ((j1 - j0) & ~(size_t)3);
    if (j4 > j0)
        for (size_t r = 0; r < nw; r++)
            for (size_t j = j0; j < j4; j += 4)
                qn_store_strided(y + j * ldy + r, ldy, 4,
                                 qn_acts4_k(t, nb, wp + r * ldw,
                                            xp + j * ldx, ldx),
                                 add);
    if (j4 == j1)
        return;
    for (size_t r = 0; r < nw; r += 4) {
        const unsigned char *rows[4];
        int nr = qn_row_group(wp, ldw, nw, r, rows);
        for (size_t j = j4; j < j1; j++)
            qn_store(y + j * ldy + r, nr,
                     qn_rows4_k(t, nb, rows, xp + j * ldx), add);
    }
}

// ---- the set ----------------------------------------------------------------

// The product of type T: L2-sized chunks of activation rows (blocks of
// type xblock), each by chunk (qn_chunk32 or qn_chunkk).
#define QN_QMM(fn, T, chunk, xblock)                                          \
    static void fn(size_t nb, const void *w, size_t ldw, size_t nw,           \
                   const void *x, size_t ldx, size_t m, float *y, size_t ldy, \
                   int add)                                                   \
    {                                                                         \
        const unsigned char *wp = w, *xp = x;                                 \
        size_t mc = qn_act_chunk(nb * sizeof(xblock));                        \
        for (size_t j0 = 0; j0 < m; j0 += mc)                                 \
            chunk(T, nb, wp, ldw, nw, xp, ldx, j0,                            \
                  m - j0 < mc ? m : j0 + mc, y, ldy, add);                    \
    }

QN_QMM(qn_qmm_q8_0, MHSA_Q8_0, qn_chunk32, mhsa_q8_32)
QN_QMM(qn_qmm_q4_0, MHSA_Q4_0, qn_chunk32, mhsa_q8_32)
QN_QMM(qn_qmm_q4_1, MHSA_Q4_1, qn_chunk32, mhsa_q8_32)
QN_QMM(qn_qmm_q5_0, MHSA_Q5_0, qn_chunk32, mhsa_q8_32)
QN_QMM(qn_qmm_q5_1, MHSA_Q5_1, qn_chunk32, mhsa_q8_32)
QN_QMM(qn_qmm_q4_k, MHSA_Q4_K, qn_chunkk, mhsa_q8_256)
QN_QMM(qn_qmm_q5_k, MHSA_Q5_K, qn_chunkk, mhsa_q8_256)
QN_QMM(qn_qmm_q6_k, MHSA_Q6_K, qn_chunkk, mhsa_q8_256)

#define QN_QMM_FNS                                                            \
    { qn_qmm_q8_0, qn_qmm_q4_0, qn_qmm_q4_1, qn_qmm_q5_0, qn_qmm_q5_1,        \
      qn_qmm_q4_k, qn_qmm_q5_k, qn_qmm_q6_k }

#endif
