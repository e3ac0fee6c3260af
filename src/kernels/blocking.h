// blocking.h — the GEMM's cache blocking (kc, mc, nc) derived from the
// register tile and the data caches of the CPU (core/cpu_caches.h): the
// rule, written once. dispatch.c applies it to every table it installs.
#ifndef MHSA_GEMM_BLOCKING_H
#define MHSA_GEMM_BLOCKING_H

#include "core/cpu_caches.h"
#include "kernels/kernels.h"

// The blocking for an mr x nr tile on a CPU with caches c (see blocking.c
// for the rule and where its fractions were measured). Always valid: kc >
// 0, mc a multiple of mr, nc a multiple of nr.
mhsa_gemm_blocking mhsa__blocking_for_caches(int mr, int nr,
                                             const mhsa_cpu_caches *c);

// kc, mc, nc made valid for an mr x nr tile: each at least 1 (a tile),
// mc rounded up to a multiple of mr and nc to one of nr.
mhsa_gemm_blocking mhsa__blocking_fit(int mr, int nr, mhsa_gemm_blocking b);

#endif
