// refrun.c — running the 0.2 reference cases through the public API (see
// refrun.h and tests/data/refs/FORMAT.md, "Cases of 0.2").
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "refrun.h"

int refrun_threads = 1;

// ---- outputs kept for the thread-count comparison --------------------------

void outs_add(outs *o, const char *name, const float *p, size_t n)
{
    ck_assert_int_lt(o->n, OUTS_MAX);
    int i = o->n++;
    snprintf(o->name[i], sizeof o->name[i], "%s", name);
    o->v[i] = malloc((n ? n : 1) * sizeof(float));
    ck_assert_ptr_nonnull(o->v[i]);
    memcpy(o->v[i], p, n * sizeof(float));
    o->count[i] = n;
}

void outs_same(const outs *a, const outs *b, const char *tag)
{
    ck_assert_int_eq(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        ck_assert_str_eq(a->name[i], b->name[i]);
        ck_assert(a->count[i] == b->count[i]);
        // (check records every ck_assert in the forked test's message
        // file: one per element would take minutes; find the first first)
        size_t k = 0;
        while (k < a->count[i] &&
               !memcmp(&a->v[i][k], &b->v[i][k], sizeof(float)))
            k++;
        ck_assert_msg(k == a->count[i], "%s: %s differs between thread "
                      "counts at element %zu (%.9g vs %.9g)", tag,
                      a->name[i], k, a->v[i][k], b->v[i][k]);
    }
}

void outs_free(outs *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->v[i]);
    o->n = 0;
}

// ---- the case's block --------------------------------------------------------

void rc_load(const char *name, refcase *rc)
{
    ck_assert_msg(refcase_load_in("refs_variants", name, rc) == 0,
                  "cannot load refs_variants/%s: %s", name, rc->error);
}

mhsa_config rc_config(const refcase *rc)
{
    mhsa_config c = { rc->D, rc->H, rc->T, rc->causal, rc->bias };
    // Hkv = H is written as 0, the 0.1 spelling (test_variants_torch checks
    // that n_kv_heads = H gives the same bits).
    c.n_kv_heads = rc->Hkv == rc->H ? 0 : rc->Hkv;
    c.rope_dim = rc->rope_dim;
    c.rope_theta = rc->rope_theta;
    c.rope_interleaved = rc->rope_interleaved;
    c.window = rc->window;
    return c;
}

size_t rc_qkv_rows(const refcase *rc)
{
    return (size_t)(rc->H + 2 * rc->Hkv) * (size_t)(rc->D / rc->H);
}

mhsa_block *rc_block(const refcase *rc)
{
    mhsa_config cfg = rc_config(rc);
    mhsa_block *blk = NULL;
    ck_assert_msg(mhsa_block_create(&cfg, &blk) == MHSA_OK,
                  "%s: mhsa_block_create: %s", rc->name, mhsa_last_error());
    ck_assert(refcase_count(rc, "w_qkv") == rc_qkv_rows(rc) * rc->D);
    ck_assert_msg(mhsa_block_set_weights(blk, refcase_get(rc, "w_qkv"),
                                         refcase_get(rc, "b_qkv"),
                                         refcase_get(rc, "w_out"),
                                         refcase_get(rc, "b_out"))
                  == MHSA_OK, "%s: set_weights: %s", rc->name,
                  mhsa_last_error());
    return blk;
}

void rc_expect(const refcase *rc, const char *what, const float *got,
               const float *want, size_t n)
{
    const char *isa = mhsa_isa_name(mhsa_active_isa());
    ck_assert_msg(want, "%s: case has no tensor for %s", rc->name, what);
    double e = rel_err(got, want, n);
    printf("%-36s %-6s %dt %-16s rel err %.2e\n", rc->name, isa,
           refrun_threads, what, e);
    ck_assert_msg(all_finite(got, n), "%s [%s, %d threads]: %s has NaN/inf",
                  rc->name, isa, refrun_threads, what);
    ck_assert_msg(e <= rc->tol, "%s [%s, %d threads]: %s rel err %.3g > "
                  "tol %.3g", rc->name, isa, refrun_threads, what, e,
                  rc->tol);
}

mhsa_kv_cache *rc_cache(const refcase *rc, const mhsa_block *blk,
                        int max_batch)
{
    mhsa_kv_cache *c = NULL;
    if (rc->kv_dtype == 0) {
        ck_assert_int_eq(mhsa_kv_cache_create(blk, max_batch, rc->T, &c),
                         MHSA_OK);
    } else {
        mhsa_kv_config kc = { max_batch, rc->T,
                              rc->kv_dtype == 1 ? MHSA_F16 : MHSA_BF16 };
        ck_assert_msg(mhsa_kv_cache_create_ex(blk, &kc, &c) == MHSA_OK,
                      "%s: mhsa_kv_cache_create_ex: %s", rc->name,
                      mhsa_last_error());
    }
    return c;
}

