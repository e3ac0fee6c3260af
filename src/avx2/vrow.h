// vrow.h — the AVX2 primitives of the shared row kernels
// (src/kernels/vrow_body.h says what each means), and the kernels.
#ifndef MHSA_AVX2_VROW_H
#define MHSA_AVX2_VROW_H

#include <immintrin.h>

#include "avx2/vmath.h"

#define VR_INLINE static inline __attribute__((always_inline))
#define VR_F __m256
#define VR_N 8
#define VR_M __m256i
#define VR_MASK(n) mhsa_tail_mask__avx2(n)
#define VR_ALL _mm256_set1_epi32(-1)
#define VR_ZERO() _mm256_setzero_ps()
#define VR_SET1(f) _mm256_set1_ps(f)
#define VR_LOAD(p) _mm256_loadu_ps(p)
#define VR_STORE(p, x) _mm256_storeu_ps(p, x)
#define VR_MLOAD(p, mk) _mm256_maskload_ps(p, mk)
#define VR_MSTORE(p, mk, x) _mm256_maskstore_ps(p, mk, x)
#define VR_ADD(a, b) _mm256_add_ps(a, b)
#define VR_MUL(a, b) _mm256_mul_ps(a, b)
#define VR_FMADD(a, b, c) _mm256_fmadd_ps(a, b, c)
#define VR_ANY_NAN(x) _mm256_movemask_ps(_mm256_cmp_ps(x, x, _CMP_UNORD_Q))

#include "kernels/vrow_body.h"

#endif
