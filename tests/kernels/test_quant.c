// test_quant.c — the quantized products (kernels/quant.h) of every ISA
// table (and the emulated AVX-512 one) against the scalar reference, and
// the reference against the exact product of ggml's dequantized weights:
//   - activations: every table quantizes to the scalar bits (random rows,
//     zeros, a single huge value, ties at .5);
//   - every type, nb of 1, primes and a few long rows, nw and m of 1,
//     primes and sizes off any tile (up to 37 and 13), the weights
//     allocated to exactly their last byte: each element within the bound
//     of quant.h of the double product of dequantized weights and the
//     (dequantized) activation, and of the scalar result;
//   - an element's bits alone (nw = m = 1) equal its bits in every bigger
//     call, at any position, and add = y + alone, bit for bit;
//   - dequantization against hand-made blocks (known values) and, for
//     every type, the GGUF reader's independent dequantizer, bit for bit.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "kernels/quant.h"
#include "models/gguf/gguf_dequant.h"
#include "util.h"

static const size_t nbs[] = { 1, 2, 3, 5, 7, 13, 18, 64 };
static const size_t nws[] = { 1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 37 };
static const size_t ms[] = { 1, 2, 3, 4, 5, 7, 8, 13 };

static void put16(unsigned char *p, float v)
{
    uint16_t h = mhsa_f32_to_f16(v);
    p[0] = (unsigned char)h;
    p[1] = (unsigned char)(h >> 8);
}

// Random blocks of type t with sane scales: quants random bytes, f16
// scales in +-[0.25, 1) * 2^-4, Q6_K's int8 scales random.
static unsigned char *rand_blocks(rng *r, mhsa_qtype t, size_t n)
{
    size_t bytes = mhsa_qtype_bytes(t);
    unsigned char *w = malloc(n * bytes);
    ck_assert(w);
    for (size_t i = 0; i < n * bytes; i++)
        w[i] = (unsigned char)rng_u64(r);
    for (size_t b = 0; b < n; b++) {
        unsigned char *p = w + b * bytes;
        float d = rng_uniform(r, 0.25f, 1.0f) / 16.0f;
        if (rng_u64(r) & 1)
            d = -d;
        float m = rng_uniform(r, -1.0f, 1.0f) / 16.0f;
        switch (t) {
        case MHSA_Q6_K:
            put16(p + 208, d);
            break;
        case MHSA_Q4_1:
        case MHSA_Q5_1:
        case MHSA_Q4_K:
        case MHSA_Q5_K:
            put16(p, d);
            put16(p + 2, fabsf(m));
            break;
        default:
            put16(p, d);
            break;
        }
    }
    return w;
}

static void *quantize(const mhsa_kernels *k, mhsa_qact a, size_t rows,
                      size_t C, const float *x)
{
    size_t blk = a == MHSA_QACT_32 ? 32 : 256;
    size_t rb = C / blk * mhsa_qact_bytes(a);
    unsigned char *q = malloc(rows * rb);
    ck_assert(q);
    for (size_t j = 0; j < rows; j++)
        k->q->quantize[a](C, x + j * C, q + j * rb);
    return q;
}

START_TEST(activations_have_the_scalar_bits)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    rng r = { 3 + (uint64_t)_i };
    for (int a = 0; a < MHSA_QACT_COUNT; a++)
        for (int it = 0; it < test_count(40); it++) {
            size_t blk = a == MHSA_QACT_32 ? 32 : 256;
            size_t C = blk * (1 + rng_u64(&r) % 9);
            float *x = malloc(C * sizeof *x);
            ck_assert(x);
            fill_uniform(&r, x, C, -3.0f, 3.0f);
            if (it % 4 == 1)   // a zero block
                memset(x, 0, blk * sizeof *x);
            if (it % 4 == 2)   // one big value, the rest tiny
                x[rng_u64(&r) % C] = 1e30f;
            if (it % 4 == 3)   // halves: x * 127 / amax lands on ties
                for (size_t i = 0; i < C; i++)
                    x[i] = (float)((int)(rng_u64(&r) % 255) - 127) * 0.5f;
            void *qs = quantize(&mhsa_kernels_scalar, (mhsa_qact)a, 1, C, x);
            void *qk = quantize(k, (mhsa_qact)a, 1, C, x);
            size_t bytes = C / blk * mhsa_qact_bytes((mhsa_qact)a);
            ck_assert_msg(memcmp(qs, qk, bytes) == 0,
                          "%s (%s) quantize form %d C %zu case %d: bits "
                          "differ from scalar", k->name, k->q->name, a, C,
                          it % 4);
            free(qs);
            free(qk);
            free(x);
        }
}
END_TEST

