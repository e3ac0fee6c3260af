// kernel_decl.h — one ISA's kernel declarations and table, written once.
//
// Every ISA has the same kernels (contracts in kernels.h) under names
// mhsa_<op>__<isa>, the tile shape in the GEMM names:
// mhsa_pack_a_mr6__avx2, mhsa_pack_b_nr16__avx2, mhsa_sgemm_6x16__avx2, ...
// An ISA's header declares them with MHSA_DECLARE_KERNELS(avx2, 6, 16) and
// its table.c defines the table with MHSA_KERNEL_TABLE(avx2, MHSA_ISA_AVX2,
// 6, 16, .kc = ..., .mc = ..., .nc = ...) (the GEMM blocking, kernels.h),
// so adding a kernel means one line here, not one per ISA file.
#ifndef MHSA_KERNEL_DECL_H
#define MHSA_KERNEL_DECL_H

#include "kernels.h"

#define MHSA_KCAT_(a, b) a##b
#define MHSA_KCAT(a, b) MHSA_KCAT_(a, b)
// mhsa_<op>__<isa>
#define MHSA_KNAME(op, isa) MHSA_KCAT(MHSA_KCAT(mhsa_, op), MHSA_KCAT(__, isa))
#define MHSA_KPACK_A(isa, mr) MHSA_KNAME(MHSA_KCAT(pack_a_mr, mr), isa)
#define MHSA_KPACK_B(isa, nr) MHSA_KNAME(MHSA_KCAT(pack_b_nr, nr), isa)
#define MHSA_KSGEMM(isa, mr, nr) \
    MHSA_KNAME(MHSA_KCAT(MHSA_KCAT(sgemm_, mr), MHSA_KCAT(x, nr)), isa)
#define MHSA_KSGEMM_RA(isa, mr, nr) \
    MHSA_KNAME(MHSA_KCAT(MHSA_KCAT(sgemm_ra_, mr), MHSA_KCAT(x, nr)), isa)
#define MHSA_KSGEMM_TA(isa, mr, nr) \
    MHSA_KNAME(MHSA_KCAT(MHSA_KCAT(sgemm_ta_, mr), MHSA_KCAT(x, nr)), isa)

#define MHSA_DECLARE_KERNELS(isa, mr, nr)                                     \
    void MHSA_KPACK_A(isa, mr)(size_t m, size_t k, const float *a,           \
                               size_t lda, int trans, float alpha,           \
                               float *ap);                                   \
    void MHSA_KPACK_B(isa, nr)(size_t k, size_t n, const float *b,           \
                               size_t ldb, int trans, float *bp);            \
    void MHSA_KSGEMM(isa, mr, nr)(size_t k, const float *ap,                 \
                                  const float *bp, float *c, size_t ldc,     \
                                  size_t m, size_t n, float beta,            \
                                  const float *bias);                        \
    void MHSA_KSGEMM_RA(isa, mr, nr)(size_t k, const float *a, size_t lda,  \
                                     float alpha, const float *bp, float *c, \
                                     size_t ldc, size_t m, size_t n,         \
                                     float beta, const float *bias);         \
    void MHSA_KSGEMM_TA(isa, mr, nr)(size_t k, const float *a, size_t lda,  \
                                     float alpha, const float *bp, float *c, \
                                     size_t ldc, size_t m, size_t n,         \
                                     float beta, const float *bias);         \
    void MHSA_KNAME(softmax_online, isa)(const mhsa_softmax_args *a);        \
    void MHSA_KNAME(softmax_grad, isa)(const mhsa_softmax_grad_args *a);     \
    void MHSA_KNAME(softmax_row, isa)(size_t n, const float *x, float *y);   \
    void MHSA_KNAME(scale_copy, isa)(size_t n, const float *src, float *dst, \
                                     float scale);                           \
    int MHSA_KNAME(rows_finite, isa)(size_t rows, size_t cols,               \
                                     const float *x, size_t ld);             \
    void MHSA_KNAME(lse_add_log, isa)(size_t n, float *lse,                  \
                                      const float *lsum);                    \
    void MHSA_KNAME(colsum_add, isa)(size_t rows, size_t cols,               \
                                     const float *x, size_t ld, float *acc); \
    void MHSA_KNAME(gemv_n, isa)(size_t n, size_t d, const float *a,         \
                                 size_t lda, const float *x, float *y,       \
                                 float beta);                                \
    void MHSA_KNAME(gemv_t, isa)(size_t n, size_t d, const float *p,         \
                                 const float *a, size_t lda, float *y);      \
    void MHSA_KNAME(kv_dot, isa)(size_t m, size_t n, size_t d,               \
                                 const float *q, size_t ldq, const void *k,  \
                                 size_t ldk, mhsa_dtype dt, float *s,        \
                                 size_t lds);                                \
    void MHSA_KNAME(kv_acc, isa)(size_t m, size_t n, size_t d,               \
                                 const float *p, size_t ldp, const void *v,  \
                                 size_t ldv, mhsa_dtype dt, float *o,        \
                                 size_t ldo);                                \
    void MHSA_KNAME(gemv_n16, isa)(size_t n, size_t d, const void *a,        \
                                   size_t lda, mhsa_dtype dt,                \
                                   const float *x, float *y, float beta);    \
    void MHSA_KNAME(cvt_from_f32, isa)(size_t n, const float *src,           \
                                       void *dst, mhsa_dtype dt);            \
    void MHSA_KNAME(cvt_to_f32, isa)(size_t n, const void *src,              \
                                     mhsa_dtype dt, float *dst);            \
    void MHSA_KNAME(small_bwd_scores, isa)(const mhsa_small_bwd_args *a);    \
    void MHSA_KNAME(small_bwd_grads, isa)(const mhsa_small_bwd_args *a);

