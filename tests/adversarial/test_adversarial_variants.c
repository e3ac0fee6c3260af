// test_adversarial_variants.c — the 0.2 surface fed what a server may be fed:
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
// in rows that read it. (test_adversarial.c beside it holds the 0.1
// cases.)
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attn/attention.h"
#include "guard.h"
#include "ref.h"
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

// Is key j blocked for query row i of a sequence of seq_len keys (the
// rules of API.md, written out apart from the library's)? positional_only:
// the causal mask and the window, not padding or the mask.
static int blocked_by(const mhsa_config *c, const float *mask, int T,
                      int seq_len, int i, int j, int positional_only)
{
    if (c->causal && j > i)
        return 1;
    if (c->window && j <= i - c->window)
        return 1;
    if (positional_only)
        return 0;
    if (j >= seq_len)
        return 1;
    return mask && mask[(size_t)i * T + j] == -INFINITY;
}

// Within a rounding of b: |a - b| <= tol * (1 + |b|) everywhere, both
// finite.
static int close_to(const float *a, const float *b, size_t n, float tol)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(a[i]) || !(fabsf(a[i] - b[i]) <= tol * (1 + fabsf(b[i]))))
            return 0;
    return 1;
}

static int all_nan(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i]))
            return 0;
    return 1;
}

static int none_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (isfinite(x[i]))
            return 0;
    return 1;
}

// ---- combinations: mhsa_forward_ex ----------------------------------------

// Grouped-query heads with RoPE (whole head, partial, both pairings) under
// a window (small, and one key short of a key tile) or none, with key
// padding and a hostile mask; T crosses a key tile and has several query
// blocks (so without weights the K/V tiles are packed once per head).
static mhsa_config forward_combo(int which, int T)
{
    int bc = (int)mhsa__attn_bc(mhsa__kernels());
    mhsa_config c[3] = {
        { 24, 6, T, 1, 1, 2, 4, 0.0f, 0, 5 },          // GQA 3:1, RoPE all
        { 32, 4, T, 1, 0, 1, 4, 5e5f, 1, bc - 1 },     // MQA, half, GPT-J
        { 16, 4, T, 0, 1, 2, 2, 1e6f, 1, 0 },          // non-causal
    };
    return c[which];
}

// Random finite values in [-3, 2], one in eight -inf and one in eight
// -1e30; row 2 wholly -inf, row 5 open on key 0 only (outside a window of
// 5), row 7 on its own key only.
static void combo_mask(float *mask, int T, rng *r)
{
    for (size_t i = 0; i < (size_t)T * T; i++) {
        int c = rng_int(r, 0, 7);
        mask[i] = c == 0 ? -INFINITY : c == 1 ? -1e30f
                : rng_uniform(r, -3.0f, 2.0f);
    }
    for (int j = 0; j < T; j++) {
        mask[2 * T + j] = -INFINITY;
        mask[5 * T + j] = j == 0 ? 0.5f : -INFINITY;
        mask[7 * T + j] = j == 7 ? 0.0f : -INFINITY;
    }
}

typedef struct fwd_out {
    float *y, *attn, *dx;
    mhsa_grads *g;
} fwd_out;

static void fwd_out_free(fwd_out *o)
{
    free(o->y);
    free(o->attn);
    free(o->dx);
    mhsa_grads_destroy(o->g);
    memset(o, 0, sizeof *o);
}

// forward_ex (with weights when want_attn), then backward with dy when dy
// is not NULL.
static fwd_out fwd_run(const vblock *v, mhsa_workspace *ws, const float *x,
                       int B, int T, const float *mask, const int *seq_len,
                       int want_attn, const float *dy)
{
    size_t ny = (size_t)B * T * v->cfg.d_model;
    size_t na = (size_t)B * v->cfg.n_heads * T * T;
    fwd_out o = { malloc(ny * sizeof(float)),
                  want_attn ? malloc(na * sizeof(float)) : NULL, NULL,
                  NULL };
    fill_nan(o.y, ny);
    if (o.attn)
        fill_nan(o.attn, na);
    mhsa_forward_args a = { x, B, T, mask, seq_len, o.y, o.attn };
    ck_assert_msg(mhsa_forward_ex(v->blk, ws, &a) == MHSA_OK, "%s",
                  mhsa_last_error());
    if (dy) {
        o.dx = malloc(ny * sizeof(float));
        ck_assert_int_eq(mhsa_grads_create(v->blk, &o.g), MHSA_OK);
        ck_assert_int_eq(mhsa_backward(v->blk, ws, dy, o.dx, o.g), MHSA_OK);
    }
    return o;
}

static int same_grads(const vblock *v, const mhsa_grads *a,
                      const mhsa_grads *b)
{
    size_t D = (size_t)v->cfg.d_model;
    int ok = !memcmp(a->w_qkv, b->w_qkv, v->nqkv * D * sizeof(float)) &&
             !memcmp(a->w_out, b->w_out, D * D * sizeof(float));
    if (v->cfg.bias)
        ok = ok && !memcmp(a->b_qkv, b->b_qkv, v->nqkv * sizeof(float)) &&
             !memcmp(a->b_out, b->b_out, D * sizeof(float));
    return ok;
}

