// test_kv_dtype.c — F16 and BF16 KV caches (API.md "KV cache storage
// type"): decode token by token and in chunks against PyTorch references
// computed from K and V rounded like the cache (tests/data/refs_variants) on
// every ISA at 1 and 2 threads; the memory they hold; keys a window blocks
// (NaN, or values beyond the F16 range) never read; invalid arguments.
//
// Test cases (run one alone: test_kv_dtype NAME...):
//   kv_dtype         the cases, bytes, blocked positions, F32 = create
//   kv_dtype_errors  NULL config, unknown dtypes
// (Some cases also use GQA, RoPE, windows and ragged lengths.)
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refrun.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const char *const dtype_cases[] = {
    "f16_dec_2x40x16x2",          "bf16_dec_2x40x16x2",
    "f16_dec_rope_gqa_2x35x32x4", "bf16_dec_rope_mqa_win_1x150x16x2",
    "f16_ragged_dec_3x30x16x4",
};

START_TEST(dtype_case)
{
    run_case_threads(dtype_cases[_i / N_ISAS], _i % N_ISAS);
}
END_TEST

static mhsa_kv_cache *cache_of(const mhsa_block *blk, int mb, int cap,
                               mhsa_dtype dt)
{
    mhsa_kv_config kc = { mb, cap, dt };
    mhsa_kv_cache *c = NULL;
    ck_assert_msg(mhsa_kv_cache_create_ex(blk, &kc, &c) == MHSA_OK,
                  "create_ex dtype %d: %s", (int)dt, mhsa_last_error());
    return c;
}

// The K/V part of a 16-bit cache is half that of F32 (and Hkv/H of it).
START_TEST(dtype_cache_bytes)
{
    for (int hkv = 8; hkv >= 2; hkv /= 4) {
        mhsa_config cfg = { 64, 8, 128, 1, 1 };
        cfg.n_kv_heads = hkv;
        mhsa_block *blk = NULL;
        ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
        size_t kv32 = 2 * 3 * 128 * (size_t)hkv * 8 * sizeof(float);
        mhsa_kv_cache *c32 = cache_of(blk, 3, 128, MHSA_F32);
        mhsa_kv_cache *c16 = cache_of(blk, 3, 128, MHSA_F16);
        mhsa_kv_cache *cb16 = cache_of(blk, 3, 128, MHSA_BF16);
        mhsa_kv_cache *old = NULL;
        ck_assert_int_eq(mhsa_kv_cache_create(blk, 3, 128, &old), MHSA_OK);
        size_t b32 = mhsa_kv_cache_bytes(c32), b16 = mhsa_kv_cache_bytes(c16);
        printf("Hkv %d: F32 %zu, F16 %zu, BF16 %zu bytes (K/V part %zu)\n",
               hkv, b32, b16, mhsa_kv_cache_bytes(cb16), kv32);
        ck_assert(b32 >= kv32 && b16 >= kv32 / 2);
        ck_assert_msg(b32 - b16 == kv32 / 2, "F16 saves %zu bytes, not half "
                      "the K/V part (%zu)", b32 - b16, kv32 / 2);
        ck_assert(mhsa_kv_cache_bytes(cb16) == b16);
        ck_assert(mhsa_kv_cache_bytes(old) == b32);
        mhsa_kv_cache_destroy(c32);
        mhsa_kv_cache_destroy(c16);
        mhsa_kv_cache_destroy(cb16);
        mhsa_kv_cache_destroy(old);
        mhsa_block_destroy(blk);
    }
}
END_TEST

// Token-by-token decode of x (T, D) through a cache of dtype dt.
static void decode_tokens(const mhsa_block *blk, mhsa_dtype dt,
                          const float *x, int T, int D, float *y)
{
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    mhsa_kv_cache *c = dt == MHSA_F32 ? NULL : cache_of(blk, 1, T, dt);
    if (!c)
        ck_assert_int_eq(mhsa_kv_cache_create(blk, 1, T, &c), MHSA_OK);
    for (int t = 0; t < T; t++)
        REQUIRE(mhsa_forward_cached(blk, ws, c, x + (size_t)t * D, 1, 1,
                                    y + (size_t)t * D) == MHSA_OK,
                "token %d: %s", t, mhsa_last_error());
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
}