// ---- forward -----------------------------------------------------------------

// mhsa_forward, or mhsa_forward_ex when the case has key padding.
static void forward_call(const refcase *rc, const mhsa_block *blk,
                         mhsa_workspace *ws, const float *x,
                         const int *seq_len, float *y, float *attn)
{
    const float *mask = refcase_get(rc, "mask");
    mhsa_status s;
    if (seq_len) {
        mhsa_forward_args a = { x, rc->B, rc->T, mask, seq_len, y, attn };
        s = mhsa_forward_ex(blk, ws, &a);
    } else {
        s = mhsa_forward(blk, ws, x, rc->B, rc->T, mask, y, attn);
    }
    ck_assert_msg(s == MHSA_OK, "%s: forward: %s (%s)", rc->name,
                  mhsa_status_str(s), mhsa_last_error());
}

// attn (B, H, T, T) -> the rows the case stores, (B, H, rows, T).
static float *attn_rows(const refcase *rc, const float *attn)
{
    size_t T = (size_t)rc->T, nr = (size_t)rc->n_attn_rows;
    size_t bh = (size_t)rc->B * rc->H;
    float *a = malloc(bh * nr * T * sizeof(float));
    for (size_t i = 0; i < bh; i++)
        for (size_t r = 0; r < nr; r++)
            memcpy(a + (i * nr + r) * T,
                   attn + (i * T + (size_t)rc->attn_rows[r]) * T,
                   T * sizeof(float));
    return a;
}

// Rows whose every key is blocked: zero weights and a zero context, so
// that row of y is b_out (0 without bias).
static void check_dead_rows(const refcase *rc, const float *y,
                            const float *attn)
{
    const float *bo = refcase_get(rc, "b_out");
    size_t T = (size_t)rc->T, D = (size_t)rc->D;
    for (int i = 0; i < rc->n_dead_rows; i++) {
        size_t b = (size_t)rc->dead_rows[i] / T, t = rc->dead_rows[i] % T;
        int zero = 1, is_bout = 1;
        for (size_t h = 0; attn && h < (size_t)rc->H; h++)
            for (size_t j = 0; j < T; j++)
                zero &= attn[((b * rc->H + h) * T + t) * T + j] == 0.0f;
        for (size_t d = 0; d < D; d++)
            is_bout &= fabsf(y[(b * T + t) * D + d] - (bo ? bo[d] : 0.0f))
                       <= 1e-6f;
        ck_assert_msg(zero, "%s: dead row b %zu t %zu has a nonzero "
                      "weight", rc->name, b, t);
        ck_assert_msg(is_bout, "%s: dead row b %zu t %zu: y is not b_out",
                      rc->name, b, t);
    }
}

// x with every sequence but `keep` replaced by other values.
static float *others_changed(const refcase *rc, const float *x, int keep)
{
    size_t n = (size_t)rc->B * rc->T * rc->D, per = (size_t)rc->T * rc->D;
    float *x2 = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        x2[i] = i / per == (size_t)keep ? x[i] : 0.25f - 0.75f * x[i];
    return x2;
}

// Key padding: what sequence b sees is its own business. NaN at padded
// positions of x leaves the rows before seq_len[b] alone (blocked keys are
// never read), and other sequences' contents and lengths change no bit of
// sequence b (y and attn).
static void check_padding(const refcase *rc, const mhsa_block *blk,
                          mhsa_workspace *ws, const float *y,
                          const float *attn)
{
    size_t T = (size_t)rc->T, D = (size_t)rc->D, B = (size_t)rc->B;
    size_t ny = B * T * D, na = B * rc->H * T * T, perA = rc->H * T * T;
    const float *x = refcase_get(rc, "x");
    float *x2 = malloc(ny * sizeof(float)), *y2 = malloc(ny * sizeof(float));
    float *a2 = malloc(na * sizeof(float));
    memcpy(x2, x, ny * sizeof(float));
    for (size_t b = 0; b < B; b++)
        for (size_t t = (size_t)rc->seq_len[b]; t < T; t++)
            for (size_t d = 0; d < D; d++)
                x2[(b * T + t) * D + d] = NAN;
    forward_call(rc, blk, ws, x2, rc->seq_len, y2, NULL);
    for (size_t b = 0; b < B; b++)
        ck_assert_msg(!memcmp(y + b * T * D, y2 + b * T * D,
                              (size_t)rc->seq_len[b] * D * sizeof(float)),
                      "%s: NaN in padded keys of sequence %zu changed its "
                      "unpadded rows", rc->name, b);
    int keep_list[2] = { 0, (int)B - 1 };
    for (int k = 0; k < (B > 1 ? 2 : 0); k++) {
        int keep = keep_list[k];
        float *x3 = others_changed(rc, x, keep);
        int sl[REF_MAX_B];
        for (size_t b = 0; b < B; b++)
            sl[b] = (int)b == keep ? rc->seq_len[b]
                  : 1 + (rc->seq_len[b] + 3) % rc->T;
        forward_call(rc, blk, ws, x3, sl, y2, a2);
        ck_assert_msg(!memcmp(y + keep * T * D, y2 + keep * T * D,
                              T * D * sizeof(float)),
                      "%s: y of sequence %d changed with the other "
                      "sequences' contents and lengths", rc->name, keep);
        ck_assert_msg(!memcmp(attn + keep * perA, a2 + keep * perA,
                              perA * sizeof(float)),
                      "%s: attn of sequence %d changed with the other "
                      "sequences' contents and lengths", rc->name, keep);
        free(x3);
    }
    free(x2);
    free(y2);
    free(a2);
}

