// bf16_emul.h — test-only C emulation of the AVX512-BF16 and AMX-BF16
// intrinsics the bf16 tiles use (bf16_intrin.h with MHSA_AVX512_EMULATED),
// so that their logic is tested on CPUs without them; SIMDe 0.7.4 has no
// AMX and its vdpbf16ps ignores the instruction's DAZ/FTZ.
//
// Written from the Intel SDM's pseudo-code (vol. 2, VCVTNE2PS2BF16,
// VDPBF16PS, TDPBF16PS, LDTILECFG, TILELOADD, TILESTORED, TILEZERO,
// TILERELEASE):
//  - bf16 rounding (vcvtne2ps2bf16): zero or fp32 subnormal -> zero of the
//    sign; inf kept; NaN truncated with the quiet bit set; else round to
//    nearest even by integer add (x + 0x7fff + bit 16) >> 16.
//  - vdpbf16ps: per fp32 lane i, acc += a[2i+1]*b[2i+1], then acc +=
//    a[2i]*b[2i]: two fp32 FMAs with DAZ on the inputs, FTZ on the result,
//    RNE; MXCSR neither read nor written.
//  - TDPBF16PS: per row m, an fp32 temporary of 2 x N lanes sums the even
//    and the odd depths of each column separately over the K/2 pairs (FMA,
//    DAZ/FTZ, RNE), then C[m][n] += (even + odd), each add DAZ/FTZ, RNE.
// FTZ detects tininess after rounding, as x86 does (SDM vol. 1 4.9.1.5:
// the result rounded with unbounded exponent is below 2^-126).
//
// The tile register file is modelled per thread (_Thread_local): the
// palette, rows and bytes per row of each of the 8 tiles, and 1 KiB of
// data each. A tile instruction before LDTILECFG, or after TILERELEASE,
// aborts (hardware raises #UD: SIGILL); so does a TDPBF16PS whose shapes
// the SDM rejects, a load or store outside the configured shape, or an
// invalid configuration (#GP). tests/kernels/test_bf16_emul.c checks each
// operation against the pseudo-code and the FMA of this CPU run with
// MXCSR DAZ+FTZ.
#ifndef MHSA_AVX512_BF16_EMUL_H
#define MHSA_AVX512_BF16_EMUL_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// ---- scalar definitions --------------------------------------------------

