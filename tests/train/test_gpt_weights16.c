// test_gpt_weights16.c — the GPT with 16-bit weights (mhsa_gpt_config.
// weight_dtype): its logits against an F32 GPT whose matrices hold
// the same weights rounded first, for the full forward (GEMM) and for a
// cached prefill and decoding steps (matrix-vector kernels), on every ISA
// table; the same bits at 1 and 2 threads; mhsa_gpt_weight_bytes about
// halves; F16 overflow is inf and the logits follow IEEE; unknown values and
// training are refused naming the field (and no training state is held).
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/half.h"
#include "mhsa_train.h"
#include "util.h"

static const mhsa_dtype dts[] = { MHSA_F16, MHSA_BF16 };

enum { B = 2, T = 11, PRE = 5 };

static mhsa_gpt_config cfg_of(int variant, mhsa_dtype wdt)
{
    mhsa_gpt_config c = { 0 };
    c.vocab = 40;
    c.n_layer = 2;
    c.n_embd = 48;
    c.n_head = 4;
    c.block_size = T + 1;
    c.max_batch = B;
    if (variant == 1) {   // rotary positions, tied head, no c_proj
        c.n_layer = 1;
        c.n_embd = 32;
        c.n_head = 2;
        c.rope_dim = 8;
        c.tie_embeddings = 1;
        c.no_proj = 1;
    } else if (variant == 2) {
        // wide enough that a decoding step's MLP rows (768 x 192) and a
        // prefill's rows split over 2 threads (above the work threshold)
        c.vocab = 256;
        c.n_layer = 1;
        c.n_embd = 192;
        c.n_head = 4;
    }
    c.weight_dtype = (int)wdt;
    return c;
}
enum { N_VARIANTS = 3 };

static mhsa_gpt *make(const mhsa_gpt_config *c)
{
    mhsa_gpt *g = NULL;
    ck_assert_msg(mhsa_gpt_create(c, &g) == MHSA_OK, "%s",
                  mhsa_last_error());
    return g;
}

static float round_to(float v, mhsa_dtype dt)
{
    return dt == MHSA_F16 ? mhsa_f16_to_f32(mhsa_f32_to_f16(v))
                          : mhsa_bf16_to_f32(mhsa_f32_to_bf16(v));
}

// GPT-2's initialisation plus noise on every tensor (so LayerNorms and
// biases are not all alike), the same for every model from seed.
static void fill_params(mhsa_gpt *g, uint64_t seed)
{
    ck_assert_int_eq(mhsa_gpt_init_random(g, seed), MHSA_OK);
    rng r = { seed + 100 };
    float *p = mhsa_gpt_params(g);
    for (size_t j = 0; j < mhsa_gpt_n_params(g); j++)
        p[j] += rng_uniform(&r, -0.05f, 0.05f);
}

// Every rank-2 tensor of g rounded to dt in place (the F32 reference).
static void round_matrices(mhsa_gpt *g, mhsa_dtype dt)
{
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        ck_assert_int_eq(mhsa_gpt_get_tensor(g, i, &t), MHSA_OK);
        if (t.rank == 2)
            for (size_t j = 0; j < t.numel; j++)
                t.data[j] = round_to(t.data[j], dt);
    }
}

// Everything the model computes on one token stream: the full forward's
// logits (B, T, V), then on sequence 0 a cached prefill of PRE tokens and
// one decoding step for each of the others ((T - PRE + 1) rows of V).
typedef struct outputs {
    float *full, *cached;
} outputs;

static outputs run(mhsa_gpt *g, const int32_t *tok)
{
    size_t V = (size_t)mhsa_gpt_get_config(g)->vocab;
    outputs o = { malloc(B * T * V * 4), malloc((T - PRE + 1) * V * 4) };
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, NULL, B, T, 0, NULL), MHSA_OK);
    memcpy(o.full, mhsa_gpt_logits(g), B * T * V * 4);
    mhsa_gpt_cache *c = NULL;
    ck_assert_int_eq(mhsa_gpt_cache_create(g, T, &c), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, c, tok, PRE, o.cached),
                     MHSA_OK);
    for (int t = PRE; t < T; t++)
        ck_assert_int_eq(mhsa_gpt_forward_cached(g, c, tok + t, 1,
                                                 o.cached + (size_t)(t - PRE + 1) * V),
                         MHSA_OK);
    mhsa_gpt_cache_destroy(c);
    return o;
}

