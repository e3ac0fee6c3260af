// test_weights16.c — 16-bit weights (API.md "Additions for 0.3 / 16-bit
// weights"): an F16 / BF16 block against an F32 block holding the same
// weights rounded first (forward with attention weights, backward, cached
// prefill and decode) within 1e-4 on every ISA at 1 and 2 threads, and
// bitwise the same at 1 and 2 threads; get_weights gives the rounded
// values; init_random rounds like set_weights; F16 overflow is inf and the
// outputs follow IEEE (no clamp); weight_bytes; unknown weight_dtype
// values; the safetensors round trip in the stored type.
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/half.h"
#include "block_outputs.h"
#include "util.h"

static const mhsa_dtype dts[] = { MHSA_F16, MHSA_BF16 };
static const char *const dt_names[] = { "f16", "bf16" };

typedef struct variant {
    int D, H, Hkv, causal, bias, rope_dim, window;
} variant;

static const variant variants[] = {
    { 64, 4, 0, 0, 1, 0, 0 },      // MHA, bias, not causal
    { 96, 6, 2, 1, 0, 8, 7 },      // GQA, RoPE, window, no bias
    { 40, 5, 1, 1, 1, 0, 0 },      // MQA
    // GQA with RoPE and no bias (as SmolLM2) at a width whose QKV one-row
    // product runs on 2 threads (over the work threshold) with 468 rows,
    // off 8 and 64: the threads' row split
    { 312, 12, 3, 1, 0, 26, 0 },
};
enum { N_VAR = sizeof variants / sizeof variants[0], B = 2, T = 11,
       MAXT = 16 };

static mhsa_config config_of(const variant *v, mhsa_dtype wdt)
{
    mhsa_config c = { v->D, v->H, MAXT, v->causal, v->bias };
    c.n_kv_heads = v->Hkv;
    c.rope_dim = v->rope_dim;
    c.window = v->window;
    c.weight_dtype = (int)wdt;
    return c;
}

static float round_to(float v, mhsa_dtype dt)
{
    return dt == MHSA_F16 ? mhsa_f16_to_f32(mhsa_f32_to_f16(v))
                          : mhsa_bf16_to_f32(mhsa_f32_to_bf16(v));
}

static block_weights weights_rounded(const block_weights *src, mhsa_dtype dt)
{
    block_weights w = *src;
    w.w_qkv = malloc(w.nqkv * w.D * 4);
    w.w_out = malloc(w.D * w.D * 4);
    w.b_qkv = malloc(w.nqkv * 4);
    w.b_out = malloc(w.D * 4);
    for (size_t i = 0; i < w.nqkv * w.D; i++)
        w.w_qkv[i] = round_to(src->w_qkv[i], dt);
    for (size_t i = 0; i < w.D * w.D; i++)
        w.w_out[i] = round_to(src->w_out[i], dt);
    memcpy(w.b_qkv, src->b_qkv, w.nqkv * 4);   // biases stay fp32
    memcpy(w.b_out, src->b_out, w.D * 4);
    return w;
}