static inline uint16_t mhsa_emul_bf16_round(uint32_t x)
{
    uint32_t mag = x & 0x7fffffffu;
    if (mag < 0x00800000u)                  // zero or subnormal: DAZ
        return (uint16_t)((x >> 16) & 0x8000u);
    if (mag == 0x7f800000u)                 // infinity
        return (uint16_t)(x >> 16);
    if (mag > 0x7f800000u)                  // NaN: truncate, make quiet
        return (uint16_t)((x >> 16) | 0x0040u);
    return (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

static inline float mhsa_emul_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t mhsa_emul_u32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

// A subnormal input read as a zero of its sign (DAZ).
static inline float mhsa_emul_daz(float x)
{
    return fabsf(x) < 0x1p-126f ? copysignf(0.0f, x) : x;
}

// acc + a*b with DAZ in, FTZ out (tininess after rounding), RNE. The
// product of two fp32 values is exact in double and the sum rounded once
// to double then to float gives the correctly rounded float sum (double
// has more than 2 * 24 + 2 bits: the second rounding is innocuous), here
// for a product that is a 24-bit number of any exponent. Independent of
// the caller's MXCSR: every double below is normal, and the tiny case is
// decided by scaling up first.
static inline float mhsa_emul_fma_daz_ftz(float acc, float a, float b)
{
    acc = mhsa_emul_daz(acc);
    a = mhsa_emul_daz(a);
    b = mhsa_emul_daz(b);
    double d = (double)a * (double)b + (double)acc;
    if (isnan(d))
        return (float)d;
    if (fabs(d) >= 0x1p-126)
        return (float)d;                  // normal, or overflow to inf
    if (d == 0.0)
        return (float)d;
    // |d| < 2^-126: rounded with unbounded exponent it is 2^-126 (kept)
    // or smaller (flushed to a zero of its sign).
    float t = (float)(d * 0x1p64);
    return fabsf(t) >= 0x1p-62f ? copysignf(0x1p-126f, (float)d)
                                : copysignf(0.0f, (float)d);
}

// x + y with DAZ/FTZ, RNE (TDPBF16PS's final adds).
static inline float mhsa_emul_add_daz_ftz(float x, float y)
{
    return mhsa_emul_fma_daz_ftz(x, y, 1.0f);
}

// ---- AVX512-BF16 ---------------------------------------------------------

// vcvtne2ps2bf16 zmm, a, b: bf16 lanes 0..15 from b, 16..31 from a.
static inline __m512bh mhsa_emul_cvtne2ps_pbh(__m512 a, __m512 b)
{
    uint32_t x[32];
    uint16_t r[32];
    __m512bh out;
    _mm512_storeu_ps((float *)x, b);
    _mm512_storeu_ps((float *)(x + 16), a);
    for (int i = 0; i < 32; i++)
        r[i] = mhsa_emul_bf16_round(x[i]);
    memcpy(&out, r, 64);
    return out;
}

// vdpbf16ps zmm (src), a, b.
static inline __m512 mhsa_emul_dpbf16_ps(__m512 src, __m512bh a, __m512bh b)
{
    float acc[16];
    uint16_t x[32], y[32];
    _mm512_storeu_ps(acc, src);
    memcpy(x, &a, 64);
    memcpy(y, &b, 64);
    for (int i = 0; i < 16; i++) {
        acc[i] = mhsa_emul_fma_daz_ftz(acc[i],
                                       mhsa_emul_f32((uint32_t)x[2 * i + 1] << 16),
                                       mhsa_emul_f32((uint32_t)y[2 * i + 1] << 16));
        acc[i] = mhsa_emul_fma_daz_ftz(acc[i],
                                       mhsa_emul_f32((uint32_t)x[2 * i] << 16),
                                       mhsa_emul_f32((uint32_t)y[2 * i] << 16));
    }
    return _mm512_loadu_ps(acc);
}

#undef _mm512_cvtne2ps_pbh
#define _mm512_cvtne2ps_pbh(a, b) mhsa_emul_cvtne2ps_pbh(a, b)
#undef _mm512_dpbf16_ps
#define _mm512_dpbf16_ps(src, a, b) mhsa_emul_dpbf16_ps(src, a, b)

// ---- AMX: the modelled tile register file --------------------------------

typedef struct mhsa_emul_tiles {
    int configured;                 // palette 1 loaded, not released
    uint16_t colsb[8];              // bytes per row
    uint8_t rows[8];
    unsigned char data[8][16 * 64];
} mhsa_emul_tiles;

static _Thread_local mhsa_emul_tiles mhsa_emul_tile_file;

static inline void mhsa_emul_tile_fault(const char *what)
{
    fprintf(stderr, "emulated AMX: %s (the hardware faults here)\n", what);
    abort();
}

static inline mhsa_emul_tiles *mhsa_emul_tiles_ready(int t)
{
    mhsa_emul_tiles *f = &mhsa_emul_tile_file;
    if (!f->configured)
        mhsa_emul_tile_fault("tile instruction without a loaded tile "
                             "configuration (LDTILECFG)");
    if (t < 0 || t > 7)
        mhsa_emul_tile_fault("tile number out of range");
    return f;
}

// LDTILECFG: 64 bytes; byte 0 palette, byte 1 start_row, bytes 16 + 2t
// colsb of tile t, bytes 48 + t rows of tile t. Palette 0 releases; the
// reserved bytes must be 0; rows <= 16 and colsb <= 64 (palette 1), and a
// tile with 0 rows has 0 colsb and back. Tiles start zeroed.
static inline void mhsa_emul_tile_loadconfig(const void *cfg)
{
    const unsigned char *p = (const unsigned char *)cfg;
    mhsa_emul_tiles *f = &mhsa_emul_tile_file;
    memset(f, 0, sizeof *f);
    if (p[0] == 0)
        return;
    if (p[0] != 1)
        mhsa_emul_tile_fault("LDTILECFG palette other than 0 or 1");
    for (int i = 2; i < 16; i++)
        if (p[i])
            mhsa_emul_tile_fault("LDTILECFG reserved bytes not zero");
    for (int t = 0; t < 8; t++) {
        uint16_t cb = (uint16_t)(p[16 + 2 * t] | p[17 + 2 * t] << 8);
        uint8_t r = p[48 + t];
        if (r > 16 || cb > 64 || (r == 0) != (cb == 0))
            mhsa_emul_tile_fault("LDTILECFG tile shape out of palette 1");
        f->colsb[t] = cb;
        f->rows[t] = r;
    }
    f->configured = 1;
}

static inline void mhsa_emul_tile_release(void)
{
    memset(&mhsa_emul_tile_file, 0, sizeof mhsa_emul_tile_file);
}

static inline void mhsa_emul_tile_zero(int t)
{
    mhsa_emul_tiles *f = mhsa_emul_tiles_ready(t);
    memset(f->data[t], 0, sizeof f->data[t]);
}

// TILELOADD: rows[t] rows of colsb[t] bytes from base + r*stride; the
// rest of the tile is zeroed.
static inline void mhsa_emul_tile_loadd(int t, const void *base, long stride)
{
    mhsa_emul_tiles *f = mhsa_emul_tiles_ready(t);
    if (!f->rows[t])
        mhsa_emul_tile_fault("TILELOADD of an unconfigured tile");
    memset(f->data[t], 0, sizeof f->data[t]);
    for (int r = 0; r < f->rows[t]; r++)
        memcpy(f->data[t] + 64 * r, (const char *)base + (long)r * stride,
               f->colsb[t]);
}

static inline void mhsa_emul_tile_stored(int t, void *base, long stride)
{
    mhsa_emul_tiles *f = mhsa_emul_tiles_ready(t);
    if (!f->rows[t])
        mhsa_emul_tile_fault("TILESTORED of an unconfigured tile");
    for (int r = 0; r < f->rows[t]; r++)
        memcpy((char *)base + (long)r * stride, f->data[t] + 64 * r,
               f->colsb[t]);
}

static inline float mhsa_emul_tile_bf16(const mhsa_emul_tiles *f, int t,
                                        int r, int e)
{
    uint16_t h;
    memcpy(&h, f->data[t] + 64 * r + 2 * e, 2);
    return mhsa_emul_f32((uint32_t)h << 16);
}

// TDPBF16PS dst, s1, s2 (SDM: #UD unless the three tiles differ,
// s1.colsb / 4 == s2.rows, dst.colsb == s2.colsb, dst.rows == s1.rows).
static inline void mhsa_emul_tile_dpbf16ps(int dst, int s1, int s2)
{
    mhsa_emul_tiles *f = mhsa_emul_tiles_ready(dst);
    mhsa_emul_tiles_ready(s1);
    mhsa_emul_tiles_ready(s2);
    if (dst == s1 || dst == s2 || s1 == s2)
        mhsa_emul_tile_fault("TDPBF16PS with a tile used twice");
    if (f->colsb[s1] / 4 != f->rows[s2] || f->colsb[dst] != f->colsb[s2] ||
        f->rows[dst] != f->rows[s1] || f->colsb[s1] % 4 ||
        f->colsb[dst] % 4)
        mhsa_emul_tile_fault("TDPBF16PS shapes do not match");
    int kpairs = f->colsb[s1] / 4, ncols = f->colsb[dst] / 4;
    for (int m = 0; m < f->rows[dst]; m++) {
        float tmp[32] = { 0 };
        for (int k = 0; k < kpairs; k++)
            for (int n = 0; n < ncols; n++)
                for (int e = 0; e < 2; e++)
                    tmp[2 * n + e] = mhsa_emul_fma_daz_ftz(
                        tmp[2 * n + e],
                        mhsa_emul_tile_bf16(f, s1, m, 2 * k + e),
                        mhsa_emul_tile_bf16(f, s2, k, 2 * n + e));
        for (int n = 0; n < ncols; n++) {
            float c;
            memcpy(&c, f->data[dst] + 64 * m + 4 * n, 4);
            c = mhsa_emul_add_daz_ftz(
                c, mhsa_emul_add_daz_ftz(tmp[2 * n], tmp[2 * n + 1]));
            memcpy(f->data[dst] + 64 * m + 4 * n, &c, 4);
        }
    }
}

#undef _tile_loadconfig
#define _tile_loadconfig(cfg) mhsa_emul_tile_loadconfig(cfg)
#undef _tile_release
#define _tile_release() mhsa_emul_tile_release()
#undef _tile_zero
#define _tile_zero(t) mhsa_emul_tile_zero(t)
#undef _tile_loadd
#define _tile_loadd(t, base, stride) \
    mhsa_emul_tile_loadd(t, base, (long)(stride))
#undef _tile_stored
#define _tile_stored(t, base, stride) \
    mhsa_emul_tile_stored(t, base, (long)(stride))
#undef _tile_dpbf16ps
#define _tile_dpbf16ps(dst, s1, s2) mhsa_emul_tile_dpbf16ps(dst, s1, s2)

#endif