static void outputs_free(outputs *o)
{
    free(o->full);
    free(o->cached);
}

// _i = isa * 2 + dtype. The products read the same values in both models,
// within the contract's 1e-4: a forward of a few rows over 16-bit weights
// streams W once through kv_dot (mhsa_gemv_rows_16m) where the F32 model
// runs the GEMM, so their sums run in other orders; the scalar table's
// steps (gemv_n16 sums a row in gemv_n's order) are the same bits.
START_TEST(rounded_gpt_equals_f32_gpt)
{
    if (!kernels_or_skip(_i / 2))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i / 2]), MHSA_OK);
    mhsa_dtype dt = dts[_i % 2];
    for (int v = 0; v < N_VARIANTS; v++) {
        mhsa_gpt_config c16 = cfg_of(v, dt), c32 = cfg_of(v, MHSA_F32);
        mhsa_gpt *g16 = make(&c16), *g32 = make(&c32);
        fill_params(g16, 7 + (uint64_t)v);
        size_t np = mhsa_gpt_n_params(g16);
        memcpy(mhsa_gpt_params(g32), mhsa_gpt_params(g16), np * 4);
        round_matrices(g32, dt);
        rng r = { 3 + (uint64_t)v };
        int32_t tok[B * T];
        for (int i = 0; i < B * T; i++)
            tok[i] = rng_int(&r, 0, c16.vocab - 1);
        size_t V = (size_t)c16.vocab;
        outputs o16 = run(g16, tok), o32 = run(g32, tok);
        // The 16-bit model keeps the fp32 parameters it was given.
        float *p16 = mhsa_gpt_params(g16);
        ck_assert(memcmp(p16, mhsa_gpt_params(g32), np * 4) != 0);
        double e_full = rel_err(o16.full, o32.full, B * T * V);
        double e_cached = rel_err(o16.cached, o32.cached,
                                  (T - PRE + 1) * V);
        ck_assert_msg(e_full <= 1e-4 && e_cached <= 1e-4, "variant %d %s: "
                      "full %g, cached %g", v, mhsa_isa_name(all_isas[_i / 2]),
                      e_full, e_cached);
        if (all_isas[_i / 2] == MHSA_ISA_SCALAR)
            ck_assert_msg(!memcmp(o16.cached, o32.cached,
                                  (T - PRE + 1) * V * 4),
                          "variant %d: scalar steps differ (%g)", v,
                          e_cached);
        // The rounding is visible: an F32 model with the unrounded weights
        // gives other logits (the comparison above could not pass by
        // ignoring weight_dtype).
        mhsa_gpt *u = make(&c32);
        memcpy(mhsa_gpt_params(u), p16, np * 4);
        outputs ou = run(u, tok);
        ck_assert(rel_err(ou.full, o32.full, B * T * V) > 1e-6);
        outputs_free(&ou);
        mhsa_gpt_destroy(u);
        outputs_free(&o16);
        outputs_free(&o32);
        mhsa_gpt_destroy(g16);
        mhsa_gpt_destroy(g32);
    }
}
END_TEST

// The same bits at 1 and 2 threads (the variant whose rows split).
START_TEST(same_bits_at_1_and_2_threads)
{
    mhsa_dtype dt = dts[_i];
    mhsa_gpt_config c = cfg_of(2, dt);
    omp_set_num_threads(2);
    mhsa_gpt *g = make(&c);
    fill_params(g, 21);
    rng r = { 5 };
    int32_t tok[B * T];
    for (int i = 0; i < B * T; i++)
        tok[i] = rng_int(&r, 0, c.vocab - 1);
    size_t V = (size_t)c.vocab;
    omp_set_num_threads(1);
    outputs o1 = run(g, tok);
    omp_set_num_threads(2);
    outputs o2 = run(g, tok);
    ck_assert(!memcmp(o1.full, o2.full, B * T * V * 4));
    ck_assert(!memcmp(o1.cached, o2.cached, (T - PRE + 1) * V * 4));
    outputs_free(&o1);
    outputs_free(&o2);
    mhsa_gpt_destroy(g);
}
END_TEST