// Every combination against the double reference (y and weights), blocked
// weights exact +0, rows that see no key exactly b_out, the same y bits
// without weights; then what is never read is poisoned and must change
// nothing: NaN and +inf mask entries under the causal mask and outside
// the window (same bits forward and backward), NaN and inf tokens in
// padded positions (the unpadded rows and the other sequences keep their
// bits; a padded row reads its own NaN query, unless it sees no key), and
// a NaN token that leaves the window (rows that read it are NaN, the
// others finite and close, other sequences the same bits).
START_TEST(combo_forward_ex)
{
    if (!use_isa(_i))
        return;
    int T = (int)mhsa__attn_bc(mhsa__kernels()) + 40, B = 3;
    int seq_len[3] = { T, 1, T / 2 + 3 };
    for (int which = 0; which < 3; which++) {
        mhsa_config cfg = forward_combo(which, T);
        vblock v = vblock_make(cfg, 100 + (uint64_t)which);
        int D = cfg.d_model, H = cfg.n_heads;
        size_t d = (size_t)D, ny = (size_t)B * T * D;
        size_t tt = (size_t)T * T, na = (size_t)B * H * tt;
        rng r = { 200 + (uint64_t)which };
        float *x = rand_buf(&r, ny, -1.0f, 1.0f);
        float *dy = rand_buf(&r, ny, -1.0f, 1.0f);
        float *mask = malloc(tt * sizeof(float));
        combo_mask(mask, T, &r);
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(v.blk, B, &ws), MHSA_OK);

        fwd_out o = fwd_run(&v, ws, x, B, T, mask, seq_len, 1, dy);
        refv m = vblock_ref(&v, B, T, x);
        m.mask = mask;
        m.seq_len = seq_len;
        double *ry = malloc(ny * sizeof(double));
        double *ra = malloc(na * sizeof(double));
        refv_forward(&m, ry, ra);
        double ey = rel_err_d(o.y, ry, ny), ea = rel_err_d(o.attn, ra, na);
        ck_assert_msg(ey < 1e-4 && ea < 1e-4, "%s combo %d: y %.3g attn "
                      "%.3g", isa_now(), which, ey, ea);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < T; i++) {
                int dead = 1;
                for (int j = 0; j < T; j++) {
                    int blk = blocked_by(&cfg, mask, T, seq_len[b], i, j, 0);
                    dead &= blk;
                    for (int h = 0; h < H && blk; h++) {
                        float w = o.attn[(((size_t)b * H + h) * T + i) * T +
                                         j];
                        ck_assert_msg(bits_of(w) == 0, "%s combo %d: "
                                      "blocked weight b%d h%d (%d, %d) = %g",
                                      isa_now(), which, b, h, i, j,
                                      (double)w);
                    }
                }
                const float *yr = o.y + ((size_t)b * T + i) * d;
                for (size_t c = 0; dead && c < d; c++)
                    ck_assert_msg(bits_of(yr[c]) ==
                                  bits_of(cfg.bias ? v.b_out[c] : 0.0f),
                                  "%s combo %d: row %d of %d sees no key "
                                  "but y != b_out", isa_now(), which, i, b);
            }
        fwd_out o2 = fwd_run(&v, ws, x, B, T, mask, seq_len, 0, NULL);
        ck_assert_msg(!memcmp(o.y, o2.y, ny * sizeof(float)),
                      "%s combo %d: y bits differ without weights",
                      isa_now(), which);
        fwd_out_free(&o2);

        // NaN and +inf mask entries where the causal mask or the window
        // blocks the key: never read, so the same bits everywhere.
        float *pmask = malloc(tt * sizeof(float));
        memcpy(pmask, mask, tt * sizeof(float));
        int n_poisoned = 0;
        for (int i = 0; i < T; i++)
            for (int j = 0; j < T; j++)
                if (blocked_by(&cfg, NULL, T, T, i, j, 1)) {
                    pmask[(size_t)i * T + j] = (i + j) % 2 ? NAN : INFINITY;
                    n_poisoned++;
                }
        ck_assert(cfg.causal == 0 || n_poisoned > 0);
        fwd_out p = fwd_run(&v, ws, x, B, T, pmask, seq_len, 1, dy);
        ck_assert_msg(!memcmp(o.y, p.y, ny * sizeof(float)) &&
                      !memcmp(o.attn, p.attn, na * sizeof(float)),
                      "%s combo %d: a mask entry under a positional block "
                      "was read (forward)", isa_now(), which);
        ck_assert_msg(!memcmp(o.dx, p.dx, ny * sizeof(float)) &&
                      same_grads(&v, o.g, p.g), "%s combo %d: a mask entry "
                      "under a positional block was read (backward)",
                      isa_now(), which);
        fwd_out_free(&p);

        // NaN / inf tokens at the padded positions.
        float *px = malloc(ny * sizeof(float));
        memcpy(px, x, ny * sizeof(float));
        for (int b = 0; b < B; b++)
            for (int t = seq_len[b]; t < T; t++)
                for (size_t c = 0; c < d; c++)
                    px[((size_t)b * T + t) * d + c] =
                        (t + (int)c) % 3 == 0 ? NAN
                        : (t + (int)c) % 3 == 1 ? INFINITY : -INFINITY;
        for (int wa = 0; wa <= 1; wa++) {
            p = fwd_run(&v, ws, px, B, T, mask, seq_len, wa, NULL);
            for (int b = 0; b < B; b++)
                for (int i = 0; i < T; i++) {
                    size_t row = ((size_t)b * T + i) * d;
                    if (i < seq_len[b]) {
                        ck_assert_msg(!memcmp(o.y + row, p.y + row,
                                              d * sizeof(float)),
                                      "%s combo %d attn %d: row %d of %d "
                                      "read a padded key", isa_now(), which,
                                      wa, i, b);
                        for (int h = 0; h < H && wa; h++) {
                            size_t w0 = (((size_t)b * H + h) * T + i) * T;
                            ck_assert(!memcmp(o.attn + w0, p.attn + w0,
                                              (size_t)T * sizeof(float)));
                        }
                        continue;
                    }
                    int dead = 1;
                    for (int j = 0; j < T; j++)
                        dead &= blocked_by(&cfg, mask, T, seq_len[b], i, j,
                                           0);
                    ck_assert_msg(dead ? !memcmp(o.y + row, p.y + row,
                                                 d * sizeof(float))
                                       : all_nan(p.y + row, d),
                                  "%s combo %d: padded row %d of %d (sees "
                                  "%s)", isa_now(), which, i, b,
                                  dead ? "no key" : "keys");
                    for (int h = 0; h < H && wa; h++)
                        for (int j = seq_len[b]; j < T; j++)
                            ck_assert(bits_of(p.attn[(((size_t)b * H + h) *
                                                      T + i) * T + j]) == 0);
                }
            fwd_out_free(&p);
        }

        // A NaN token (position 3 of sequence 0) that rows see only within
        // their window (and where the mask lets them).
        memcpy(px, x, ny * sizeof(float));
        for (size_t c = 0; c < d; c++)
            px[3 * d + c] = NAN;
        p = fwd_run(&v, ws, px, B, T, mask, seq_len, 0, NULL);
        int n_reads = 0, n_clean = 0;
        for (int i = 0; i < T; i++) {
            const float *got = p.y + (size_t)i * d, *want = o.y + (size_t)i * d;
            int reads = !blocked_by(&cfg, mask, T, T, i, 3, 0);
            int dead = 1;
            for (int j = 0; j < T && i != 3; j++)
                dead &= blocked_by(&cfg, mask, T, T, i, j, 0);
            if (i == 3 && !reads) {   // its own query is NaN
                for (int j = 0; j < T; j++)
                    dead &= blocked_by(&cfg, mask, T, T, i, j, 0);
                reads = !dead;
            }
            if (reads) {
                n_reads++;
                ck_assert_msg(all_nan(got, d), "%s combo %d: row %d reads "
                              "the NaN token", isa_now(), which, i);
            } else {
                n_clean++;
                ck_assert_msg(dead ? !memcmp(got, want, d * sizeof(float))
                                   : close_to(got, want, d, 1e-5f),
                              "%s combo %d: row %d does not read the NaN "
                              "token but changed", isa_now(), which, i);
            }
        }
        ck_assert(n_reads > 0 && (cfg.causal == 0 || n_clean > 0));
        ck_assert_msg(!memcmp(o.y + (size_t)T * d, p.y + (size_t)T * d,
                              2 * (size_t)T * d * sizeof(float)),
                      "%s combo %d: the other sequences changed", isa_now(),
                      which);
        fwd_out_free(&p);

        fwd_out_free(&o);
        free(px);
        free(pmask);
        free(ry);
        free(ra);
        free(x);
        free(dy);
        free(mask);
        mhsa_workspace_destroy(ws);
        vblock_free(&v);
    }
}
END_TEST

// ---- combinations: ragged cached steps -------------------------------------

enum { CB = 4 };   // cache slots of the cached combinations

// A grouped-query block (3 query heads per kv head, RoPE over the head,
// window 7) and a multi-query one (8 query heads on one kv head, RoPE on
// half the head in GPT-J pairs, a window one key past a key tile).
static mhsa_config cached_combo(int which, int T)
{
    int bc = (int)mhsa__attn_bc(mhsa__kernels());
    mhsa_config c[2] = {
        { 24, 6, T, 1, 1, 2, 4, 0.0f, 0, 7 },
        { 16, 8, T, 1, 0, 1, 2, 5e5f, 1, bc + 1 },
    };
    return c[which];
}

// Feeds x (CB, T, D) through a cache of dtype dt in ragged steps (the same
// schedule for the same seed): a prefill of 80 rows for some slots (two
// query blocks: the K/V tiles are packed once per head), then steps of 1
// to 9 rows with n_new[b] from 0 to t_new, slot 2 reset at step 6 and fed
// again from its start. x_new rows that are no token hold NaN and inf;
// y rows past n_new[b] must be exact +0. Row t of slot b lands at
// y[b][t] (the second pass of slot 2 overwrites its first).
static void cached_run(const vblock *v, mhsa_workspace *ws, mhsa_dtype dt,
                       const float *x, int T, uint64_t seed, float *y)
{
    int D = v->cfg.d_model;
    size_t d = (size_t)D, step = (size_t)CB * 80 * d;
    mhsa_kv_cache *c = NULL;
    mhsa_kv_config kc = { CB, T, dt };
    ck_assert_int_eq(mhsa_kv_cache_create_ex(v->blk, &kc, &c), MHSA_OK);
    float *xs = malloc(step * sizeof(float)), *ys = malloc(step * 4);
    int done[CB] = { 0 }, n_new[CB];
    rng r = { seed };
    for (int it = 0;; it++) {
        int t_new = it == 0 ? 80 : rng_int(&r, 0, 2) ? 1 : rng_int(&r, 2, 9);
        int any = 0;
        if (it == 6) {
            ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, 2), MHSA_OK);
            done[2] = 0;
        }
        for (int b = 0; b < CB; b++) {
            int left = T - done[b];
            int n = it == 0 ? (b == 1 ? 0 : b == 2 ? 37 : 80)
                            : rng_int(&r, 0, t_new);
            n_new[b] = n < left ? n : left;
            any |= left > 0;
            for (int t = 0; t < t_new; t++)
                for (size_t k = 0; k < d; k++) {
                    size_t o = ((size_t)b * t_new + t) * d + k;
                    xs[o] = t < n_new[b]
                            ? x[((size_t)b * T + done[b] + t) * d + k]
                            : k % 2 ? NAN : -INFINITY;
                }
        }
        if (!any)
            break;
        mhsa_cached_args a = { xs, CB, t_new, n_new, ys };
        ck_assert_msg(mhsa_forward_cached_ex(v->blk, ws, c, &a) == MHSA_OK,
                      "%s", mhsa_last_error());
        for (int b = 0; b < CB; b++) {
            for (int t = 0; t < t_new; t++) {
                const float *yr = ys + ((size_t)b * t_new + t) * d;
                if (t < n_new[b]) {
                    memcpy(y + ((size_t)b * T + done[b] + t) * d, yr,
                           d * sizeof(float));
                    continue;
                }
                for (size_t k = 0; k < d; k++)
                    ck_assert_msg(bits_of(yr[k]) == 0, "%s: y row %d of "
                                  "slot %d past n_new = %d is not +0",
                                  isa_now(), t, b, n_new[b]);
            }
            done[b] += n_new[b];
            ck_assert_int_eq(mhsa_kv_cache_seq_len(c, b), done[b]);
        }
    }
    ck_assert_int_eq(mhsa_kv_cache_len(c), T);
    free(xs);
    free(ys);
    mhsa_kv_cache_destroy(c);
}

