// avx512_probe.h — test-only entry points into the AVX-512 helpers that
// are not kernels (the exp of src/avx512/vmath.h) and into single
// intrinsics the kernels use, one set per build of avx512_probe.c:
//  - mhsa_probes__avx512:      compiled with the real AVX-512 flags (runs
//    only where the CPU has AVX-512);
//  - mhsa_probes__avx512_emul: compiled against SIMDe and the fill-ins of
//    src/avx512/simde_fillins.h (runs on AVX2+FMA+F16C).
// test_avx512.c checks every probe of every build it can run against the
// definition of the instruction, so the fill-ins are tested here, and on
// an AVX-512 machine the same checks tie those definitions to the
// hardware.
#ifndef MHSA_TEST_AVX512_PROBE_H
#define MHSA_TEST_AVX512_PROBE_H

#include <stddef.h>
#include <stdint.h>

typedef struct avx512_probes {
    const char *build;   // "native" or "SIMDe emulation"
    // y[i] = mhsa_exp__avx512(x[i]), i < n
    void (*exp)(size_t n, const float *x, float *y);
    // y[i] = mhsa_exp_nonpos__avx512(x[i]), i < n (x <= 0 or NaN)
    void (*exp_nonpos)(size_t n, const float *x, float *y);
    // One 16-lane instruction each; arrays of 16 lanes.
    void (*mask_loadu_ps)(const float *src, uint16_t k, const float *p,
                          float *out);
    void (*maskz_loadu_ps)(uint16_t k, const float *p, float *out);
    void (*mask_storeu_ps)(float *p, uint16_t k, const float *v);
    void (*maskz_loadu_epi16)(uint16_t k, const uint16_t *p, uint16_t *out);
    void (*mask_storeu_epi16)(uint16_t *p, uint16_t k, const uint16_t *v);
    void (*cvtph_ps)(const uint16_t *h, float *out);
    void (*cvtps_ph)(const float *x, uint16_t *out);   // nearest even
    void (*cvtepu16_epi32)(const uint16_t *h, uint32_t *out);
    void (*cvtepi32_epi16)(const uint32_t *x, uint16_t *out);
    void (*scalef_ps)(const float *a, const float *b, float *out);
    // _mm512_shuffle_f32x4(a, b, imm) for imm 0x88 and 0xDD (the two the
    // packers use): which = 0 or 1.
    void (*shuffle_f32x4)(const float *a, const float *b, int which,
                          float *out);
    // _mm512_mask_i32gather_ps(src, k, idx, base, 4): lane l is
    // base[idx[l]] where bit l of k is set, else src[l].
    void (*mask_i32gather_ps)(const float *src, uint16_t k,
                              const int32_t *idx, const float *base,
                              float *out);
} avx512_probes;

extern const avx512_probes mhsa_probes__avx512;
extern const avx512_probes mhsa_probes__avx512_emul;

#endif