// _i = isa * 2 + dtype.
START_TEST(rounded_block_equals_f32_block)
{
    if (!kernels_or_skip(_i / 2))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i / 2]), MHSA_OK);
    mhsa_dtype dt = dts[_i % 2];
    for (int vi = 0; vi < N_VAR; vi++) {
        rng r = { 1000 + (uint64_t)vi };
        mhsa_config c16 = config_of(&variants[vi], dt);
        mhsa_config c32 = config_of(&variants[vi], MHSA_F32);
        block_weights w = block_weights_make(&c16, &r), wr = weights_rounded(&w, dt);
        mhsa_block *b16 = block_new(&c16), *b32 = block_new(&c32);
        ck_assert_int_eq(mhsa_block_set_weights(b16, w.w_qkv, w.b_qkv,
                                                w.w_out, w.b_out), MHSA_OK);
        ck_assert_int_eq(mhsa_block_set_weights(b32, wr.w_qkv, wr.b_qkv,
                                                wr.w_out, wr.b_out), MHSA_OK);
        // get_weights: exactly the rounded values (biases as given)
        block_weights got = weights_rounded(&w, dt);
        ck_assert_int_eq(mhsa_block_get_weights(b16, got.w_qkv, got.b_qkv,
                                                got.w_out, got.b_out),
                         MHSA_OK);
        ck_assert(!memcmp(got.w_qkv, wr.w_qkv, w.nqkv * w.D * 4) &&
                  !memcmp(got.w_out, wr.w_out, w.D * w.D * 4));
        if (c16.bias)
            ck_assert(!memcmp(got.b_qkv, w.b_qkv, w.nqkv * 4) &&
                      !memcmp(got.b_out, w.b_out, w.D * 4));
        size_t D = w.D, n = (size_t)B * T * D;
        float *x = malloc(n * 4), *dy = malloc(n * 4);
        fill_uniform(&r, x, n, -1, 1);
        fill_uniform(&r, dy, n, -1, 1);
        block_outputs o16[2], o32[2];
        char what[160];
        for (int nt = 1; nt <= 2; nt++) {
            o16[nt - 1] = block_outputs_run(b16, x, dy, B, T, 0, nt);
            o32[nt - 1] = block_outputs_run(b32, x, dy, B, T, 0, nt);
            snprintf(what, sizeof what, "%s %s variant %d, %d thread(s), vs "
                     "F32 with rounded weights", mhsa_isa_name(all_isas[_i / 2]),
                     dt_names[_i % 2], vi, nt);
            block_outputs_compare(&o16[nt - 1], &o32[nt - 1], 1e-4, what);
        }
        snprintf(what, sizeof what, "%s %s variant %d, 1 vs 2 threads",
                 mhsa_isa_name(all_isas[_i / 2]), dt_names[_i % 2], vi);
        block_outputs_compare(&o16[0], &o16[1], 0.0, what);
        snprintf(what, sizeof what, "%s f32 variant %d, 1 vs 2 threads",
                 mhsa_isa_name(all_isas[_i / 2]), vi);
        block_outputs_compare(&o32[0], &o32[1], 0.0, what);
        for (int t = 0; t < 2; t++) {
            block_outputs_free(&o16[t]);
            block_outputs_free(&o32[t]);
        }
        free(x);
        free(dy);
        block_weights_free(&w);
        block_weights_free(&wr);
        block_weights_free(&got);
        mhsa_block_destroy(b16);
        mhsa_block_destroy(b32);
    }
}
END_TEST

// init_random: the F32 block's values, rounded.
START_TEST(init_random_rounds)
{
    for (int w = 0; w < 2; w++) {
        mhsa_config c16 = config_of(&variants[1], dts[w]);
        mhsa_config c32 = config_of(&variants[1], MHSA_F32);
        mhsa_block *b16 = block_new(&c16), *b32 = block_new(&c32);
        ck_assert_int_eq(mhsa_block_init_random(b16, 5), MHSA_OK);
        ck_assert_int_eq(mhsa_block_init_random(b32, 5), MHSA_OK);
        rng r = { 1 };
        block_weights a = block_weights_make(&c16, &r), b = block_weights_make(&c16, &r);
        mhsa_block_get_weights(b16, a.w_qkv, a.b_qkv, a.w_out, a.b_out);
        mhsa_block_get_weights(b32, b.w_qkv, b.b_qkv, b.w_out, b.b_out);
        size_t bad = 0;
        for (size_t i = 0; i < a.nqkv * a.D; i++)
            bad += a.w_qkv[i] != round_to(b.w_qkv[i], dts[w]);
        for (size_t i = 0; i < a.D * a.D; i++)
            bad += a.w_out[i] != round_to(b.w_out[i], dts[w]);
        ck_assert_msg(bad == 0, "%s init_random: %zu weights not the "
                      "rounded F32 ones", dt_names[w], bad);
        block_weights_free(&a);
        block_weights_free(&b);
        mhsa_block_destroy(b16);
        mhsa_block_destroy(b32);
    }
}
END_TEST