// GQA / MQA + RoPE + window + ragged steps + F32, F16 and BF16 caches:
// every slot against the double reference over its whole history (K and V
// rounded as the cache stores them). Then a second run where slot 2 holds
// other tokens and slot 3 a poisoned one at position 20 (NaN for F32, inf
// for BF16, and for F16 a finite token large enough that its K and V
// overflow to inf when stored): slots 0 and 1 keep their bits, slot 2
// matches its own reference, and in slot 3 exactly the rows whose window
// holds position 20 are non-finite, the others finite and close.
START_TEST(combo_cached_ragged)
{
    if (!use_isa(_i))
        return;
    int T = 150;
    for (int which = 0; which < 2; which++)
        for (int dt = MHSA_F32; dt <= MHSA_BF16; dt++) {
            mhsa_config cfg = cached_combo(which, T);
            vblock v = vblock_make(cfg, 300 + (uint64_t)which);
            size_t d = (size_t)cfg.d_model, ny = (size_t)CB * T * d;
            size_t per = (size_t)T * d;
            rng r = { 400 + (uint64_t)(3 * which + dt) };
            float *x = rand_buf(&r, ny, -1.0f, 1.0f);
            float *ya = malloc(ny * sizeof(float));
            float *yb = malloc(ny * sizeof(float));
            mhsa_workspace *ws = NULL;
            ck_assert_int_eq(mhsa_workspace_create(v.blk, CB, &ws), MHSA_OK);
            uint64_t sched = 500 + (uint64_t)which;
            cached_run(&v, ws, (mhsa_dtype)dt, x, T, sched, ya);
            refv m = vblock_ref(&v, CB, T, x);
            m.kv_round = dt;
            double *ry = malloc(ny * sizeof(double));
            refv_forward(&m, ry, NULL);
            for (int b = 0; b < CB; b++) {
                double e = rel_err_d(ya + b * per, ry + b * per, per);
                ck_assert_msg(e < 1e-4, "%s combo %d dtype %d slot %d: "
                              "error %.3g", isa_now(), which, dt, b, e);
            }
            // The second run.
            float *xb = malloc(ny * sizeof(float));
            memcpy(xb, x, ny * sizeof(float));
            fill_uniform(&r, xb + 2 * per, per, -2.0f, 2.0f);
            float *tok = xb + 3 * per + 20 * d;
            for (size_t k = 0; k < d; k++)
                tok[k] = dt == MHSA_F32 ? NAN
                       : dt == MHSA_BF16 ? (k % 2 ? INFINITY : -INFINITY)
                       : tok[k] * 1e6f + (k % 2 ? 1e6f : -1e6f);
            cached_run(&v, ws, (mhsa_dtype)dt, xb, T, sched, yb);
            ck_assert_msg(!memcmp(ya, yb, 2 * per * sizeof(float)),
                          "%s combo %d dtype %d: slots 0-1 changed with "
                          "slots 2-3", isa_now(), which, dt);
            m.x = xb;
            refv_forward(&m, ry, NULL);
            double e = rel_err_d(yb + 2 * per, ry + 2 * per, per);
            ck_assert_msg(e < 1e-4, "%s combo %d dtype %d: slot 2 with "
                          "other tokens: error %.3g", isa_now(), which, dt,
                          e);
            for (int t = 0; t < T; t++) {
                const float *got = yb + 3 * per + t * d;
                const float *want = ya + 3 * per + t * d;
                int reads = t >= 20 && t < 20 + cfg.window;
                ck_assert_msg(reads ? none_finite(got, d)
                                    : close_to(got, want, d, 1e-5f),
                              "%s combo %d dtype %d: slot 3 row %d (%s the "
                              "poisoned token)", isa_now(), which, dt, t,
                              reads ? "reads" : "does not read");
            }
            free(x);
            free(xb);
            free(ya);
            free(yb);
            free(ry);
            mhsa_workspace_destroy(ws);
            vblock_free(&v);
        }
}
END_TEST

// A long prefill in chunks of several query blocks under a window, far
// past the first key tile (the K/V tiles are packed once per head, those
// before every row's window are not needed), with a plain forward on the
// same workspace between chunks scribbling over the packing buffer; F16
// cache, GQA, RoPE. Each chunk's rows equal token-by-token decoding to
// rounding and the reference.
START_TEST(chunked_prefill_under_a_window)
{
    if (!use_isa(_i))
        return;
    int bc = (int)mhsa__attn_bc(mhsa__kernels());
    int T = 3 * bc + 100, chunk = 2 * (int)mhsa__attn_br(mhsa__kernels());
    // The second chunk's first row sees the last key of the first tile
    // and no earlier one: the tile boundary is hit exactly.
    int W = chunk + 2 - bc;
    ck_assert(W >= 1);
    mhsa_config cfg = { 16, 4, T, 1, 1, 2, 4, 0.0f, 0, W };
    vblock v = vblock_make(cfg, 1200);
    size_t d = (size_t)cfg.d_model, ny = (size_t)T * d;
    rng r = { 1201 };
    float *x = rand_buf(&r, ny, -1.0f, 1.0f);
    float *yc = malloc(ny * sizeof(float)), *yd = malloc(ny * sizeof(float));
    float *scribble = malloc(ny * sizeof(float));
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(v.blk, 1, &ws), MHSA_OK);
    mhsa_kv_config kc = { 1, T, MHSA_F16 };
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_kv_cache_create_ex(v.blk, &kc, &c), MHSA_OK);
    for (int p = 0; p < T; p += chunk) {
        int n = T - p < chunk ? T - p : chunk;
        mhsa_cached_args a = { x + (size_t)p * d, 1, n, NULL,
                               yc + (size_t)p * d };
        ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, c, &a), MHSA_OK);
        ck_assert_int_eq(mhsa_forward(v.blk, ws, x, 1, T, NULL, scribble,
                                      NULL), MHSA_OK);
    }
    mhsa_kv_cache_reset(c);
    for (int t = 0; t < T; t++)
        ck_assert_int_eq(mhsa_forward_cached(v.blk, ws, c, x + t * d, 1, 1,
                                             yd + t * d), MHSA_OK);
    for (int t = 0; t < T; t++)
        ck_assert_msg(close_to(yc + t * d, yd + t * d, d, 1e-5f), "%s: "
                      "chunked prefill row %d differs from decoding",
                      isa_now(), t);
    refv m = vblock_ref(&v, 1, T, x);
    m.kv_round = MHSA_F16;
    double *ry = malloc(ny * sizeof(double));
    refv_forward(&m, ry, NULL);
    ck_assert(rel_err_d(yc, ry, ny) < 1e-4);
    free(ry);
    free(x);
    free(yc);
    free(yd);
    free(scribble);
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
    vblock_free(&v);
}
END_TEST

// ---- extremes -------------------------------------------------------------

// Rows [r0, r1) of the reference of one sequence's tokens x (T, D) seen
// from position pos0 on (RoPE angles, window and causal mask at absolute
// positions); K and V rounded to kv_round. Returns the rows (r1 - r0, D).
static double *ref_rows(const vblock *v, const float *x, int T, int pos0,
                        int kv_round, int r0, int r1)
{
    size_t d = (size_t)v->cfg.d_model;
    double *all = malloc((size_t)T * d * sizeof(double));
    refv m = vblock_ref(v, 1, T, x);
    m.pos0 = pos0;
    m.kv_round = kv_round;
    refv_forward(&m, all, NULL);
    double *out = malloc((size_t)(r1 - r0) * d * sizeof(double));
    memcpy(out, all + (size_t)r0 * d, (size_t)(r1 - r0) * d * sizeof(double));
    free(all);
    return out;
}

