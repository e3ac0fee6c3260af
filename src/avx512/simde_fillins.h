// simde_fillins.h — AVX-512 intrinsics for the test-only emulated build
// (intrin.h with MHSA_AVX512_EMULATED) that SIMDe 0.7.4 does not provide,
// or provides differently from the hardware.
//
// Each is written lane by lane from the Intel intrinsics guide, through
// memory and memcpy so that no bit pattern (NaN payloads included) passes
// through a floating-point operation it would not pass through on the
// hardware. Masked loads and stores touch only the lanes whose mask bit is
// set, like AVX-512's fault suppression, so a kernel that relies on masks
// to stay inside its buffers is checked by the emulated run as well
// (sanitizers and canaries see any lane that strays). Speed is irrelevant.
// tests/test_avx512_emul.c checks every one of them.
#ifndef MHSA_AVX512_SIMDE_FILLINS_H
#define MHSA_AVX512_SIMDE_FILLINS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

// Lane loops stay lane loops: without this, GCC turns the conditional
// copies below into AVX2 vmaskmov, whose fault suppression is then the
// only thing keeping masked-off lanes untouched (and qemu-user 7.2 does not
// suppress faults there). Test-only code, so the optimize attribute is
// fine.
#if defined(__clang__)
#define MHSA_EMUL_FN static inline
#define MHSA_EMUL_LANES _Pragma("clang loop vectorize(disable)")
#else
#define MHSA_EMUL_FN \
    static inline __attribute__((optimize("no-tree-vectorize")))
#define MHSA_EMUL_LANES
#endif

// ---- masked loads and stores (vmovups / vmovdqu16 with a mask) ----------

// Lane i of the result: p[i] where bit i of k is set, else src's lane i.
MHSA_EMUL_FN __m512 mhsa_emul_mask_loadu_ps(__m512 src, __mmask16 k,
                                             const void *p)
{
    float v[16];
    _mm512_storeu_ps(v, src);
    MHSA_EMUL_LANES
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy(&v[i], (const char *)p + 4 * i, 4);
    return _mm512_loadu_ps(v);
}

MHSA_EMUL_FN __m512 mhsa_emul_maskz_loadu_ps(__mmask16 k, const void *p)
{
    return mhsa_emul_mask_loadu_ps(_mm512_setzero_ps(), k, p);
}

// Writes lane i of v to p[i] only where bit i of k is set.
MHSA_EMUL_FN void mhsa_emul_mask_storeu_ps(void *p, __mmask16 k, __m512 v)
{
    float x[16];
    _mm512_storeu_ps(x, v);
    MHSA_EMUL_LANES
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy((char *)p + 4 * i, &x[i], 4);
}

// 16 x 16-bit lanes: p[i] where bit i of k is set, else 0.
MHSA_EMUL_FN __m256i mhsa_emul_maskz_loadu_epi16(__mmask16 k, const void *p)
{
    uint16_t v[16] = { 0 };
    MHSA_EMUL_LANES
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy(&v[i], (const char *)p + 2 * i, 2);
    return _mm256_loadu_si256((const __m256i *)v);
}

MHSA_EMUL_FN void mhsa_emul_mask_storeu_epi16(void *p, __mmask16 k,
                                               __m256i v)
{
    uint16_t x[16];
    _mm256_storeu_si256((__m256i *)x, v);
    MHSA_EMUL_LANES
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy((char *)p + 2 * i, &x[i], 2);
}

// vgatherdps zmm with a mask: lane i is the 4 bytes at base + scale *
// vindex[i] where bit i of k is set, else src's lane i (masked-off lanes
// are not read).
MHSA_EMUL_FN __m512 mhsa_emul_mask_i32gather_ps(__m512 src, __mmask16 k,
                                                __m512i vindex,
                                                const void *base, int scale)
{
    float v[16];
    int32_t idx[16];
    _mm512_storeu_ps(v, src);
    _mm512_storeu_si512(idx, vindex);
    MHSA_EMUL_LANES
    for (int i = 0; i < 16; i++)
        if ((k >> i) & 1)
            memcpy(&v[i], (const char *)base + (ptrdiff_t)idx[i] * scale, 4);
    return _mm512_loadu_ps(v);
}

// ---- conversions ---------------------------------------------------------

// vcvtph2ps zmm: 16 halves to floats, as two F16C conversions of 8 (this
// build has real F16C).
static inline __m512 mhsa_emul_cvtph_ps(__m256i h)
{
    float v[16];
    _mm256_storeu_ps(v, _mm256_cvtph_ps(_mm256_castsi256_si128(h)));
    _mm256_storeu_ps(v + 8, _mm256_cvtph_ps(_mm256_extracti128_si256(h, 1)));
    return _mm512_loadu_ps(v);
}

