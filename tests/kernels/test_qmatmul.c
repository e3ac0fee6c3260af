// test_qmatmul.c — the quantized product's driver (gemm/qmatmul.h) on the
// active table: the bits the same at 1, 2 and 3 threads, a row's bits the
// same alone and in any batch, add = y + product exactly, and the result
// the table's qmm on the quantized activations (so within the kernel
// tests' bound of the exact product). Where the table computes the type
// packed (kernels/quant.h: P16), the packed matrix gives the same bits at
// every thread count.
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/qmatmul.h"
#include "util.h"

static unsigned char *rand_rows(rng *r, mhsa_qtype t, size_t rows, size_t C)
{
    size_t bytes = rows * C / mhsa_qtype_block(t) * mhsa_qtype_bytes(t);
    unsigned char *w = malloc(bytes);
    ck_assert(w);
    for (size_t i = 0; i < bytes; i++)
        w[i] = (unsigned char)rng_u64(r);
    // Tame f16 scales (bytes 0-1 of every block but Q6_K's, its last two):
    // a small normal number, so no block is inf or NaN.
    size_t bb = mhsa_qtype_bytes(t), off = t == MHSA_Q6_K ? 208 : 0;
    for (size_t b = 0; b < bytes / bb; b++) {
        w[b * bb + off] = (unsigned char)rng_u64(r);
        w[b * bb + off + 1] = (unsigned char)(0x20 | (rng_u64(r) & 0x83));
        if (t == MHSA_Q4_1 || t == MHSA_Q5_1 || t == MHSA_Q4_K ||
            t == MHSA_Q5_K)
            w[b * bb + 3] = (unsigned char)(0x20 | (rng_u64(r) & 0x03));
    }
    return w;
}

START_TEST(threads_batches_and_add)
{
    const mhsa_kernels *k = mhsa__kernels();
    rng r = { 7 };
    static const size_t Ns[] = { 1, 2, 5, 67 };
    for (int t = 0; t < MHSA_QTYPE_COUNT; t++) {
        size_t C = mhsa_qtype_block((mhsa_qtype)t) == 256 ? 512 : 96;
        size_t rows = 83;   // not a multiple of 8: a short last share
        mhsa_qmat w = { (mhsa_qtype)t, rows, C,
                        C / mhsa_qtype_block((mhsa_qtype)t) *
                            mhsa_qtype_bytes((mhsa_qtype)t),
                        NULL };
        unsigned char *wd = rand_rows(&r, (mhsa_qtype)t, rows, C);
        w.data = wd;
        for (size_t ni = 0; ni < sizeof Ns / sizeof *Ns; ni++) {
            size_t N = Ns[ni], rb = mhsa__qact_row_bytes(w.type, C);
            float *x = malloc(N * C * sizeof *x);
            float *y[3], *one = malloc(rows * sizeof *one);
            void *xq = malloc(N * rb);
            ck_assert(x && one && xq);
            fill_uniform(&r, x, N * C, -1.0f, 1.0f);
            for (int nt = 1; nt <= 3; nt++) {
                y[nt - 1] = malloc(N * rows * sizeof(float));
                ck_assert(y[nt - 1]);
                omp_set_num_threads(nt);
                mhsa__q_matmul(k, nt, &w, N, x, C, xq, y[nt - 1], rows, 0);
            }
            size_t pb = mhsa__qmat_pack_bytes(k->q, &w);
            if (pb) {
                mhsa_qmat wp = w;
                void *pd = malloc(pb);
                float *yp = malloc(N * rows * sizeof(float));
                ck_assert(pd && yp);
                mhsa__qmat_pack_rows(&w, 0, rows, pd);
                mhsa__qmat_packed(&wp, pd);
                for (int nt = 1; nt <= 3; nt++) {
                    omp_set_num_threads(nt);
                    mhsa__q_matmul(k, nt, &wp, N, x, C, xq, yp, rows, 0);
                    ck_assert_msg(!memcmp(y[0], yp, N * rows * sizeof(float)),
                                  "%s N %zu: packed differs on %d threads",
                                  mhsa_qtype_name(w.type), N, nt);
                }
                free(pd);
                free(yp);
            }
            omp_set_num_threads(2);
            ck_assert_msg(!memcmp(y[0], y[1], N * rows * sizeof(float)) &&
                              !memcmp(y[0], y[2], N * rows * sizeof(float)),
                          "%s N %zu: bits depend on the thread count",
                          mhsa_qtype_name(w.type), N);
            for (size_t j = 0; j < N; j++) {
                mhsa__q_matmul(k, 2, &w, 1, x + j * C, C, xq, one, rows, 0);
                ck_assert_msg(!memcmp(one, y[0] + j * rows,
                                      rows * sizeof(float)),
                              "%s N %zu row %zu: bits differ alone",
                              mhsa_qtype_name(w.type), N, j);
            }
            // add: y + product, one fp32 add.
            float *acc = malloc(N * rows * sizeof(float));
            ck_assert(acc);
            for (size_t i = 0; i < N * rows; i++)
                acc[i] = (float)i * 0.25f;
            mhsa__q_matmul(k, 2, &w, N, x, C, xq, acc, rows, 1);
            for (size_t i = 0; i < N * rows; i++) {
                float want = (float)i * 0.25f + y[0][i];
                ck_assert(!memcmp(&want, &acc[i], sizeof want));
            }
            // The table's qmm on the quantized rows, element by element.
            mhsa_qact a = mhsa_qtype_act(w.type);
            for (size_t j = 0; j < N; j += 7) {
                k->q->quantize[a](C, x + j * C, xq);
                for (size_t rr = 0; rr < rows; rr += 5) {
                    float v;
                    k->q->qmm[t](C / mhsa_qtype_block(w.type),
                                 wd + rr * w.ld, w.ld, 1, xq, rb, 1, &v, 1,
                                 0);
                    ck_assert(!memcmp(&v, &y[0][j * rows + rr], sizeof v));
                }
            }
            for (int nt = 0; nt < 3; nt++)
                free(y[nt]);
            free(acc);
            free(x);
            free(one);
            free(xq);
        }
        free(wd);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("qmatmul");
    TCase *tc = tcase_create("qmatmul");
    tcase_add_test(tc, threads_batches_and_add);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