// Bytes of the stored weights: rank-2 tensors in 2 bytes, the rest in 4.
static size_t expected_bytes(mhsa_gpt *g, size_t matrix_bytes)
{
    size_t n = 0;
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        ck_assert_int_eq(mhsa_gpt_get_tensor(g, i, &t), MHSA_OK);
        n += t.numel * (t.rank == 2 ? matrix_bytes : 4);
    }
    return n;
}

START_TEST(weight_bytes_halve)
{
    for (int v = 0; v < N_VARIANTS; v++) {
        mhsa_gpt_config c = cfg_of(v, MHSA_F32);
        mhsa_gpt *g32 = make(&c);
        // no_proj: the blocks hold a fixed identity (D, D) and zero bias
        size_t D = (size_t)c.n_embd, id = c.no_proj ? D * D : 0;
        size_t b32 = mhsa_gpt_weight_bytes(g32);
        ck_assert_uint_eq(b32, 4 * mhsa_gpt_n_params(g32) + 4 * id +
                                   (c.no_proj ? 4 * D : 0));
        for (int d = 0; d < 2; d++) {
            c.weight_dtype = (int)dts[d];
            mhsa_gpt *g = make(&c);
            size_t b16 = mhsa_gpt_weight_bytes(g);
            ck_assert_uint_eq(b16, expected_bytes(g, 2) + 2 * id +
                                       (c.no_proj ? 4 * D : 0));
            ck_assert_msg((double)b16 < 0.53 * (double)b32, "variant %d: "
                          "%zu of %zu bytes", v, b16, b32);
            mhsa_gpt_destroy(g);
        }
        mhsa_gpt_destroy(g32);
    }
    ck_assert_uint_eq(mhsa_gpt_weight_bytes(NULL), 0);
}
END_TEST

START_TEST(bad_values_and_training_refused)
{
    static const int bad[] = { 3, -1, 1000 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mhsa_gpt_config c = cfg_of(0, MHSA_F32);
        c.weight_dtype = bad[i];
        mhsa_gpt *g = NULL;
        ck_assert_int_eq(mhsa_gpt_create(&c, &g), MHSA_ERR_INVALID_ARG);
        ck_assert_ptr_null(g);
        ck_assert_msg(strstr(mhsa_last_error(), "weight_dtype"), "%s",
                      mhsa_last_error());
    }
    // A 16-bit model evaluates a loss but does not train.
    mhsa_gpt_config c = cfg_of(0, MHSA_BF16);
    mhsa_gpt *g = make(&c);
    fill_params(g, 3);
    int32_t tok[T], tgt[T];
    for (int t = 0; t < T; t++) {
        tok[t] = t % c.vocab;
        tgt[t] = (t + 1) % c.vocab;
    }
    float loss = -1;
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 1, T, 0, &loss), MHSA_OK);
    ck_assert(isfinite(loss) && loss > 0);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(mhsa_last_error(), "weight_dtype") &&
                  strstr(mhsa_last_error(), "mhsa_gpt_backward"), "%s",
                  mhsa_last_error());
    size_t np = mhsa_gpt_n_params(g);
    float *before = malloc(np * 4);
    memcpy(before, mhsa_gpt_params(g), np * 4);
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    ck_assert_int_eq(mhsa_gpt_step(g, &oc, NULL), MHSA_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "weight_dtype"));
    ck_assert(!memcmp(before, mhsa_gpt_params(g), np * 4));
    ck_assert_int_eq(mhsa_gpt_get_step(g), 0);
    // No training state is held (the bytes of an inference model).
    ck_assert_ptr_null(mhsa_gpt_grads(g));
    ck_assert_ptr_null(mhsa_gpt_moment1(g));
    ck_assert_ptr_null(mhsa_gpt_moment2(g));
    mhsa_gpt_tensor t;
    ck_assert_int_eq(mhsa_gpt_get_tensor(g, 0, &t), MHSA_OK);
    ck_assert_ptr_null(t.grad);
    ck_assert_ptr_nonnull(t.data);
    ck_assert_int_eq(mhsa_gpt_init_random(g, 4), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_save(g, "/nonexistent/m.st", 1, NULL, 0),
                     MHSA_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "with_optim"));
    ck_assert_int_eq(mhsa_gpt_load(g, "/nonexistent/m.st", 1),
                     MHSA_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "weight_dtype"));
    free(before);
    mhsa_gpt_destroy(g);
}
END_TEST