// The exact dot of the dequantized weight row and activation row, and
// the bound of quant.h: sum |w| dx / 2 over the row, plus fp32 rounding
// of the block terms (nb terms of at most |term| each).
static void exact(mhsa_qtype t, size_t nb, const unsigned char *w,
                  const unsigned char *x, double *dot, double *bound)
{
    size_t blk = mhsa_qtype_block(t), C = nb * blk;
    mhsa_qact a = mhsa_qtype_act(t);
    float *wd = malloc(C * sizeof *wd);
    ck_assert(wd);
    mhsa_q_dequant(t, nb, w, wd);
    double s = 0.0, mag = 0.0;
    for (size_t b = 0; b < nb; b++) {
        const unsigned char *xb = x + b * mhsa_qact_bytes(a);
        float d;
        memcpy(&d, xb, sizeof d);
        const int8_t *q = a == MHSA_QACT_32
                              ? ((const mhsa_q8_32 *)xb)->q
                              : ((const mhsa_q8_256 *)xb)->q;
        double tb = 0.0, ab = 0.0;
        for (size_t i = 0; i < blk; i++) {
            double p = (double)wd[b * blk + i] * ((double)d * q[i]);
            tb += p;
            ab += fabs(p);
        }
        s += tb;
        mag += ab;
    }
    free(wd);
    *dot = s;
    // The int8 values are the activation here, so only fp32 rounding
    // remains: the dequantized weights', the scales' products, the
    // integer sums' conversion, the terms' and the running sum's, with
    // room for the min terms' cancellation (|d q| and |m| both up to a
    // few times |w|).
    *bound = mag * (double)(nb + 4) * 0x1p-20 + 1e-30;
}

START_TEST(products_match_reference_and_exact)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    const mhsa_kernels *sc = &mhsa_kernels_scalar;
    rng r = { 17 + (uint64_t)_i };
    for (int t = 0; t < MHSA_QTYPE_COUNT; t++)
        for (size_t bi = 0; bi < sizeof nbs / sizeof *nbs; bi++) {
            size_t nb = nbs[bi];
            size_t blk = mhsa_qtype_block((mhsa_qtype)t);
            if (blk == 256 && nb > 18)
                continue;
            size_t C = nb * blk, wb = nb * mhsa_qtype_bytes((mhsa_qtype)t);
            mhsa_qact a = mhsa_qtype_act((mhsa_qtype)t);
            size_t xb = nb * mhsa_qact_bytes(a);
            size_t nw = nws[rng_u64(&r) % (sizeof nws / sizeof *nws)];
            size_t m = ms[rng_u64(&r) % (sizeof ms / sizeof *ms)];
            if (test_quick() && nw * m * C > 400000)
                continue;
            unsigned char *w = rand_blocks(&r, (mhsa_qtype)t, nw * nb);
            float *xf = malloc(m * C * sizeof *xf);
            ck_assert(xf);
            fill_uniform(&r, xf, m * C, -2.0f, 2.0f);
            unsigned char *x = quantize(sc, a, m, C, xf);
            float *y = alloc_guarded(m * nw), *ys = alloc_guarded(m * nw);
            fill_nan(y, m * nw);
            k->q->qmm[t](nb, w, wb, nw, x, xb, m, y, nw, 0);
            sc->q->qmm[t](nb, w, wb, nw, x, xb, m, ys, nw, 0);
            for (size_t j = 0; j < m; j++)
                for (size_t rr = 0; rr < nw; rr++) {
                    double dot, bound;
                    exact((mhsa_qtype)t, nb, w + rr * wb, x + j * xb, &dot,
                          &bound);
                    float v = y[j * nw + rr], vs = ys[j * nw + rr];
                    ck_assert_msg(fabs(vs - dot) <= bound &&
                                  fabs(v - dot) <= bound,
                                  "%s (%s) %s nb %zu nw %zu m %zu element "
                                  "(%zu, %zu): %.9g, scalar %.9g, exact "
                                  "%.9g (bound %.3g)", k->name, k->q->name,
                                  mhsa_qtype_name((mhsa_qtype)t), nb, nw, m,
                                  j, rr, (double)v, (double)vs, dot, bound);
                }
            ck_assert(guard_ok(y, m * nw) && guard_ok(ys, m * nw));
            free(w);
            free(xf);
            free(x);
            free_guarded(y);
            free_guarded(ys);
        }
}
END_TEST

