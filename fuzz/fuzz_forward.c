// fuzz_forward.c — libFuzzer target: the public block API driven by fuzzed
// shapes, flags, 0.2 config fields (grouped-query heads, RoPE dims, pairs
// and theta, sliding window), key padding, masks, cache dtypes, ragged
// cached steps with slot resets and refused calls, and values (NaN, inf,
// -FLT_MAX, subnormals, huge), on exactly sized heap buffers (ASan
// redzones catch any over-read or over-write). Beyond "no crash, no leak,
// no UB" it checks the contract (shared/API.md):
//   - a blocked weight (causal, window, padding or -INFINITY) is an exact
//     +0, and a row with every key blocked has all-zero weights and
//     y == b_out (finite weights);
//   - y is the same bits (NaN for NaN) with and without the attention
//     weights requested (T = 1 without them takes the streaming decode
//     path, longer T the tiles packed once per head);
//   - a refused call (bad seq_len or n_new, B past max_batch, t_new past
//     max_seq_len, a slot that would overflow or is out of range, an
//     invalid config or cache dtype) changes no output, leaves the
//     workspace's recorded forward (the backward after it keeps its bits)
//     and the cache's lengths and contents (the cache goes on with the
//     bits of a twin that never saw the refused calls);
//   - a sequence's bits do not depend on the other sequences' tokens,
//     in mhsa_forward_ex and in the ragged cached calls;
//   - y rows past a sequence's n_new are +0.
// When the input runs out, bytes come from a splitmix64 stream seeded by
// the input's length and values are small exact numbers, so short inputs
// still reach big shapes with ordinary values.
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mhsa.h"

typedef struct reader { const uint8_t *p; size_t n; uint64_t s; } reader;

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static unsigned u8(reader *r)
{
    if (r->n == 0)
        return (unsigned)(splitmix(&r->s) >> 56);
    r->n--;
    return *r->p++;
}

static float value(reader *r)
{
    static const float special[] = {
        0.0f, -0.0f, 1.0f, -1.0f, NAN, INFINITY, -INFINITY, FLT_MAX,
        -FLT_MAX, FLT_MIN, 1e-40f, -1e-45f, 1e4f, -1e4f, 1e19f, 3e38f,
    };
    if (r->n == 0)   // past the input: small exact values only
        return (float)((int)(splitmix(&r->s) % 241) - 120) / 32.0f;
    unsigned sel = u8(r);
    if (sel < 16)
        return special[sel];
    if (sel == 255) {   // any bit pattern
        uint32_t bits = u8(r) | u8(r) << 8 | u8(r) << 16 | (uint32_t)u8(r) << 24;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    return (float)((int)sel - 136) / 32.0f;   // small, exact values
}

static void fill(reader *r, float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = value(r);
}

static int all_finite(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return 0;
    return 1;
}

// The same bits, or both NaN (a NaN's sign and payload carry nothing).
static int same(const float *a, const float *b, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (memcmp(&a[i], &b[i], 4) && !(isnan(a[i]) && isnan(b[i])))
            return 0;
    return 1;
}

static int untouched(const float *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &p[i], 4);
        if (bits != 0x5a5a5a5au)
            return 0;
    }
    return 1;
}

#define CHECK(c) do { if (!(c)) abort(); } while (0)

// ---- the configuration ------------------------------------------------------

typedef struct setup {
    mhsa_config cfg;
    int D, H, Hkv, dh, T, B;
    int want_attn, mask_kind, use_seq_len, check_others;
    mhsa_dtype dt;
    unsigned probe;          // which invalid field to try (0: none)
} setup;

