// test_subnormal.c — "Subnormals are zero" (shared API.md, Additions for
// 0.3): every computation reads subnormal inputs, weights, masks, upstream
// gradients and cache contents as zero and writes no subnormal result, on
// every ISA and thread count, whatever floating-point state the caller
// has; and the caller's state comes back as it was.
//
// The checks are bit-exact: a call whose operands hold subnormals must give
// exactly the bits of the same call with those values replaced by +0.0.
// On a CPU where the library computed with gradual underflow these differ
// (x * w with x = 1e-39 is 1e-39 * w, not 0), so the tests fail when FTZ or
// DAZ is missing in any thread that computes (try MHSA_LIBRARY_MXCSR =
// 0x1F80 in src/core/fpenv.h). valgrind does not emulate FTZ/DAZ (it reads back
// the default MXCSR and computes with subnormals): there these tests say so
// and check nothing.
#include <fenv.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fpenv.h"
#include "api/objects.h"
#include "mhsa_train.h"
#include "util.h"

#if defined(__x86_64__)
#include <xmmintrin.h>
#endif

// ---- values --------------------------------------------------------------

// A random fp32 subnormal of either sign: exponent field 0, mantissa != 0.
static float random_subnormal(rng *r)
{
    uint32_t u = (uint32_t)rng_u64(r);
    uint32_t bits = (u & 0x80000000u) | ((u & 0x7fffffu) | 1u);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

// Two copies of x (n): in `sub` every `every`-th element (from a random
// start) is a random subnormal, in `zero` the same elements are +0.0.
static void plant(rng *r, const float *x, size_t n, size_t every, float *sub,
                  float *zero)
{
    memcpy(sub, x, n * sizeof(float));
    memcpy(zero, x, n * sizeof(float));
    for (size_t i = (size_t)rng_int(r, 0, (int)every - 1); i < n;
         i += every) {
        sub[i] = random_subnormal(r);
        zero[i] = 0.0f;
    }
}

// Whole rows r of sub (and zero) with r % every == first: a subnormal
// contribution is visible only where a whole sum is subnormal (next to a
// normal term it is below fp32's resolution), so the rows make sure that
// gradual underflow would change the results.
static void plant_rows(rng *r, float *sub, float *zero, size_t rows,
                       size_t cols, size_t every, size_t first)
{
    for (size_t i = first; i < rows; i += every)
        for (size_t j = 0; j < cols; j++) {
            sub[i * cols + j] = random_subnormal(r);
            zero[i * cols + j] = 0.0f;
        }
}

static float *fresh(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    ck_assert(p != NULL);
    return p;
}

static int same_bits(const float *a, const float *b, size_t n)
{
    return n == 0 || !memcmp(a, b, n * sizeof(float));
}

// Whether any element is subnormal: the library writes none.
static int has_subnormal(const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fpclassify(x[i]) == FP_SUBNORMAL)
            return 1;
    return 0;
}

// Selects all_isas[isa] for this (forked) test; 0 to skip it: the ISA is
// not here, or valgrind runs the test (it does not emulate FTZ/DAZ).
static int start(int isa)
{
    if (!kernels_or_skip(isa))
        return 0;
    if (under_valgrind()) {
        printf("skip: valgrind does not emulate FTZ/DAZ\n");
        return 0;
    }
    ck_assert_int_eq(mhsa_select_isa(all_isas[isa]), MHSA_OK);
    return 1;
}

// ---- the block -------------------------------------------------------------

// The attention variants and shapes: small ones with odd sizes, and one
// large enough that the projections' GEMM, the attention and the backward
// run on two threads when there are two (one-token decode and its
// matrix-vector projections stay on one at this size).
typedef struct variant {
    const char *name;
    int causal, bias, n_kv_heads, rope_dim, window, masked;
    int B, T, T1, D, H;   // cached calls: T1 tokens, T - T1 - 1, then 1
} variant;