// vcvtps2ph zmm: 16 floats to halves, as two F16C conversions of 8 with the
// same rounding control.
#define mhsa_emul_cvtps_ph(a, imm)                                            \
    __extension__({                                                           \
        float v_[16];                                                         \
        _mm512_storeu_ps(v_, (a));                                            \
        __m128i lo_ = _mm256_cvtps_ph(_mm256_loadu_ps(v_), (imm));            \
        __m128i hi_ = _mm256_cvtps_ph(_mm256_loadu_ps(v_ + 8), (imm));        \
        _mm256_set_m128i(hi_, lo_);                                           \
    })

// vpmovzxwd: 16 unsigned 16-bit lanes widened to 32 bits.
static inline __m512i mhsa_emul_cvtepu16_epi32(__m256i h)
{
    uint16_t x[16];
    uint32_t v[16];
    _mm256_storeu_si256((__m256i *)x, h);
    for (int i = 0; i < 16; i++)
        v[i] = x[i];
    return _mm512_loadu_si512(v);
}

// vpmovdw: 16 32-bit lanes truncated to their low 16 bits.
static inline __m256i mhsa_emul_cvtepi32_epi16(__m512i a)
{
    uint32_t x[16];
    uint16_t v[16];
    _mm512_storeu_si512(x, a);
    for (int i = 0; i < 16; i++)
        v[i] = (uint16_t)x[i];
    return _mm256_loadu_si256((const __m256i *)v);
}

// ---- arithmetic ----------------------------------------------------------

// vscalefps: a * 2^floor(b), rounded once (the exp kernel's last step).
// SIMDe 0.7.4 computes a * exp2f(floor(b)), which overflows to inf for
// b = 128 even when a < 1 makes the product finite, and flushes subnormal
// a; ldexpf rounds once, as the instruction does with DAZ and FTZ off (the
// library's floating-point state). Special cases from the Intel SDM's
// VSCALEFPS table: NaN in either operand gives NaN; b = +inf gives +-inf
// (NaN for a = 0); b = -inf gives +-0 (NaN for a = +-inf).
static inline __m512 mhsa_emul_scalef_ps(__m512 a, __m512 b)
{
    float x[16], y[16], r[16];
    _mm512_storeu_ps(x, a);
    _mm512_storeu_ps(y, b);
    for (int i = 0; i < 16; i++) {
        if (isnan(x[i]) || isnan(y[i])) {
            r[i] = x[i] + y[i];
        } else if (y[i] == INFINITY) {
            r[i] = x[i] == 0.0f ? NAN : copysignf(INFINITY, x[i]);
        } else if (y[i] == -INFINITY) {
            r[i] = isinf(x[i]) ? NAN : copysignf(0.0f, x[i]);
        } else {
            // |floor(b)| beyond 400 over- or underflows any float a alike.
            float f = floorf(y[i]);
            int e = f > 400.0f ? 400 : f < -400.0f ? -400 : (int)f;
            r[i] = ldexpf(x[i], e);
        }
    }
    return _mm512_loadu_ps(r);
}

// ---- names ---------------------------------------------------------------
// (#undef first: some compilers' headers define these names as macros.)
#undef _mm512_mask_loadu_ps
#define _mm512_mask_loadu_ps(src, k, p) mhsa_emul_mask_loadu_ps(src, k, p)
#undef _mm512_maskz_loadu_ps
#define _mm512_maskz_loadu_ps(k, p) mhsa_emul_maskz_loadu_ps(k, p)
#undef _mm512_mask_storeu_ps
#define _mm512_mask_storeu_ps(p, k, v) mhsa_emul_mask_storeu_ps(p, k, v)
#undef _mm256_maskz_loadu_epi16
#define _mm256_maskz_loadu_epi16(k, p) mhsa_emul_maskz_loadu_epi16(k, p)
#undef _mm256_mask_storeu_epi16
#define _mm256_mask_storeu_epi16(p, k, v) mhsa_emul_mask_storeu_epi16(p, k, v)
#undef _mm512_cvtph_ps
#define _mm512_cvtph_ps(h) mhsa_emul_cvtph_ps(h)
#undef _mm512_cvtps_ph
#define _mm512_cvtps_ph(a, imm) mhsa_emul_cvtps_ph(a, imm)
#undef _mm512_cvtepu16_epi32
#define _mm512_cvtepu16_epi32(h) mhsa_emul_cvtepu16_epi32(h)
#undef _mm512_cvtepi32_epi16
#define _mm512_cvtepi32_epi16(a) mhsa_emul_cvtepi32_epi16(a)
#undef _mm512_mask_i32gather_ps
#define _mm512_mask_i32gather_ps(src, k, vindex, base, scale)                 \
    mhsa_emul_mask_i32gather_ps(src, k, vindex, base, scale)
#undef _mm512_scalef_ps
#define _mm512_scalef_ps(a, b) mhsa_emul_scalef_ps(a, b)
// SIMDe has these, but without the native-alias names.
#undef _mm512_shuffle_f32x4
#define _mm512_shuffle_f32x4(a, b, imm) simde_mm512_shuffle_f32x4(a, b, imm)

#endif
