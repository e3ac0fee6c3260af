// convert_body.h — the fp32 <-> F16/BF16 conversions of kernels.h
// (cvt_from_f32, cvt_to_f32) around an ISA's vector loops: the dtype
// switch, the values past the vectors through half.h (so nothing past n is
// read or written), and F32 as a plain copy.
//
// Included by src/<isa>/convert.c after it defines (static inline
// functions, or macros)
//   size_t cvt_f16_from_f32(size_t n, const float *src, uint16_t *h)
//   size_t cvt_bf16_from_f32(size_t n, const float *src, uint16_t *h)
//   size_t cvt_f16_to_f32(size_t n, const uint16_t *h, float *dst)
//   size_t cvt_bf16_to_f32(size_t n, const uint16_t *h, float *dst)
// each converting the first values of the n with its own vectors, bit for
// bit as half.h does, and returning how many (0 for none); then
// MHSA_CVT_DEFINE(isa) defines mhsa_cvt_from_f32__<isa> and
// mhsa_cvt_to_f32__<isa>.
#ifndef MHSA_KERNELS_CONVERT_BODY_H
#define MHSA_KERNELS_CONVERT_BODY_H

#include <string.h>

#include "kernels/half.h"
#include "kernels/kernel_decl.h"

// Both directions' switch: out[i] = one(in[i]) for i past what the
// vectors vec(n, in, out) converted, by dtype; F32 is a copy.
#define MHSA_CVT_SWITCH(dt, in, out, vec_f16, one_f16, vec_bf16, one_bf16)   \
    do {                                                                      \
        switch (dt) {                                                         \
        case MHSA_F16:                                                        \
            for (size_t i_ = vec_f16(n, in, out); i_ < n; i_++)               \
                out[i_] = one_f16(in[i_]);                                    \
            return;                                                           \
        case MHSA_BF16:                                                       \
            for (size_t i_ = vec_bf16(n, in, out); i_ < n; i_++)              \
                out[i_] = one_bf16(in[i_]);                                   \
            return;                                                           \
        case MHSA_F32:                                                        \
            break;                                                            \
        }                                                                     \
        memcpy(out, in, n * sizeof(float));                                   \
    } while (0)

#define MHSA_CVT_DEFINE(isa)                                                  \
    void MHSA_KNAME(cvt_from_f32, isa)(size_t n, const float *src,           \
                                       void *dst, mhsa_dtype dt)              \
    {                                                                         \
        uint16_t *h = dst;                                                    \
        MHSA_CVT_SWITCH(dt, src, h, cvt_f16_from_f32, mhsa_f32_to_f16,        \
                        cvt_bf16_from_f32, mhsa_f32_to_bf16);                 \
    }                                                                         \
    void MHSA_KNAME(cvt_to_f32, isa)(size_t n, const void *src,              \
                                     mhsa_dtype dt, float *dst)               \
    {                                                                         \
        const uint16_t *h = src;                                              \
        MHSA_CVT_SWITCH(dt, h, dst, cvt_f16_to_f32, mhsa_f16_to_f32,          \
                        cvt_bf16_to_f32, mhsa_bf16_to_f32);                   \
    }

#endif
