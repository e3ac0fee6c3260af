// test_cached_qkv.c — the internal door for models that project Q, K, V
// and the output themselves (api/cached_qkv.h): a block without weights,
// refused by every public call that reads or writes weights, and
// mhsa__forward_cached_qkv, which must give the bits of
// mhsa_forward_cached's middle part for the same projected rows (a
// prefill through the general pipeline, then one-token steps through the
// one-region step), on 1 and 2 threads.
//
// How the bits are compared: a block with weights whose w_qkv rows each
// pick one input feature times a power of two (so the projection is exact
// however it is summed) and whose w_out is the identity (so y = ctx
// exactly) gives, through mhsa_forward_cached, the context rows; the
// shell gets the same projected rows, computed exactly here.
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "api/cached_qkv.h"
#include "mhsa.h"
#include "util.h"

typedef struct qkv_case {
    int D, H, Hkv, rope;
    mhsa_dtype kv;
} qkv_case;

static const qkv_case cases[] = {
    { 64, 4, 2, 1, MHSA_F32 },
    { 64, 4, 2, 1, MHSA_F16 },
    { 192, 6, 2, 1, MHSA_F32 },   // wide: the step's team splits the keys
    { 32, 2, 2, 0, MHSA_BF16 },
};
enum { N_CASES = sizeof cases / sizeof cases[0] };
enum { PREFILL = 290, STEPS = 3, T = PREFILL + STEPS, MAX_D = 192 };

static mhsa_config config(const qkv_case *c)
{
    mhsa_config cfg = { c->D, c->H, T, 1, 0 };
    cfg.n_kv_heads = c->Hkv;
    cfg.rope_dim = c->rope ? c->D / c->H : 0;
    cfg.rope_interleaved = 1;
    return cfg;
}

// Row r of w_qkv (nqkv, D) picks feature (5 r + 3) % D times 0.5, 1 or
// 2; w_out is the identity.
static float pick(size_t r)
{
    return r % 3 == 0 ? 0.5f : r % 3 == 1 ? 1.0f : 2.0f;
}

static void project(size_t D, size_t nqkv, size_t n, const float *x,
                    float *qkv)
{
    for (size_t i = 0; i < n; i++)
        for (size_t r = 0; r < nqkv; r++)
            qkv[i * nqkv + r] = x[i * D + (5 * r + 3) % D] * pick(r);
}

// The context rows of a prefill of PREFILL rows and STEPS steps: through
// a block with weights (ref) or through the shell.
static void run(const qkv_case *c, int shell, int threads, const float *x,
                float *out)
{
    omp_set_num_threads(threads);
    mhsa_config cfg = config(c);
    size_t D = (size_t)c->D, dh = D / (size_t)c->H;
    size_t nqkv = D + 2 * (size_t)c->Hkv * dh;
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *kv = NULL;
    mhsa_kv_config kc = { 1, T, c->kv };
    float *qkv = malloc(T * nqkv * sizeof(float));
    ck_assert_ptr_nonnull(qkv);
    if (shell) {
        ck_assert_int_eq(mhsa__block_create_shell(&cfg, &blk), MHSA_OK);
    } else {
        float *w_qkv = malloc(nqkv * D * sizeof(float));
        float *w_out = malloc(D * D * sizeof(float));
        ck_assert(w_qkv && w_out);
        memset(w_qkv, 0, nqkv * D * sizeof(float));
        memset(w_out, 0, D * D * sizeof(float));
        for (size_t r = 0; r < nqkv; r++)
            w_qkv[r * D + (5 * r + 3) % D] = pick(r);
        for (size_t i = 0; i < D; i++)
            w_out[i * D + i] = 1.0f;
        ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
        ck_assert_int_eq(mhsa_block_set_weights(blk, w_qkv, NULL, w_out,
                                                NULL), MHSA_OK);
        free(w_qkv);
        free(w_out);
    }
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &kv), MHSA_OK);
    size_t done = 0;
    for (int s = 0; s <= STEPS; s++) {
        size_t n = s == 0 ? PREFILL : 1;
        if (shell) {
            project(D, nqkv, n, x + done * D, qkv);
            ck_assert_int_eq(mhsa__forward_cached_qkv(blk, ws, kv, qkv,
                                                      (int)n,
                                                      out + done * D),
                             MHSA_OK);
        } else {
            ck_assert_int_eq(mhsa_forward_cached(blk, ws, kv, x + done * D,
                                                 1, (int)n, out + done * D),
                             MHSA_OK);
        }
        done += n;
        ck_assert_int_eq(mhsa_kv_cache_len(kv), (int)done);
    }
    mhsa_kv_cache_destroy(kv);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(qkv);
}