static void run_forward(const refcase *rc, outs *o)
{
    mhsa_block *blk = rc_block(rc);
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, rc->B, &ws), MHSA_OK);
    size_t ny = (size_t)rc->B * rc->T * rc->D;
    size_t na = (size_t)rc->B * rc->H * rc->T * rc->T;
    float *y = alloc_guarded(ny), *y2 = alloc_guarded(ny);
    float *attn = alloc_guarded(na);
    fill_nan(y, ny);
    fill_nan(y2, ny);
    fill_nan(attn, na);
    const float *x = refcase_get(rc, "x");
    const int *sl = rc->has_seq_len ? rc->seq_len : NULL;
    forward_call(rc, blk, ws, x, sl, y, attn);
    rc_expect(rc, "y", y, refcase_get(rc, "y"), ny);
    if (refcase_get(rc, "attn")) {
        if (rc->n_attn_rows) {
            float *a = attn_rows(rc, attn);
            rc_expect(rc, "attn rows", a, refcase_get(rc, "attn"),
                      refcase_count(rc, "attn"));
            free(a);
        } else {
            rc_expect(rc, "attn", attn, refcase_get(rc, "attn"), na);
        }
    }
    check_dead_rows(rc, y, attn);
    // Without attn the same bits (the path that never builds T x T).
    forward_call(rc, blk, ws, x, sl, y2, NULL);
    ck_assert_msg(!memcmp(y, y2, ny * sizeof(float)),
                  "%s: y differs with and without attn", rc->name);
    ck_assert(guard_ok(y, ny) && guard_ok(y2, ny) && guard_ok(attn, na));
    outs_add(o, "forward y", y, ny);
    outs_add(o, "forward attn", attn, na);
    if (sl)
        check_padding(rc, blk, ws, y, attn);
    free_guarded(y);
    free_guarded(y2);
    free_guarded(attn);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

// ---- backward ------------------------------------------------------------------