// Keys outside the window are never read: NaN there, or values that
// overflow F16 to inf when stored, leave the later rows alone.
START_TEST(dtype_blocked_positions_never_read)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    refcase rc;
    rc_load("bf16_dec_rope_mqa_win_1x150x16x2", &rc);   // window 129
    mhsa_block *blk = rc_block(&rc);
    int T = rc.T, D = rc.D, bad = 5, from = bad - 1 + rc.window;
    size_t n = (size_t)T * D, tail = (size_t)(T - from) * D;
    float *x = malloc(n * 4), *y0 = malloc(n * 4), *y1 = malloc(n * 4);
    static const mhsa_dtype dts[] = { MHSA_F16, MHSA_BF16, MHSA_F32 };
    static const float poison[] = { NAN, 1e6f, -INFINITY };
    for (size_t k = 0; k < 3; k++)
        for (size_t p = 0; p < 3; p++) {
            memcpy(x, refcase_get(&rc, "x"), n * 4);
            decode_tokens(blk, dts[k], x, T, D, y0);
            for (size_t i = 0; i < (size_t)bad * D; i++)
                x[i] = i % 3 ? poison[p] : -poison[p];
            decode_tokens(blk, dts[k], x, T, D, y1);
            // NaN there cannot reach the output (the bits may differ: a
            // tile holding NaN may take another path)
            double e = rel_err(y1 + (size_t)from * D, y0 + (size_t)from * D,
                               tail);
            ck_assert_msg(e <= 1e-6, "dtype %d: %g in positions the window "
                          "blocks changed later rows by %.3g", (int)dts[k],
                          poison[p], e);
        }
    free(x);
    free(y0);
    free(y1);
    mhsa_block_destroy(blk);
    refcase_free(&rc);
}
END_TEST

// create_ex with MHSA_F32 is mhsa_kv_cache_create: the same bits.
START_TEST(dtype_f32_is_create)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    refcase rc;
    rc_load("base_dec_2x30x32x4", &rc);
    mhsa_block *blk = rc_block(&rc);
    size_t n = (size_t)rc.T * rc.D;
    float *y0 = malloc(n * 4), *y1 = malloc(n * 4);
    decode_tokens(blk, MHSA_F32, refcase_get(&rc, "x"), rc.T, rc.D, y0);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    mhsa_kv_cache *c = cache_of(blk, 1, rc.T, MHSA_F32);
    for (int t = 0; t < rc.T; t++)
        REQUIRE(mhsa_forward_cached(blk, ws, c,
                                    refcase_get(&rc, "x") + t * rc.D, 1, 1,
                                    y1 + t * rc.D) == MHSA_OK, "token %d", t);
    ck_assert(!memcmp(y0, y1, n * 4));
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
    free(y0);
    free(y1);
    mhsa_block_destroy(blk);
    refcase_free(&rc);
}
END_TEST

START_TEST(invalid_dtype)
{
    mhsa_config cfg = { 16, 2, 8, 1, 1 };
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    mhsa_kv_cache *sentinel = (mhsa_kv_cache *)(uintptr_t)0x1234;
    mhsa_kv_cache *out = sentinel;
    ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, NULL, &out),
                     MHSA_ERR_INVALID_ARG);
    ck_assert(out == sentinel);
    printf("cfg NULL: %s\n", mhsa_last_error());
    static const int bad[] = { 3, -1, 1000 };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mhsa_kv_config kc = { 2, 8, (mhsa_dtype)bad[i] };
        char v[16];
        snprintf(v, sizeof v, "%d", bad[i]);
        ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &out),
                         MHSA_ERR_INVALID_ARG);
        const char *msg = mhsa_last_error();
        printf("dtype %d: %s\n", bad[i], msg);
        ck_assert(out == sentinel);
        ck_assert_msg(strstr(msg, "dtype") && strstr(msg, v),
                      "dtype %d: message \"%s\" should name dtype and the "
                      "value", bad[i], msg);
    }
    // the other fields as mhsa_kv_cache_create has them
    mhsa_kv_config kc = { 0, 8, MHSA_F16 };
    ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &out),
                     MHSA_ERR_INVALID_ARG);
    kc.max_batch = 1;
    kc.capacity = 9;
    ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &out), MHSA_ERR_SHAPE);
    ck_assert_int_eq(mhsa_kv_cache_create_ex(NULL, &kc, &out),
                     MHSA_ERR_INVALID_ARG);
    ck_assert(out == sentinel);
    mhsa_block_destroy(blk);
}
END_TEST

START_TEST(threads_dtype)
{
    thread_spec t = { "F16 cache, GQA, RoPE", { 64, 4, 292, 1, 1 }, 64,
                      MHSA_F16, 0 };
    t.cfg.n_kv_heads = 2;
    t.cfg.rope_dim = 8;
    check_thread_counts(&t, _i);
    thread_spec u = { "BF16 cache", { 64, 4, 292, 1, 1 }, 64, MHSA_BF16, 0 };
    check_thread_counts(&u, _i);
}
END_TEST

static void add_dtype(TCase *tc)
{
    tcase_add_loop_test(tc, dtype_case, 0, N_OF(dtype_cases) * N_ISAS);
    tcase_add_test(tc, dtype_cache_bytes);
    tcase_add_loop_test(tc, dtype_blocked_positions_never_read, 0, N_ISAS);
    tcase_add_loop_test(tc, dtype_f32_is_create, 0, N_ISAS);
    tcase_add_loop_test(tc, threads_dtype, 0, N_ISAS);
}

static void add_errors(TCase *tc)
{
    tcase_add_test(tc, invalid_dtype);
}

int main(int argc, char **argv)
{
    static const tcase_def defs[] = {
        { "kv_dtype", add_dtype }, { "kv_dtype_errors", add_errors },
    };
    return run_tcases("kv_dtype", defs, N_OF(defs), argc, argv);
}