static const variant variants[] = {
    { "plain, bias, mask", 0, 1, 0, 0, 0, 1, 2, 13, 7, 32, 4 },
    { "causal GQA RoPE window", 1, 0, 2, 8, 5, 0, 2, 13, 7, 32, 4 },
    { "causal GQA RoPE, large", 1, 1, 2, 16, 0, 0, 2, 64, 40, 128, 4 },
};
enum { N_VARIANTS = sizeof variants / sizeof variants[0] };

// The block's inputs: one set with subnormals planted, one with zeros.
typedef struct inputs {
    mhsa_config cfg;
    int B, T, T1, D, H;
    size_t nqkv;                    // rows of w_qkv
    float *w_qkv, *b_qkv, *w_out, *b_out, *x, *mask, *dy;
} inputs;

static void inputs_free(inputs *in)
{
    free(in->w_qkv);
    free(in->b_qkv);
    free(in->w_out);
    free(in->b_out);
    free(in->x);
    free(in->mask);
    free(in->dy);
}

// in[0] with subnormals, in[1] with +0.0 in their places.
static void make_inputs(const variant *v, uint64_t seed, inputs in[2])
{
    rng r = { seed };
    int B = v->B, T = v->T, T1 = v->T1, D = v->D, H = v->H, DH = D / H;
    mhsa_config c = { 0 };
    c.d_model = D;
    c.n_heads = H;
    c.max_seq_len = T;
    c.causal = v->causal;
    c.bias = v->bias;
    c.n_kv_heads = v->n_kv_heads;
    c.rope_dim = v->rope_dim;
    c.window = v->window;
    size_t hkv = (size_t)(v->n_kv_heads ? v->n_kv_heads : H);
    size_t nqkv = (size_t)D + 2 * hkv * DH, d = D, ny = (size_t)B * T * D;
    size_t nm = (size_t)T * T;
    float *w_qkv = fresh(nqkv * d), *b_qkv = fresh(nqkv), *w_out = fresh(d * d);
    float *b_out = fresh(d), *x = fresh(ny), *mask = fresh(nm), *dy = fresh(ny);
    fill_uniform(&r, w_qkv, nqkv * d, -0.3f, 0.3f);
    fill_uniform(&r, b_qkv, nqkv, -0.5f, 0.5f);
    fill_uniform(&r, w_out, d * d, -0.3f, 0.3f);
    fill_uniform(&r, b_out, d, -0.5f, 0.5f);
    fill_uniform(&r, x, ny, -1.0f, 1.0f);
    fill_uniform(&r, mask, nm, -2.0f, 0.0f);
    fill_uniform(&r, dy, ny, -1.0f, 1.0f);
    for (int i = 0; i < 2; i++) {
        in[i].cfg = c;
        in[i].B = B;
        in[i].T = T;
        in[i].T1 = T1;
        in[i].D = D;
        in[i].H = H;
        in[i].nqkv = nqkv;
        in[i].w_qkv = fresh(nqkv * d);
        in[i].w_out = fresh(d * d);
        in[i].b_qkv = v->bias ? fresh(nqkv) : NULL;
        in[i].b_out = v->bias ? fresh(d) : NULL;
        in[i].x = fresh(ny);
        in[i].mask = v->masked ? fresh(nm) : NULL;
        in[i].dy = fresh(ny);
    }
    // Scattered subnormals everywhere; whole subnormal rows where gradual
    // underflow would show: output features of both projections (weight
    // row and bias), the first token of each sequence and of the second
    // cached call (T1), and dy's last token, whose dK and dV in a causal
    // block come from that row alone.
    plant(&r, w_qkv, nqkv * d, 7, in[0].w_qkv, in[1].w_qkv);
    plant_rows(&r, in[0].w_qkv, in[1].w_qkv, nqkv, d, 7, 2);
    plant(&r, w_out, d * d, 11, in[0].w_out, in[1].w_out);
    plant_rows(&r, in[0].w_out, in[1].w_out, d, d, 5, 1);
    if (v->bias) {
        plant(&r, b_qkv, nqkv, 3, in[0].b_qkv, in[1].b_qkv);
        plant(&r, b_out, d, 3, in[0].b_out, in[1].b_out);
        plant_rows(&r, in[0].b_qkv, in[1].b_qkv, nqkv, 1, 7, 2);
        plant_rows(&r, in[0].b_out, in[1].b_out, d, 1, 5, 1);
    }
    plant(&r, x, ny, 5, in[0].x, in[1].x);
    plant_rows(&r, in[0].x, in[1].x, (size_t)B * T, d, T, 0);
    plant_rows(&r, in[0].x, in[1].x, (size_t)B * T, d, T, T1);
    if (v->masked)
        plant(&r, mask, nm, 4, in[0].mask, in[1].mask);
    plant(&r, dy, ny, 5, in[0].dy, in[1].dy);
    plant_rows(&r, in[0].dy, in[1].dy, (size_t)B * T, d, T, T - 1);
    free(w_qkv);
    free(b_qkv);
    free(w_out);
    free(b_out);
    free(x);
    free(mask);
    free(dy);
}