// The activations themselves against the fp32 input: within d / 2 where d
// is amax / 127 in fp32 (q8_256); q8_32's d is that rounded to binary16
// (a relative change of at most 2^-11), so |d q - x| grows by up to
// 127 2^-11 d.
START_TEST(activations_within_half_a_step)
{
    rng r = { 5 };
    for (int a = 0; a < MHSA_QACT_COUNT; a++) {
        size_t blk = a == MHSA_QACT_32 ? 32 : 256, C = 4 * blk;
        float x[1024];
        fill_uniform(&r, x, C, -5.0f, 5.0f);
        unsigned char *q = quantize(&mhsa_kernels_scalar, (mhsa_qact)a, 1, C,
                                    x);
        for (size_t b = 0; b < C / blk; b++) {
            const unsigned char *p = q + b * mhsa_qact_bytes((mhsa_qact)a);
            float d;
            memcpy(&d, p, sizeof d);
            const int8_t *qq = a == MHSA_QACT_32
                                   ? ((const mhsa_q8_32 *)p)->q
                                   : ((const mhsa_q8_256 *)p)->q;
            if (a == MHSA_QACT_32) // a binary16 value, as ggml stores it
                ck_assert(mhsa_f16_to_f32(mhsa_f32_to_f16(d)) == d);
            int32_t s = 0;
            for (size_t i = 0; i < blk; i++) {
                double e = fabs((double)d * qq[i] - x[b * blk + i]);
                double lim = a == MHSA_QACT_32 ? 0.5 + 127 * 0x1p-11 : 0.5;
                ck_assert_msg(e <= (lim + 1e-4) * d, "form %d block %zu: %g",
                              a, b, e);
                s += qq[i];
            }
            if (a == MHSA_QACT_32)
                ck_assert_int_eq(s, ((const mhsa_q8_32 *)p)->s);
            else
                for (int j = 0; j < 16; j++) {
                    int bs = 0;
                    for (int l = 0; l < 16; l++)
                        bs += qq[16 * j + l];
                    ck_assert_int_eq(bs, ((const mhsa_q8_256 *)p)->bsum[j]);
                }
        }
        free(q);
    }
}
END_TEST