// A weight beyond 65504 is +-inf in an F16 block (no clamp) and the
// outputs are those of an F32 block holding inf there: the same NaN/inf
// positions, the finite values within 1e-4. In BF16 it is finite.
START_TEST(f16_overflow_is_inf)
{
    mhsa_config c16 = config_of(&variants[0], MHSA_F16);
    mhsa_config cb = config_of(&variants[0], MHSA_BF16);
    mhsa_config c32 = config_of(&variants[0], MHSA_F32);
    rng r = { 3 };
    block_weights w = block_weights_make(&c16, &r);
    w.w_out[0] = 70000.0f;    // row 0 of w_out: output column 0
    w.w_out[5] = -1e6f;
    block_weights wr = weights_rounded(&w, MHSA_F16);
    ck_assert(wr.w_out[0] == INFINITY && wr.w_out[5] == -INFINITY);
    mhsa_block *b16 = block_new(&c16), *bb = block_new(&cb),
               *b32 = block_new(&c32);
    mhsa_block_set_weights(b16, w.w_qkv, w.b_qkv, w.w_out, w.b_out);
    mhsa_block_set_weights(bb, w.w_qkv, w.b_qkv, w.w_out, w.b_out);
    mhsa_block_set_weights(b32, wr.w_qkv, wr.b_qkv, wr.w_out, wr.b_out);
    block_weights got = weights_rounded(&w, MHSA_F16);
    mhsa_block_get_weights(b16, got.w_qkv, got.b_qkv, got.w_out, got.b_out);
    ck_assert(got.w_out[0] == INFINITY && got.w_out[5] == -INFINITY);
    mhsa_block_get_weights(bb, got.w_qkv, got.b_qkv, got.w_out, got.b_out);
    ck_assert(isfinite(got.w_out[0]) && fabsf(got.w_out[0] - 70000) < 300);
    size_t D = w.D, n = (size_t)B * T * D;
    float *x = malloc(n * 4), *y16 = malloc(n * 4), *y32 = malloc(n * 4);
    fill_uniform(&r, x, n, -1, 1);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(b16, B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_forward(b16, ws, x, B, T, NULL, y16, NULL), MHSA_OK);
    mhsa_workspace_destroy(ws);
    ck_assert_int_eq(mhsa_workspace_create(b32, B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_forward(b32, ws, x, B, T, NULL, y32, NULL), MHSA_OK);
    mhsa_workspace_destroy(ws);
    size_t nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        ck_assert_msg(isnan(y16[i]) == isnan(y32[i]) &&
                      isinf(y16[i]) == isinf(y32[i]), "element %zu: %g vs "
                      "%g", i, y16[i], y32[i]);
        if (isfinite(y32[i]))
            ck_assert(fabsf(y16[i] - y32[i]) <= 1e-4f * (1 + fabsf(y32[i])));
        else
            nonfinite++;
    }
    ck_assert_msg(nonfinite >= (size_t)B * T, "column 0 should be inf/NaN "
                  "in every row (%zu non-finite)", nonfinite);
    free(x); free(y16); free(y32);
    block_weights_free(&w); block_weights_free(&wr); block_weights_free(&got);
    mhsa_block_destroy(b16); mhsa_block_destroy(bb); mhsa_block_destroy(b32);
}
END_TEST

START_TEST(weight_bytes_halve)
{
    ck_assert_uint_eq(mhsa_block_weight_bytes(NULL), 0);
    for (int vi = 0; vi < N_VAR; vi++) {
        const variant *v = &variants[vi];
        size_t D = (size_t)v->D, H = (size_t)v->H;
        size_t hkv = v->Hkv ? (size_t)v->Hkv : H;
        size_t nqkv = (H + 2 * hkv) * (D / H), nw = nqkv * D + D * D;
        size_t nb = v->bias ? nqkv + D : 0;
        mhsa_config c = config_of(v, MHSA_F32);
        mhsa_block *b = block_new(&c);
        ck_assert_uint_eq(mhsa_block_weight_bytes(b), 4 * nw + 4 * nb);
        mhsa_block_destroy(b);
        for (int w = 0; w < 2; w++) {
            c = config_of(v, dts[w]);
            b = block_new(&c);
            ck_assert_uint_eq(mhsa_block_weight_bytes(b), 2 * nw + 4 * nb);
            ck_assert((double)mhsa_block_weight_bytes(b) <
                      0.52 * (double)(4 * nw + 4 * nb));
            mhsa_block_destroy(b);
        }
    }
}
END_TEST

START_TEST(unknown_weight_dtype)
{
    static const int bad[] = { -1, 3, 7, 1000 };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        mhsa_config c = config_of(&variants[0], MHSA_F32);
        c.weight_dtype = bad[i];
        mhsa_block *b = (mhsa_block *)&c;   // must stay untouched
        ck_assert_int_eq(mhsa_block_create(&c, &b), MHSA_ERR_INVALID_ARG);
        ck_assert(b == (mhsa_block *)&c);
        char want[64];
        snprintf(want, sizeof want, "weight_dtype = %d", bad[i]);
        ck_assert_msg(strstr(mhsa_last_error(), want), "message '%s' does "
                      "not name %s", mhsa_last_error(), want);
    }
}
END_TEST

#if MHSA_TEST_SAFETENSORS
// The file's header entry of tensor `name` says dtype `dt`.
static int file_dtype_is(const char *path, const char *name, const char *dt)
{
    FILE *f = fopen(path, "rb");
    unsigned char len8[8];
    if (!f || fread(len8, 1, 8, f) != 8)
        return 0;
    size_t len = 0;
    for (int i = 7; i >= 0; i--)
        len = len << 8 | len8[i];
    char *h = calloc(len + 1, 1);
    int ok = h && fread(h, 1, len, f) == len;
    fclose(f);
    char key[128];
    snprintf(key, sizeof key, "\"%s\":{", name);
    char *e = ok ? strstr(h, key) : NULL;
    char want[64];
    snprintf(want, sizeof want, "\"dtype\":\"%s\"", dt);
    ok = e && !strncmp(e + strlen(key), want, strlen(want));
    free(h);
    return ok;
}