// What one run computes: the forward with weights, the backward, and a
// cached forward in two calls with subnormals (or zeros) planted in the
// cache between them.
typedef struct outputs {
    float *y, *attn, *dx, *gw_qkv, *gb_qkv, *gw_out, *gb_out, *yc;
} outputs;

static void outputs_free(outputs *o)
{
    free(o->y);
    free(o->attn);
    free(o->dx);
    free(o->gw_qkv);
    free(o->gb_qkv);
    free(o->gw_out);
    free(o->gb_out);
    free(o->yc);
}

static float *copy_of(const float *x, size_t n)
{
    if (!x)
        return NULL;
    float *p = fresh(n);
    memcpy(p, x, n * sizeof(float));
    return p;
}

// Every stored K and V element of the cached part of each sequence: a
// subnormal (zero == 0) or +0 (zero == 1), so that the next call's row T1
// (a subnormal x) sees only subnormal keys and values but its own. For a
// BF16 cache a BF16 subnormal pattern (exponent 0), which widens to an
// fp32 subnormal.
static void plant_cache(mhsa_kv_cache *c, int B, int zero, uint64_t seed)
{
    rng r = { seed };
    size_t hkv = c->blk->Hkv, dh = c->blk->dh;
    for (int which = 0; which < 2; which++) {
        void *base = which ? c->v : c->k;
        for (size_t b = 0; b < (size_t)B; b++)
            for (size_t h = 0; h < hkv; h++)
                for (size_t t = 0; t < c->len[b]; t++)
                    for (size_t e = 0; e < dh; e++) {
                        size_t i = ((b * hkv + h) * c->capacity + t) * dh + e;
                        float s = random_subnormal(&r);
                        if (c->dtype == MHSA_F32) {
                            ((float *)base)[i] = zero ? 0.0f : s;
                        } else {
                            uint32_t u;
                            memcpy(&u, &s, sizeof u);
                            ((uint16_t *)base)[i] =
                                zero ? 0 : (uint16_t)((u >> 16) | 1u);
                        }
                    }
    }
}

// One mhsa_forward_cached call with x's tokens [t0, t1) of every sequence;
// its output goes to the same rows of y (B, T, D).
static void cached_call(const mhsa_block *blk, mhsa_workspace *ws,
                        mhsa_kv_cache *c, const inputs *in, int t0, int t1,
                        float *y)
{
    size_t d = (size_t)in->D, n = (size_t)(t1 - t0);
    float *xs = fresh((size_t)in->B * n * d), *ys = fresh((size_t)in->B * n * d);
    for (size_t b = 0; b < (size_t)in->B; b++)
        memcpy(xs + b * n * d, in->x + (b * (size_t)in->T + (size_t)t0) * d,
               n * d * sizeof(float));
    ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, xs, in->B, (int)n, ys),
                     MHSA_OK);
    for (size_t b = 0; b < (size_t)in->B; b++)
        memcpy(y + (b * (size_t)in->T + (size_t)t0) * d, ys + b * n * d,
               n * d * sizeof(float));
    free(xs);
    free(ys);
}

