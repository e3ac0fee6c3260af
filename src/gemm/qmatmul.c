// qmatmul.c — the drivers of the quantized products (qmatmul.h).
#include <omp.h>

#include "core/threads.h"
#include "gemm/gemv_share.h"
#include "gemm/qmatmul.h"

// The loop blocks of one thread's product: WR weight rows (a few KB to a
// few tens of KB of blocks, kept in L1/L2) against up to XR activation
// rows at a time, so a block of activations stays in L2 while the weight
// rows stream through it.
enum { WR = 32, XR = 256, XR_STREAM = 4 };

size_t mhsa__qmat_pack_bytes(const mhsa_qkernels *q, const mhsa_qmat *w)
{
    if (w->packed || !q->qmm16[w->type])
        return 0;
    return mhsa_q_pack16_bytes(w->rows, w->cols / mhsa_qtype_block(w->type) *
                                            mhsa_qtype_bytes(w->type));
}

void mhsa__qmat_pack_rows(const mhsa_qmat *w, size_t r0, size_t r1,
                          void *dst)
{
    size_t nb = w->cols / mhsa_qtype_block(w->type);
    size_t row = nb * mhsa_qtype_bytes(w->type);
    mhsa_q_pack16(w->type, nb, (const char *)w->data + r0 * w->ld, w->ld,
                  r1 - r0, (char *)dst + r0 * row);
}

void mhsa__qmat_packed(mhsa_qmat *w, void *dst)
{
    w->data = dst;
    w->ld = w->cols / mhsa_qtype_block(w->type) * mhsa_qtype_bytes(w->type);
    w->packed = 1;
}

void mhsa__qmat_row(const mhsa_qmat *w, size_t r, float *dst)
{
    size_t nb = w->cols / mhsa_qtype_block(w->type);
    if (w->packed)
        mhsa_q_dequant16(w->type, nb, w->data, r, dst);
    else
        mhsa_q_dequant(w->type, nb, (const char *)w->data + r * w->ld, dst);
}

size_t mhsa__qact_row_bytes(mhsa_qtype t, size_t C)
{
    return C / mhsa_qtype_block(t) * mhsa_qact_bytes(mhsa_qtype_act(t));
}

void mhsa__q_quantize_share(const mhsa_kernels *k, mhsa_qtype t, size_t n,
                            size_t C, const float *x, size_t ldx, void *xq)
{
    size_t nt = (size_t)omp_get_num_threads(), me = (size_t)omp_get_thread_num();
    size_t r0 = n * me / nt, r1 = n * (me + 1) / nt;
    size_t rb = mhsa__qact_row_bytes(t, C);
    mhsa_qact a = mhsa_qtype_act(t);
    for (size_t r = r0; r < r1; r++)
        k->q->quantize[a](C, x + r * ldx, (char *)xq + r * rb);
}

void mhsa__q_matmul_share(const mhsa_kernels *k, const mhsa_qmat *w,
                          size_t n, const void *xq, float *y, size_t ldy,
                          int add, size_t *lo, size_t *hi)
{
    mhsa__rows_share(w->rows, w->packed ? 16 : 8, lo, hi);
    size_t nb = w->cols / mhsa_qtype_block(w->type);
    size_t rb = mhsa__qact_row_bytes(w->type, w->cols);
    mhsa_qmm_fn qmm = w->packed ? k->q->qmm16[w->type] : k->q->qmm[w->type];
    // A packed matrix's rows are one stream: a few activation rows meet
    // them in one call, which prefetches each unit during the one before.
    size_t wr = w->packed && n <= XR_STREAM ? *hi - *lo : WR;
    for (size_t r = *lo; r < *hi; r += wr) {
        size_t nw = *hi - r < wr ? *hi - r : wr;
        for (size_t j = 0; j < n; j += XR) {
            size_t m = n - j < XR ? n - j : XR;
            qmm(nb, (const char *)w->data + r * w->ld, w->ld, nw,
                (const char *)xq + j * rb, rb, m, y + j * ldy + r, ldy, add);
        }
    }
}

typedef struct qmm_job {
    const mhsa_kernels *k;
    const mhsa_qmat *w;
    size_t n, ldx, ldy;
    const float *x;
    void *xq;
    float *y;
    int add;
} qmm_job;

static void qmm_body(void *p)
{
    const qmm_job *j = p;
    size_t lo, hi;
    mhsa__q_quantize_share(j->k, j->w->type, j->n, j->w->cols, j->x, j->ldx,
                           j->xq);
#pragma omp barrier
    mhsa__q_matmul_share(j->k, j->w, j->n, j->xq, j->y, j->ldy, j->add, &lo,
                         &hi);
}

void mhsa__q_matmul(const mhsa_kernels *k, int max_threads,
                    const mhsa_qmat *w, size_t n, const float *x, size_t ldx,
                    void *xq, float *y, size_t ldy, int add)
{
    qmm_job j = { k, w, n, ldx, ldy, x, xq, y, add };
    double flops = 2.0 * (double)n * (double)w->rows * (double)w->cols;
    mhsa__team_run(mhsa__threads(max_threads, flops, (w->rows + 7) / 8),
                   qmm_body, &j);
}