// Row (r, j) alone has the bits it has in any bigger call, wherever it
// sits; add gives y + alone exactly.
START_TEST(element_bits_independent_of_the_call)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    rng r = { 29 + (uint64_t)_i };
    static const size_t nbb[] = { 1, 3, 18 };
    for (int t = 0; t < MHSA_QTYPE_COUNT; t++)
        for (size_t bi = 0; bi < 3; bi++) {
            size_t nb = nbb[bi], nw = 37, m = 13;
            if (mhsa_qtype_block((mhsa_qtype)t) == 256)
                nb = nb == 18 ? 6 : nb;
            size_t C = nb * mhsa_qtype_block((mhsa_qtype)t);
            size_t wb = nb * mhsa_qtype_bytes((mhsa_qtype)t);
            mhsa_qact a = mhsa_qtype_act((mhsa_qtype)t);
            size_t xb = nb * mhsa_qact_bytes(a);
            unsigned char *w = rand_blocks(&r, (mhsa_qtype)t, nw * nb);
            float *xf = malloc(m * C * sizeof *xf);
            ck_assert(xf);
            fill_uniform(&r, xf, m * C, -1.0f, 1.0f);
            unsigned char *x = quantize(k, a, m, C, xf);
            float all[37 * 13], part[37 * 13], add[37 * 13], one;
            k->q->qmm[t](nb, w, wb, nw, x, xb, m, all, nw, 0);
            // A window of rows 3.. and activations 2..: other tiles, other
            // remainders.
            k->q->qmm[t](nb, w + 3 * wb, wb, nw - 3, x + 2 * xb, xb, m - 2,
                         part, nw - 3, 0);
            for (size_t i = 0; i < m * nw; i++)
                add[i] = xf[i % (m * C)];
            k->q->qmm[t](nb, w, wb, nw, x, xb, m, add, nw, 1);
            for (size_t j = 0; j < m; j++)
                for (size_t rr = 0; rr < nw; rr++) {
                    k->q->qmm[t](nb, w + rr * wb, wb, 1, x + j * xb, xb, 1,
                                 &one, 1, 0);
                    float sum = xf[(j * nw + rr) % (m * C)] + one;
                    ck_assert_msg(
                        memcmp(&one, &all[j * nw + rr], 4) == 0 &&
                            (j < 2 || rr < 3 ||
                             memcmp(&one, &part[(j - 2) * (nw - 3) + rr - 3],
                                    4) == 0) &&
                            memcmp(&sum, &add[j * nw + rr], 4) == 0,
                        "%s (%s) %s nb %zu element (%zu, %zu): bits depend on "
                        "the call (%.9g alone, %.9g in all)", k->name,
                        k->q->name, mhsa_qtype_name((mhsa_qtype)t), nb, j, rr,
                        (double)one, (double)all[j * nw + rr]);
                }
            free(w);
            free(xf);
            free(x);
        }
}
END_TEST