// A table's bf16 tile sets (kernels.h: mhsa_kernels.bf16): none unless
// its table.c redefines this before defining the table (src/avx512/).
#define MHSA_KERNEL_TABLE_BF16 NULL
// A table's fused small-view forward (kernels.h: attn_small): none unless
// its table.c redefines this (src/scalar/, src/avx2/, src/avx512/). The
// fused kernels must give the bits of their own table's tiled path, so
// the scalar references below (the scalar tiled path's bits: libm expf, no
// FMA) are no default for a table whose softmax and micro-kernel round
// otherwise: NEON keeps these slots empty and its drivers' tiled path.
#define MHSA_KERNEL_TABLE_ATTN_SMALL NULL
// Its fused forward of several heads at once (kernels.h:
// attn_small_heads): none unless its table.c redefines this.
#define MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS NULL
// And of its backward (kernels.h: attn_small_heads_bwd).
#define MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS_BWD NULL
// The scalar references of the four (src/scalar/attn_*.c), declared here
// for the tests, which check every table's kernels against them.
int mhsa_attn_small__scalar(const mhsa_attn_small_args *a);
int mhsa_attn_small_heads__scalar(const mhsa_attn_heads_args *a);
int mhsa_attn_small_bwd__scalar(const mhsa_attn_small_bwd_args *a);
int mhsa_attn_small_heads_bwd__scalar(const mhsa_attn_heads_bwd_args *a);

// A table's small-backward products (kernels.h: small_bwd_scores and
// small_bwd_grads): none unless its table.c redefines this as
// `.small_bwd_scores = ..., .small_bwd_grads = ...` (scalar, avx2, avx512).
#define MHSA_KERNEL_TABLE_SMALL_BWD .small_bwd_scores = NULL

// A table's row-major-A micro-kernel (kernels.h: sgemm_ukr_ra): the ISA's
// mhsa_sgemm_ra_<mr>x<nr>__<isa> unless its table.c redefines this to NULL
// before defining the table (then the GEMM always packs A).
#define MHSA_KERNEL_TABLE_SGEMM_RA(sfx, mr_, nr_) MHSA_KSGEMM_RA(sfx, mr_, nr_)
// A table's transposed-A micro-kernel (kernels.h: sgemm_ukr_ta): none
// unless its table.c redefines this as MHSA_KSGEMM_TA(sfx, mr_, nr_)
// (avx2, avx512; the others pack op(A) of a trans_a GEMM).
#define MHSA_KERNEL_TABLE_SGEMM_TA(sfx, mr_, nr_) NULL
// The scalar references (src/scalar/) of the slots a table may leave to
// them, plain C that runs on any CPU: declared here so that every table
// can name them.
void mhsa_lse_add_log__scalar(size_t n, float *lse, const float *lsum);
void mhsa_colsum_add__scalar(size_t rows, size_t cols, const float *x,
                             size_t ld, float *acc);