// zeros: plant +0 in the cache instead of subnormals.
static outputs run_block(const inputs *in, mhsa_dtype kv_dtype, int zeros)
{
    int B = in->B, T = in->T, T1 = in->T1, D = in->D, H = in->H;
    size_t ny = (size_t)B * T * D, na = (size_t)B * H * T * T, d = D;
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_block_create(&in->cfg, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(blk, in->w_qkv, in->b_qkv,
                                            in->w_out, in->b_out), MHSA_OK);
    ck_assert_int_eq(mhsa_workspace_create(blk, B, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    outputs o = { fresh(ny), fresh(na), fresh(ny), NULL, NULL, NULL, NULL,
                  fresh(ny) };
    ck_assert_int_eq(mhsa_forward(blk, ws, in->x, B, T, in->mask, o.y,
                                  o.attn), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(blk, ws, in->dy, o.dx, g), MHSA_OK);
    o.gw_qkv = copy_of(g->w_qkv, in->nqkv * d);
    o.gb_qkv = copy_of(g->b_qkv, in->nqkv);
    o.gw_out = copy_of(g->w_out, d * d);
    o.gb_out = copy_of(g->b_out, d);

    // Cached (causal blocks only): the first T1 positions, then subnormals
    // (or zeros) in the stored rows, then T - T1 - 1 tokens attending to
    // them (the first with a subnormal x), then one token (decode).
    if (!in->cfg.causal)
        goto done;
    mhsa_kv_config kc = { B, T, kv_dtype };
    ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &c), MHSA_OK);
    cached_call(blk, ws, c, in, 0, T1, o.yc);
    plant_cache(c, B, zeros, 0);
    cached_call(blk, ws, c, in, T1, T - 1, o.yc);
    cached_call(blk, ws, c, in, T - 1, T, o.yc);
done:
    mhsa_kv_cache_destroy(c);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    return o;
}

// Compares two runs bit for bit, naming the first output that differs.
static void expect_same(const outputs *a, const outputs *b, const inputs *in,
                        const char *what)
{
    int B = in->B, T = in->T, D = in->D, H = in->H;
    size_t ny = (size_t)B * T * D, na = (size_t)B * H * T * T, d = D;
    size_t ncached = in->cfg.causal ? ny : 0;   // every row was written
    const struct { const char *name; const float *a, *b; size_t n; } outs[] = {
        { "y", a->y, b->y, ny },
        { "attn", a->attn, b->attn, na },
        { "dx", a->dx, b->dx, ny },
        { "dw_qkv", a->gw_qkv, b->gw_qkv, in->nqkv * d },
        { "db_qkv", a->gb_qkv, b->gb_qkv, in->b_qkv ? in->nqkv : 0 },
        { "dw_out", a->gw_out, b->gw_out, d * d },
        { "db_out", a->gb_out, b->gb_out, in->b_out ? d : 0 },
        { "cached y", a->yc, b->yc, ncached },
    };
    for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
        ck_assert_msg(same_bits(outs[i].a, outs[i].b, outs[i].n),
                      "%s: %s differs", what, outs[i].name);
        ck_assert_msg(!has_subnormal(outs[i].a, outs[i].n),
                      "%s: %s holds a subnormal", what, outs[i].name);
    }
}

static const mhsa_dtype kv_dtypes[] = { MHSA_F32, MHSA_BF16 };