static setup read_setup(reader *r)
{
    setup s;
    memset(&s, 0, sizeof s);
    unsigned isa = u8(r) % 5;
    if (isa && mhsa_select_isa((mhsa_isa)isa) != MHSA_OK)
        mhsa_select_isa(MHSA_ISA_AUTO);
    s.D = 1 + (int)(u8(r) % 24);
    s.H = 1 + (int)(u8(r) % (unsigned)s.D);
    while (s.D % s.H)
        s.H--;
    // T up to 24, and sometimes 70..115: two query blocks or more, where
    // the forward packs each head's K/V tiles once.
    unsigned t = u8(r);
    s.T = t < 240 ? 1 + (int)(t % 24) : 70 + 3 * (int)(t - 240);
    s.B = 1 + (int)(u8(r) % 3);
    unsigned flags = u8(r);
    int causal = flags & 1, bias = flags >> 1 & 1;
    s.want_attn = flags >> 2 & 1;
    s.mask_kind = flags >> 3 & 3;   // none, fuzzed, -inf rows, -FLT_MAX
    s.use_seq_len = flags >> 6 & 1;
    s.check_others = flags >> 7 & 1;
    s.dh = s.D / s.H;
    // Hkv: a divisor of H (0 in the config means H).
    unsigned kv = u8(r);
    int divs[24], nd = 0;
    for (int i = 1; i <= s.H; i++)
        if (s.H % i == 0)
            divs[nd++] = i;
    s.Hkv = divs[kv % (unsigned)nd];
    unsigned rope = u8(r), theta = u8(r) % 8, win = u8(r) % 8;
    static const float thetas[8] = { 0.0f, 1e4f, 5e5f, 2.0f, 1.0f, 1e-3f,
                                     3e38f, 0.5f };
    int rope_dim = 0;
    if ((rope & 3) && s.dh >= 2)
        rope_dim = 2 * (1 + (int)(rope >> 2 & 31) % (s.dh / 2));
    int window = 0;
    if (causal) {
        const int w[8] = { 0, 0, 1, 2, 3, 5, s.T - 1, s.T + 7 };
        window = w[win] > 0 ? w[win] : 0;
    }
    mhsa_config cfg = { s.D, s.H, s.T + (int)(flags >> 5 & 1), causal, bias,
                        s.Hkv == s.H && (kv & 0x80) ? 0 : s.Hkv, rope_dim,
                        thetas[theta], (int)(rope >> 7), window };
    s.cfg = cfg;
    unsigned misc = u8(r);
    s.dt = (mhsa_dtype)(misc % 3);
    s.probe = misc >> 4;
    return s;
}

// An invalid variant of a valid config (probe 1..9) is refused and leaves
// *out alone.
static void probe_config(const setup *s)
{
    mhsa_config c = s->cfg;
    switch (s->probe) {
    case 1: c.n_kv_heads = -1; break;
    case 2: c.n_kv_heads = s->H + 1; break;
    case 3: c.rope_dim = 2 * (s->dh / 2) + 2; break;
    case 4: c.rope_dim = 1; break;
    case 5: c.rope_theta = -c.rope_theta - 1.0f; break;
    case 6: c.rope_theta = NAN; break;
    case 7: c.rope_interleaved = 2; break;
    case 8: c.window = -1; break;
    case 9: c.causal = 0; c.window = c.window ? c.window : 1; break;
    default: return;
    }
    mhsa_block *sentinel = (mhsa_block *)&c, *out = sentinel;
    CHECK(mhsa_block_create(&c, &out) != MHSA_OK);
    CHECK(out == sentinel);
}

// Is key j blocked for row t of sequence b?
static int blocked(const setup *s, const float *mask, const int *seq_len,
                   int b, int t, int j)
{
    const mhsa_config *c = &s->cfg;
    if (c->causal && j > t)
        return 1;
    if (c->window && j <= t - c->window)
        return 1;
    if (seq_len && j >= seq_len[b])
        return 1;
    return mask && mask[(size_t)t * s->T + j] == -INFINITY;
}

// ---- the ragged cached calls ------------------------------------------------

typedef struct caches {
    mhsa_kv_cache *a, *twin, *other;   // other: slot 0's tokens only
    int len[3];
} caches;

