// kernels.h — the kernel table and the written contract of every kernel.
//
// One table per ISA (src/<isa>/table.c). Every kernel is a single-threaded
// pure function: no OpenMP, no malloc, no globals, no error paths. Strides are
// in elements. A kernel reads and writes exactly the elements its arguments
// describe: never past n of caller memory (tails are masked or scalar), and
// no alignment beyond float's is assumed.
//
// Three families:
//  1. packed GEMM: pack_a / pack_b into micro-panels, sgemm_ukr on one tile
//     (BLIS: the loops, blocking and threads live once in src/gemm.c);
//  2. softmax: the masked online-softmax update of one block of score rows
//     (Milakov & Gimelshein 2018, "Online normalizer calculation for
//     softmax"; FlashAttention), its backward, and a plain whole-row softmax;
//  3. permute: a strided 4-D copy with scale, used to split the QKV
//     projection into heads and to merge heads back.
#ifndef MHSA_KERNELS_H
#define MHSA_KERNELS_H

#include <stddef.h>

#include "mhsa.h"

// ---- softmax ------------------------------------------------------------

// Which keys a query row may see. Key j (absolute position k0 + j) is blocked
// for query row r (absolute position q0 + r) when
//   causal && k0 + j > q0 + r,   or   mask && mask[r*ldmask + j] == -INFINITY.
// A blocked key's score is never read (it may hold NaN) and its weight is an
// exact +0.0f. Any finite mask value, however negative, is added like any
// other. The mask pointer is already offset to (row q0, key k0).
typedef struct mhsa_mask_view {
    const float *mask;   // additive (rows, ldmask) or NULL
    size_t ldmask;
    size_t q0, k0;       // absolute positions of row 0 and key 0
    int causal;
} mhsa_mask_view;

// One online-softmax step over a tile of n keys for `rows` query rows.
// In:  s (rows, lds) raw scores (already scaled); running max m and sum l per
//      row (m = -INFINITY, l = 0 before the first tile); o (rows, ldo) the
//      unnormalised output accumulator, dv columns wide.
// Out: s overwritten with p = exp(s + mask - m_new) (exact 0 where blocked);
//      m = m_new = max(m_old, max unblocked s + mask);
//      o *= exp(m_old - m_new) and l = l * exp(m_old - m_new) + sum(p).
// A row with no unblocked key so far keeps m = -INFINITY, l = 0, o untouched
// and gets p = 0 (never NaN). NaN in an unblocked score makes that row NaN.
typedef struct mhsa_softmax_args {
    size_t rows, n;
    float *s;  size_t lds;
    mhsa_mask_view mv;
    float *m, *l;        // (rows)
    float *o;  size_t ldo, dv;
} mhsa_softmax_args;

// Backward of softmax, one tile, with p recomputed from the saved
// log-sum-exp: p = exp(s + mask - lse) (exact 0 where blocked, and the whole
// row 0 when lse == -INFINITY); ds = p * (dp - delta).
// In:  s (rows, lds) raw scaled scores; dp (rows, lddp) = dO V^T;
//      lse, delta (rows) with delta = rowsum(dO * O).
// Out: s overwritten with p; dp overwritten with ds (exact 0 where blocked).
typedef struct mhsa_softmax_grad_args {
    size_t rows, n;
    float *s;  size_t lds;
    float *dp; size_t lddp;
    mhsa_mask_view mv;
    const float *lse, *delta;
} mhsa_softmax_grad_args;

// ---- permute ------------------------------------------------------------

// dst[i0][i1][i2][i3] = scale * src[i0][i1][i2][i3] for a logical (n0, n1, n2,
// n3) tensor whose innermost dimension is contiguous on both sides and whose
// outer dimensions have arbitrary strides. Splitting heads is the view
// src (B, T, H, dh) with strides (T*3D, 3D, dh) and dst strides
// (H*T*dh, dh, T*dh); merging is the reverse. scale == 1 copies bitwise.
typedef struct mhsa_permute_args {
    size_t n0, n1, n2, n3;
    const float *src;  size_t src_s0, src_s1, src_s2;
    float *dst;        size_t dst_s0, dst_s1, dst_s2;
    float scale;
} mhsa_permute_args;

