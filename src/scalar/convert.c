// convert.c — scalar conversions between fp32 and the KV cache's storage
// types: the bit-exact software versions of half.h, the reference for the
// SIMD ones.
#include "scalar/scalar.h"

// No vectors: every value through half.h.
#define cvt_f16_from_f32(n, src, h) ((size_t)0)
#define cvt_bf16_from_f32(n, src, h) ((size_t)0)
#define cvt_f16_to_f32(n, h, dst) ((size_t)0)
#define cvt_bf16_to_f32(n, h, dst) ((size_t)0)

#include "kernels/convert_body.h"

MHSA_CVT_DEFINE(scalar)
