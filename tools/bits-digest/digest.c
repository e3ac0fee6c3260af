/* digest — one line per case: the case's name and a 64-bit FNV-1a hash of
 * every output bit the public API gave for it.
 *
 * Why: a change that should keep every bit (a refactor) is checked by
 * building this same file against the commit before and the commit after,
 * running both, and comparing the lines (tools/bits-digest.sh does that).
 * It uses the public headers only, so it builds against either commit.
 *
 * The cases walk the block's variants (GQA, RoPE both pairings, windows,
 * bias, causal, masks, ragged seq_len), forward with and without the
 * attention weights, backward, the cached path in F32/F16/BF16 with ragged
 * chunks and decode steps, and a few steps of the tiny GPT trainer; each
 * on every ISA this CPU can run. Threads come from OMP_NUM_THREADS: the
 * script runs it at 1 and 2, and the two outputs must agree as well. */
#include "mhsa.h"
#include "mhsa_train.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct digest { uint64_t h; } digest;

static void dg_init(digest *d) { d->h = 1469598103934665603ull; }

static void dg_bytes(digest *d, const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        d->h ^= b[i];
        d->h *= 1099511628211ull;
    }
}

static void dg_floats(digest *d, const float *p, size_t n)
{
    if (p) dg_bytes(d, p, n * sizeof *p);
}

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13; *s ^= *s >> 7; *s ^= *s << 17;
    return *s;
}

/* Uniform in [-1, 1), from the top 24 bits: the same on every platform. */
static void fill(float *p, size_t n, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (float)((int64_t)(rng_next(s) >> 40) - (1 << 23)) /
               (float)(1 << 23);
}

static void *xmalloc(size_t n)
{
    void *p = calloc(n ? n : 1, 1);
    if (!p) { fprintf(stderr, "digest: out of memory\n"); exit(2); }
    return p;
}

static void check(mhsa_status s, const char *what)
{
    if (s != MHSA_OK) {
        fprintf(stderr, "digest: %s: %s: %s\n", what, mhsa_status_str(s),
                mhsa_last_error());
        exit(2);
    }
}

/* A case prints its line, or the status of a call that failed (a failure
 * that both commits share is then compared like any output). */
static void emit(const char *isa, const char *name, const digest *d)
{
    printf("%s %s %016llx\n", isa, name, (unsigned long long)d->h);
}

typedef struct variant {
    const char *name;
    int D, H, Hkv, causal, bias, rope, interleaved, window;
} variant;

static const variant variants[] = {
    { "plain32x4",      32, 4, 0, 0, 1, 0, 0, 0 },
    { "causal48x3",     48, 3, 0, 1, 0, 0, 0, 0 },
    { "gqa64x8kv2",     64, 8, 2, 1, 1, 0, 0, 0 },
    { "mqa40x5kv1",     40, 5, 1, 0, 1, 0, 0, 0 },
    { "rope64x4",       64, 4, 0, 1, 0, 16, 0, 0 },
    { "ropei96x6kv3",   96, 6, 3, 1, 1, 8, 1, 0 },
    { "window56x7",     56, 7, 0, 1, 1, 0, 0, 5 },
    { "all72x6kv2",     72, 6, 2, 1, 0, 12, 0, 3 },
    { "wide128x2",     128, 2, 0, 1, 1, 64, 1, 0 },
    { "odd33x3",        33, 3, 0, 0, 1, 0, 0, 0 },
};

typedef struct shape { int B, T; } shape;
static const shape shapes[] = { {1, 1}, {2, 7}, {3, 17}, {1, 64}, {2, 33} };

static mhsa_block *make_block(const variant *v, int max_T, uint64_t seed)
{
    mhsa_config c;
    memset(&c, 0, sizeof c);
    c.d_model = v->D; c.n_heads = v->H; c.max_seq_len = max_T;
    c.causal = v->causal; c.bias = v->bias; c.n_kv_heads = v->Hkv;
    c.rope_dim = v->rope; c.rope_interleaved = v->interleaved;
    c.window = v->window;
    if (v->rope) c.rope_theta = 10000.0f + (float)v->D;
    mhsa_block *b = NULL;
    check(mhsa_block_create(&c, &b), "block_create");
    check(mhsa_block_init_random(b, seed), "init_random");
    return b;
}

/* Forward (plain, with a mask, with ragged seq_len, with attn), then the
 * backward of the last one. */
