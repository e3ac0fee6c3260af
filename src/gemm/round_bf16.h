// round_bf16.h — rounding fp32 values to the nearest bfloat16 value, kept
// in fp32: how every ISA without bf16 dot-product instructions computes
// with compute_dtype MHSA_BF16 (the packed panels are rounded, then the
// fp32 micro-kernel multiplies them: the products of two bf16 values are
// exact in fp32, so only the fp32 accumulation rounds).
//
// Integer arithmetic, written once for every ISA: the packed panels are
// O(m k + k n) against the micro-kernel's O(m n k), so this is not where
// the time goes. Round to nearest, ties to even (as mhsa_f32_to_bf16 and
// PyTorch's .to(torch.bfloat16)); NaN stays NaN (made quiet); a subnormal
// becomes a zero of its sign, as the library reads every subnormal (API.md
// 0.3: subnormals are zero), so rounding never turns one into the
// smallest normal.
#ifndef MHSA_GEMM_ROUND_BF16_H
#define MHSA_GEMM_ROUND_BF16_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline float mhsa__bf16_round(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    if ((u & 0x7fffffffu) > 0x7f800000u)
        r = (u | 0x00400000u) & 0xffff0000u;   // NaN: quiet, top payload
    if ((u & 0x7f800000u) == 0)
        r = u & 0x80000000u;                   // zero or subnormal: +-0
    memcpy(&f, &r, sizeof f);
    return f;
}

// x[i] = mhsa__bf16_round(x[i]) for i < n.
void mhsa__round_bf16(float *x, size_t n);

#endif