// _i: ISA x variant x cache dtype.
START_TEST(subnormals_are_zero_in_the_block)
{
    int isa = _i / (N_VARIANTS * 2), vi = _i / 2 % N_VARIANTS, kd = _i % 2;
    if (!start(isa))
        return;
    const variant *v = &variants[vi];
    inputs in[2];
    make_inputs(v, 1000 + (uint64_t)_i, in);
    outputs o[2][2];   // [threads - 1][zeros]
    for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        for (int z = 0; z < 2; z++)
            o[nt - 1][z] = run_block(&in[z], kv_dtypes[kd], z);
    }
    char what[160];
    for (int nt = 1; nt <= 2; nt++) {
        snprintf(what, sizeof what, "%s, %s, %s cache, %d thread(s): "
                 "subnormals vs zeros", all_isas[isa] == MHSA_ISA_SCALAR ?
                 "scalar" : mhsa_isa_name(all_isas[isa]), v->name,
                 kd ? "BF16" : "F32", nt);
        expect_same(&o[nt - 1][0], &o[nt - 1][1], &in[0], what);
    }
    snprintf(what, sizeof what, "%s, %s: 1 vs 2 threads",
             mhsa_isa_name(all_isas[isa]), v->name);
    expect_same(&o[0][0], &o[1][0], &in[0], what);
    for (int nt = 0; nt < 2; nt++)
        for (int z = 0; z < 2; z++)
            outputs_free(&o[nt][z]);
    inputs_free(&in[0]);
    inputs_free(&in[1]);
}
END_TEST

// ---- the GPT trainer: its own layers (LayerNorm, GELU, MLP, loss, AdamW) --

static mhsa_gpt_config gpt_cfg(void)
{
    mhsa_gpt_config c = { 0 };
    c.vocab = 19;
    c.n_layer = 2;
    c.n_embd = 16;
    c.n_head = 2;
    c.block_size = 9;
    c.max_batch = 2;
    return c;
}

// One training step on a GPT whose parameters hold subnormals (zero == 0)
// or +0 in their places; returns the loss and copies params after the step.
static float gpt_step(int zero, float *params_after, size_t *n_out)
{
    mhsa_gpt_config cfg = gpt_cfg();
    mhsa_gpt *g = NULL;
    ck_assert_int_eq(mhsa_gpt_create(&cfg, &g), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_init_random(g, 5), MHSA_OK);
    size_t n = mhsa_gpt_n_params(g);
    float *p = mhsa_gpt_params(g);
    rng r = { 77 };
    for (size_t i = 3; i < n; i += 6) {
        float s = random_subnormal(&r);
        p[i] = zero ? 0.0f : s;
    }
    int32_t tok[2 * 9], tgt[2 * 9];
    for (int i = 0; i < 18; i++) {
        tok[i] = (i * 7 + 3) % cfg.vocab;
        tgt[i] = (i * 5 + 1) % cfg.vocab;
    }
    float loss = 0.0f, norm = 0.0f;
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 2, 9, 0.0, &loss), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    ck_assert_int_eq(mhsa_gpt_step(g, &oc, &norm), MHSA_OK);
    memcpy(params_after, p, n * sizeof(float));
    *n_out = n;
    mhsa_gpt_destroy(g);
    return loss;
}

START_TEST(subnormals_are_zero_in_the_gpt)
{
    if (!start(_i))
        return;
    size_t cap = 1 << 16, n0 = 0, n1 = 0;
    float *p0 = fresh(cap), *p1 = fresh(cap);
    for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        float l0 = gpt_step(0, p0, &n0), l1 = gpt_step(1, p1, &n1);
        ck_assert(n0 == n1 && n0 <= cap);
        ck_assert_msg(memcmp(&l0, &l1, sizeof l0) == 0,
                      "%s, %d thread(s): loss %.9g with subnormals, %.9g "
                      "with zeros", mhsa_isa_name(all_isas[_i]), nt, l0, l1);
        // A parameter the step leaves as it was (an embedding row no token
        // uses has a zero gradient) keeps its sign: DAZ reads a negative
        // subnormal as -0.0, which the step writes back. So parameters
        // compare as values (and the loss above bit for bit).
        size_t differ = 0;
        for (size_t i = 0; i < n0; i++)
            differ += !(p0[i] == p1[i]) || (p0[i] != 0.0f &&
                      memcmp(&p0[i], &p1[i], sizeof(float)));
        ck_assert_msg(differ == 0, "%s, %d thread(s): %zu parameters after "
                      "a step differ", mhsa_isa_name(all_isas[_i]), nt, differ);
        ck_assert_msg(!has_subnormal(p0, n0), "%s: a parameter is subnormal "
                      "after a step", mhsa_isa_name(all_isas[_i]));
    }
    free(p0);
    free(p1);
}
END_TEST

