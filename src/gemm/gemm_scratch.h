// gemm_scratch.h — the GEMM drivers' scratch: per-thread packed-A blocks
// and one shared packed-B panel, and their sizes for a table. The floor
// both drivers stand on: the fp32 driver (gemm.c) and the bf16 one
// (gemm_bf16.c), which packs its bf16 panels into the same fp32 scratch.
#ifndef MHSA_GEMM_SCRATCH_H
#define MHSA_GEMM_SCRATCH_H

#include <stddef.h>

#include "kernels/kernels.h"

// Scratch for the driver: per-thread packed-A blocks and one shared packed-B
// panel. Carved from caller memory (a workspace), never allocated inside.
typedef struct mhsa_gemm_scratch {
    float *a;            // max_threads * mhsa_gemm_a_floats(k)
    float *b;            // b_floats
    size_t b_floats;     // capacity of b
    int max_threads;     // at most this many threads run a GEMM
} mhsa_gemm_scratch;

// Floats of packed A one thread needs.
size_t mhsa_gemm_a_floats(const mhsa_kernels *k);
// Floats of shared packed B for GEMMs with n columns (0 on overflow).
size_t mhsa_gemm_b_floats(const mhsa_kernels *k, size_t n);

#endif
