// bench_quant.c — the quantized products (kernels/quant.h) of the active
// table (MHSA_ISA picks it: MHSA_ISA=scalar ./bench --benchmark_filter=
// quant), one kernel call on one thread per iteration: qmm of each type at
// decode shape (m = 1: the weights streamed once, so bytes/s of weights is
// the figure that counts) and prefill shape (m = 64), for weight matrices
// of 576 x 1536 and 2048 x 5632 (rows x columns; the columns a multiple of
// 256 for the k-quants). Reports bytes_per_second of weights and GOP/s
// (2 m rows C integer multiply-adds). The activations are quantized
// outside the timed loop.
#include <stdlib.h>

#include "bench_util.h"
#include "kernels/kernels.h"
#include "shim.h"

// Arguments: type (mhsa_qtype), weight rows, columns C, activation rows m.
static void bm_qmm(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    mhsa_qtype t = (mhsa_qtype)mhsa_bench_arg(st, 0);
    size_t nw = (size_t)mhsa_bench_arg(st, 1);
    size_t C = (size_t)mhsa_bench_arg(st, 2);
    size_t m = (size_t)mhsa_bench_arg(st, 3);
    const mhsa_kernels *k = mhsa__kernels();
    size_t nb = C / mhsa_qtype_block(t);
    size_t ldw = nb * mhsa_qtype_bytes(t);
    mhsa_qact a = mhsa_qtype_act(t);
    size_t ldx = nb * mhsa_qact_bytes(a);
    unsigned char *w = malloc(nw * ldw), *x = malloc(m * ldx);
    float *xf = mhsa_bench_floats(m * C), *y = mhsa_bench_floats(m * nw);
    if (!w || !x || !xf || !y) {
        mhsa_bench_skip(st, "out of memory");
    } else {
        // Random quants; every block's f16 scales (bytes 0-1 and 2-3, Q6_K
        // bytes 208-209) a small normal number, so no block is inf or NaN.
        unsigned s = 12345;
        for (size_t i = 0; i < nw * ldw; i++) {
            s = s * 1103515245u + 12345u;
            w[i] = (unsigned char)(s >> 16);
        }
        size_t bb = mhsa_qtype_bytes(t), off = t == MHSA_Q6_K ? 208 : 0;
        for (size_t b = 0; b < nw * nb; b++) {
            w[b * bb + off + 1] = 0x24;
            if (t != MHSA_Q6_K && bb > 18)
                w[b * bb + 3] = 0x20;
        }
        mhsa_bench_fill(xf, m * C, 7);
        for (size_t j = 0; j < m; j++)
            k->q->quantize[a](C, xf + j * C, x + j * ldx);
        while (mhsa_bench_keep_running(st)) {
            k->q->qmm[t](nb, w, ldw, nw, x, ldx, m, y, nw, 0);
            mhsa_bench_use(y);
        }
        mhsa_bench_set_bytes(st, mhsa_bench_iterations(st) *
                                     (int64_t)(nw * ldw));
        mhsa_bench_rate(st, "GOP", 2e-9 * (double)m * (double)nw * (double)C);
    }
    free(w);
    free(x);
    free(xf);
    free(y);
}

void mhsa_bench_register_quant(void)
{
    static const int64_t shapes[][2] = { { 576, 1536 }, { 2048, 5632 } };
    static const int64_t ms[] = { 1, 64 };
    static const char *const names[] = { "type", "rows", "C", "m" };
    static const char *const types[MHSA_QTYPE_COUNT] = {
        [MHSA_Q8_0] = "quant/qmm/q8_0", [MHSA_Q4_0] = "quant/qmm/q4_0",
        [MHSA_Q4_1] = "quant/qmm/q4_1", [MHSA_Q5_0] = "quant/qmm/q5_0",
        [MHSA_Q5_1] = "quant/qmm/q5_1", [MHSA_Q4_K] = "quant/qmm/q4_K",
        [MHSA_Q5_K] = "quant/qmm/q5_K", [MHSA_Q6_K] = "quant/qmm/q6_K",
    };
    for (int t = 0; t < MHSA_QTYPE_COUNT; t++)
        for (int s = 0; s < 2; s++)
            for (int i = 0; i < 2; i++)
                mhsa_bench_add(types[t], bm_qmm, NULL, 4,
                               (int64_t[]){ t, shapes[s][0], shapes[s][1],
                                            ms[i] },
                               names);
}