static void run_backward(const refcase *rc, outs *o)
{
    mhsa_block *blk = rc_block(rc);
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, rc->B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    size_t ny = (size_t)rc->B * rc->T * rc->D, D = (size_t)rc->D;
    size_t rows = rc_qkv_rows(rc);
    float *y = alloc_guarded(ny), *dx = alloc_guarded(ny);
    fill_nan(dx, ny);
    const float *x = refcase_get(rc, "x"), *dy = refcase_get(rc, "dy");
    const int *sl = rc->has_seq_len ? rc->seq_len : NULL;
    forward_call(rc, blk, ws, x, sl, y, NULL);
    rc_expect(rc, "y", y, refcase_get(rc, "y"), ny);
    mhsa_status s = mhsa_backward(blk, ws, dy, dx, g);
    ck_assert_msg(s == MHSA_OK, "%s: backward: %s", rc->name,
                  mhsa_last_error());
    rc_expect(rc, "dx", dx, refcase_get(rc, "dx"), ny);
    rc_expect(rc, "g_w_qkv", g->w_qkv, refcase_get(rc, "g_w_qkv"), rows * D);
    rc_expect(rc, "g_w_out", g->w_out, refcase_get(rc, "g_w_out"), D * D);
    if (rc->bias) {
        rc_expect(rc, "g_b_qkv", g->b_qkv, refcase_get(rc, "g_b_qkv"), rows);
        rc_expect(rc, "g_b_out", g->b_out, refcase_get(rc, "g_b_out"), D);
        outs_add(o, "g_b_qkv", g->b_qkv, rows);
        outs_add(o, "g_b_out", g->b_out, D);
    } else {
        ck_assert_ptr_null(g->b_qkv);
        ck_assert_ptr_null(g->b_out);
    }
    ck_assert(guard_ok(y, ny) && guard_ok(dx, ny));
    outs_add(o, "backward y", y, ny);
    outs_add(o, "dx", dx, ny);
    outs_add(o, "g_w_qkv", g->w_qkv, rows * D);
    outs_add(o, "g_w_out", g->w_out, D * D);
    if (sl && rc->B > 1) {
        // dx of sequence 0 depends on nothing the others hold.
        float *x3 = others_changed(rc, x, 0), *dy3 = others_changed(rc, dy, 0);
        float *dx3 = malloc(ny * sizeof(float));
        int sl3[REF_MAX_B];
        for (int b = 0; b < rc->B; b++)
            sl3[b] = b == 0 ? sl[b] : 1 + (sl[b] + 3) % rc->T;
        forward_call(rc, blk, ws, x3, sl3, y, NULL);
        mhsa_grads_zero(g);
        ck_assert_int_eq(mhsa_backward(blk, ws, dy3, dx3, g), MHSA_OK);
        ck_assert_msg(!memcmp(dx, dx3, (size_t)rc->T * D * sizeof(float)),
                      "%s: dx of sequence 0 changed with the other "
                      "sequences", rc->name);
        free(x3);
        free(dy3);
        free(dx3);
    }
    free_guarded(y);
    free_guarded(dx);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

// ---- decode, one length for the whole batch ----------------------------------

// Feeds x through the cache: first pos0 tokens in one call (their outputs
// are not compared), then chunks of the given sizes (cycled). yt receives
// rows pos0..T-1, (B, T - pos0, D).
static void decode_chunks(const refcase *rc, const mhsa_block *blk,
                          const int *chunks, int nch, float *yt)
{
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, rc->B, &ws), MHSA_OK);
    mhsa_kv_cache *c = rc_cache(rc, blk, rc->B);
    size_t D = (size_t)rc->D, T = (size_t)rc->T, B = (size_t)rc->B;
    size_t p0 = (size_t)rc->pos0, tail = T - p0;
    const float *x = refcase_get(rc, "x");
    size_t most = p0 > tail ? p0 : tail;
    float *xin = malloc(B * most * D * sizeof(float));
    float *yout = malloc(B * most * D * sizeof(float));
    size_t pos = 0;
    for (int ci = 0; pos < T; ci++) {
        size_t n = pos < p0 ? p0 : (size_t)chunks[(ci - (p0 > 0)) % nch];
        if (n > T - pos)
            n = T - pos;
        for (size_t b = 0; b < B; b++)
            memcpy(xin + b * n * D, x + (b * T + pos) * D,
                   n * D * sizeof(float));
        mhsa_status s = mhsa_forward_cached(blk, ws, c, xin, (int)B, (int)n,
                                            yout);
        REQUIRE(s == MHSA_OK, "%s: forward_cached at %zu (+%zu): %s",
                rc->name, pos, n, mhsa_last_error());
        if (pos >= p0)
            for (size_t b = 0; b < B; b++)
                memcpy(yt + (b * tail + pos - p0) * D, yout + b * n * D,
                       n * D * sizeof(float));
        pos += n;
        REQUIRE(mhsa_kv_cache_len(c) == (int)pos, "%s: cache length %d, "
                "not %zu", rc->name, mhsa_kv_cache_len(c), pos);
    }
    free(xin);
    free(yout);
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
}

static void run_decode(const refcase *rc, outs *o)
{
    static const int one[] = { 1 }, five_then_ones[] = { 5, 1, 1, 1 },
                     mixed[] = { 3, 7, 2 }, whole[] = { 1 << 30 },
                     tail[] = { 1, 1, 1, 1, 1, 1, 1 << 30 };
    static const struct { const char *name; const int *c; int n; } sch[] = {
        { "decode 1", one, 1 },           { "decode 5,1,1,1", five_then_ones, 4 },
        { "decode 3,7,2", mixed, 3 },     { "decode whole", whole, 1 },
    }, sch_long[] = {
        // after a long prefix: 6 tokens alone, then the rest in one call
        { "decode 1 x6, rest", tail, 7 },
    };
    mhsa_block *blk = rc_block(rc);
    size_t ny = (size_t)rc->B * (rc->T - rc->pos0) * rc->D;
    float *yt = malloc(ny * sizeof(float));
    // Each schedule refills the cache: after a long prefix, one schedule
    // covers both the one-token path and the multi-token one.
    size_t nsch = rc->pos0 ? 1 : sizeof sch / sizeof sch[0];
    for (size_t s = 0; s < nsch; s++) {
        const char *name = rc->pos0 ? sch_long[s].name : sch[s].name;
        decode_chunks(rc, blk, rc->pos0 ? sch_long[s].c : sch[s].c,
                      rc->pos0 ? sch_long[s].n : sch[s].n, yt);
        rc_expect(rc, name, yt, refcase_get(rc, "y"), ny);
        outs_add(o, name, yt, ny);
    }
    if (rc->kv_dtype == 0 && !rc->pos0) {
        // The same rows from one causal forward over the whole sequence.
        size_t nfull = (size_t)rc->B * rc->T * rc->D, D = (size_t)rc->D;
        float *y = malloc(nfull * sizeof(float));
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, rc->B, &ws), MHSA_OK);
        ck_assert_int_eq(mhsa_forward(blk, ws, refcase_get(rc, "x"), rc->B,
                                      rc->T, NULL, y, NULL), MHSA_OK);
        size_t tail = (size_t)(rc->T - rc->pos0);
        for (size_t b = 0; b < (size_t)rc->B; b++)
            memmove(y + b * tail * D, y + (b * rc->T + rc->pos0) * D,
                    tail * D * sizeof(float));
        rc_expect(rc, "full forward", y, refcase_get(rc, "y"), ny);
        outs_add(o, "full forward", y, ny);
        free(y);
        mhsa_workspace_destroy(ws);
    }
    free(yt);
    mhsa_block_destroy(blk);
}