// A table's log-sum-exp finish (kernels.h: lse_add_log): the scalar
// reference unless its table.c redefines this as MHSA_KNAME(lse_add_log,
// sfx) (avx2, avx512), so the slot is never empty.
#define MHSA_KERNEL_TABLE_LSE_ADD_LOG(sfx) mhsa_lse_add_log__scalar
// ... and column sums (kernels.h: colsum_add), likewise.
#define MHSA_KERNEL_TABLE_COLSUM_ADD(sfx) mhsa_colsum_add__scalar
// ... and the most nr-column panels of B for which the GEMM uses them
// (kernels.h: ra_max_panels; 0 unless table.c redefines this).
#define MHSA_KERNEL_TABLE_RA_PANELS 0
// ... and its quantized products (kernels.h: q; kernels/quant.h): the
// scalar references unless its table.c redefines this.
#define MHSA_KERNEL_TABLE_Q (&mhsa_qkernels_scalar)

#define MHSA_KERNEL_TABLE(sfx, isa_enum, mr_, nr_, ...)                       \
    MHSA_KERNEL_TABLE_NAMED(sfx, #sfx, isa_enum, mr_, nr_, __VA_ARGS__)

// The same with a name other than the suffix: the test-only emulated
// AVX-512 build (src/avx512/avx512.h) has kernels mhsa_<op>__avx512_emul
// in a table named "avx512", like the ISA it stands in for.
#define MHSA_KERNEL_TABLE_NAMED(sfx, name_, isa_enum, mr_, nr_, ...)          \
    {                                                                         \
        .isa = isa_enum,                                                      \
        .name = name_,                                                        \
        .mr = mr_,                                                            \
        .nr = nr_,                                                            \
        .blocking = { __VA_ARGS__ },                                          \
        .pack_a = MHSA_KPACK_A(sfx, mr_),                                     \
        .pack_b = MHSA_KPACK_B(sfx, nr_),                                     \
        .sgemm_ukr = MHSA_KSGEMM(sfx, mr_, nr_),                              \
        .sgemm_ukr_ra = MHSA_KERNEL_TABLE_SGEMM_RA(sfx, mr_, nr_),            \
        .sgemm_ukr_ta = MHSA_KERNEL_TABLE_SGEMM_TA(sfx, mr_, nr_),            \
        .ra_max_panels = MHSA_KERNEL_TABLE_RA_PANELS,                         \
        .softmax_online = MHSA_KNAME(softmax_online, sfx),                    \
        .softmax_grad = MHSA_KNAME(softmax_grad, sfx),                        \
        .softmax_row = MHSA_KNAME(softmax_row, sfx),                          \
        .scale_copy = MHSA_KNAME(scale_copy, sfx),                            \
        .rows_finite = MHSA_KNAME(rows_finite, sfx),                          \
        .lse_add_log = MHSA_KERNEL_TABLE_LSE_ADD_LOG(sfx),                    \
        .colsum_add = MHSA_KERNEL_TABLE_COLSUM_ADD(sfx),                      \
        .gemv_n = MHSA_KNAME(gemv_n, sfx),                                    \
        .gemv_t = MHSA_KNAME(gemv_t, sfx),                                    \
        .kv_dot = MHSA_KNAME(kv_dot, sfx),                                    \
        .kv_acc = MHSA_KNAME(kv_acc, sfx),                                    \
        .gemv_n16 = MHSA_KNAME(gemv_n16, sfx),                                \
        .cvt_from_f32 = MHSA_KNAME(cvt_from_f32, sfx),                        \
        .cvt_to_f32 = MHSA_KNAME(cvt_to_f32, sfx),                            \
        .bf16 = MHSA_KERNEL_TABLE_BF16,                                       \
        .attn_small = MHSA_KERNEL_TABLE_ATTN_SMALL,                           \
        .attn_small_heads = MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS,               \
        .attn_small_heads_bwd = MHSA_KERNEL_TABLE_ATTN_SMALL_HEADS_BWD,       \
        .q = MHSA_KERNEL_TABLE_Q,                                             \
        MHSA_KERNEL_TABLE_SMALL_BWD,                                          \
    }

#endif