// ---- the table ----------------------------------------------------------

typedef struct mhsa_kernels {
    mhsa_isa isa;
    const char *name;          // == mhsa_isa_name(isa)
    int mr, nr;                // sgemm register tile

    // Packs an m x k block of op(A) into ceil(m/mr) micro-panels, panel p at
    // ap + p*mr*k, column-major inside: ap[p*mr*k + kk*mr + i] =
    // alpha * op(A)[p*mr + i][kk], and 0 for rows p*mr + i >= m.
    // op(A)[i][kk] = trans ? a[kk*lda + i] : a[i*lda + kk].
    void (*pack_a)(size_t m, size_t k, const float *a, size_t lda, int trans,
                   float alpha, float *ap);
    // Packs a k x n block of op(B) into ceil(n/nr) micro-panels, panel p at
    // bp + p*nr*k, row-major inside: bp[p*nr*k + kk*nr + j] =
    // op(B)[kk][p*nr + j], and 0 for columns p*nr + j >= n.
    // op(B)[kk][j] = trans ? b[j*ldb + kk] : b[kk*ldb + j].
    void (*pack_b)(size_t k, size_t n, const float *b, size_t ldb, int trans,
                   float *bp);
    // One tile: C[i][j] = beta*C[i][j] + sum_kk ap[kk*mr+i] * bp[kk*nr+j] for
    // i < m <= mr, j < n <= nr. beta == 0 never reads C (NaN there is fine);
    // beta == 1 adds exactly. Elements of C outside m x n are not touched.
    // k == 0 is allowed (the sum is 0). The sum runs over kk in order.
    void (*sgemm_ukr)(size_t k, const float *ap, const float *bp, float *c,
                      size_t ldc, size_t m, size_t n, float beta);

    void (*softmax_online)(const mhsa_softmax_args *a);
    void (*softmax_grad)(const mhsa_softmax_grad_args *a);
    // y[j] = exp(x[j] - max) / sum over the n values; -INFINITY entries give
    // an exact 0, and a row that is all -INFINITY gives all zeros. A row
    // holding a NaN may give NaN everywhere, -INFINITY entries included
    // (callers that promise zeros for blocked keys reset them). In place
    // (y == x) is allowed.
    void (*softmax_row)(size_t n, const float *x, float *y);

    void (*permute)(const mhsa_permute_args *a);

    // Matrix-vector products for one-row work (decoding one token), where a
    // GEMM tile would waste mr - 1 rows of work and packing would double
    // the memory traffic. Both stream the matrix once, unpacked.
    // gemv_n: y[j] = beta*y[j] + sum_i a[j*lda + i] * x[i], j < n, i < d.
    //         beta == 0 never reads y. The i sum runs in a fixed order.
    void (*gemv_n)(size_t n, size_t d, const float *a, size_t lda,
                   const float *x, float *y, float beta);
    // gemv_t: y[i] += sum_j p[j] * a[j*lda + i], i < d, j < n; rows j with
    //         p[j] == 0 are still read (callers pass only unblocked rows).
    void (*gemv_t)(size_t n, size_t d, const float *p, const float *a,
                   size_t lda, float *y);
} mhsa_kernels;

// Tables this build has (each defined in src/<isa>/table.c).
extern const mhsa_kernels mhsa_kernels_scalar;
#if MHSA_HAVE_AVX2
extern const mhsa_kernels mhsa_kernels_avx2;
#endif
#if MHSA_HAVE_NEON
extern const mhsa_kernels mhsa_kernels_neon;
#endif

// The active table (chosen once, see dispatch.c). Never NULL.
const mhsa_kernels *mhsa__kernels(void);
// The table for one ISA if this build has it and the CPU supports it, else
// NULL. Used by tests and benchmarks to run every ISA side by side.
const mhsa_kernels *mhsa_kernels_for(mhsa_isa isa);

#endif