// ---- decode, each sequence its own length (mhsa_forward_cached_ex) ----------

enum sched_kind { SCHED_TOKENS, SCHED_MIXED, SCHED_WHOLE, SCHED_SHRINK,
                  SCHED_PAUSE };

// How many tokens sequence b appends at its k-th call (SCHED_PAUSE: at
// step k): mixing prefill chunks and single tokens across the batch in one
// call, or pausing sequences (n_new = 0) between their tokens (the first
// call appends nothing at all).
static int sched_n(enum sched_kind s, int b, int k, int left)
{
    static const int pat[4][4] = { { 7, 1 }, { 1, 3 }, { 2 }, { 1, 1, 5 } };
    static const int plen[4] = { 2, 2, 1, 3 };
    int n = s == SCHED_MIXED ? pat[b % 4][k % plen[b % 4]]
          : s == SCHED_WHOLE ? left
          : s == SCHED_PAUSE ? (k == 0 || (k + b) % 3 == 0 ? 0 : 1 + b % 2)
          : 1;
    return n < left ? n : left;
}

typedef struct ragged_run {
    enum sched_kind sched;
    int solo;            // -1: the whole batch; else only this sequence (B=1)
    int keep;            // -1, or the sequence whose inputs stay when the
                         // others are replaced (independence check)
} ragged_run;

// Runs a schedule through mhsa_forward_cached_ex; y (B, T, D) receives each
// sequence's rows (rows past its length stay 0). Rows of x_new past
// n_new[b] hold NaN (SCHED_MIXED) or zeros: they are not part of the
// sequence.
static void ragged_chunks(const refcase *rc, const mhsa_block *blk,
                          const ragged_run *r, float *yfull)
{
    int B = rc->B, nb = r->solo >= 0 ? 1 : B;
    size_t D = (size_t)rc->D, T = (size_t)rc->T;
    mhsa_workspace *ws = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, nb, &ws), MHSA_OK);
    mhsa_kv_cache *c = rc_cache(rc, blk, nb);
    const float *x0 = refcase_get(rc, "x");
    float *xalt = r->keep >= 0 ? others_changed(rc, x0, r->keep) : NULL;
    const float *x = xalt ? xalt : x0;
    float *xin = malloc((size_t)B * T * D * sizeof(float));
    float *yout = malloc((size_t)B * T * D * sizeof(float));
    int pos[REF_MAX_B] = { 0 }, calls[REF_MAX_B] = { 0 };
    memset(yfull, 0, (size_t)B * T * D * sizeof(float));
    for (int step = 0;; step++) {
        int n_all[REF_MAX_B], t_new = 0, last = -1, left = 0;
        for (int b = 0; b < B; b++) {
            int k = r->sched == SCHED_PAUSE ? step : calls[b];
            n_all[b] = sched_n(r->sched, b, k, rc->seq_len[b] - pos[b]);
            if (n_all[b] > t_new)
                t_new = n_all[b];
            if (n_all[b])
                last = b;
            left += rc->seq_len[b] - pos[b];
        }
        if (!left)
            break;
        if (!t_new) {   // everyone pauses: a call that appends nothing
            t_new = 1;
            last = B - 1;
        }
        // SCHED_SHRINK: the batch ends at the last sequence still going.
        int bcall = r->solo >= 0 ? 1 : r->sched == SCHED_SHRINK ? last + 1 : B;
        int n_new[REF_MAX_B];
        for (int i = 0; i < bcall; i++) {
            int b = r->solo >= 0 ? r->solo : i;
            n_new[i] = n_all[b];
            for (int t = 0; t < t_new; t++)
                for (size_t d = 0; d < D; d++)
                    xin[((size_t)i * t_new + t) * D + d] =
                        t < n_new[i] ? x[((size_t)b * T + pos[b] + t) * D + d]
                        : r->sched == SCHED_MIXED ? NAN : 0.0f;
        }
        fill_nan(yout, (size_t)bcall * t_new * D);
        mhsa_cached_args a = { xin, bcall, t_new, n_new, yout };
        mhsa_status s = mhsa_forward_cached_ex(blk, ws, c, &a);
        REQUIRE(s == MHSA_OK, "%s: forward_cached_ex step %d: %s", rc->name,
                step, mhsa_last_error());
        for (int i = 0; i < bcall; i++) {
            int b = r->solo >= 0 ? r->solo : i;
            const float *yr = yout + (size_t)i * t_new * D;
            memcpy(yfull + ((size_t)b * T + pos[b]) * D, yr,
                   (size_t)n_new[i] * D * sizeof(float));
            size_t k = (size_t)n_new[i] * D;
            while (k < (size_t)t_new * D && yr[k] == 0.0f)
                k++;
            REQUIRE(k == (size_t)t_new * D, "%s step %d: y row %zu of "
                    "sequence %d is not zero past n_new = %d", rc->name, step,
                    k / D, b, n_new[i]);
        }
        // every sequence of the schedule moves on (a solo run follows the
        // batch's calls, so its t_new stays the batch's)
        int longest = 0;
        for (int b = 0; b < B; b++) {
            pos[b] += n_all[b];
            calls[b] += n_all[b] > 0;
        }
        for (int i = 0; i < bcall; i++) {
            int b = r->solo >= 0 ? r->solo : i;
            REQUIRE(mhsa_kv_cache_seq_len(c, i) == pos[b], "%s step %d: "
                    "slot %d has length %d, not %d", rc->name, step, i,
                    mhsa_kv_cache_seq_len(c, i), pos[b]);
            if (pos[b] > longest)
                longest = pos[b];
        }
        if (r->solo < 0)
            for (int b = 0; b < B; b++)
                longest = pos[b] > longest ? pos[b] : longest;
        REQUIRE(mhsa_kv_cache_len(c) == longest, "%s step %d: cache length "
                "%d, not %d", rc->name, step, mhsa_kv_cache_len(c), longest);
        if (r->solo < 0)   // those beyond the call's B kept their length
            for (int b = bcall; b < B; b++)
                REQUIRE(mhsa_kv_cache_seq_len(c, b) == pos[b], "%s step %d: "
                        "slot %d beyond B changed", rc->name, step, b);
    }
    free(xalt);
    free(xin);
    free(yout);
    mhsa_kv_cache_destroy(c);
    mhsa_workspace_destroy(ws);
}