// The packed form (P16): a table's qmm16 on the packed matrix gives qmm's
// bits on the file's blocks, element for element (nw of 1, 15, 16, 17,
// 33...: partial units at the end; the packed copy allocated to exactly
// its last byte); add as well. Every row dequantized from the packed form
// has mhsa_q_dequant's bits. The VNNI set must offer qmm16 for every
// type (so this cannot pass by testing nothing there).
START_TEST(packed_products_have_the_same_bits)
{
    const mhsa_kernels *k = table_or_emulated(_i);
    if (!k)
        return;
    rng r = { 53 + (uint64_t)_i };
    static const size_t pnw[] = { 1, 2, 15, 16, 17, 31, 33, 48, 50 };
    static const size_t pnb[] = { 1, 2, 3, 7 };
    static const size_t pm[] = { 1, 2, 3, 5, 9 };
    for (int t = 0; t < MHSA_QTYPE_COUNT; t++) {
        mhsa_qmm_fn q16 = k->q->qmm16[t];
        if (!strncmp(k->q->name, "avx512-vnni", 11))
            ck_assert_msg(q16, "%s: no qmm16 for %s", k->q->name,
                          mhsa_qtype_name((mhsa_qtype)t));
        for (int it = 0; it < test_count(12); it++) {
            size_t nw = pnw[rng_u64(&r) % 9], nb = pnb[rng_u64(&r) % 4];
            size_t m = pm[rng_u64(&r) % 5];
            size_t C = nb * mhsa_qtype_block((mhsa_qtype)t);
            size_t wb = nb * mhsa_qtype_bytes((mhsa_qtype)t);
            mhsa_qact a = mhsa_qtype_act((mhsa_qtype)t);
            size_t xb = nb * mhsa_qact_bytes(a);
            unsigned char *w = rand_blocks(&r, (mhsa_qtype)t, nw * nb);
            size_t pb = mhsa_q_pack16_bytes(nw, wb);
            ck_assert_uint_eq(pb, (nw + 15) / 16 * 16 * wb);
            unsigned char *p = malloc(pb);
            float *xf = malloc(m * C * sizeof *xf);
            float *y0 = malloc(m * nw * sizeof *y0);
            float *y1 = malloc(m * nw * sizeof *y1);
            float *d0 = malloc(C * sizeof *d0), *d1 = malloc(C * sizeof *d1);
            ck_assert(p && xf && y0 && y1 && d0 && d1);
            mhsa_q_pack16((mhsa_qtype)t, nb, w, wb, nw, p);
            for (size_t rr = 0; rr < nw; rr++) {
                mhsa_q_dequant((mhsa_qtype)t, nb, w + rr * wb, d0);
                mhsa_q_dequant16((mhsa_qtype)t, nb, p, rr, d1);
                ck_assert_msg(memcmp(d0, d1, C * sizeof *d0) == 0,
                              "%s nb %zu row %zu of %zu: dequantized from "
                              "the packed form differs",
                              mhsa_qtype_name((mhsa_qtype)t), nb, rr, nw);
            }
            if (q16) {
                fill_uniform(&r, xf, m * C, -1.0f, 1.0f);
                unsigned char *x = quantize(k, a, m, C, xf);
                for (int add = 0; add < 2; add++) {
                    for (size_t i = 0; i < m * nw; i++)
                        y0[i] = y1[i] = (float)i * 0.25f;
                    k->q->qmm[t](nb, w, wb, nw, x, xb, m, y0, nw, add);
                    q16(nb, p, wb, nw, x, xb, m, y1, nw, add);
                    for (size_t i = 0; i < m * nw; i++)
                        ck_assert_msg(
                            memcmp(&y0[i], &y1[i], 4) == 0,
                            "%s (%s) %s nb %zu nw %zu m %zu add %d element "
                            "(%zu, %zu): packed %.9g, file layout %.9g",
                            k->name, k->q->name,
                            mhsa_qtype_name((mhsa_qtype)t), nb, nw, m, add,
                            i / nw, i % nw, (double)y1[i], (double)y0[i]);
                }
                free(x);
            }
            free(w);
            free(p);
            free(xf);
            free(y0);
            free(y1);
            free(d0);
            free(d1);
        }
    }
}
END_TEST