START_TEST(same_bits_as_forward_cached)
{
    const qkv_case *c = &cases[_i];
    size_t D = (size_t)c->D;
    float *x = malloc(T * D * sizeof(float));
    float *ref = malloc(T * D * sizeof(float));
    float *got = malloc(T * D * sizeof(float));
    ck_assert(x && ref && got);
    rng r = { 20261207u + (uint64_t)_i };
    fill_uniform(&r, x, T * D, -1.0f, 1.0f);
    int saved = omp_get_max_threads();
    run(c, 0, 1, x, ref);
    ck_assert(all_finite(ref, T * D));
    for (int threads = 1; threads <= 2; threads++) {
        run(c, 1, threads, x, got);
        for (size_t i = 0; i < T * D; i++)
            ck_assert_msg(!memcmp(&ref[i], &got[i], sizeof(float)),
                          "case %d, %d threads: row %zu col %zu: %a != %a",
                          _i, threads, i / D, i % D, (double)got[i],
                          (double)ref[i]);
    }
    omp_set_num_threads(saved);
    free(x);
    free(ref);
    free(got);
}
END_TEST

// Each public call that reads or writes weights refuses the shell, naming
// itself and saying why; what takes any block works.
START_TEST(shell_refused_where_weights_are_needed)
{
    mhsa_config cfg = config(&cases[0]);
    size_t D = 64, nqkv = 64 + 2 * 2 * 16;
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa__block_create_shell(&cfg, &blk), MHSA_OK);
    ck_assert_uint_eq(mhsa_block_weight_bytes(blk), 0);
    ck_assert_int_eq(mhsa_block_config(blk)->d_model, 64);
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *kv = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create(blk, 1, 8, &kv), MHSA_OK);
    static float w[(64 + 128) * 64 + 64 * 64], x[4 * 64], y[4 * 64];
    mhsa_grads *g = NULL;
    struct {
        const char *fn;
        mhsa_status st;
    } calls[] = {
        { "mhsa_block_set_weights",
          mhsa_block_set_weights(blk, w, NULL, w + nqkv * D, NULL) },
        { "mhsa_block_get_weights",
          mhsa_block_get_weights(blk, w, NULL, w + nqkv * D, NULL) },
        { "mhsa_block_init_random", mhsa_block_init_random(blk, 1) },
        { "mhsa_forward", mhsa_forward(blk, ws, x, 1, 4, NULL, y, NULL) },
        { "mhsa_forward_cached",
          mhsa_forward_cached(blk, ws, kv, x, 1, 1, y) },
        { "mhsa_grads_create", mhsa_grads_create(blk, &g) },
    };
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        ck_assert_msg(calls[i].st == MHSA_ERR_INVALID_ARG, "%s: %s",
                      calls[i].fn, mhsa_status_str(calls[i].st));
    }
    // The message of the last refusal.
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(mhsa_last_error(), "mhsa_grads_create") &&
                  strstr(mhsa_last_error(), "holds no weights"), "%s",
                  mhsa_last_error());
    ck_assert_int_eq(mhsa_kv_cache_len(kv), 0);
    // A shell with biases is refused; NULL arguments too.
    cfg.bias = 1;
    mhsa_block *b2 = NULL;
    ck_assert_int_eq(mhsa__block_create_shell(&cfg, &b2),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_null(b2);
    ck_assert_int_eq(mhsa__block_create_shell(NULL, &b2),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa__forward_cached_qkv(blk, ws, kv, NULL, 1, y),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_ptr_nonnull(strstr(mhsa_last_error(), "qkv is NULL"));
    // More rows than the cache holds: refused, the cache unchanged.
    static float qkv[9 * 128];
    ck_assert_int_eq(mhsa__forward_cached_qkv(blk, ws, kv, qkv, 9, y),
                     MHSA_ERR_SHAPE);
    ck_assert_int_eq(mhsa_kv_cache_len(kv), 0);
    ck_assert_int_eq(mhsa__forward_cached_qkv(blk, ws, kv, qkv, 8, y),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_len(kv), 8);
    mhsa_kv_cache_destroy(kv);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("cached_qkv");
    TCase *tc = tcase_create("cached_qkv");
    tcase_add_loop_test(tc, same_bits_as_forward_cached, 0, N_CASES);
    tcase_add_test(tc, shell_refused_where_weights_are_needed);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