static void run_decode_ragged(const refcase *rc, outs *o)
{
    static const struct { const char *name; enum sched_kind s; } sch[] = {
        { "ragged tokens", SCHED_TOKENS }, { "ragged mixed", SCHED_MIXED },
        { "ragged whole", SCHED_WHOLE },   { "ragged shrink-B", SCHED_SHRINK },
        { "ragged pauses", SCHED_PAUSE },
    };
    mhsa_block *blk = rc_block(rc);
    size_t D = (size_t)rc->D, T = (size_t)rc->T, ny = (size_t)rc->B * T * D;
    float *y = malloc(ny * sizeof(float)), *y2 = malloc(ny * sizeof(float));
    float *mixed = malloc(ny * sizeof(float));
    for (size_t s = 0; s < sizeof sch / sizeof sch[0]; s++) {
        ragged_run r = { sch[s].s, -1, -1 };
        ragged_chunks(rc, blk, &r, y);
        rc_expect(rc, sch[s].name, y, refcase_get(rc, "y"), ny);
        outs_add(o, sch[s].name, y, ny);
        if (sch[s].s == SCHED_MIXED)
            memcpy(mixed, y, ny * sizeof(float));
    }
    // Each sequence alone (B = 1, the same calls) gives its rows to fp32
    // rounding; another batch around it changes none of its bits.
    for (int b = 0; b < rc->B; b++) {
        ragged_run r = { SCHED_MIXED, b, -1 };
        ragged_chunks(rc, blk, &r, y2);
        const float *yb = mixed + (size_t)b * T * D;
        const float *sb = y2 + (size_t)b * T * D;
        double e = rel_err(sb, yb, T * D);
        printf("%-36s %-6s %dt solo seq %d: rel err %.2e (%s)\n", rc->name,
               mhsa_isa_name(mhsa_active_isa()), refrun_threads, b, e,
               memcmp(sb, yb, T * D * sizeof(float)) ? "not bitwise"
                                                     : "bitwise");
        ck_assert_msg(e <= 1e-5, "%s: sequence %d alone differs from the "
                      "batch by %.3g", rc->name, b, e);
    }
    int keep_list[2] = { 0, rc->B - 1 };
    for (int k = 0; k < (rc->B > 1 ? 2 : 0); k++) {
        int keep = keep_list[k];
        ragged_run r = { SCHED_MIXED, -1, keep };
        ragged_chunks(rc, blk, &r, y2);
        ck_assert_msg(!memcmp(mixed + (size_t)keep * T * D,
                              y2 + (size_t)keep * T * D,
                              T * D * sizeof(float)),
                      "%s: sequence %d changed with the other sequences' "
                      "contents", rc->name, keep);
    }
    if (rc->kv_dtype == 0) {
        // Prefill with key padding gives the same rows (causal: padding
        // to the right does not touch the rows before it).
        mhsa_workspace *ws = NULL;
        ck_assert_int_eq(mhsa_workspace_create(blk, rc->B, &ws), MHSA_OK);
        forward_call(rc, blk, ws, refcase_get(rc, "x"), rc->seq_len, y,
                     NULL);
        for (int b = 0; b < rc->B; b++)
            memset(y + ((size_t)b * T + rc->seq_len[b]) * D, 0,
                   (T - rc->seq_len[b]) * D * sizeof(float));
        rc_expect(rc, "forward_ex", y, refcase_get(rc, "y"), ny);
        outs_add(o, "forward_ex", y, ny);
        mhsa_workspace_destroy(ws);
    }
    free(y);
    free(y2);
    free(mixed);
    mhsa_block_destroy(blk);
}