// RoPE at the last position of max_seq_len = 32768 (angles exact to
// float64): the forward of all 32768 tokens and the cached calls (an F16
// cache filled to capacity in one prefill of 32767 rows beside a short
// ragged slot, then the last token), against the reference of the last
// 2W tokens at their absolute positions (whose rows from W - 1 on see
// exactly their window). Scores depend on the positions' difference only,
// so what this checks is the tables' accuracy there: angles p * theta^-i
// rounded to float are off by up to 1e-3 radians at p = 32767 where
// theta^-i is near 1, and fail it (checked by planting that). Then the full
// slot refuses a token and changes nothing, the other slot goes on, and
// the full slot, reset, is a fresh one at position 0.
START_TEST(rope_at_position_32767)
{
    if (!use_isa(_i))
        return;
    enum { TL = 32768 };
    const mhsa_config cfgs[2] = {
        // NeoX pairs over a head of 32 (angles up to 32767 * 10000^-1/16)
        { 32, 1, TL, 1, 1, 0, 32, 0.0f, 0, 8 },
        // GPT-J pairs over heads of 8 sharing one kv head, theta 2
        { 16, 2, TL, 1, 0, 1, 8, 2.0f, 1, 3 },
    };
    for (int which = 0; which < 2; which++) {
        mhsa_config cfg = cfgs[which];
        vblock v = vblock_make(cfg, 600 + (uint64_t)which);
        int W = cfg.window, n = 2 * W, pos0 = TL - n;
        size_t d = (size_t)cfg.d_model, nx = (size_t)TL * d;
        // Larger q and k (scores of a few units) make the weights feel
        // an angle's error.
        size_t qk = d + (size_t)v.Hkv * (d / (size_t)cfg.n_heads);
        for (size_t i = 0; i < qk * d; i++)
            v.w_qkv[i] *= 4.0f;
        ck_assert_int_eq(mhsa_block_set_weights(v.blk, v.w_qkv, v.b_qkv,
                                                v.w_out, v.b_out), MHSA_OK);
        rng r = { 700 + (uint64_t)which };
        float *x = rand_buf(&r, nx, -1.0f, 1.0f);
        float *y = malloc(nx * sizeof(float));
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(v.blk, 2, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_forward(v.blk, ws, x, 1, TL, NULL, y, NULL),
                         MHSA_OK);
        size_t nr = (size_t)(n - (W - 1)) * d;   // rows pos0 + W - 1 ..
        const float *tail = y + (size_t)(pos0 + W - 1) * d;
        double *want = ref_rows(&v, x + (size_t)pos0 * d, n, pos0, 0, W - 1,
                                n);
        double e = rel_err_d(tail, want, nr);
        ck_assert_msg(e < 1e-4, "%s rope %d: forward at 32767: error %.3g",
                      isa_now(), which, e);
        free(want);

        // The cached calls: slot 0 to capacity, slot 1 three tokens.
        mhsa_kv_cache *c = NULL;
        mhsa_kv_config kc = { 2, TL, MHSA_F16 };
        ck_assert_int_eq(mhsa_kv_cache_create_ex(v.blk, &kc, &c), MHSA_OK);
        size_t ns = 2 * (size_t)(TL - 1) * d;
        float *xs = malloc(ns * sizeof(float)), *ys = malloc(ns * 4);
        memcpy(xs, x, (size_t)(TL - 1) * d * sizeof(float));
        fill_nan(xs + (size_t)(TL - 1) * d, (size_t)(TL - 1) * d);
        memcpy(xs + (size_t)(TL - 1) * d, x, 3 * d * sizeof(float));
        int n_new[2] = { TL - 1, 3 };
        mhsa_cached_args a = { xs, 2, TL - 1, n_new, ys };
        ck_assert_msg(mhsa_forward_cached_ex(v.blk, ws, c, &a) == MHSA_OK,
                      "%s", mhsa_last_error());
        want = ref_rows(&v, x + (size_t)pos0 * d, n, pos0, 1, W - 1, n);
        e = rel_err_d(ys + (size_t)(pos0 + W - 1) * d, want, nr - d);
        ck_assert_msg(e < 1e-4, "%s rope %d: F16 prefill to 32766: error "
                      "%.3g", isa_now(), which, e);
        float step_x[2 * 32], step_y[2 * 32];
        memcpy(step_x, x + (size_t)(TL - 1) * d, d * sizeof(float));
        memcpy(step_x + d, x + 3 * d, d * sizeof(float));
        n_new[0] = n_new[1] = 1;
        mhsa_cached_args s1 = { step_x, 2, 1, n_new, step_y };
        ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, c, &s1), MHSA_OK);
        e = rel_err_d(step_y, want + (size_t)(n - W) * d, d);
        ck_assert_msg(e < 1e-4, "%s rope %d: F16 decode at 32767: error "
                      "%.3g", isa_now(), which, e);
        free(want);
        ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 0), TL);
        ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 1), 4);
        // Full: slot 0 refuses a token, nothing changes.
        n_new[1] = 0;
        memset(step_y, 0x5a, sizeof step_y);
        ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, c, &s1),
                         MHSA_ERR_SHAPE);
        ck_assert(untouched(step_y, 2 * d));
        ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 0), TL);
        ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 1), 4);
        n_new[0] = 0;
        n_new[1] = 1;
        ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, c, &s1), MHSA_OK);
        ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 1), 5);
        // Reset: position 0 again.
        ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, 0), MHSA_OK);
        memcpy(step_x, x, d * sizeof(float));
        n_new[0] = 1;
        n_new[1] = 0;
        ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, c, &s1), MHSA_OK);
        want = ref_rows(&v, x, 1, 0, 1, 0, 1);
        ck_assert(rel_err_d(step_y, want, d) < 1e-4);
        free(want);
        mhsa_kv_cache_destroy(c);
        free(xs);
        free(ys);
        free(x);
        free(y);
        mhsa_workspace_destroy(ws);
        vblock_free(&v);
    }
}
END_TEST

// A window of one key: every row sees its own key only, so its weight is
// exactly 1 and the context is its own V exactly; rows in the padding see
// nothing (y = b_out, zero gradients). q and k do not reach y at all:
// their weight gradients vanish to rounding beside V's. Decoding the same
// sequence token by token gives the same rows.
START_TEST(window_of_one)
{
    if (!use_isa(_i))
        return;
    int T = 2 * (int)mhsa__attn_bc(mhsa__kernels()) + 3, B = 2;
    int seq_len[2] = { T, 5 };
    mhsa_config cfg = { 12, 3, T, 1, 1, 1, 4, 0.0f, 0, 1 };
    vblock v = vblock_make(cfg, 800);
    int D = cfg.d_model, H = cfg.n_heads;
    size_t d = (size_t)D, ny = (size_t)B * T * D;
    rng r = { 801 };
    float *x = rand_buf(&r, ny, -1.0f, 1.0f);
    float *dy = rand_buf(&r, ny, -1.0f, 1.0f);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(v.blk, B, &ws), MHSA_OK);
    fwd_out o = fwd_run(&v, ws, x, B, T, NULL, seq_len, 1, dy);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++)
                for (int j = 0; j < T; j++) {
                    float w = o.attn[(((size_t)b * H + h) * T + i) * T + j];
                    float want = i == j && i < seq_len[b] ? 1.0f : 0.0f;
                    ck_assert_msg(bits_of(w) == bits_of(want), "%s: weight "
                                  "b%d h%d (%d, %d) = %.9g", isa_now(), b,
                                  h, i, j, (double)w);
                }
    refv m = vblock_ref(&v, B, T, x);
    m.seq_len = seq_len;
    double *ry = malloc(ny * sizeof(double));
    refv_forward(&m, ry, NULL);
    ck_assert_msg(rel_err_d(o.y, ry, ny) < 1e-4, "%s: y error %.3g",
                  isa_now(), rel_err_d(o.y, ry, ny));
    for (int i = seq_len[1]; i < T; i++) {
        size_t row = ((size_t)T + i) * d;
        ck_assert(!memcmp(o.y + row, v.b_out, d * sizeof(float)));
        for (size_t c = 0; c < d; c++)
            ck_assert(o.dx[row + c] == 0.0f);
    }
    fwd_out o2 = fwd_run(&v, ws, x, B, T, NULL, seq_len, 0, NULL);
    ck_assert(!memcmp(o.y, o2.y, ny * sizeof(float)));
    fwd_out_free(&o2);
    // Gradients of the q and k rows of w_qkv (and b_qkv) against V's.
    size_t qk = d + (size_t)v.Hkv * (d / (size_t)H);   // rows of q and k
    float gqk = 0, gv = 0;
    for (size_t i = 0; i < v.nqkv * d; i++) {
        float g = fabsf(o.g->w_qkv[i]);
        ck_assert(isfinite(g));
        if (i < qk * d)
            gqk = g > gqk ? g : gqk;
        else
            gv = g > gv ? g : gv;
    }
    for (size_t i = 0; i < qk; i++)
        gqk = fabsf(o.g->b_qkv[i]) > gqk ? fabsf(o.g->b_qkv[i]) : gqk;
    ck_assert_msg(gv > 1.0f && gqk <= 1e-5f * gv, "%s: |dWq, dWk| %.3g "
                  "beside |dWv| %.3g", isa_now(), (double)gqk, (double)gv);
    // Decode sequence 0 token by token.
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_kv_cache_create(v.blk, 1, T, &c), MHSA_OK);
    for (int t = 0; t < T; t++) {
        float yt[12];
        ck_assert_int_eq(mhsa_forward_cached(v.blk, ws, c, x + t * d, 1, 1,
                                             yt), MHSA_OK);
        ck_assert_msg(close_to(yt, o.y + t * d, d, 1e-5f), "%s: decode row "
                      "%d", isa_now(), t);
    }
    mhsa_kv_cache_destroy(c);
    fwd_out_free(&o);
    free(ry);
    free(x);
    free(dy);
    mhsa_workspace_destroy(ws);
    vblock_free(&v);
}
END_TEST

