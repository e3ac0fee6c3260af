// test_step_threads.c — the one-token step (mhsa_forward_cached with B = 1,
// t_new = 1, run in one parallel region: api/cached_step.c) and the GPT's
// decoding step give the same bits on 1, 2 and 3 OpenMP threads, at sizes
// over the work threshold (core/threads.h), so the 2- and 3-thread runs
// really split the rows of both projections and the key chunks; and the
// steps agree with one prefill of the same tokens (the general pipeline,
// whose GEMM sums in another order: within 1e-4).
//
// Steps called from inside the application's own parallel region bind to
// teams of their own.
//
// Shapes: GQA with RoPE over 300 cached keys (two decode chunks per kv
// head), in each weight and cache type; a sliding window; biases without
// RoPE (the plain split); MQA.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mhsa.h"
#include "mhsa_train.h"
#include "util.h"

typedef struct step_case {
    int D, H, Hkv, rope, bias, window;
    mhsa_dtype wdt, kv;
} step_case;

static const step_case cases[] = {
    { 192, 6, 2, 1, 0, 0, MHSA_F32, MHSA_F32 },
    { 192, 6, 2, 1, 0, 0, MHSA_F16, MHSA_F16 },
    { 192, 6, 2, 1, 0, 0, MHSA_BF16, MHSA_BF16 },
    { 192, 6, 2, 1, 0, 200, MHSA_F32, MHSA_F32 },
    { 128, 4, 4, 0, 1, 0, MHSA_F32, MHSA_F32 },
    { 256, 8, 1, 1, 1, 0, MHSA_F16, MHSA_F32 },
};
enum { N_CASES = sizeof cases / sizeof cases[0] };
enum { PREFILL = 296, STEPS = 4, T = PREFILL + STEPS };

// The outputs of STEPS one-token steps after a prefill of PREFILL tokens,
// on `threads` threads (the workspace sized for them); with `all`, one
// prefill of all T tokens instead (its last STEPS rows).
static void run_case(const step_case *c, int threads, int all,
                     const float *x, float *out)
{
    omp_set_num_threads(threads);
    mhsa_config cfg = { c->D, c->H, T, 1, c->bias };
    cfg.n_kv_heads = c->Hkv;
    cfg.rope_dim = c->rope ? c->D / c->H : 0;
    cfg.window = c->window;
    cfg.weight_dtype = c->wdt;
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *kv = NULL;
    mhsa_kv_config kc = { 1, T, c->kv };
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(blk, 11), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &kv), MHSA_OK);
    size_t D = (size_t)c->D;
    float *y = malloc((size_t)T * D * sizeof(float));
    if (all) {
        ck_assert_int_eq(mhsa_forward_cached(blk, ws, kv, x, 1, T, y),
                         MHSA_OK);
        memcpy(out, y + (size_t)PREFILL * D, STEPS * D * sizeof(float));
    } else {
        ck_assert_int_eq(mhsa_forward_cached(blk, ws, kv, x, 1, PREFILL, y),
                         MHSA_OK);
        for (int s = 0; s < STEPS; s++)
            ck_assert_msg(mhsa_forward_cached(blk, ws, kv,
                                              x + (PREFILL + s) * D, 1, 1,
                                              out + s * D) == MHSA_OK,
                          "%s", mhsa_last_error());
        ck_assert_int_eq(mhsa_kv_cache_len(kv), T);
    }
    free(y);
    mhsa_kv_cache_destroy(kv);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

START_TEST(one_token_step_same_bits_on_1_2_3_threads)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    int saved = omp_get_max_threads();
    for (int ci = 0; ci < N_CASES; ci++) {
        const step_case *c = &cases[ci];
        if (test_quick() && ci % 2)
            continue;
        size_t D = (size_t)c->D, n = STEPS * D;
        float *x = malloc((size_t)T * D * sizeof(float));
        float *y[3], *ref = malloc(n * sizeof(float));
        rng r = { 40 + (uint64_t)ci };
        fill_uniform(&r, x, (size_t)T * D, -1, 1);
        for (int t = 0; t < 3; t++) {
            y[t] = malloc(n * sizeof(float));
            run_case(c, t + 1, 0, x, y[t]);
        }
        run_case(c, 1, 1, x, ref);
        for (int t = 1; t < 3; t++)
            ck_assert_msg(!memcmp(y[0], y[t], n * sizeof(float)),
                          "%s case %d: step bits differ on 1 and %d threads",
                          mhsa_isa_name(all_isas[_i]), ci, t + 1);
        double e = rel_err(y[0], ref, n);
        ck_assert_msg(all_finite(y[0], n) && e < 1e-4,
                      "%s case %d: steps vs one prefill: err %.3g",
                      mhsa_isa_name(all_isas[_i]), ci, e);
        for (int t = 0; t < 3; t++)
            free(y[t]);
        free(ref);
        free(x);
    }
    omp_set_num_threads(saved);
    mhsa_select_isa(MHSA_ISA_AUTO);
}
END_TEST