// ---- by kind -------------------------------------------------------------------

void run_case(const refcase *rc, outs *o)
{
    if (!strcmp(rc->kind, "forward"))
        run_forward(rc, o);
    else if (!strcmp(rc->kind, "backward"))
        run_backward(rc, o);
    else if (!strcmp(rc->kind, "decode") && rc->has_seq_len)
        run_decode_ragged(rc, o);
    else if (!strcmp(rc->kind, "decode"))
        run_decode(rc, o);
    else
        ck_abort_msg("%s: unknown kind %s", rc->name, rc->kind);
}

void run_case_threads(const char *name, int isa_i)
{
    if (!kernels_or_skip(isa_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[isa_i]), MHSA_OK);
    refcase rc;
    rc_load(name, &rc);
    outs o1 = { 0 }, o2 = { 0 };
    // A long prefix (pos0) is the cost of its case: one run, at 2 threads
    // (its small heads decode on one thread anyway; the thread tests cover
    // the splits).
    if (!rc.pos0) {
        omp_set_num_threads(refrun_threads = 1);
        run_case(&rc, &o1);
    }
    omp_set_num_threads(refrun_threads = 2);
    run_case(&rc, &o2);
    char tag[128];
    snprintf(tag, sizeof tag, "%s [%s]", name,
             mhsa_isa_name(all_isas[isa_i]));
    if (!rc.pos0)
        outs_same(&o1, &o2, tag);
    outs_free(&o1);
    outs_free(&o2);
    refcase_free(&rc);
}

// ---- thread counts on shapes large enough to run in parallel ------------------

enum { THREAD_B = 4 };

// Decode for thread_run: a prefill chunk, then single tokens (the decode
// path) and a chunk of 7 now and then, up to Tdec positions. Ragged:
// sequence b holds Tdec - 7 b tokens and prefills 5 b fewer.
static void thread_decode(const thread_spec *ts, const mhsa_block *blk,
                          mhsa_workspace *ws, const float *x, outs *o)
{
    const mhsa_config *cfg = &ts->cfg;
    int B = THREAD_B, Tdec = cfg->max_seq_len;
    size_t D = (size_t)cfg->d_model, nx = (size_t)B * Tdec * D;
    mhsa_kv_cache *c = NULL;
    if (ts->kv_dtype) {
        mhsa_kv_config kc = { B, Tdec, (mhsa_dtype)ts->kv_dtype };
        ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &c), MHSA_OK);
    } else {
        ck_assert_int_eq(mhsa_kv_cache_create(blk, B, Tdec, &c), MHSA_OK);
    }
    float *xin = malloc(nx * 4), *yo = malloc(nx * 4), *yall = calloc(nx, 4);
    int len[THREAD_B], pos[THREAD_B] = { 0 };
    for (int b = 0; b < B; b++)
        len[b] = ts->ragged == 2 ? Tdec - 7 * b : Tdec;
    for (int step = 0;; step++) {
        int n[THREAD_B], t_new = 0;
        for (int b = 0; b < B; b++) {
            int want = step == 0 ? Tdec - 25 - (ts->ragged == 2) * 5 * b
                     : step % 10 == 7 ? 7 : 1;
            n[b] = want < len[b] - pos[b] ? want : len[b] - pos[b];
            t_new = n[b] > t_new ? n[b] : t_new;
        }
        if (!t_new)
            break;
        for (int b = 0; b < B; b++)
            for (int t = 0; t < t_new; t++)
                memcpy(xin + ((size_t)b * t_new + t) * D,
                       x + ((size_t)b * Tdec + (t < n[b] ? pos[b] + t : 0)) * D,
                       D * 4);
        mhsa_status st;
        if (ts->ragged == 2) {
            mhsa_cached_args ca = { xin, B, t_new, n, yo };
            st = mhsa_forward_cached_ex(blk, ws, c, &ca);
        } else {
            st = mhsa_forward_cached(blk, ws, c, xin, B, t_new, yo);
        }
        REQUIRE(st == MHSA_OK, "%s: decode step %d: %s", ts->name, step,
                mhsa_last_error());
        for (int b = 0; b < B; b++) {
            memcpy(yall + ((size_t)b * Tdec + pos[b]) * D,
                   yo + (size_t)b * t_new * D, (size_t)n[b] * D * 4);
            pos[b] += n[b];
        }
    }
    ck_assert(all_finite(yall, nx));
    outs_add(o, "threads decode", yall, nx);
    free(xin);
    free(yo);
    free(yall);
    mhsa_kv_cache_destroy(c);
}