// Every sequence one key long (seq_len = 1): non-causal, every row's only
// key is key 0 (weight exactly 1, all rows of a sequence the same bits);
// causal with a window of 4, rows 0..3 see key 0 and the rest nothing
// (zero weights, y = b_out, dx = 0). Against the reference, backward
// finite.
START_TEST(sequences_of_one_key)
{
    if (!use_isa(_i))
        return;
    int T = (int)mhsa__attn_bc(mhsa__kernels()) + 5, B = 3;
    int seq_len[3] = { 1, 1, 1 };
    const mhsa_config cfgs[2] = {
        { 16, 4, T, 0, 1, 2, 4, 0.0f, 1, 0 },
        { 16, 4, T, 1, 1, 1, 2, 0.0f, 0, 4 },
    };
    for (int which = 0; which < 2; which++) {
        mhsa_config cfg = cfgs[which];
        vblock v = vblock_make(cfg, 900 + (uint64_t)which);
        int D = cfg.d_model, H = cfg.n_heads;
        size_t d = (size_t)D, ny = (size_t)B * T * D;
        rng r = { 901 + (uint64_t)which };
        float *x = rand_buf(&r, ny, -1.0f, 1.0f);
        float *dy = rand_buf(&r, ny, -1.0f, 1.0f);
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(v.blk, B, &ws), MHSA_OK);
        fwd_out o = fwd_run(&v, ws, x, B, T, NULL, seq_len, 1, dy);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < T; i++) {
                int sees = !cfg.causal || i < cfg.window;
                for (int h = 0; h < H; h++)
                    for (int j = 0; j < T; j++) {
                        float w = o.attn[(((size_t)b * H + h) * T + i) * T +
                                         j];
                        float want = sees && j == 0 ? 1.0f : 0.0f;
                        ck_assert_msg(bits_of(w) == bits_of(want),
                                      "%s case %d: weight (%d, %d) = %g",
                                      isa_now(), which, i, j, (double)w);
                    }
                size_t row = ((size_t)b * T + i) * d;
                const float *want = sees ? o.y + (size_t)b * T * d : v.b_out;
                ck_assert_msg(!memcmp(o.y + row, want, d * sizeof(float)),
                              "%s case %d: row %d of %d", isa_now(), which,
                              i, b);
                for (size_t c = 0; !sees && c < d; c++)
                    ck_assert(o.dx[row + c] == 0.0f);
            }
        ck_assert(all_finite(o.dx, ny) && all_finite(o.g->w_qkv,
                                                     v.nqkv * d));
        refv m = vblock_ref(&v, B, T, x);
        m.seq_len = seq_len;
        double *ry = malloc(ny * sizeof(double));
        refv_forward(&m, ry, NULL);
        ck_assert(rel_err_d(o.y, ry, ny) < 1e-4);
        free(ry);
        fwd_out_free(&o);
        free(x);
        free(dy);
        mhsa_workspace_destroy(ws);
        vblock_free(&v);
    }
}
END_TEST

// ---- inf that scores -inf ---------------------------------------------------

// A query or key holding inf is no score that overflowed: the rows that
// read it are NaN (kernels.h), also when its score comes out -inf, which
// alone would look like a key of weight 0. D = 4, one head, no bias:
// q = W_q x / 2, k = W_k x, v = W_v x, y = v's context. Found by
// fuzz_forward: the one-row decode path gave a -inf score from an inf
// query weight 0 (a finite row, or a zero context) where the tiled path
// gave NaN.
START_TEST(inf_that_scores_minus_inf_propagates)
{
    if (!use_isa(_i))
        return;
    mhsa_config cfg = { 4, 1, 4, 1, 0 };
    float w_qkv[48] = { 0 }, w_out[16] = { 0 };
    for (int i = 0; i < 4; i++) {
        w_qkv[i * 4 + i] = 1.0f;              // W_q = I
        w_qkv[(4 + i) * 4 + i] = 1.0f;        // W_k = I
        w_qkv[(8 + i) * 4 + i] = i ? 1.0f : 0.0f;   // W_v = diag(0,1,1,1)
        w_out[i * 4 + i] = 1.0f;
    }
    // 1. An inf query weight: q[0] = inf * x[0] = -inf against k[0] > 0
    // (W_k[0][0] = -1, x[0] = -1): the score is -inf.
    float wq_inf[48];
    memcpy(wq_inf, w_qkv, sizeof wq_inf);
    wq_inf[0] = INFINITY;
    wq_inf[4 * 4] = -1.0f;
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(blk, wq_inf, NULL, w_out, NULL),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    float x[8] = { -1.0f, 0.5f, 0.25f, 0.75f, 1.0f, 0.5f, -0.5f, 0.25f };
    float y[8], attn[4];
    for (int wa = 0; wa <= 1; wa++) {   // decode path, then tiled path
        ck_assert_int_eq(mhsa_forward(blk, ws, x, 1, 1, NULL, y,
                                      wa ? attn : NULL), MHSA_OK);
        ck_assert_msg(all_nan(y, 4), "%s (%s path): a query holding -inf "
                      "gave y = %g %g %g %g", isa_now(),
                      wa ? "tiled" : "decode", (double)y[0], (double)y[1],
                      (double)y[2], (double)y[3]);
    }
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_kv_cache_create(blk, 1, 4, &c), MHSA_OK);
    ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, x, 1, 1, y), MHSA_OK);
    ck_assert_msg(all_nan(y, 4), "%s: decode of a query holding -inf",
                  isa_now());
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);

    // 2. A finite key beyond the F16 range is stored as inf; the next
    // token's query scores it -inf (q[0] < 0), its V is finite.
    ck_assert_int_eq(mhsa_block_create(&cfg, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(blk, w_qkv, NULL, w_out, NULL),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(blk, 1, &ws), MHSA_OK);
    float xk[8] = { 1e5f, 0.5f, 0.5f, 0.5f, -1.0f, 0.1f, 0.2f, 0.3f };
    for (int split = 0; split <= 1; split++) {   // 1 + 1 rows, or 2 at once
        mhsa_kv_config kc = { 1, 4, MHSA_F16 };
        ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &c), MHSA_OK);
        if (split) {
            ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, xk, 1, 1, y),
                             MHSA_OK);
            ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, xk + 4, 1, 1,
                                                 y + 4), MHSA_OK);
        } else {
            ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, xk, 1, 2, y),
                             MHSA_OK);
        }
        ck_assert_msg(all_nan(y + 4, 4), "%s (%s): a row reading a key "
                      "stored as inf gave y = %g %g %g %g", isa_now(),
                      split ? "decode" : "two rows at once", (double)y[4],
                      (double)y[5], (double)y[6], (double)y[7]);
        mhsa_kv_cache_destroy(c);
    }
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}
END_TEST

// ---- guard pages ------------------------------------------------------------

// bytes (a multiple of 4) copied into a buffer against a guard page, then
// made read-only (an input written to faults too).
static void *guarded_copy(const void *src, size_t bytes, guard_side side)
{
    ck_assert(bytes % sizeof(float) == 0);
    float *p = guard_alloc(bytes / sizeof(float), side);
    memcpy(p, src, bytes);
    guard_readonly(p);
    return p;
}