// ---- the caller's floating-point state ------------------------------------

// The control part of the state: rounding mode plus FTZ/DAZ (x86 MXCSR
// without its sticky flag bits) or the whole AArch64 FPCR.
static unsigned long fp_control(void)
{
    unsigned long c = (unsigned long)fegetround();
#if defined(__x86_64__)
    c = c << 16 | (_mm_getcsr() & ~0x3fu);
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    c = c << 32 | fpcr;
#endif
    return c;
}

// Caller states: flush bits on x86 (FTZ 0x8000, DAZ 0x40) or FZ on
// AArch64 (bit 24), with a rounding mode.
typedef struct caller_state {
    const char *name;
    int round;
    unsigned flush;   // 0, 1 FTZ/FZ, 2 DAZ, 3 both
} caller_state;

static const caller_state states[] = {
    { "default", FE_TONEAREST, 0 },
    { "FTZ+DAZ", FE_TONEAREST, 3 },
    { "FTZ only", FE_TONEAREST, 1 },
    { "DAZ only", FE_TONEAREST, 2 },
    { "toward zero", FE_TOWARDZERO, 0 },
    { "toward zero, FTZ+DAZ", FE_TOWARDZERO, 3 },
    { "upward, FTZ", FE_UPWARD, 1 },
};
enum { N_STATES = sizeof states / sizeof states[0] };

static void set_state(const caller_state *s)
{
    ck_assert_int_eq(fesetround(s->round), 0);
#if defined(__x86_64__)
    unsigned csr = _mm_getcsr() & ~0x8040u;
    csr |= (s->flush & 1 ? 0x8000u : 0) | (s->flush & 2 ? 0x40u : 0);
    _mm_setcsr(csr);
#elif defined(__aarch64__)
    unsigned long fpcr;
    __asm__ volatile("mrs %0, fpcr" : "=r"(fpcr));
    fpcr = (fpcr & ~(1ul << 24)) | (s->flush ? 1ul << 24 : 0);
    __asm__ volatile("msr fpcr, %0" : : "r"(fpcr));
#endif
}

static void reset_state(void)
{
    fesetround(FE_TONEAREST);
#if defined(__x86_64__)
    _mm_setcsr(0x1F80);
#elif defined(__aarch64__)
    __asm__ volatile("msr fpcr, %0" : : "r"(0ul));
#endif
}