// An F16 weight beyond 65504 is stored as inf, in the blocks (c_q) and in
// the model's own matrices (lm_head, c_fc): the logits are those of an F32
// model holding inf there (IEEE: inf and NaN where they reach), no clamp.
START_TEST(f16_overflow_is_inf)
{
    mhsa_gpt_config c16 = cfg_of(0, MHSA_F16), c32 = cfg_of(0, MHSA_F32);
    static const char *const names[] = {
        "lm_head.weight", "h.1.mlp.c_fc.weight", "h.0.attn.c_q.weight",
    };
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        mhsa_gpt *g16 = make(&c16), *g32 = make(&c32);
        fill_params(g16, 11);
        size_t np = mhsa_gpt_n_params(g16);
        memcpy(mhsa_gpt_params(g32), mhsa_gpt_params(g16), np * 4);
        round_matrices(g32, MHSA_F16);
        for (int i = 0; i < mhsa_gpt_n_tensors(g16); i++) {
            mhsa_gpt_tensor t16, t32;
            mhsa_gpt_get_tensor(g16, i, &t16);
            mhsa_gpt_get_tensor(g32, i, &t32);
            if (strcmp(t16.name, names[k]))
                continue;
            t16.data[3 * t16.shape[1]] = 1e5f;
            t32.data[3 * t32.shape[1]] = INFINITY;
        }
        int32_t tok[T];
        for (int t = 0; t < T; t++)
            tok[t] = (5 * t + 1) % c16.vocab;
        size_t V = (size_t)c16.vocab;
        float *a = malloc(T * V * 4);
        ck_assert_int_eq(mhsa_gpt_forward(g16, tok, NULL, 1, T, 0, NULL),
                         MHSA_OK);
        memcpy(a, mhsa_gpt_logits(g16), T * V * 4);
        ck_assert_int_eq(mhsa_gpt_forward(g32, tok, NULL, 1, T, 0, NULL),
                         MHSA_OK);
        const float *b = mhsa_gpt_logits(g32);
        ck_assert_msg(!all_finite(a, T * V), "%s: no inf reached the "
                      "logits", names[k]);
        for (size_t j = 0; j < T * V; j++)
            ck_assert_msg(isnan(a[j]) == isnan(b[j]) &&
                          (isnan(a[j]) || a[j] == b[j] ||
                           fabsf(a[j] - b[j]) <= 1e-4f * fmaxf(1, fabsf(b[j]))),
                          "%s: logit %zu is %g, the F32 model's %g",
                          names[k], j, a[j], b[j]);
        free(a);
        mhsa_gpt_destroy(g16);
        mhsa_gpt_destroy(g32);
    }
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("gpt_weights16");
    TCase *tc = tcase_create("weights16");
    tcase_add_loop_test(tc, rounded_gpt_equals_f32_gpt, 0, 2 * N_ISAS);
    tcase_add_loop_test(tc, same_bits_at_1_and_2_threads, 0, 2);
    tcase_add_test(tc, weight_bytes_halve);
    tcase_add_test(tc, bad_values_and_training_refused);
    tcase_add_test(tc, f16_overflow_is_inf);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