// One cached step of a guard-page run: the same on guarded buffers (and a
// guarded argument struct) and on ordinary ones, for the same bits.
static void guarded_step(const vblock *v, mhsa_workspace *ws,
                         mhsa_kv_cache *cg, mhsa_kv_cache *cp,
                         const float *x_new, int B, int t_new,
                         const int *n_new, guard_side side)
{
    size_t n = (size_t)B * t_new * v->cfg.d_model;
    float *gx = guarded_copy(x_new, n * sizeof(float), side);
    int *gn = guarded_copy(n_new, (size_t)B * sizeof(int), side);
    float *gy = guard_alloc(n, side), *py = malloc(n * sizeof(float));
    mhsa_cached_args a = { gx, B, t_new, gn, gy };
    mhsa_cached_args *ga = guarded_copy(&a, sizeof a, side);
    ck_assert_msg(mhsa_forward_cached_ex(v->blk, ws, cg, ga) == MHSA_OK,
                  "%s", mhsa_last_error());
    mhsa_cached_args pa = { x_new, B, t_new, n_new, py };
    ck_assert_int_eq(mhsa_forward_cached_ex(v->blk, ws, cp, &pa), MHSA_OK);
    ck_assert_msg(!memcmp(gy, py, n * sizeof(float)), "%s: guarded cached "
                  "step differs", isa_now());
    guard_free(gx);
    guard_free((float *)gn);
    guard_free(gy);
    guard_free((float *)ga);
    free(py);
}

// Every buffer the 0.2 calls take, against a guard page at either end
// (inputs read-only), the argument structs too: mhsa_forward_ex (x, mask,
// seq_len of exactly B ints, y, attn) and the backward after it (dy, dx),
// then ragged F16 cached steps (x_new, n_new, y) until every slot of the
// cache is full, so that its last stored row is written and read through
// the public API (ASan watches the cache's own allocation); the same bits
// as with ordinary buffers.
START_TEST(guard_pages_new_calls)
{
    if (!use_isa(_i / 2))
        return;
    guard_side side = _i % 2 ? GUARD_BEFORE : GUARD_AFTER;
    int B = 3, T = 13;
    mhsa_config cfg = { 24, 6, T, 1, 1, 2, 4, 0.0f, 1, 5 };
    vblock v = vblock_make(cfg, 1000);
    int D = cfg.d_model, H = cfg.n_heads;
    size_t ny = (size_t)B * T * D, na = (size_t)B * H * T * T;
    rng r = { 1001 };
    float *x = rand_buf(&r, ny, -1.0f, 1.0f);
    float *dy = rand_buf(&r, ny, -1.0f, 1.0f);
    float *mask = rand_buf(&r, (size_t)T * T, -2.0f, 1.0f);
    mask[3 * T + 1] = -INFINITY;
    int seq_len[3] = { T, 4, 1 };
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(v.blk, B, &ws), MHSA_OK);
    fwd_out o = fwd_run(&v, ws, x, B, T, mask, seq_len, 1, dy);

    float *gx = guarded_copy(x, ny * sizeof(float), side);
    float *gm = guarded_copy(mask, (size_t)T * T * sizeof(float), side);
    int *gs = guarded_copy(seq_len, sizeof seq_len, side);
    float *gdy = guarded_copy(dy, ny * sizeof(float), side);
    float *gy = guard_alloc(ny, side), *ga = guard_alloc(na, side);
    float *gdx = guard_alloc(ny, side);
    mhsa_forward_args fa = { gx, B, T, gm, gs, gy, ga };
    mhsa_forward_args *gfa = guarded_copy(&fa, sizeof fa, side);
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_grads_create(v.blk, &g), MHSA_OK);
    ck_assert_int_eq(mhsa_forward_ex(v.blk, ws, gfa), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(v.blk, ws, gdy, gdx, g), MHSA_OK);
    ck_assert(!memcmp(gy, o.y, ny * sizeof(float)));
    ck_assert(!memcmp(ga, o.attn, na * sizeof(float)));
    ck_assert(!memcmp(gdx, o.dx, ny * sizeof(float)));
    ck_assert(same_grads(&v, g, o.g));
    float *bufs[] = { gx, gm, (float *)gs, gdy, gy, ga, gdx, (float *)gfa };
    for (size_t i = 0; i < sizeof bufs / sizeof *bufs; i++)
        guard_free(bufs[i]);
    mhsa_grads_destroy(g);

    // Ragged cached steps to capacity in every slot.
    mhsa_kv_cache *cg = NULL, *cp = NULL;
    mhsa_kv_config kc = { B, T, MHSA_F16 };
    ck_assert_int_eq(mhsa_kv_cache_create_ex(v.blk, &kc, &cg), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create_ex(v.blk, &kc, &cp), MHSA_OK);
    const int steps[][4] = {   // t_new, n_new[0..2]
        { 5, 5, 0, 1 }, { 1, 1, 1, 1 }, { 7, 7, 4, 0 }, { 1, 0, 1, 1 },
        { 8, 0, 7, 8 }, { 2, 0, 0, 2 },
    };
    int done[3] = { 0 };
    size_t d = (size_t)D;
    float *xs = malloc((size_t)B * 8 * d * sizeof(float));
    for (size_t s = 0; s < sizeof steps / sizeof *steps; s++) {
        int t_new = steps[s][0];
        for (int b = 0; b < B; b++)
            for (int t = 0; t < t_new; t++)
                memcpy(xs + ((size_t)b * t_new + t) * d,
                       x + ((size_t)b * T + (done[b] + t) % T) * d,
                       d * sizeof(float));
        guarded_step(&v, ws, cg, cp, xs, B, t_new, &steps[s][1], side);
        for (int b = 0; b < B; b++)
            done[b] += steps[s][1 + b];
    }
    for (int b = 0; b < B; b++)
        ck_assert_int_eq(mhsa_kv_cache_seq_len(cg, b), T);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(cg, -1), 0);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(cg, B), 0);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(cg, INT_MAX), 0);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(NULL, 0), 0);
    mhsa_kv_cache_destroy(cg);
    mhsa_kv_cache_destroy(cp);
    free(xs);
    fwd_out_free(&o);
    free(x);
    free(dy);
    free(mask);
    mhsa_workspace_destroy(ws);
    vblock_free(&v);
}
END_TEST

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

// The refused forward_ex calls of refused_calls_change_nothing (ws holds
// up to B + 1 sequences): each with its own seq_len (the recorded
// forward's stays alive, unchanged).
static void refuse_forward(const vblock *v, mhsa_workspace *ws,
                           mhsa_workspace *other_ws, const float *x, int B,
                           int T, const float *mask, float *y, float *attn,
                           size_t ny, size_t na)
{
    int bad[4][3] = { { T, 4, 0 }, { T, T + 1, 1 }, { INT_MIN, 1, 1 },
                      { T, -1, 2 } };
    int good[5] = { T, 4, 1, 1, 1 };   // B + 2 entries
    struct { mhsa_forward_args a; mhsa_workspace *ws; mhsa_status st;
             const char *names; } c[] = {
        { { x, B, T, mask, bad[0], y, attn }, ws, MHSA_ERR_INVALID_ARG,
          "seq_len[2] = 0" },
        { { x, B, T, mask, bad[1], y, attn }, ws, MHSA_ERR_INVALID_ARG,
          "seq_len[1] = 14" },
        { { x, B, T, mask, bad[2], y, attn }, ws, MHSA_ERR_INVALID_ARG,
          "seq_len[0]" },
        { { x, B, T, mask, bad[3], y, attn }, ws, MHSA_ERR_INVALID_ARG,
          "seq_len[1] = -1" },
        { { x, B + 2, T, mask, good, y, attn }, ws, MHSA_ERR_SHAPE, "B" },
        { { x, B, T + 1, mask, good, y, attn }, ws, MHSA_ERR_SHAPE, "T" },
        { { x, 0, T, mask, good, y, attn }, ws, MHSA_ERR_INVALID_ARG, "B" },
        { { x, B, -T, mask, good, y, attn }, ws, MHSA_ERR_INVALID_ARG, "T" },
        { { NULL, B, T, mask, good, y, attn }, ws, MHSA_ERR_INVALID_ARG,
          "x" },
        { { x, B, T, mask, good, NULL, attn }, ws, MHSA_ERR_INVALID_ARG,
          "y" },
        { { x, B, T, mask, good, y, attn }, other_ws, MHSA_ERR_INVALID_ARG,
          "ws" },
    };
    ck_assert(T == 13);
    for (size_t i = 0; i < sizeof c / sizeof *c; i++) {
        memset(y, 0x5a, ny * sizeof(float));
        memset(attn, 0x5a, na * sizeof(float));
        mhsa_status st = mhsa_forward_ex(v->blk, c[i].ws, &c[i].a);
        ck_assert_msg(st == c[i].st && strstr(mhsa_last_error(), c[i].names),
                      "%s refused forward %zu: %s: %s", isa_now(), i,
                      mhsa_status_str(st), mhsa_last_error());
        ck_assert_msg(untouched(y, ny) && untouched(attn, na), "%s refused "
                      "forward %zu wrote y or attn", isa_now(), i);
    }
    ck_assert_int_eq(mhsa_forward_ex(v->blk, ws, NULL),
                     MHSA_ERR_INVALID_ARG);
}

