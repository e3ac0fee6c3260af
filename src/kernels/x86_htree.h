// x86_htree.h — the horizontal sum and max of the 8 lanes of a __m256 by
// halving: a fixed tree, so the bits depend only on the lanes (a reduce
// intrinsic's tree is the compiler's). Written once for the AVX2 helpers
// (src/avx2/vmath.h) and the AVX-512 ones, which fold a __m512's two
// halves into a __m256 first (src/avx512/vmath.h). Static inline, for
// files compiled for AVX2 or AVX-512 only.
#ifndef MHSA_KERNELS_X86_HTREE_H
#define MHSA_KERNELS_X86_HTREE_H

#include <immintrin.h>

// float name(__m256 y): y's lanes reduced by op (add or max, as in
// _mm_<op>_ps): the two 128-bit halves, then lanes 0-1 with 2-3, then
// lane 0 with lane 1.
#define MHSA_X86_HTREE8(name, op)                                             \
    static inline __attribute__((always_inline)) float name(__m256 y)         \
    {                                                                         \
        __m128 x = _mm_##op##_ps(_mm256_castps256_ps128(y),                   \
                                 _mm256_extractf128_ps(y, 1));                \
        x = _mm_##op##_ps(x, _mm_movehl_ps(x, x));                            \
        x = _mm_##op##_ss(x, _mm_movehdup_ps(x));                             \
        return _mm_cvtss_f32(x);                                              \
    }

MHSA_X86_HTREE8(mhsa_htree_add8, add)
MHSA_X86_HTREE8(mhsa_htree_max8, max)

#endif
