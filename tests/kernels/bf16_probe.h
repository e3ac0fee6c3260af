// bf16_probe.h — test-only entry points into single bf16 and AMX
// instructions, one set per build of bf16_probe.c:
//  - mhsa_bf16_probes__native: built with -mavx512bf16 -mamx-tile
//    -mamx-bf16, run only where the CPU has them (AMX after the tile data
//    permission, core/cpu_features.h);
//  - mhsa_bf16_probes__emul: built against SIMDe and the C emulation of
//    src/avx512/bf16_emul.h (runs on AVX2+FMA+F16C).
// test_bf16_emul.c checks each probe of each build it can run against the
// SDM's pseudo-code, so the emulation is tested here and, on a machine
// with the instructions, the same checks tie the pseudo-code (and so the
// emulation) to the hardware.
#ifndef MHSA_TEST_BF16_PROBE_H
#define MHSA_TEST_BF16_PROBE_H

#include <stddef.h>
#include <stdint.h>

typedef struct bf16_probes {
    const char *build;   // "native" or "emulated"
    // vcvtne2ps2bf16: out[0..15] from b, out[16..31] from a.
    void (*cvtne2ps)(const float *a, const float *b, uint16_t *out);
    // vdpbf16ps: acc (16 floats, in and out), a and b 32 bf16 each.
    void (*dpbf16)(float *acc, const uint16_t *a, const uint16_t *b);
    // One TDPBF16PS on tiles configured as C rows x (4 * ncols) bytes,
    // A rows x (4 * kpairs), B kpairs x (4 * ncols) (rows <= 16, kpairs
    // and ncols <= 16): c (rows x ncols floats, in and out), a (rows x 2 *
    // kpairs bf16), b (kpairs x 2 * ncols bf16), all dense. Configures,
    // loads, computes, stores and releases the tiles.
    void (*tdpbf16)(int rows, int kpairs, int ncols, float *c,
                    const uint16_t *a, const uint16_t *b);
    // TILEZERO then TILESTORED of a 16 x 64-byte tile: out 256 floats.
    void (*tile_zero_store)(float *out);
    // Emulated build only (NULL natively): the emulation's scalar FMA with
    // DAZ/FTZ, and a tile load with no configuration loaded (must abort,
    // as the hardware faults).
    float (*fma_daz_ftz)(float acc, float a, float b);
    void (*load_unconfigured)(const float *p);
} bf16_probes;

extern const bf16_probes mhsa_bf16_probes__native;
extern const bf16_probes mhsa_bf16_probes__emul;

#endif