// The GPT's decoding step (layer norms, the block's one-token step, the
// MLP's one-row products, the head) over the threshold: logits bit for bit
// equal on 1, 2 and 3 threads.
START_TEST(gpt_decode_same_bits_on_1_2_3_threads)
{
    enum { GT = 160, GSTEPS = 3 };
    float logits[3][GSTEPS][256];
    int32_t tok[GT];
    for (int i = 0; i < GT; i++)
        tok[i] = (i * 37 + 11) % 256;
    int saved = omp_get_max_threads();
    for (int t = 0; t < 3; t++) {
        omp_set_num_threads(t + 1);
        mhsa_gpt_config c = { 0 };
        c.vocab = 256;
        c.n_layer = 2;
        c.n_embd = 192;
        c.n_head = 6;
        c.block_size = GT;
        c.max_batch = 1;
        mhsa_gpt *g = NULL;
        mhsa_gpt_cache *cache = NULL;
        ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_OK);
        ck_assert_int_eq(mhsa_gpt_init_random(g, 3), MHSA_OK);
        ck_assert_int_eq(mhsa_gpt_cache_create(g, GT, &cache), MHSA_OK);
        ck_assert_int_eq(mhsa_gpt_forward_cached(g, cache, tok, GT - GSTEPS,
                                                 logits[t][0]), MHSA_OK);
        for (int s = 0; s < GSTEPS; s++)
            ck_assert_int_eq(mhsa_gpt_forward_cached(
                                 g, cache, tok + GT - GSTEPS + s, 1,
                                 logits[t][s]), MHSA_OK);
        mhsa_gpt_cache_destroy(cache);
        mhsa_gpt_destroy(g);
    }
    for (int t = 1; t < 3; t++)
        ck_assert_msg(!memcmp(logits[0], logits[t], sizeof logits[0]),
                      "GPT decode logits differ on 1 and %d threads", t + 1);
    ck_assert(all_finite(&logits[0][0][0], GSTEPS * 256));
    omp_set_num_threads(saved);
}
END_TEST

// Calls from inside the application's own parallel region: each of its
// two threads decodes its own sequence with its own block, workspace and
// cache, a different number of steps, at a size under the threshold (the
// step runs on the calling thread). The step's constructs must bind to a
// team of its own, not to the application's: the outputs equal those of
// the same calls made alone.
START_TEST(steps_inside_an_application_region)
{
    enum { ND = 32, NT = 24 };
    mhsa_config cfg = { ND, 4, NT, 1, 1 };
    float x[NT * ND], alone[2][NT * ND], inside[2][NT * ND];
    rng r = { 77 };
    fill_uniform(&r, x, NT * ND, -1, 1);
    for (int pass = 0; pass < 2; pass++)
#pragma omp parallel num_threads(2) if (pass == 1)
    {
        for (int me = 0; me < 2; me++) {
            if (pass == 1 && me != omp_get_thread_num())
                continue;
            mhsa_block *blk = NULL;
            mhsa_workspace *ws = NULL;
            mhsa_kv_cache *kv = NULL;
            int ok = mhsa_block_create(&cfg, &blk) == MHSA_OK &&
                     mhsa_block_init_random(blk, 5) == MHSA_OK &&
                     mhsa_workspace_create(blk, 1, &ws) == MHSA_OK &&
                     mhsa_kv_cache_create(blk, 1, NT, &kv) == MHSA_OK;
            float *out = pass ? inside[me] : alone[me];
            int steps = me ? NT : NT / 2;   // unequal counts
            for (int s = 0; ok && s < steps; s++)
                ok = mhsa_forward_cached(blk, ws, kv, x + s * ND, 1, 1,
                                         out + s * ND) == MHSA_OK;
            if (!ok)
                out[0] = NAN;
            mhsa_kv_cache_destroy(kv);
            mhsa_workspace_destroy(ws);
            mhsa_block_destroy(blk);
        }
    }
    ck_assert(all_finite(alone[0], NT / 2 * ND));
    ck_assert(all_finite(alone[1], NT * ND));
    ck_assert_msg(!memcmp(alone[0], inside[0], NT / 2 * ND * sizeof(float)) &&
                  !memcmp(alone[1], inside[1], NT * ND * sizeof(float)),
                  "steps inside an application's region differ");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("step_threads");
    ADD_CASE(s, one_token_step_same_bits_on_1_2_3_threads, N_ISAS, NULL);
    TCase *tc = tcase_create("gpt");
    tcase_add_test(tc, gpt_decode_same_bits_on_1_2_3_threads);
    tcase_add_test(tc, steps_inside_an_application_region);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