// Each public compute call (block forward with weights, backward, cached
// forward, GPT forward, backward, step, cross entropy, optimiser update)
// gives the same bits under every caller state as under the default one,
// on 1 and 2 threads, and leaves the caller's state exactly as it found it.
START_TEST(caller_state_neither_changes_results_nor_survives)
{
    int isa = _i / N_STATES, si = _i % N_STATES;
    if (!start(isa))
        return;
    const caller_state *s = &states[si];
    inputs in[2];
    make_inputs(&variants[_i % 2], 2000 + (uint64_t)isa, in);   // small ones
    size_t cap = 1 << 16, n = 0;
    float *p_def = fresh(cap), *p_st = fresh(cap);
    for (int nt = 1; nt <= 2; nt++) {
        omp_set_num_threads(nt);
        reset_state();
        outputs want = run_block(&in[0], MHSA_F32, 0);
        float l_want = gpt_step(0, p_def, &n);
        set_state(s);
        unsigned long before = fp_control();
        outputs got = run_block(&in[0], MHSA_F32, 0);
        ck_assert_msg(fp_control() == before, "%s: block calls changed the "
                      "caller's state", s->name);
        float l_got = gpt_step(0, p_st, &n);
        ck_assert_msg(fp_control() == before, "%s: GPT calls changed the "
                      "caller's state", s->name);
        reset_state();
        char what[120];
        snprintf(what, sizeof what, "%s, caller %s, %d thread(s)",
                 mhsa_isa_name(all_isas[isa]), s->name, nt);
        expect_same(&got, &want, &in[0], what);
        ck_assert_msg(!memcmp(&l_got, &l_want, sizeof l_got) &&
                      same_bits(p_st, p_def, n), "%s: GPT differs", what);
        outputs_free(&want);
        outputs_free(&got);
    }
    // The two public layer calls of the trainer that run alone.
    enum { NR = 3, V = 37 };
    float logits[NR * V], dl[2][NR * V], loss[2], pm[2][V], mm[2][V], vv[2][V];
    int32_t tg[NR] = { 4, -1, 36 };
    rng r = { 9 };
    fill_uniform(&r, logits, NR * V, -3.0f, 3.0f);
    float grad[V];
    fill_uniform(&r, grad, V, -1.0f, 1.0f);
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    for (int k = 0; k < 2; k++) {
        reset_state();
        if (k)
            set_state(s);
        unsigned long before = fp_control();
        ck_assert_int_eq(mhsa_cross_entropy(NR, V, logits, tg, &loss[k], NULL,
                                            dl[k]), MHSA_OK);
        for (int i = 0; i < V; i++) {
            pm[k][i] = 0.5f;
            mm[k][i] = vv[k][i] = 0.0f;
        }
        ck_assert_int_eq(mhsa_optim_update(&oc, 1, V, pm[k], grad, mm[k],
                                           vv[k], 1.0f, 1), MHSA_OK);
        ck_assert_msg(fp_control() == before, "%s: layer calls changed the "
                      "caller's state", s->name);
    }
    reset_state();
    ck_assert(!memcmp(&loss[0], &loss[1], sizeof loss[0]));
    ck_assert(same_bits(dl[0], dl[1], NR * V));
    ck_assert(same_bits(pm[0], pm[1], V) && same_bits(vv[0], vv[1], V));
    free(p_def);
    free(p_st);
    inputs_free(&in[0]);
    inputs_free(&in[1]);
}
END_TEST

// OpenMP pool threads that the library's first parallel region creates are
// born with the library's state (a new thread copies its creator's); after
// the call they hold the caller's, so the application's own parallel
// regions do not compute with FTZ/DAZ it never asked for.
START_TEST(pool_threads_are_left_in_the_callers_state)
{
    if (under_valgrind()) {
        printf("skip: valgrind does not emulate FTZ/DAZ\n");
        return;
    }
    const caller_state *s = &states[_i];
    inputs in[2];
    make_inputs(&variants[N_VARIANTS - 1], 3000, in);   // two threads' worth
    omp_set_num_threads(2);
    set_state(s);
    unsigned long want = fp_control();
    outputs o = run_block(&in[0], MHSA_F32, 0);
    unsigned long got[2] = { want, want };
    int team = 0;
#pragma omp parallel num_threads(2)
    {
        got[omp_get_thread_num()] = fp_control();
#pragma omp atomic
        team++;
    }
    reset_state();
    ck_assert_int_eq(team, 2);
    ck_assert_msg(got[0] == want && got[1] == want, "caller %s: threads "
                  "left with %#lx and %#lx, want %#lx", s->name, got[0],
                  got[1], want);
    outputs_free(&o);
    inputs_free(&in[0]);
    inputs_free(&in[1]);
}
END_TEST