// A refused cached call on c.a only: nothing written, lengths kept.
static void refused_step(const setup *s, const mhsa_block *blk,
                         mhsa_workspace *ws, caches *c, reader *r,
                         float *x_new, float *y, size_t ny_max)
{
    int B = s->B, t_new = 1 + (int)(u8(r) % 3), n_new[4] = { 0, 0, 0, 0 };
    if (t_new > s->cfg.max_seq_len)
        t_new = s->cfg.max_seq_len;
    int b = (int)(u8(r) % (unsigned)B), kind = (int)(u8(r) % 6);
    int left = s->T - c->len[b];
    mhsa_cached_args a = { x_new, B, t_new, n_new, y };
    switch (kind) {
    case 0: n_new[b] = -1 - (int)(u8(r) % 3); break;
    case 1: n_new[b] = t_new + 1 + (int)(u8(r) % 3); break;
    case 2:   // slot b overflows (or t_new passes max_seq_len)
        a.t_new = left + 1;
        n_new[b] = left + 1;
        break;
    case 3: a.t_new = s->cfg.max_seq_len + 1 + (int)(u8(r) % 4); break;
    case 4: a.B = B + 1; break;
    default: {
        int bad = u8(r) & 1 ? -1 - (int)(u8(r) % 4) : B + (int)(u8(r) % 4);
        CHECK(mhsa_kv_cache_reset_seq(c->a, bad) == MHSA_ERR_INVALID_ARG);
        for (int k = 0; k < B; k++)
            CHECK(mhsa_kv_cache_seq_len(c->a, k) == c->len[k]);
        return;
    }
    }
    memset(y, 0x5a, ny_max * 4);
    CHECK(mhsa_forward_cached_ex(blk, ws, c->a, &a) != MHSA_OK);
    CHECK(untouched(y, ny_max));
    for (int k = 0; k < B; k++)
        CHECK(mhsa_kv_cache_seq_len(c->a, k) == c->len[k]);
}

// Fuzzed ragged steps (t_new, n_new per slot, n_new NULL when every slot
// fits t_new, prefill chunks, resets, refused calls) over x (B, T, D)
// until every slot is full or the budget ends.
static void cached_steps(const setup *s, const mhsa_block *blk,
                         mhsa_workspace *ws, reader *r, const float *x)
{
    int B = s->B, T = s->T, D = s->D;
    size_t d = (size_t)D;
    size_t rows_max = (size_t)(B + 1) * (size_t)(s->cfg.max_seq_len + 4);
    size_t ny_max = rows_max * d;
    float *x_new = malloc(ny_max * 4), *xo = malloc(ny_max * 4);
    float *y = malloc(ny_max * 4), *y2 = malloc(ny_max * 4);
    float *yo = malloc(ny_max * 4);
    memset(x_new, 0, ny_max * 4);
    caches c = { NULL, NULL, NULL, { 0, 0, 0 } };
    mhsa_kv_config kc = { B, T, s->dt };
    CHECK(mhsa_kv_cache_create_ex(blk, &kc, &c.a) == MHSA_OK);
    CHECK(mhsa_kv_cache_create_ex(blk, &kc, &c.twin) == MHSA_OK);
    CHECK(mhsa_kv_cache_create_ex(blk, &kc, &c.other) == MHSA_OK);
    mhsa_kv_config bad = { B, T, (mhsa_dtype)(3 + u8(r) % 4) };
    mhsa_kv_cache *sentinel = (mhsa_kv_cache *)&bad, *out = sentinel;
    CHECK(mhsa_kv_cache_create_ex(blk, &bad, &out) == MHSA_ERR_INVALID_ARG);
    CHECK(out == sentinel);
    for (int step = 0; step < 48; step++) {
        int full = 1;
        for (int b = 0; b < B; b++)
            full &= c.len[b] == T;
        if (full)
            break;
        unsigned op = u8(r);
        if ((op & 7) == 0) {   // reset a slot of every cache
            int b = (int)(u8(r) % (unsigned)B);
            CHECK(mhsa_kv_cache_reset_seq(c.a, b) == MHSA_OK);
            CHECK(mhsa_kv_cache_reset_seq(c.twin, b) == MHSA_OK);
            CHECK(mhsa_kv_cache_reset_seq(c.other, b) == MHSA_OK);
            c.len[b] = 0;
            continue;
        }
        if ((op & 7) == 1) {
            refused_step(s, blk, ws, &c, r, x_new, y, ny_max);
            continue;
        }
        int t_new = op & 0x80 ? 1 + (int)(u8(r) % (unsigned)T)
                              : 1 + (int)(u8(r) % 4);
        if (t_new > s->cfg.max_seq_len)   // the workspace's rows
            t_new = s->cfg.max_seq_len;
        int min_left = T, n_new[3];
        for (int b = 0; b < B; b++) {
            int left = T - c.len[b];
            min_left = left < min_left ? left : min_left;
            int n = (int)(u8(r) % (unsigned)(t_new + 1));
            n_new[b] = n < left ? n : left;
        }
        int use_null = (op & 0x40) && t_new <= min_left;
        for (int b = 0; b < B; b++) {
            if (use_null)
                n_new[b] = t_new;
            for (int t = 0; t < t_new; t++) {
                float *row = x_new + ((size_t)b * t_new + t) * d;
                float *orow = xo + ((size_t)b * t_new + t) * d;
                if (t < n_new[b])
                    memcpy(row, x + ((size_t)b * T + c.len[b] + t) * d,
                           d * 4);
                else
                    fill(r, row, d);   // not a token: never read
                if (b == 0)
                    memcpy(orow, row, d * 4);
                else
                    for (size_t k = 0; k < d; k++)
                        orow[k] = (op & 0x20) ? NAN : -row[k] * 3.0f;
            }
        }
        mhsa_cached_args a = { x_new, B, t_new, use_null ? NULL : n_new, y };
        CHECK(mhsa_forward_cached_ex(blk, ws, c.a, &a) == MHSA_OK);
        a.y = y2;
        CHECK(mhsa_forward_cached_ex(blk, ws, c.twin, &a) == MHSA_OK);
        a.x_new = xo;
        a.y = yo;
        CHECK(mhsa_forward_cached_ex(blk, ws, c.other, &a) == MHSA_OK);
        size_t n = (size_t)B * t_new * d;
        CHECK(same(y, y2, n));
        CHECK(same(y, yo, (size_t)n_new[0] * d));
        for (int b = 0; b < B; b++) {
            for (int t = n_new[b]; t < t_new; t++)
                for (size_t k = 0; k < d; k++) {
                    uint32_t bits;
                    memcpy(&bits, y + ((size_t)b * t_new + t) * d + k, 4);
                    CHECK(bits == 0);
                }
            c.len[b] += n_new[b];
            CHECK(mhsa_kv_cache_seq_len(c.a, b) == c.len[b]);
            CHECK(mhsa_kv_cache_seq_len(c.twin, b) == c.len[b]);
        }
    }
    mhsa_kv_cache_destroy(c.a);
    mhsa_kv_cache_destroy(c.twin);
    mhsa_kv_cache_destroy(c.other);
    free(x_new);
    free(xo);
    free(y);
    free(y2);
    free(yo);
}