// A cached step on a cache and its twin (which never sees a refused call):
// the same y bits and lengths.
static void twin_step(const vblock *v, mhsa_workspace *ws, mhsa_kv_cache *c,
                      mhsa_kv_cache *twin, const float *x_new, int B,
                      int t_new, const int *n_new, float *y, float *y2)
{
    mhsa_cached_args a = { x_new, B, t_new, n_new, y };
    ck_assert_msg(mhsa_forward_cached_ex(v->blk, ws, c, &a) == MHSA_OK, "%s",
                  mhsa_last_error());
    a.y = y2;
    ck_assert_int_eq(mhsa_forward_cached_ex(v->blk, ws, twin, &a), MHSA_OK);
    size_t n = (size_t)B * t_new * v->cfg.d_model;
    ck_assert_msg(!memcmp(y, y2, n * sizeof(float)), "%s: the cache that "
                  "saw refused calls gives other bits than its twin",
                  isa_now());
    for (int b = 0; b < 4; b++)
        ck_assert_int_eq(mhsa_kv_cache_seq_len(c, b),
                         mhsa_kv_cache_seq_len(twin, b));
}

// A refused cached call: its status and message, y untouched, every
// slot's length as before.
static void refuse_cached(const vblock *v, mhsa_workspace *ws,
                          mhsa_kv_cache *c, const mhsa_cached_args *a,
                          mhsa_status want, const char *names, size_t ny,
                          const char *what)
{
    int len[4];
    for (int b = 0; b < 4; b++)
        len[b] = mhsa_kv_cache_seq_len(c, b);
    memset(a->y, 0x5a, ny * sizeof(float));
    mhsa_status st = mhsa_forward_cached_ex(v->blk, ws, c, a);
    ck_assert_msg(st == want && strstr(mhsa_last_error(), names),
                  "%s refused cached call (%s): %s: %s", isa_now(), what,
                  mhsa_status_str(st), mhsa_last_error());
    ck_assert_msg(untouched(a->y, ny), "%s refused cached call (%s) wrote "
                  "y", isa_now(), what);
    for (int b = 0; b < 4; b++)
        ck_assert_msg(mhsa_kv_cache_seq_len(c, b) == len[b], "%s refused "
                      "cached call (%s) changed slot %d's length",
                      isa_now(), what, b);
}

