// test_compute_bf16.c — BF16 compute (API.md "Additions for 0.3 / BF16
// compute"): a block with compute_dtype MHSA_BF16 against the same block
// in fp32 (forward with attention weights, backward, cached prefill and
// decode) within 2e-2 on every ISA at 1 and 2 threads, with fp32 and with
// BF16-stored weights, bitwise the same at 1 and 2 threads, and measurably
// not the fp32 result (the rounding is on); a long causal variant crosses
// query and key tiles, the diagonal and the prepacked K/V path; invalid
// compute_dtype values (F16 among them) are MHSA_ERR_INVALID_ARG naming
// the field. Exactness of the products themselves: test_gemm_bf16.c; the
// PyTorch reference: test_bf16_torch.c.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "block_outputs.h"
#include "util.h"

typedef struct variant {
    int D, H, Hkv, causal, bias, rope_dim, window;
} variant;

static const variant variants[] = {
    { 64, 4, 0, 0, 1, 0, 0 },      // MHA, bias, not causal
    { 96, 6, 2, 1, 0, 8, 7 },      // GQA, RoPE, window, no bias
    { 40, 5, 1, 1, 1, 0, 0 },      // MQA
};
enum { N_VAR = sizeof variants / sizeof variants[0], B = 2, T = 11,
       MAXT = 16 };
static int T_run = T;   // rows per sequence of the current run

static mhsa_config config_of(const variant *v, mhsa_dtype wdt,
                             mhsa_dtype cdt, int maxt)
{
    mhsa_config c = { v->D, v->H, maxt, v->causal, v->bias };
    c.compute_dtype = (int)cdt;
    c.n_kv_heads = v->Hkv;
    c.rope_dim = v->rope_dim;
    c.window = v->window;
    c.weight_dtype = (int)wdt;
    return c;
}

static const variant long_variant = { 64, 2, 0, 1, 1, 16, 0 };   // dh 32

static void set_same_weights(mhsa_block *a, mhsa_block *b, const block_weights *w)
{
    ck_assert_int_eq(mhsa_block_set_weights(a, w->w_qkv, w->b_qkv, w->w_out,
                                            w->b_out), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(b, w->w_qkv, w->b_qkv, w->w_out,
                                            w->b_out), MHSA_OK);
}

// _i = isa * 2 + (weights F32, BF16).
START_TEST(bf16_block_near_f32_block)
{
    if (!kernels_or_skip(_i / 2))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i / 2]), MHSA_OK);
    mhsa_dtype wdt = _i % 2 ? MHSA_BF16 : MHSA_F32;
    int n_var = test_quick() ? N_VAR : N_VAR + 1;
    for (int vi = 0; vi < n_var; vi++) {
        const variant *v = vi < N_VAR ? &variants[vi] : &long_variant;
        T_run = vi < N_VAR ? T : 150;
        int maxt = vi < N_VAR ? MAXT : 160;
        rng r = { 2000 + (uint64_t)vi };
        mhsa_config cb = config_of(v, wdt, MHSA_BF16, maxt);
        mhsa_config cf = config_of(v, wdt, MHSA_F32, maxt);
        block_weights w = block_weights_make(&cb, &r);
        mhsa_block *bb = block_new(&cb), *bf = block_new(&cf);
        set_same_weights(bb, bf, &w);
        size_t n = (size_t)B * T_run * w.D;
        float *x = malloc(n * 4), *dy = malloc(n * 4);
        fill_uniform(&r, x, n, -1, 1);
        fill_uniform(&r, dy, n, -1, 1);
        block_outputs ob[2], of;
        char what[160];
        for (int nt = 1; nt <= 2; nt++) {
            ob[nt - 1] = block_outputs_run(bb, x, dy, B, T_run, 1, nt);
            of = block_outputs_run(bf, x, dy, B, T_run, 1, nt);
            snprintf(what, sizeof what, "%s weights %s variant %d, %d "
                     "thread(s), bf16 vs f32 compute",
                     mhsa_isa_name(all_isas[_i / 2]), wdt ? "bf16" : "f32",
                     vi, nt);
            block_outputs_compare(&ob[nt - 1], &of, 2e-2, what);
            double e = rel_err(ob[nt - 1].y, of.y, of.ny);
            ck_assert_msg(e > 1e-5, "%s: y within %.2g of fp32: not "
                          "rounded?", what, e);
            if (nt == 1)
                printf("%s: y %.2e dx %.2e dw_qkv %.2e from fp32\n", what,
                       e, rel_err(ob[0].dx, of.dx, of.ny),
                       rel_err(ob[0].gw, of.gw, of.ngw));
            block_outputs_free(&of);
        }
        snprintf(what, sizeof what, "%s weights %s variant %d, 1 vs 2 "
                 "threads", mhsa_isa_name(all_isas[_i / 2]),
                 wdt ? "bf16" : "f32", vi);
        block_outputs_compare(&ob[0], &ob[1], 0.0, what);
        block_outputs_free(&ob[0]);
        block_outputs_free(&ob[1]);
        free(x);
        free(dy);
        block_weights_free(&w);
        mhsa_block_destroy(bb);
        mhsa_block_destroy(bf);
    }
    T_run = T;
}
END_TEST

// compute_dtype 0 is MHSA_F32 (the default); F16 and unknown values fail.
START_TEST(invalid_compute_dtype)
{
    static const int bad[] = { MHSA_F16, -1, 3, 7, 1000 };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mhsa_config c = config_of(&variants[0], MHSA_F32, MHSA_F32, MAXT);
        c.compute_dtype = bad[i];
        mhsa_block *b = (mhsa_block *)&c;   // must stay untouched
        ck_assert_int_eq(mhsa_block_create(&c, &b), MHSA_ERR_INVALID_ARG);
        ck_assert(b == (mhsa_block *)&c);
        char want[64];
        snprintf(want, sizeof want, "compute_dtype = %d", bad[i]);
        ck_assert_msg(strstr(mhsa_last_error(), want), "message '%s' does "
                      "not name %s", mhsa_last_error(), want);
    }
    for (int w = 0; w < 3; w++) {   // every weight type computes in BF16
        mhsa_config c = config_of(&variants[1], (mhsa_dtype)w, MHSA_BF16,
                                  MAXT);
        mhsa_block *b = block_new(&c);
        ck_assert_int_eq(mhsa_block_config(b)->compute_dtype, MHSA_BF16);
        mhsa_block_destroy(b);
    }
}
END_TEST

int main(void)
{
    Suite *s = suite_create("compute_bf16");
    TCase *tc = tcase_create("compute_bf16");
    tcase_add_loop_test(tc, bf16_block_near_f32_block, 0, 2 * N_ISAS);
    tcase_add_test(tc, invalid_compute_dtype);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