// ---- the target ---------------------------------------------------------------

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    reader r = { data, size, 0x6d687361ull + size };
    setup s = read_setup(&r);
    int D = s.D, H = s.H, T = s.T, B = s.B, bias = s.cfg.bias;
    int causal = s.cfg.causal, want_attn = s.want_attn;
    probe_config(&s);

    size_t d = (size_t)D, nqkv = (size_t)(H + 2 * s.Hkv) * (size_t)s.dh;
    size_t nw = nqkv * d, ny = (size_t)B * T * d;
    size_t tt = (size_t)T * T, na = (size_t)B * H * tt;
    float *w_qkv = malloc(nw * 4), *w_out = malloc(d * d * 4);
    float *b_qkv = bias ? malloc(nqkv * 4) : NULL;
    float *b_out = bias ? malloc(d * 4) : NULL;
    float *x = malloc(ny * 4), *dy = malloc(ny * 4), *y = malloc(ny * 4);
    float *y2 = malloc(ny * 4), *dx = malloc(ny * 4), *dx2 = malloc(ny * 4);
    float *xo = malloc(ny * 4), *yo = malloc(ny * 4);
    float *attn = malloc(na * 4);
    float *mask = s.mask_kind ? malloc(tt * 4) : NULL;
    int *seq_len = s.use_seq_len ? malloc((size_t)B * sizeof(int)) : NULL;
    int *bad_len = malloc((size_t)B * sizeof(int));
    for (int b = 0; seq_len && b < B; b++)
        seq_len[b] = 1 + (int)(u8(&r) % (unsigned)T);
    fill(&r, w_qkv, nw);
    fill(&r, w_out, d * d);
    if (bias) {
        fill(&r, b_qkv, nqkv);
        fill(&r, b_out, d);
    }
    fill(&r, x, ny);
    fill(&r, dy, ny);
    if (s.mask_kind == 1)
        fill(&r, mask, tt);
    else if (s.mask_kind >= 2)
        for (size_t i = 0; i < tt; i++)
            mask[i] = (u8(&r) & 1) ? (s.mask_kind == 2 ? -INFINITY : -FLT_MAX)
                                   : value(&r);

    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    CHECK(mhsa_block_create(&s.cfg, &blk) == MHSA_OK);
    CHECK(mhsa_block_set_weights(blk, w_qkv, b_qkv, w_out, b_out) == MHSA_OK);
    CHECK(mhsa_workspace_create(blk, B, &ws) == MHSA_OK);
    CHECK(mhsa_grads_create(blk, &g) == MHSA_OK);

    // A batch too large is refused before anything is written.
    memset(y, 0x5a, ny * 4);
    mhsa_forward_args fa = { x, B + 1, T, mask, NULL, y, NULL };
    CHECK(mhsa_forward_ex(blk, ws, &fa) == MHSA_ERR_SHAPE);
    CHECK(untouched(y, ny));

    fa = (mhsa_forward_args){ x, B, T, mask, seq_len, y2, NULL };
    CHECK(mhsa_forward_ex(blk, ws, &fa) == MHSA_OK);
    fa.y = y;
    fa.attn = want_attn ? attn : NULL;
    CHECK(mhsa_forward_ex(blk, ws, &fa) == MHSA_OK);
    CHECK(same(y, y2, ny));
    int weights_finite = all_finite(w_qkv, nw) && all_finite(w_out, d * d) &&
                         (!bias || (all_finite(b_qkv, nqkv) &&
                                    all_finite(b_out, d)));
    for (int b = 0; b < B; b++)
        for (int t = 0; t < T; t++) {
            int dead = 1;
            for (int j = 0; j < T; j++) {
                int blk_tj = blocked(&s, mask, seq_len, b, t, j);
                dead &= blk_tj;
                for (int h = 0; h < H && want_attn && blk_tj; h++) {
                    float w = attn[(((size_t)b * H + h) * T + t) * T + j];
                    CHECK(w == 0.0f && !signbit(w));
                }
            }
            // A row that sees no key is its bias, read as the library
            // reads every input: a subnormal bias is zero (API.md 0.3).
            if (dead && weights_finite)
                for (size_t k = 0; k < d; k++)
                    CHECK(y[((size_t)b * T + t) * d + k] ==
                          (bias && fpclassify(b_out[k]) != FP_SUBNORMAL
                               ? b_out[k] : 0.0f));
        }
    CHECK(mhsa_backward(blk, ws, dy, dx, g) == MHSA_OK);

    // A refused forward_ex (bad seq_len) writes nothing and keeps the
    // recorded forward: the backward after it has the same bits.
    for (int b = 0; b < B; b++)
        bad_len[b] = seq_len ? seq_len[b] : T;
    bad_len[u8(&r) % (unsigned)B] = u8(&r) & 1 ? 0 : T + 1 + (int)(u8(&r) % 9);
    memset(y2, 0x5a, ny * 4);
    mhsa_forward_args bad = { x, B, T, mask, bad_len, y2, NULL };
    CHECK(mhsa_forward_ex(blk, ws, &bad) == MHSA_ERR_INVALID_ARG);
    CHECK(untouched(y2, ny));
    CHECK(mhsa_backward(blk, ws, dy, dx2, g) == MHSA_OK);
    CHECK(same(dx, dx2, ny));

    // Sequence 0 does not see what the others hold.
    if (s.check_others && B > 1) {
        memcpy(xo, x, (size_t)T * d * 4);
        fill(&r, xo + (size_t)T * d, ny - (size_t)T * d);
        mhsa_forward_args oa = { xo, B, T, mask, seq_len, yo, NULL };
        CHECK(mhsa_forward_ex(blk, ws, &oa) == MHSA_OK);
        CHECK(same(y, yo, (size_t)T * d));
    }

    if (causal) {
        cached_steps(&s, blk, ws, &r, x);
    } else {   // decoding is autoregressive: no cache for this block
        mhsa_kv_cache *c = (mhsa_kv_cache *)&s, *keep = c;
        CHECK(mhsa_kv_cache_create(blk, B, T, &c) == MHSA_ERR_INVALID_ARG);
        CHECK(c == keep);
    }
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(w_qkv);
    free(w_out);
    free(b_qkv);
    free(b_out);
    free(x);
    free(dy);
    free(y);
    free(y2);
    free(dx);
    free(dx2);
    free(xo);
    free(yo);
    free(attn);
    free(mask);
    free(seq_len);
    free(bad_len);
    return 0;
}