// Everything the 0.2 paths produce for one configuration at the current
// thread count: forward (or forward_ex) with attn, backward, and decode of a
// longer sequence through the cache in chunks (cached_ex with per-sequence
// lengths when ragged).
static void thread_run(const thread_spec *ts, outs *o)
{
    const mhsa_config *cfg = &ts->cfg;
    int B = THREAD_B, T = ts->T_fwd, Tdec = cfg->max_seq_len;
    size_t D = (size_t)cfg->d_model, H = (size_t)cfg->n_heads;
    mhsa_block *blk = NULL;
    ck_assert_msg(mhsa_block_create(cfg, &blk) == MHSA_OK, "%s",
                  mhsa_last_error());
    ck_assert_int_eq(mhsa_block_init_random(blk, 77), MHSA_OK);
    size_t nx = (size_t)B * Tdec * D, ny = (size_t)B * T * D;
    size_t na = (size_t)B * H * T * T;
    float *x = malloc(nx * 4), *dy = malloc(ny * 4), *y = malloc(ny * 4);
    float *a = malloc(na * 4), *dx = malloc(ny * 4);
    rng r = { 1234 };
    fill_uniform(&r, x, nx, -1, 1);
    fill_uniform(&r, dy, ny, -1, 1);
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    int sl[THREAD_B] = { T, T * 2 / 3, 1, T - 1 };
    if (ts->ragged) {   // key padding in the forward
        mhsa_forward_args fa = { x, B, T, NULL, sl, y, a };
        ck_assert_int_eq(mhsa_forward_ex(blk, ws, &fa), MHSA_OK);
    } else {
        ck_assert_int_eq(mhsa_forward(blk, ws, x, B, T, NULL, y, a), MHSA_OK);
    }
    ck_assert_int_eq(mhsa_backward(blk, ws, dy, dx, g), MHSA_OK);
    size_t rows = (size_t)(cfg->n_heads + 2 * (cfg->n_kv_heads
                   ? cfg->n_kv_heads : cfg->n_heads)) * (D / H);
    outs_add(o, "threads y", y, ny);
    outs_add(o, "threads attn", a, na);
    outs_add(o, "threads dx", dx, ny);
    outs_add(o, "threads g_w_qkv", g->w_qkv, rows * D);
    if (cfg->bias)
        outs_add(o, "threads g_b_qkv", g->b_qkv, rows);
    outs_add(o, "threads g_w_out", g->w_out, D * D);
    if (cfg->causal)   // a cache needs a causal block
        thread_decode(ts, blk, ws, x, o);
    free(x); free(dy); free(y); free(a); free(dx);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

void check_thread_counts(const thread_spec *ts, int isa_i)
{
    if (!kernels_or_skip(isa_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[isa_i]), MHSA_OK);
    outs o[3] = { { 0 }, { 0 }, { 0 } };
    for (int nt = 1; nt <= 3; nt++) {
        omp_set_num_threads(refrun_threads = nt);
        thread_run(ts, &o[nt - 1]);
    }
    for (int nt = 2; nt <= 3; nt++) {
        char tag[96];
        snprintf(tag, sizeof tag, "%s [%s] (%d threads vs 1)", ts->name,
                 mhsa_isa_name(all_isas[isa_i]), nt);
        // outs_same says "1 and 2 threads"; the tag says which
        outs_same(&o[0], &o[nt - 1], tag);
    }
    for (int i = 0; i < 3; i++)
        outs_free(&o[i]);
}

// ---- main ----------------------------------------------------------------------

int run_tcases(const char *suite, const tcase_def *d, int n, int argc,
               char **argv)
{
    Suite *s = suite_create(suite);
    for (int i = 0; i < n; i++) {
        int want = argc < 2;
        for (int a = 1; a < argc; a++)
            want |= !strcmp(argv[a], d[i].name);
        if (!want)
            continue;
        TCase *tc = tcase_create(d[i].name);
        // The long-position cases refill a cache of 32770 tokens; the
        // environment's CK_TIMEOUT_MULTIPLIER still scales this.
        tcase_set_timeout(tc, 900);
        d[i].add(tc);
        suite_add_tcase(s, tc);
    }
    for (int a = 1; a < argc; a++) {
        int known = 0;
        for (int i = 0; i < n; i++)
            known |= !strcmp(argv[a], d[i].name);
        if (!known) {
            fprintf(stderr, "%s: no test case %s\n", suite, argv[a]);
            return EXIT_FAILURE;
        }
    }
    return run_suite(s);
}
