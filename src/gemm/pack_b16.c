// pack_b16.c — packing a 16-bit (F16 / BF16) op(B) into the table's fp32
// B micro-panels: how the GEMM reads 16-bit weights (pack_b16.h).
//
// Why through a slab: the packed block is the only place the GEMM keeps B
// in fp32 anyway (KC deep, in L1/L2), so widening there adds no fp32 copy
// of the matrix, and reusing the table's own cvt_to_f32 (F16C / AVX-512
// vcvtph2ps, NEON fcvtl, shifts for BF16) and pack_b (its register
// transposes) gives each ISA the same panel bits as fp32 B holding the
// widened values, with no second set of packers to keep in step. The slab
// (16 KiB) stays in L1 between the two passes.
#include "pack_b16.h"

enum { SLAB_FLOATS = 4096 };   // 256 depth steps at nr 16, 128 at nr 32

void mhsa__pack_b_16(const mhsa_kernels *k, size_t kc, size_t w,
                     const void *b, size_t ldb, int trans, mhsa_dtype dt,
                     float *bp)
{
    float slab[SLAB_FLOATS];
    const uint16_t *h = b;
    size_t nr = (size_t)k->nr, depth = SLAB_FLOATS / nr;   // w <= nr
    for (size_t k0 = 0; k0 < kc; k0 += depth) {
        size_t ks = kc - k0 < depth ? kc - k0 : depth;
        if (trans) {
            // op(B)[kk][j] = b[j*ldb + kk]: column j of the panel is row j
            // of b, ks elements from depth k0.
            for (size_t j = 0; j < w; j++)
                k->cvt_to_f32(ks, h + j * ldb + k0, dt, slab + j * ks);
            k->pack_b(ks, w, slab, ks, 1, bp + k0 * nr);
        } else {
            // op(B)[kk][j] = b[kk*ldb + j]: each depth step is w elements.
            for (size_t kk = 0; kk < ks; kk++)
                k->cvt_to_f32(w, h + (k0 + kk) * ldb, dt, slab + kk * w);
            k->pack_b(ks, w, slab, w, 0, bp + k0 * nr);
        }
    }
}