// Hand-made blocks decoded by hand.
START_TEST(dequant_known_blocks)
{
    unsigned char b[210];
    float out[256];
    // Q4_0: d = 0.5, qs[j] = j | (15 - j) << 4: w_j = (j - 8) / 2,
    // w_{j+16} = (7 - j) / 2.
    memset(b, 0, sizeof b);
    put16(b, 0.5f);
    for (int j = 0; j < 16; j++)
        b[2 + j] = (unsigned char)(j | (15 - j) << 4);
    mhsa_q_dequant(MHSA_Q4_0, 1, b, out);
    for (int j = 0; j < 16; j++) {
        ck_assert(out[j] == (float)(j - 8) * 0.5f);
        ck_assert(out[j + 16] == (float)(7 - j) * 0.5f);
    }
    // Q5_1: d = 1, m = -3, qs all 0x21, qh bit j set for odd j: w_j = 1 +
    // 16 (j odd) - 3, w_{j+16} = 2 + 16 ((j + 16) odd) - 3.
    memset(b, 0, sizeof b);
    put16(b, 1.0f);
    put16(b + 2, -3.0f);
    uint32_t qh = 0xaaaaaaaau;
    memcpy(b + 4, &qh, 4);
    memset(b + 8, 0x21, 16);
    mhsa_q_dequant(MHSA_Q5_1, 1, b, out);
    for (int j = 0; j < 16; j++) {
        ck_assert(out[j] == (float)(1 + 16 * (j & 1) - 3));
        ck_assert(out[j + 16] == (float)(2 + 16 * (j & 1) - 3));
    }
    // Q4_K: d = 1, dmin = 1, scale j = j + 1 and min j = 2 j (j < 4 in
    // the low 6 bits of bytes j and j + 4; j >= 4 split), every quant 3:
    // w = 3 (j + 1) - 2 j.
    memset(b, 0, sizeof b);
    put16(b, 1.0f);
    put16(b + 2, 1.0f);
    int sc[8], mn[8];
    for (int j = 0; j < 8; j++)
        sc[j] = j + 1, mn[j] = 2 * j;
    unsigned char *s = b + 4;
    for (int j = 0; j < 4; j++) {
        s[j] = (unsigned char)(sc[j] | (sc[j + 4] >> 4) << 6);
        s[j + 4] = (unsigned char)(mn[j] | (mn[j + 4] >> 4) << 6);
        s[j + 8] = (unsigned char)((sc[j + 4] & 15) | (mn[j + 4] & 15) << 4);
    }
    memset(b + 16, 0x33, 128);
    mhsa_q_dequant(MHSA_Q4_K, 1, b, out);
    for (int i = 0; i < 256; i++)
        ck_assert_msg(out[i] == (float)(3 * (i / 32 + 1) - 2 * (i / 32)),
                      "q4_K element %d: %g", i, (double)out[i]);
    // Q6_K: d = 0.25, scale j = j - 8, quants all 33 (ql nibble 1, high
    // bits 2 = 0b10): w = 0.25 (j - 8) (33 - 32).
    memset(b, 0, sizeof b);
    memset(b, 0x11, 128);
    memset(b + 128, 0xaa, 64);
    for (int j = 0; j < 16; j++)
        b[192 + j] = (unsigned char)(signed char)(j - 8);
    put16(b + 208, 0.25f);
    mhsa_q_dequant(MHSA_Q6_K, 1, b, out);
    for (int i = 0; i < 256; i++)
        ck_assert_msg(out[i] == 0.25f * (float)(i / 16 - 8),
                      "q6_K element %d: %g", i, (double)out[i]);
}
END_TEST

// Every type decodes to the bits of the GGUF reader's dequantizer
// (models/gguf/gguf_dequant.c, checked bit for bit against ggml's): random
// blocks, scales of every size.
START_TEST(dequant_matches_the_gguf_reader)
{
    rng r = { 41 };
    for (int t = 0; t < MHSA_QTYPE_COUNT; t++) {
        size_t nb = 9, C = nb * mhsa_qtype_block((mhsa_qtype)t);
        unsigned char *w = rand_blocks(&r, (mhsa_qtype)t, nb);
        float *a = malloc(C * sizeof *a), *b = malloc(C * sizeof *b);
        ck_assert(a && b);
        mhsa_q_dequant((mhsa_qtype)t, nb, w, a);
        mhsa__ggml_dequant(mhsa_qtype_ggml((mhsa_qtype)t), w, nb, b);
        ck_assert_msg(memcmp(a, b, C * sizeof *a) == 0, "%s differs",
                      mhsa_qtype_name((mhsa_qtype)t));
        free(w);
        free(a);
        free(b);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("quant");
    TCase *tc = tcase_create("quant");
    tcase_add_loop_test(tc, activations_have_the_scalar_bits, 0, N_ISAS + 1);
    tcase_add_loop_test(tc, products_match_reference_and_exact, 0,
                        N_ISAS + 1);
    tcase_add_loop_test(tc, element_bits_independent_of_the_call, 0,
                        N_ISAS + 1);
    tcase_add_loop_test(tc, packed_products_have_the_same_bits, 0,
                        N_ISAS + 1);
    tcase_add_test(tc, activations_within_half_a_step);
    tcase_add_test(tc, dequant_known_blocks);
    tcase_add_test(tc, dequant_matches_the_gguf_reader);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