// On a GQA + RoPE + window block with an F16 cache: every refused call
// (invalid seq_len, n_new, B, T, t_new, NULL pointers, objects of another
// block, overflow of one slot among fitting ones, slots out of range)
// returns its status naming the argument, writes nothing to y or attn,
// keeps the workspace's recorded forward (the backward after the refusals
// gives the bits of the one before them) and the cache's lengths and
// contents (the cache goes on with the bits of a twin that never saw a
// refused call). A slot that was full and refused a token, then reset, is
// a fresh one: the bits of slot 1 of a fresh cache fed the same tokens
// while its other slots hold other ones. Failed creations leave *out
// alone.
START_TEST(refused_calls_change_nothing)
{
    if (!use_isa(_i))
        return;
    int B = 3, T = 13;
    mhsa_config cfg = { 24, 6, T, 1, 1, 2, 4, 1e6f, 0, 6 };
    vblock v = vblock_make(cfg, 1100);
    mhsa_config ocfg = cfg;
    vblock other = vblock_make(ocfg, 1101);   // same shapes, another block
    int D = cfg.d_model, H = cfg.n_heads;
    size_t d = (size_t)D, ny = (size_t)B * T * D;
    size_t na = (size_t)B * H * T * T;
    rng r = { 1102 };
    float *x = rand_buf(&r, 2 * ny, -1.0f, 1.0f);
    float *dy = rand_buf(&r, ny, -1.0f, 1.0f);
    float *mask = rand_buf(&r, (size_t)T * T, -2.0f, 1.0f);
    int seq_len[3] = { T, 4, 1 };
    mhsa_workspace *ws = NULL, *ows = NULL;
    ck_assert_int_eq(mhsa_workspace_create(v.blk, B + 1, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(other.blk, B, &ows), MHSA_OK);

    // forward_ex refusals between a forward and its backward.
    fwd_out o = fwd_run(&v, ws, x, B, T, mask, seq_len, 1, dy);
    fwd_out f = fwd_run(&v, ws, x, B, T, mask, seq_len, 1, NULL);
    refuse_forward(&v, ws, ows, x, B, T, mask, f.y, f.attn, ny, na);
    mhsa_grads *g = NULL;
    float *dx = malloc(ny * sizeof(float));
    ck_assert_int_eq(mhsa_grads_create(v.blk, &g), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(v.blk, ws, dy, dx, g), MHSA_OK);
    ck_assert_msg(!memcmp(dx, o.dx, ny * sizeof(float)) &&
                  same_grads(&v, g, o.g), "%s: the backward after refused "
                  "forwards differs", isa_now());
    mhsa_grads_destroy(g);
    free(dx);
    fwd_out_free(&f);
    fwd_out_free(&o);

    // Cached refusals on a cache with a twin.
    mhsa_kv_cache *c = NULL, *twin = NULL, *oc = NULL;
    mhsa_kv_config kc = { B, T, MHSA_F16 };
    ck_assert_int_eq(mhsa_kv_cache_create_ex(v.blk, &kc, &c), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create_ex(v.blk, &kc, &twin), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_create_ex(other.blk, &kc, &oc), MHSA_OK);
    size_t nstep = (size_t)(B + 1) * (T + 1) * d;
    float *y = malloc(nstep * sizeof(float)), *y2 = malloc(nstep * 4);
    // Legacy calls fix B = 3 until a reset; a legacy call with B = 2 is
    // refused (the _ex calls may change B).
    ck_assert_int_eq(mhsa_forward_cached(v.blk, ws, c, x, B, 2, y), MHSA_OK);
    ck_assert_int_eq(mhsa_forward_cached(v.blk, ws, twin, x, B, 2, y2),
                     MHSA_OK);
    ck_assert(!memcmp(y, y2, (size_t)B * 2 * d * sizeof(float)));
    memset(y, 0x5a, nstep * sizeof(float));
    ck_assert_int_eq(mhsa_forward_cached(v.blk, ws, c, x, 2, 1, y),
                     MHSA_ERR_SHAPE);
    ck_assert(untouched(y, nstep));
    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 0), 2);
    int n1[3] = { 3, 0, 2 };
    twin_step(&v, ws, c, twin, x + ny, B, 3, n1, y, y2);   // lengths 5 2 4
    int nb_neg[3] = { 1, -1, 1 }, nb_big[3] = { 1, 1, 4 };
    int nb_over[3] = { 1, 1, 10 }, nb_ok[4] = { 1, 1, 1, 1 };
    struct { mhsa_cached_args a; mhsa_kv_cache *c; mhsa_workspace *ws;
             mhsa_status st; const char *names, *what; } rc[] = {
        { { x, B, 3, nb_neg, y }, c, ws, MHSA_ERR_INVALID_ARG,
          "n_new[1] = -1", "negative n_new" },
        { { x, B, 3, nb_big, y }, c, ws, MHSA_ERR_INVALID_ARG,
          "n_new[2] = 4", "n_new > t_new" },
        { { x, B, 10, nb_over, y }, c, ws, MHSA_ERR_SHAPE, "sequence 2",
          "slot 2 overflows, 0 and 1 fit" },
        { { x, B, T + 1, nb_ok, y }, c, ws, MHSA_ERR_SHAPE, "t_new",
          "t_new > max_seq_len" },
        { { x, B + 1, 1, nb_ok, y }, c, ws, MHSA_ERR_SHAPE, "max_batch",
          "B > the cache's max_batch" },
        { { x, B + 2, 1, NULL, y }, c, ws, MHSA_ERR_SHAPE, "max_batch",
          "B > the workspace's max_batch" },
        { { x, B, 0, NULL, y }, c, ws, MHSA_ERR_INVALID_ARG, "t_new",
          "t_new = 0" },
        { { NULL, B, 1, NULL, y }, c, ws, MHSA_ERR_INVALID_ARG, "x_new",
          "x_new NULL" },
        { { x, B, 1, NULL, y }, oc, ws, MHSA_ERR_INVALID_ARG, "cache",
          "a cache of another block" },
        { { x, B, 1, NULL, y }, c, ows, MHSA_ERR_INVALID_ARG, "ws",
          "a workspace of another block" },
    };
    for (size_t i = 0; i < sizeof rc / sizeof *rc; i++)
        refuse_cached(&v, rc[i].ws, rc[i].c, &rc[i].a, rc[i].st,
                      rc[i].names, nstep, rc[i].what);
    mhsa_cached_args ynull = { x, B, 1, NULL, NULL };
    ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, c, &ynull),
                     MHSA_ERR_INVALID_ARG);
    ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, c, NULL),
                     MHSA_ERR_INVALID_ARG);
    const int bad_slots[] = { -1, B, INT_MAX, INT_MIN };
    for (size_t i = 0; i < sizeof bad_slots / sizeof *bad_slots; i++) {
        ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, bad_slots[i]),
                         MHSA_ERR_INVALID_ARG);
        ck_assert(strstr(mhsa_last_error(), "b = "));
    }
    ck_assert_int_eq(mhsa_kv_cache_reset_seq(NULL, 0), MHSA_ERR_INVALID_ARG);
    int n2[3] = { 2, 2, 2 };
    twin_step(&v, ws, c, twin, x + 2 * d, B, 2, n2, y, y2);   // 7 4 6

    // Slot 1 to capacity, a token refused, reset, then a new sequence.
    int fill[3] = { 0, T - 4, 0 };
    twin_step(&v, ws, c, twin, x, B, T - 4, fill, y, y2);
    int one[3] = { 0, 1, 0 };
    mhsa_cached_args full = { x, B, 1, one, y };
    refuse_cached(&v, ws, c, &full, MHSA_ERR_SHAPE, "sequence 1", nstep,
                  "full slot 1");
    ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, 1), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_reset_seq(twin, 1), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 0), 7);
    ck_assert_int_eq(mhsa_kv_cache_seq_len(c, 2), 6);
    mhsa_kv_cache *fresh = NULL;
    ck_assert_int_eq(mhsa_kv_cache_create_ex(v.blk, &kc, &fresh), MHSA_OK);
    const int reuse[][4] = { { 5, 1, 5, 0 }, { 1, 1, 1, 1 }, { 4, 0, 3, 2 } };
    float *y3 = malloc(nstep * sizeof(float));
    const float *xnew = x + 5 * d;   // slot 1's new tokens
    for (size_t s = 0; s < sizeof reuse / sizeof *reuse; s++) {
        int t_new = reuse[s][0];
        twin_step(&v, ws, c, twin, xnew, B, t_new, &reuse[s][1], y, y2);
        // The fresh cache: slot 1 the same, the other slots other tokens.
        float *xf = malloc((size_t)B * t_new * d * sizeof(float));
        memcpy(xf, xnew, (size_t)B * t_new * d * sizeof(float));
        fill_uniform(&r, xf, (size_t)t_new * d, -3.0f, 3.0f);
        fill_uniform(&r, xf + 2 * (size_t)t_new * d, (size_t)t_new * d,
                     -3.0f, 3.0f);
        mhsa_cached_args fa = { xf, B, t_new, reuse[s] + 1, y3 };
        ck_assert_int_eq(mhsa_forward_cached_ex(v.blk, ws, fresh, &fa),
                         MHSA_OK);
        size_t row = (size_t)t_new * d;
        ck_assert_msg(!memcmp(y + row, y3 + row,
                              (size_t)reuse[s][2] * d * sizeof(float)),
                      "%s: the reset slot differs from a fresh one (step "
                      "%zu)", isa_now(), s);
        free(xf);
        xnew += (size_t)B * t_new * d;
    }
    mhsa_kv_cache_destroy(fresh);
    free(y3);

    // Failed creations leave *out alone.
    mhsa_kv_cache *sentinel = (mhsa_kv_cache *)&kc, *cout = sentinel;
    const mhsa_kv_config bad_kc[] = {
        { B, T, (mhsa_dtype)3 }, { B, T, (mhsa_dtype)-1 }, { 0, T, MHSA_F16 },
        { B, 0, MHSA_BF16 }, { B, T + 1, MHSA_F32 }, { -1, -1, MHSA_F16 },
    };
    for (size_t i = 0; i < sizeof bad_kc / sizeof *bad_kc; i++) {
        ck_assert_int_ne(mhsa_kv_cache_create_ex(v.blk, &bad_kc[i], &cout),
                         MHSA_OK);
        ck_assert_ptr_eq(cout, sentinel);
    }
    ck_assert_int_ne(mhsa_kv_cache_create_ex(v.blk, NULL, &cout), MHSA_OK);
    ck_assert_int_ne(mhsa_kv_cache_create_ex(NULL, &kc, &cout), MHSA_OK);
    ck_assert_ptr_eq(cout, sentinel);
    mhsa_block *bsent = (mhsa_block *)&kc, *bout = bsent;
    const mhsa_config bad_cfg[] = {
        { 24, 6, T, 1, 1, -1, 4, 0.0f, 0, 0 },   // n_kv_heads < 0
        { 24, 6, T, 1, 1, 4, 4, 0.0f, 0, 0 },    // 6 % 4
        { 24, 6, T, 1, 1, 7, 4, 0.0f, 0, 0 },    // Hkv > H
        { 24, 6, T, 1, 1, 2, 3, 0.0f, 0, 0 },    // odd rope_dim
        { 24, 6, T, 1, 1, 2, 6, 0.0f, 0, 0 },    // rope_dim > dh
        { 24, 6, T, 1, 1, 2, -2, 0.0f, 0, 0 },
        { 24, 6, T, 1, 1, 2, 4, -1.0f, 0, 0 },   // negative theta
        { 24, 6, T, 1, 1, 2, 4, NAN, 0, 0 },
        { 24, 6, T, 1, 1, 2, 4, INFINITY, 0, 0 },
        { 24, 6, T, 1, 1, 2, 4, 0.0f, 2, 0 },    // rope_interleaved 2
        { 24, 6, T, 1, 1, 2, 4, 0.0f, -1, 0 },
        { 24, 6, T, 1, 1, 2, 4, 0.0f, 0, -1 },   // window < 0
        { 24, 6, T, 0, 1, 2, 4, 0.0f, 0, 3 },    // window, not causal
        { 24, 6, T, 1, 1, INT_MIN, 4, 0.0f, 0, INT_MIN },
    };
    for (size_t i = 0; i < sizeof bad_cfg / sizeof *bad_cfg; i++) {
        mhsa_status st = mhsa_block_create(&bad_cfg[i], &bout);
        ck_assert_msg(st == MHSA_ERR_INVALID_ARG || st == MHSA_ERR_SHAPE,
                      "bad config %zu: %s", i, mhsa_status_str(st));
        ck_assert_ptr_eq(bout, bsent);
    }

    mhsa_kv_cache_destroy(c);
    mhsa_kv_cache_destroy(twin);
    mhsa_kv_cache_destroy(oc);
    free(y);
    free(y2);
    free(x);
    free(dy);
    free(mask);
    mhsa_workspace_destroy(ws);
    mhsa_workspace_destroy(ows);
    vblock_free(&other);
    vblock_free(&v);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("adversarial_variants");
    ADD_CASE(s, combo_forward_ex, N_ISAS, "slow");
    ADD_CASE(s, combo_cached_ragged, N_ISAS, "slow");
    ADD_CASE(s, chunked_prefill_under_a_window, N_ISAS, NULL);
    ADD_CASE(s, rope_at_position_32767, N_ISAS, "slow");
    ADD_CASE(s, window_of_one, N_ISAS, "slow");
    ADD_CASE(s, sequences_of_one_key, N_ISAS, "slow");
    ADD_CASE(s, inf_that_scores_minus_inf_propagates, N_ISAS, NULL);
    ADD_CASE(s, guard_pages_new_calls, 2 * N_ISAS, NULL);
    ADD_CASE(s, cached_t_new_past_max_seq_len_is_refused, N_ISAS, NULL);
    ADD_CASE(s, refused_calls_change_nothing, N_ISAS, NULL);
    return run_suite(s);
}