static long file_size(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fclose(f);
    return n;
}

// Saved in the stored type, loaded back exactly into 16-bit and F32
// blocks; the file takes about half the bytes.
START_TEST(safetensors_round_trip)
{
    char p16[64], p32[64];
    snprintf(p16, sizeof p16, "w16-%ld-a.safetensors", (long)getpid());
    snprintf(p32, sizeof p32, "w16-%ld-b.safetensors", (long)getpid());
    for (int w = 0; w < 2; w++)
        for (int names = 0; names < 3; names++) {
            mhsa_config c16 = config_of(&variants[names == 1 ? 1 : 0], dts[w]);
            mhsa_config c32 = c16;
            c32.weight_dtype = MHSA_F32;
            rng r = { 11 };
            block_weights wt = block_weights_make(&c16, &r);
            mhsa_block *b16 = block_new(&c16), *b32 = block_new(&c32);
            mhsa_block *back16 = block_new(&c16);
            mhsa_block_set_weights(b16, wt.w_qkv, wt.b_qkv, wt.w_out,
                                   wt.b_out);
            mhsa_block_set_weights(b32, wt.w_qkv, wt.b_qkv, wt.w_out,
                                   wt.b_out);
            ck_assert_msg(mhsa_block_save_safetensors_ex(b16, p16, "m.",
                          (mhsa_names)names) == MHSA_OK, "%s",
                          mhsa_last_error());
            ck_assert_int_eq(mhsa_block_save_safetensors_ex(b32, p32, "m.",
                             (mhsa_names)names), MHSA_OK);
            static const char *const wname[] = { "m.in_proj_weight",
                                                 "m.q_proj.weight",
                                                 "m.c_proj.weight" };
            ck_assert_msg(file_dtype_is(p16, wname[names], w ? "BF16" : "F16"),
                          "%s not stored as %s", wname[names], dt_names[w]);
            if (c16.bias)
                ck_assert(file_dtype_is(p16, names == 0 ? "m.in_proj_bias"
                                        : "m.c_proj.bias", "F32"));
            long s16 = file_size(p16), s32 = file_size(p32);
            ck_assert_msg(s16 > 0 && (double)s16 < 0.56 * (double)s32,
                          "file %ld bytes vs %ld for F32", s16, s32);
            mhsa_block *into32 = block_new(&c32);
            ck_assert_int_eq(mhsa_block_load_safetensors(into32, p16, "m."),
                             MHSA_OK);
            ck_assert_int_eq(mhsa_block_load_safetensors(back16, p16, "m."),
                             MHSA_OK);
            block_weights a = block_weights_make(&c16, &r), b = block_weights_make(&c16, &r),
                    want = weights_rounded(&wt, dts[w]);
            mhsa_block_get_weights(into32, a.w_qkv, a.b_qkv, a.w_out, a.b_out);
            mhsa_block_get_weights(back16, b.w_qkv, b.b_qkv, b.w_out, b.b_out);
            size_t nw = wt.nqkv * wt.D * 4, no = wt.D * wt.D * 4;
            ck_assert(!memcmp(a.w_qkv, want.w_qkv, nw) &&
                      !memcmp(a.w_out, want.w_out, no) &&
                      !memcmp(b.w_qkv, want.w_qkv, nw) &&
                      !memcmp(b.w_out, want.w_out, no));
            if (c16.bias)
                ck_assert(!memcmp(a.b_qkv, wt.b_qkv, wt.nqkv * 4) &&
                          !memcmp(b.b_out, wt.b_out, wt.D * 4));
            block_weights_free(&wt); block_weights_free(&a); block_weights_free(&b);
            block_weights_free(&want);
            mhsa_block_destroy(b16); mhsa_block_destroy(b32);
            mhsa_block_destroy(back16); mhsa_block_destroy(into32);
        }
    unlink(p16);
    unlink(p32);
}
END_TEST
#endif

int main(void)
{
    Suite *s = suite_create("weights16");
    TCase *tc = tcase_create("weights16");
    tcase_add_loop_test(tc, rounded_block_equals_f32_block, 0, 2 * N_ISAS);
    tcase_add_test(tc, init_random_rounds);
    tcase_add_test(tc, f16_overflow_is_inf);
    tcase_add_test(tc, weight_bytes_halve);
    tcase_add_test(tc, unknown_weight_dtype);
#if MHSA_TEST_SAFETENSORS
    tcase_add_test(tc, safetensors_round_trip);
#endif
    suite_add_tcase(s, tc);
    return run_suite(s);
}