// ---- the 16-bit conversions under the library's state -----------------------

// Under FTZ/DAZ (FPCR.FZ) the conversions still make F16 subnormals from
// fp32 normals and read them back exactly (kernels.h): every F16 pattern
// decodes, and every fp32 value in F16's subnormal range encodes, to the
// same bits as under the default state, on every ISA.
START_TEST(conversions_keep_f16_subnormals)
{
    const mhsa_kernels *k = kernels_or_skip(_i);
    if (!k)
        return;
    if (under_valgrind()) {
        printf("skip: valgrind does not emulate FTZ/DAZ\n");
        return;
    }
    enum { NP = 65536 };
    uint16_t *h = malloc(NP * sizeof(uint16_t));
    uint16_t *e[2] = { malloc(NP * 2 * sizeof(uint16_t)),
                       malloc(NP * 2 * sizeof(uint16_t)) };
    float *y[2] = { fresh(NP), fresh(NP) }, *x = fresh(NP * 2);
    for (uint32_t i = 0; i < NP; i++)
        h[i] = (uint16_t)i;
    // fp32 inputs: every F16 subnormal value and each midpoint between
    // neighbours (ties), both signs, and a spread of tiny fp32 normals.
    rng r = { 3 };
    for (size_t i = 0; i < NP * 2; i++) {
        uint32_t m = (uint32_t)(i / 2) & 0x3ffu;
        float f = (float)ldexp((double)m + (i & 1 ? 0.5 : 0.0), -24);
        if (i % 8 == 7)
            f = (float)ldexp(rng_uniform(&r, 1.0f, 2.0f),
                             rng_int(&r, -60, -12));
        x[i] = (i / 2) & 0x400u ? -f : f;
    }
    for (int dt = 0; dt < 2; dt++) {
        mhsa_dtype t = dt ? MHSA_BF16 : MHSA_F16;
        for (int lib = 0; lib < 2; lib++) {
            mhsa_fpstate fp = { 0 };
            if (lib)
                fp = mhsa__fp_enter();
            k->cvt_to_f32(NP, h, t, y[lib]);
            k->cvt_from_f32(NP * 2, x, e[lib], t);
            if (lib)
                mhsa__fp_leave(fp);
        }
        ck_assert_msg(same_bits(y[0], y[1], NP), "%s %s: a decode differs "
                      "under FTZ/DAZ", k->name, dt ? "bf16" : "f16");
        ck_assert_msg(!memcmp(e[0], e[1], NP * 2 * sizeof(uint16_t)),
                      "%s %s: an encode differs under FTZ/DAZ", k->name,
                      dt ? "bf16" : "f16");
    }
    // And the values themselves: 0x0001 is 2^-24, 0x83ff is -1023 * 2^-24.
    float f16[2];
    uint16_t sub[2] = { 0x0001, 0x83ff };
    mhsa_fpstate fp = mhsa__fp_enter();
    k->cvt_to_f32(2, sub, MHSA_F16, f16);
    mhsa__fp_leave(fp);
    ck_assert(f16[0] == (float)ldexp(1.0, -24));
    ck_assert(f16[1] == -(float)ldexp(1023.0, -24));
    free(h);
    free(e[0]);
    free(e[1]);
    free(y[0]);
    free(y[1]);
    free(x);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("subnormal");
    ADD_CASE(s, subnormals_are_zero_in_the_block, N_ISAS * N_VARIANTS * 2,
             NULL);
    ADD_CASE(s, subnormals_are_zero_in_the_gpt, N_ISAS, NULL);
    ADD_CASE(s, caller_state_neither_changes_results_nor_survives,
             N_ISAS * N_STATES, NULL);
    ADD_CASE(s, pool_threads_are_left_in_the_callers_state, N_STATES, NULL);
    ADD_CASE(s, conversions_keep_f16_subnormals, N_ISAS, NULL);
    return run_suite(s);
}