static void forward_cases(const char *isa, const variant *v, const shape *s)
{
    const int D = v->D, H = v->H, B = s->B, T = s->T;
    mhsa_block *blk = make_block(v, 64, 7 + (uint64_t)D);
    mhsa_workspace *ws = NULL;
    check(mhsa_workspace_create(blk, B, &ws), "workspace_create");
    uint64_t rs = 0x9E3779B97F4A7C15ull ^ (uint64_t)(D * 131 + T);
    size_t n = (size_t)B * T * D;
    float *x = xmalloc(n * 4), *y = xmalloc(n * 4), *dy = xmalloc(n * 4);
    float *dx = xmalloc(n * 4);
    float *attn = xmalloc((size_t)B * H * T * T * 4);
    float *mask = xmalloc((size_t)T * T * 4);
    fill(x, n, &rs);
    fill(dy, n, &rs);
    fill(mask, (size_t)T * T, &rs);
    int seq[3];
    for (int b = 0; b < B; b++) seq[b] = T - (b * T) / 3 > 0 ? T - (b * T) / 3 : 1;
    char name[128];

    for (int form = 0; form < 4; form++) {
        mhsa_forward_args a;
        memset(&a, 0, sizeof a);
        a.x = x; a.B = B; a.T = T; a.y = y;
        if (form == 1) a.mask = mask;
        if (form == 2) a.seq_len = seq;
        if (form == 3) { a.attn = attn; a.seq_len = seq; }
        static const char *forms[] = { "plain", "mask", "seqlen", "attn" };
        digest d;
        dg_init(&d);
        mhsa_status st = mhsa_forward_ex(blk, ws, &a);
        dg_bytes(&d, &st, sizeof st);
        if (st == MHSA_OK) {
            dg_floats(&d, y, n);
            if (form == 3) dg_floats(&d, attn, (size_t)B * H * T * T);
        }
        snprintf(name, sizeof name, "fwd/%s/B%dT%d/%s", v->name, B, T, forms[form]);
        emit(isa, name, &d);

        if (st != MHSA_OK || (form != 0 && form != 2 && form != 3)) continue;
        mhsa_grads *g = NULL;
        check(mhsa_grads_create(blk, &g), "grads_create");
        mhsa_grads_zero(g);
        dg_init(&d);
        st = mhsa_backward(blk, ws, dy, dx, g);
        dg_bytes(&d, &st, sizeof st);
        if (st == MHSA_OK) {
            int Hkv = v->Hkv ? v->Hkv : H;
            size_t rows = (size_t)(H + 2 * Hkv) * (D / H);
            dg_floats(&d, dx, n);
            dg_floats(&d, g->w_qkv, rows * D);
            dg_floats(&d, g->b_qkv, g->b_qkv ? rows : 0);
            dg_floats(&d, g->w_out, (size_t)D * D);
            dg_floats(&d, g->b_out, g->b_out ? (size_t)D : 0);
        }
        snprintf(name, sizeof name, "bwd/%s/B%dT%d/%s", v->name, B, T, forms[form]);
        emit(isa, name, &d);
        mhsa_grads_destroy(g);
    }
    free(x); free(y); free(dy); free(dx); free(attn); free(mask);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

/* The cached path: a ragged prefill in two chunks, then decode steps, in
 * each cache type; a reset of one sequence and a second prefill. */
static void cached_cases(const char *isa, const variant *v)
{
    const int D = v->D, B = 3, cap = 48;
    mhsa_block *blk = make_block(v, cap, 11 + (uint64_t)D);
    mhsa_workspace *ws = NULL;
    check(mhsa_workspace_create(blk, B, &ws), "workspace_create");
    uint64_t rs = 0xD1B54A32D192ED03ull ^ (uint64_t)D;
    const int t_max = 13;
    size_t n = (size_t)B * t_max * D;
    float *x = xmalloc(n * 4), *y = xmalloc(n * 4);
    static const char *dts[] = { "f32", "f16", "bf16" };
    for (int dt = 0; dt < 3; dt++) {
        mhsa_kv_config kc = { B, cap, (mhsa_dtype)dt };
        mhsa_kv_cache *c = NULL;
        check(mhsa_kv_cache_create_ex(blk, &kc, &c), "kv_cache_create_ex");
        digest d;
        dg_init(&d);
        static const int chunks[][3] = {
            { 13, 5, 9 }, { 7, 13, 0 }, { 1, 1, 1 }, { 1, 0, 1 }, { 1, 1, 1 },
            { 4, 2, 3 }, { 1, 1, 1 },
        };
        for (size_t k = 0; k < sizeof chunks / sizeof chunks[0]; k++) {
            int t_new = 0;
            for (int b = 0; b < B; b++)
                if (chunks[k][b] > t_new) t_new = chunks[k][b];
            if (k == 5) check(mhsa_kv_cache_reset_seq(c, 1), "reset_seq");
            fill(x, (size_t)B * t_new * D, &rs);
            mhsa_cached_args a;
            memset(&a, 0, sizeof a);
            a.x_new = x; a.B = B; a.t_new = t_new; a.n_new = chunks[k]; a.y = y;
            mhsa_status st = mhsa_forward_cached_ex(blk, ws, c, &a);
            dg_bytes(&d, &st, sizeof st);
            if (st == MHSA_OK) {
                /* Rows past n_new[b] are unspecified: hash the rows given. */
                for (int b = 0; b < B; b++)
                    dg_floats(&d, y + (size_t)b * t_new * D,
                              (size_t)chunks[k][b] * D);
            }
            for (int b = 0; b < B; b++) {
                int L = mhsa_kv_cache_seq_len(c, b);
                dg_bytes(&d, &L, sizeof L);
            }
        }
        char name[96];
        snprintf(name, sizeof name, "cached/%s/%s", v->name, dts[dt]);
        emit(isa, name, &d);
        mhsa_kv_cache_destroy(c);
    }
    free(x); free(y);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
}

/* Five steps of the tiny GPT (both position kinds): losses, then every
 * parameter and moment. */
static void gpt_cases(const char *isa)
{
    for (int rope = 0; rope <= 1; rope++) {
        mhsa_gpt_config c;
        memset(&c, 0, sizeof c);
        c.vocab = 61; c.n_layer = 2; c.n_embd = 48; c.n_head = 4;
        c.block_size = 24; c.max_batch = 3; c.rope_dim = rope ? 12 : 0;
        c.tie_embeddings = rope;
        mhsa_gpt *g = NULL;
        check(mhsa_gpt_create(&c, &g), "gpt_create");
        check(mhsa_gpt_init_random(g, 5), "gpt_init_random");
        mhsa_optim_config oc;
        memset(&oc, 0, sizeof oc);
        oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
        oc.lr = 1e-2f; oc.beta2 = 0.95f;
        oc.weight_decay = 0.1f; oc.clip_norm = 1.0f;
        uint64_t rs = 77 + (uint64_t)rope;
        int32_t tok[3 * 24], tgt[3 * 24];
        digest d;
        dg_init(&d);
        for (int step = 0; step < 5; step++) {
            for (int i = 0; i < 3 * 24; i++) {
                tok[i] = (int32_t)(rng_next(&rs) % 61);
                tgt[i] = (int32_t)(rng_next(&rs) % 61);
            }
            float loss = 0, gn = 0;
            check(mhsa_gpt_forward(g, tok, tgt, 3, 24, 0, &loss), "gpt_forward");
            check(mhsa_gpt_backward(g), "gpt_backward");
            check(mhsa_gpt_step(g, &oc, &gn), "gpt_step");
            dg_bytes(&d, &loss, sizeof loss);
            dg_bytes(&d, &gn, sizeof gn);
        }
        int nt = mhsa_gpt_n_tensors(g);
        size_t total = 0;
        for (int i = 0; i < nt; i++) {
            mhsa_gpt_tensor t;
            check(mhsa_gpt_get_tensor(g, i, &t), "gpt_get_tensor");
            total += t.numel;
        }
        dg_floats(&d, mhsa_gpt_params(g), total);
        dg_floats(&d, mhsa_gpt_moment1(g), total);
        dg_floats(&d, mhsa_gpt_moment2(g), total);
        emit(isa, rope ? "gpt/rope-tied" : "gpt/learned-pos", &d);
        mhsa_gpt_destroy(g);
    }
}

int main(void)
{
    static const mhsa_isa isas[] = { MHSA_ISA_SCALAR, MHSA_ISA_AVX2,
                                     MHSA_ISA_AVX512, MHSA_ISA_NEON };
    for (size_t i = 0; i < sizeof isas / sizeof isas[0]; i++) {
        if (mhsa_select_isa(isas[i]) != MHSA_OK) continue;
        if (mhsa_active_isa() != isas[i]) continue;
        const char *isa = mhsa_isa_name(isas[i]);
        for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
                forward_cases(isa, &variants[v], &shapes[s]);
            if (variants[v].causal) cached_cases(isa, &variants[v]);
        }
        gpt_cases(isa);
    }
    return 0;
}
