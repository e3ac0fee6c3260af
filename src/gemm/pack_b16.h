// pack_b16.h — packing a 16-bit op(B) into the table's fp32 B panels
// (pack_b16.c), the step mhsa_sgemm_dt (gemm.h) takes for F16 and BF16
// weights. It stands below the driver: it needs the table alone.
#ifndef MHSA_GEMM_PACK_B16_H
#define MHSA_GEMM_PACK_B16_H

#include <stddef.h>

#include "kernels/kernels.h"

// One table pack_b call's worth (w <= nr columns, kc depth) of op(B) with
// B stored as F16 or BF16: exactly the panel k->pack_b writes for the
// widened values. Widened a slab of 16 KiB at a time by
// the table's cvt_to_f32 into an L1 buffer, then packed by k->pack_b.
void mhsa__pack_b_16(const mhsa_kernels *k, size_t kc, size_t w,
                     const void *b, size_t ldb, int trans, mhsa_dtype dt,
                     float *bp);

#endif
