// vrow.h — the AVX-512 primitives of the shared row kernels
// (src/kernels/vrow_body.h says what each means), and the kernels.
#ifndef MHSA_AVX512_VROW_H
#define MHSA_AVX512_VROW_H

#include "avx512/avx512.h"
#include "avx512/vmath.h"

#define VR_INLINE MHSA_AVX512_INLINE
#define VR_F __m512
#define VR_N 16
#define VR_M __mmask16
#define VR_MASK(n) mhsa_mask16__avx512(n)
#define VR_ALL ((__mmask16)0xffff)
#define VR_ZERO() _mm512_setzero_ps()
#define VR_SET1(f) _mm512_set1_ps(f)
#define VR_LOAD(p) _mm512_loadu_ps(p)
#define VR_STORE(p, x) _mm512_storeu_ps(p, x)
#define VR_MLOAD(p, mk) _mm512_maskz_loadu_ps(mk, p)
#define VR_MSTORE(p, mk, x) _mm512_mask_storeu_ps(p, mk, x)
#define VR_ADD(a, b) _mm512_add_ps(a, b)
#define VR_MUL(a, b) _mm512_mul_ps(a, b)
#define VR_FMADD(a, b, c) _mm512_fmadd_ps(a, b, c)
#define VR_ANY_NAN(x) _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q)

#include "kernels/vrow_body.h"

#endif
