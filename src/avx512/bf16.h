// bf16.h — the bf16 GEMM tiles of the AVX-512 table (contracts and packed
// layouts in kernels.h: mhsa_bf16_tiles): declarations, and the static
// inline helpers their packers share.
//
// Two tile sets:
//  - avx512_bf16: 12 x 32 C blocks on vdpbf16ps (bf16gemm_12x32.c), depth
//    padded to pairs; files built with -mavx512bf16 on top of the AVX-512
//    flags;
//  - amx_bf16: 32 x 32 C blocks as 2 x 2 AMX tiles (amx_bf16gemm_32x32.c,
//    -mamx-tile -mamx-bf16), depth padded to 32.
// Both share the B packer (bf16_pack_b.c); each has its A packer
// (bf16_pack_a.c). Like the rest of src/avx512/, the same sources are
// built a second time for the tests (MHSA_AVX512_EMULATED), on SIMDe plus
// the C emulation of the bf16 and tile intrinsics (bf16_emul.h); the
// defines below give that build's kernels the suffix _emul.
#ifndef MHSA_AVX512_BF16_H
#define MHSA_AVX512_BF16_H

#include "kernels/kernels.h"

#if MHSA_AVX512_EMULATED
#define mhsa_bf16_pack_a_mr12__avx512bf16 mhsa_bf16_pack_a_mr12__avx512bf16_emul
#define mhsa_bf16_pack_b_nr32__avx512bf16 mhsa_bf16_pack_b_nr32__avx512bf16_emul
#define mhsa_bf16gemm_12x32__avx512bf16 mhsa_bf16gemm_12x32__avx512bf16_emul
#define mhsa_bf16_pack_a_mr32__amx mhsa_bf16_pack_a_mr32__amx_emul
#define mhsa_bf16_pack_b_nr32__amx mhsa_bf16_pack_b_nr32__amx_emul
#define mhsa_bf16gemm_32x32__amx mhsa_bf16gemm_32x32__amx_emul
#define mhsa_bf16_thread_begin__amx mhsa_bf16_thread_begin__amx_emul
#define mhsa_bf16_thread_end__amx mhsa_bf16_thread_end__amx_emul
#define mhsa_bf16_tiles__avx512 mhsa_bf16_tiles__avx512_emul
#endif

// The function types of mhsa_bf16_tiles' pack_a, pack_b and ukr
// (kernels.h), which both sets' entries have.
typedef void mhsa_bf16_pack_a_fn(size_t m, size_t k, const float *a,
                                 size_t lda, int trans, float alpha,
                                 uint16_t *ap);
typedef void mhsa_bf16_pack_b_fn(size_t k, size_t n, const void *b,
                                 mhsa_dtype dt, size_t ldb, int trans,
                                 uint16_t *bp);
typedef void mhsa_bf16_ukr_fn(size_t k, const uint16_t *ap,
                              const uint16_t *bp, float *c, size_t ldc,
                              size_t m, size_t n, float beta);

mhsa_bf16_pack_a_fn mhsa_bf16_pack_a_mr12__avx512bf16;
mhsa_bf16_pack_b_fn mhsa_bf16_pack_b_nr32__avx512bf16;
mhsa_bf16_ukr_fn mhsa_bf16gemm_12x32__avx512bf16;
mhsa_bf16_pack_a_fn mhsa_bf16_pack_a_mr32__amx;
mhsa_bf16_pack_b_fn mhsa_bf16_pack_b_nr32__amx;
mhsa_bf16_ukr_fn mhsa_bf16gemm_32x32__amx;
void mhsa_bf16_thread_begin__amx(void);
void mhsa_bf16_thread_end__amx(void);

// The AVX-512 table's tile sets, best first, NULL-terminated
// (bf16_tiles.c).
extern const mhsa_bf16_tiles *const mhsa_bf16_tiles__avx512[];

// ---- helpers for the bf16 files (intrinsics) -----------------------------
#ifdef MHSA_BF16_INTRINSICS

#include "avx512/vmath.h"
#include "avx512/vtranspose.h"
#if MHSA_AVX512_EMULATED
#include "avx512/bf16_emul.h"
#endif

// 16 fp32 values of a row stored as dt, the first n (<= 16) read, the
// rest 0 (masked: nothing past n is read). F16 and BF16 widen exactly.
MHSA_AVX512_INLINE __m512 mhsa_bf16_load16(const void *src, mhsa_dtype dt,
                                           size_t n)
{
    __mmask16 mk = mhsa_mask16__avx512(n);
    if (dt == MHSA_F32)
        return _mm512_maskz_loadu_ps(mk, src);
    __m256i h = _mm256_maskz_loadu_epi16(mk, src);
    if (dt == MHSA_F16)
        return _mm512_cvtph_ps(h);
    return _mm512_castsi512_ps(
        _mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// 32 bf16 in order: lo's 16 values rounded, then hi's (vcvtne2ps2bf16),
// as 16 32-bit lanes (lane q holds elements 2q, 2q+1).
MHSA_AVX512_INLINE __m512i mhsa_bf16_round32(__m512 lo, __m512 hi)
{
    return (__m512i)_mm512_cvtne2ps_pbh(hi, lo);
}

// Lane i = bf16(lo[i]) | bf16(hi[i]) << 16: the pairs of two depth rows.
MHSA_AVX512_INLINE __m512i mhsa_bf16_pairs(__m512 lo, __m512 hi)
{
    const __m512i idx = _mm512_set_epi16(
        31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,
        23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    return _mm512_permutexvar_epi16(idx, mhsa_bf16_round32(lo, hi));
}

#endif
#endif
