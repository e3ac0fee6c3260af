// test_gemma3.c — the gemma3 row of the Llama runner on a small file the
// test writes (random weights, the real structure at a small size: d_model
// 32, 2 query heads of 32 sharing 1 KV head, so Q is 64 wide, not
// d_model; 6 layers, so five local ones with a window of 4 keys and RoPE
// base 1e4, then one global one with the file's base), without the real
// model:
//
// - the logits of every position of a 12-token prompt against a
//   double-precision forward written here from transformers'
//   Gemma3ForCausalLM (embedding times sqrt(d_model), RMSNorm before and
//   after attention and MLP, Q and K normed per head before NEOX RoPE,
//   GQA, the window, GeGLU with tanh GELU, tied head), on every ISA, in
//   the f32 mode, the bf16 mode and file mode (F32 weights), and file
//   mode on Q8_0 weights against the f32 mode of the same file;
// - the window and RoPE base of each layer, and that the window matters
//   (the reference without it differs);
// - a prompt at once against token by token;
// - every gemma3 key range-checked: MHSA_ERR_FORMAT naming it.
// GCC 12 for AArch64 crashes (an internal compiler error in
// vect_transform_reduction) vectorising this file's fp64 max reductions;
// they are a test's bookkeeping, so that build keeps them scalar.
#if defined(__aarch64__) && defined(__GNUC__) && !defined(__clang__) && \
    __GNUC__ == 12
#pragma GCC optimize("no-tree-vectorize")
#endif

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_writer.h"
#include "kernels/half.h"
#include "models/llama/llama.h"
#include "util.h"

enum { GD = 32, GH = 2, GKV = 1, GDH = 32, GF = 64, GL = 6, GV = 40,
       GCTX = 32, GWIN = 4, GT = 12, GA = GH * GDH, GKVD = GKV * GDH };
enum { GGUF_U32 = 4, GGUF_F32 = 6, GGUF_STR = 8, GGML_F32 = 0,
       GGML_Q8_0 = 8 };
static const float g_eps = 1e-6f, g_theta = 1e6f, g_theta_local = 1e4f;
static const int32_t g_ids[GT] = { 2, 7, 39, 11, 3, 25, 25, 0, 18, 31, 5,
                                   12 };

// What a test changes in the file.
typedef struct gopts {
    int key_length, value_length, window;   // -1: key absent
    int q8;                                  // matrices as Q8_0
    int no_k_norm;                           // leave attn_k_norm out
    const char *extra_key;                   // one more f32 key, or NULL
    const char *scaling;                     // rope.scaling.type, or NULL
} gopts;

static gopts std_gopts(void)
{
    gopts o = { GDH, GDH, GWIN, 0, 0, NULL, NULL };
    return o;
}

// ---- the weights, as floats (the reference's) and as the file's --------

static uint64_t g_rng;
static float uniform(float a)   // in [-a, a)
{
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return a * (2.0f * (float)(g_rng >> 40) / 16777216.0f - 1.0f);
}

typedef struct glayer {
    float attn_norm[GD], q_norm[GDH], k_norm[GDH], post_attn[GD];
    float ffn_norm[GD], post_ffn[GD];
    float wq[GA * GD], wk[GKVD * GD], wv[GKVD * GD], wo[GD * GA];
    float gate[GF * GD], up[GF * GD], down[GD * GF];
} glayer;

static struct {
    float emb[GV * GD], out_norm[GD];
    glayer l[GL];
} W;

static void fill(float *x, size_t n, float base, float a)
{
    for (size_t i = 0; i < n; i++)
        x[i] = base + uniform(a);
}

static void make_weights(void)
{
    g_rng = 0x243f6a8885a308d3ull;
    fill(W.emb, GV * GD, 0.0f, 1.0f);
    fill(W.out_norm, GD, 1.0f, 0.2f);
    for (int l = 0; l < GL; l++) {
        glayer *y = &W.l[l];
        fill(y->attn_norm, GD, 1.0f, 0.2f);
        fill(y->q_norm, GDH, 1.0f, 0.3f);
        fill(y->k_norm, GDH, 1.0f, 0.3f);
        fill(y->post_attn, GD, 1.0f, 0.3f);
        fill(y->ffn_norm, GD, 1.0f, 0.2f);
        fill(y->post_ffn, GD, 1.0f, 0.3f);
        fill(y->wq, GA * GD, 0.0f, 0.4f);
        fill(y->wk, GKVD * GD, 0.0f, 0.4f);
        fill(y->wv, GKVD * GD, 0.0f, 0.4f);
        fill(y->wo, GD * GA, 0.0f, 0.3f);
        fill(y->gate, GF * GD, 0.0f, 0.4f);
        fill(y->up, GF * GD, 0.0f, 0.4f);
        fill(y->down, GD * GF, 0.0f, 0.3f);
    }
}

// ---- the file ------------------------------------------------------------

enum { MAX_T = 128 };
typedef struct gfile {
    gw_tensor t[MAX_T];
    char name[MAX_T][48];
    void *owned[MAX_T];
    size_t n;
} gfile;

// A tensor of the values x: (rows, cols), or a vector when rows == 0; as
// Q8_0 (ggml's quantize_row_q8_0_ref) when q8 and a matrix.
static void put(gfile *g, const char *name, const float *x, size_t rows,
                size_t cols, int q8)
{
    size_t i = g->n++, n = (rows ? rows : 1) * cols;
    snprintf(g->name[i], sizeof g->name[i], "%s", name);
    gw_tensor *t = &g->t[i];
    t->name = g->name[i];
    t->n_dims = rows ? 2 : 1;
    t->ne[0] = cols;
    t->ne[1] = rows;
    t->type = GGML_F32;
    t->data = x;
    t->bytes = n * sizeof(float);
    g->owned[i] = NULL;
    if (!(q8 && rows))
        return;
    unsigned char *q = malloc(n / 32 * 34);
    for (size_t b = 0; b < n / 32; b++) {
        float amax = 0.0f;
        const float *v = x + 32 * b;
        for (int k = 0; k < 32; k++)
            amax = fabsf(v[k]) > amax ? fabsf(v[k]) : amax;
        float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t h = mhsa_f32_to_f16(d);
        q[34 * b] = (unsigned char)(h & 0xff);
        q[34 * b + 1] = (unsigned char)(h >> 8);
        for (int k = 0; k < 32; k++)
            q[34 * b + 2 + k] = (unsigned char)(int8_t)roundf(v[k] * id);
    }
    t->type = GGML_Q8_0;
    t->data = g->owned[i] = q;
    t->bytes = n / 32 * 34;
}

static char path_buf[512];

static const char *write_gemma(gopts o)
{
    make_weights();
    gfile g;
    memset(&g, 0, sizeof g);
    put(&g, "token_embd.weight", W.emb, GV, GD, o.q8);
    put(&g, "output_norm.weight", W.out_norm, 0, GD, 0);
    char n[48];
    for (int l = 0; l < GL; l++) {
        glayer *y = &W.l[l];
#define P(what, x, rows, cols, q)                                          \
        (snprintf(n, sizeof n, "blk.%d.%s.weight", l, what),              \
         put(&g, n, x, rows, cols, q))
        P("attn_norm", y->attn_norm, 0, GD, 0);
        P("attn_q", y->wq, GA, GD, o.q8);
        P("attn_k", y->wk, GKVD, GD, o.q8);
        P("attn_v", y->wv, GKVD, GD, o.q8);
        P("attn_output", y->wo, GD, GA, o.q8);
        P("attn_q_norm", y->q_norm, 0, GDH, 0);
        if (!o.no_k_norm)
            P("attn_k_norm", y->k_norm, 0, GDH, 0);
        P("post_attention_norm", y->post_attn, 0, GD, 0);
        P("ffn_norm", y->ffn_norm, 0, GD, 0);
        P("ffn_gate", y->gate, GF, GD, o.q8);
        P("ffn_up", y->up, GF, GD, o.q8);
        P("ffn_down", y->down, GD, GF, o.q8);
        P("post_ffw_norm", y->post_ffn, 0, GD, 0);
#undef P
    }
    gw w = { 0 };
    gw_header(&w, 3, g.n, 0);
    uint64_t nkv = 0;
#define U32(k, v) (gw_key_u32(&w, k, v), nkv++)
#define F32(k, v) (gw_key(&w, k, GGUF_F32), gw_f32(&w, v), nkv++)
    gw_key(&w, "general.architecture", GGUF_STR);
    gw_str(&w, "gemma3");
    nkv++;
    U32("gemma3.block_count", GL);
    U32("gemma3.context_length", GCTX);
    U32("gemma3.embedding_length", GD);
    U32("gemma3.feed_forward_length", GF);
    U32("gemma3.attention.head_count", GH);
    U32("gemma3.attention.head_count_kv", GKV);
    F32("gemma3.attention.layer_norm_rms_epsilon", g_eps);
    F32("gemma3.rope.freq_base", g_theta);
    if (o.key_length >= 0)
        U32("gemma3.attention.key_length", (uint32_t)o.key_length);
    if (o.value_length >= 0)
        U32("gemma3.attention.value_length", (uint32_t)o.value_length);
    if (o.window >= 0)
        U32("gemma3.attention.sliding_window", (uint32_t)o.window);
    if (o.extra_key)
        F32(o.extra_key, 30.0f);
    if (o.scaling) {
        gw_key(&w, "gemma3.rope.scaling.type", GGUF_STR);
        gw_str(&w, o.scaling);
        nkv++;
    }
#undef U32
#undef F32
    gw_put_u64(&w, 16, nkv);
    gw_tensors(&w, g.t, g.n, 32);
    const char *d = getenv("TMPDIR");
    snprintf(path_buf, sizeof path_buf, "%s/mhsa-gemma3-%ld.gguf",
             d && d[0] ? d : "/tmp", (long)getpid());
    ck_assert_int_eq(gw_save(&w, path_buf), 0);
    gw_free(&w);
    for (size_t i = 0; i < g.n; i++)
        free(g.owned[i]);
    return path_buf;
}

static mhsa_llama *load_gemma(gopts o, int weights)
{
    const char *p = write_gemma(o);
    mhsa_llama *m = NULL;
    mhsa_status st = mhsa__llama_load_ex(p, 0, weights, &m);
    unlink(p);
    ck_assert_msg(st == MHSA_OK, "%s", mhsa_last_error());
    return m;
}

// ---- the reference, in double --------------------------------------------

// y = x / sqrt(mean(x^2) + eps) * w over n values (w holds Gemma's 1 + w,
// as the GGUF does).
static void ref_rms(double *y, const double *x, const float *w, int n)
{
    double s = 0.0;
    for (int i = 0; i < n; i++)
        s += x[i] * x[i];
    double r = 1.0 / sqrt(s / n + (double)g_eps);
    for (int i = 0; i < n; i++)
        y[i] = x[i] * r * (double)w[i];
}

// y (rows) = W (rows, cols) x.
static void ref_mv(double *y, const float *w, const double *x, int rows,
                   int cols)
{
    for (int r = 0; r < rows; r++) {
        double s = 0.0;
        for (int c = 0; c < cols; c++)
            s += (double)w[r * cols + c] * x[c];
        y[r] = s;
    }
}

// NEOX RoPE (pairs (i, i + dh/2)) of one head at position p, base theta.
static void ref_rope(double *v, int p, double theta)
{
    for (int i = 0; i < GDH / 2; i++) {
        double a = p * pow(theta, -2.0 * i / GDH);
        double x0 = v[i], x1 = v[i + GDH / 2];
        v[i] = x0 * cos(a) - x1 * sin(a);
        v[i + GDH / 2] = x0 * sin(a) + x1 * cos(a);
    }
}

// The logits (GT, GV) of g_ids; window 0 in every layer when no_window.
static void ref_forward(double *logits, int no_window)
{
    static double x[GT][GD], q[GT][GA], k[GT][GKVD], v[GT][GKVD];
    double h[GD], t[GF > GA ? GF : GA], u[GF], o[GA];
    // The embedding scale as transformers and llama.cpp hold it: fp32
    // sqrt(d_model).
    for (int p = 0; p < GT; p++)
        for (int d = 0; d < GD; d++)
            x[p][d] = (double)W.emb[g_ids[p] * GD + d] *
                      (double)sqrtf((float)GD);
    for (int l = 0; l < GL; l++) {
        const glayer *y = &W.l[l];
        int local = l % 6 != 5;
        int win = local && !no_window ? GWIN : 0;
        double theta = local ? g_theta_local : g_theta;
        for (int p = 0; p < GT; p++) {
            ref_rms(h, x[p], y->attn_norm, GD);
            ref_mv(q[p], y->wq, h, GA, GD);
            ref_mv(k[p], y->wk, h, GKVD, GD);
            ref_mv(v[p], y->wv, h, GKVD, GD);
            for (int hh = 0; hh < GH; hh++) {
                ref_rms(q[p] + hh * GDH, q[p] + hh * GDH, y->q_norm, GDH);
                ref_rope(q[p] + hh * GDH, p, theta);
            }
            for (int hh = 0; hh < GKV; hh++) {
                ref_rms(k[p] + hh * GDH, k[p] + hh * GDH, y->k_norm, GDH);
                ref_rope(k[p] + hh * GDH, p, theta);
            }
        }
        for (int p = 0; p < GT; p++) {
            for (int hh = 0; hh < GH; hh++) {
                int kh = hh / (GH / GKV);
                double s[GT], mx = -INFINITY, z = 0.0;
                int lo = win ? (p - win + 1 > 0 ? p - win + 1 : 0) : 0;
                for (int j = lo; j <= p; j++) {
                    double d = 0.0;
                    for (int c = 0; c < GDH; c++)
                        d += q[p][hh * GDH + c] * k[j][kh * GDH + c];
                    s[j] = d / sqrt((double)GDH);
                    mx = fmax(mx, s[j]);
                }
                for (int j = lo; j <= p; j++)
                    z += s[j] = exp(s[j] - mx);
                for (int c = 0; c < GDH; c++) {
                    double a = 0.0;
                    for (int j = lo; j <= p; j++)
                        a += s[j] / z * v[j][kh * GDH + c];
                    o[hh * GDH + c] = a;
                }
            }
            ref_mv(t, y->wo, o, GD, GA);
            ref_rms(t, t, y->post_attn, GD);
            for (int d = 0; d < GD; d++)
                x[p][d] += t[d];
        }
        for (int p = 0; p < GT; p++) {
            ref_rms(h, x[p], y->ffn_norm, GD);
            ref_mv(t, y->gate, h, GF, GD);
            ref_mv(u, y->up, h, GF, GD);
            for (int f = 0; f < GF; f++) {
                double g = t[f];
                double c = sqrt(2.0 / 3.14159265358979323846) * (g + 0.044715 * g * g * g);
                t[f] = 0.5 * g * (1.0 + tanh(c)) * u[f];
            }
            double dn[GD];
            ref_mv(dn, y->down, t, GD, GF);
            ref_rms(dn, dn, y->post_ffn, GD);
            for (int d = 0; d < GD; d++)
                x[p][d] += dn[d];
        }
    }
    for (int p = 0; p < GT; p++) {
        ref_rms(h, x[p], W.out_norm, GD);
        ref_mv(logits + p * GV, W.emb, h, GV, GD);
    }
}

// max |a - b| over (GT, GV), and the largest |b| into *scale.
static double max_diff(const float *a, const double *b, double *scale)
{
    double worst = 0.0;
    *scale = 0.0;
    for (int i = 0; i < GT * GV; i++) {
        *scale = fmax(*scale, fabs(b[i]));
        worst = fmax(worst, fabs((double)a[i] - b[i]));
    }
    return worst;
}

// mhsa's logits of every position of g_ids, the prompt at once.
static void run(mhsa_llama *m, float *lg)
{
    mhsa_llama_cache *c;
    ck_assert_int_eq(mhsa__llama_cache_create(m, MHSA_F32, &c), MHSA_OK);
    ck_assert_int_eq(mhsa__llama_forward(m, c, g_ids, GT, 1, lg), MHSA_OK);
    mhsa__llama_cache_destroy(c);
}

// _i: all_isas[_i] (skipped where not built or not supported).
START_TEST(logits_match_reference)
{
    if (!kernels_or_skip(_i))
        return;
    ck_assert_int_eq(mhsa_select_isa(all_isas[_i]), MHSA_OK);
    const char *isa = mhsa_isa_name(all_isas[_i]);
    static double ref[GT * GV], ref_nowin[GT * GV];
    static float lg[GT * GV], lg_q8f32[GT * GV];
    make_weights();
    ref_forward(ref, 0);
    ref_forward(ref_nowin, 1);
    double scale = 0.0;
    for (int i = 0; i < GT * GV; i++)
        scale = fmax(scale, fabs(ref[i]));
    // The window matters on this prompt (so a runner that ignored it
    // would fail below).
    double wd = 0.0;
    for (int i = 0; i < GT * GV; i++)
        wd = fmax(wd, fabs(ref[i] - ref_nowin[i]));
    ck_assert_msg(wd > 1e-2 * scale, "the window changes nothing (%g)", wd);
    static const struct { int w; double bound; const char *name; } modes[] = {
        { MHSA_F32, 1e-5, "f32" },
        { MHSA__WEIGHTS_FILE, 1e-5, "file (F32 weights)" },
        { MHSA_BF16, 3e-2, "bf16" },
    };
    for (size_t k = 0; k < sizeof modes / sizeof *modes; k++) {
        mhsa_llama *m = load_gemma(std_gopts(), modes[k].w);
        run(m, lg);
        mhsa__llama_destroy(m);
        double worst = max_diff(lg, ref, &scale);
        printf("gemma3 %s (%s): max |diff| %.3g, %.3g of the largest "
               "|logit| %.3g\n", modes[k].name, isa, worst, worst / scale,
               scale);
        ck_assert_msg(worst <= modes[k].bound * scale, "gemma3 %s (%s): "
                      "max |mhsa - reference| %g > %g x %g", modes[k].name,
                      isa, worst, modes[k].bound, scale);
    }
    // Q8_0 weights: file mode (int8 activations) against the f32 mode of
    // the same file (its blocks dequantized).
    gopts o = std_gopts();
    o.q8 = 1;
    mhsa_llama *m = load_gemma(o, MHSA_F32);
    run(m, lg_q8f32);
    mhsa__llama_destroy(m);
    m = load_gemma(o, MHSA__WEIGHTS_FILE);
    run(m, lg);
    mhsa__llama_destroy(m);
    double worst = 0.0, s2 = 0.0;
    for (int i = 0; i < GT * GV; i++) {
        s2 = fmax(s2, fabs((double)lg_q8f32[i]));
        worst = fmax(worst, fabs((double)lg[i] - (double)lg_q8f32[i]));
    }
    printf("gemma3 q8_0 file mode vs f32 mode (%s): max |diff| %.3g, %.3g "
           "of %.3g\n", isa, worst, worst / s2, s2);
    ck_assert_msg(worst <= 2e-2 * s2 && worst > 0.0, "gemma3 q8_0 (%s): "
                  "file mode vs f32 mode %g (of %g)", isa, worst, s2);
}
END_TEST

// A prompt token by token gives the logits of the prompt at once (to fp32
// rounding: the attention sums in another order), in both modes.
START_TEST(token_by_token)
{
    static float all[GT * GV], one[GV];
    static const int modes[2] = { MHSA_F32, MHSA__WEIGHTS_FILE };
    for (int k = 0; k < 2; k++) {
        gopts o = std_gopts();
        o.q8 = k;
        mhsa_llama *m = load_gemma(o, modes[k]);
        run(m, all);
        mhsa_llama_cache *c;
        ck_assert_int_eq(mhsa__llama_cache_create(m, MHSA_F32, &c),
                         MHSA_OK);
        double worst = 0.0, scale = 0.0;
        for (int p = 0; p < GT; p++) {
            ck_assert_int_eq(mhsa__llama_forward(m, c, &g_ids[p], 1, 0, one),
                             MHSA_OK);
            for (int i = 0; i < GV; i++) {
                scale = fmax(scale, fabs((double)all[p * GV + i]));
                worst = fmax(worst, fabs((double)one[i] -
                                         (double)all[p * GV + i]));
            }
        }
        ck_assert_msg(worst <= 1e-4 * scale, "mode %d: token by token %g "
                      "from the prompt at once (of %g)", modes[k], worst,
                      scale);
        mhsa__llama_cache_destroy(c);
        mhsa__llama_destroy(m);
    }
}
END_TEST

START_TEST(window_per_layer)
{
    mhsa_llama *m = load_gemma(std_gopts(), MHSA_F32);
    const mhsa_llama_config *c = mhsa__llama_config(m);
    ck_assert_int_eq(c->head_dim, GDH);
    ck_assert_int_eq(c->window, GWIN);
    ck_assert_int_eq(c->swa_period, 6);
    ck_assert(c->qk_norm && c->post_norms && c->geglu && !c->qkv_bias);
    ck_assert(c->embed_scale == sqrtf((float)GD));
    for (int l = 0; l < GL; l++) {
        int local = l != 5;
        ck_assert_int_eq(mhsa__llama_layer_local(c, l), local);
        ck_assert_int_eq(mhsa__llama_layer_window(c, l), local ? GWIN : 0);
        ck_assert(mhsa__llama_layer_rope_theta(c, l) ==
                  (local ? g_theta_local : g_theta));
    }
    mhsa__llama_destroy(m);
}
END_TEST

// The load of o fails with MHSA_ERR_FORMAT naming `what`.
static void check_refused(gopts o, const char *what)
{
    const char *p = write_gemma(o);
    mhsa_llama *m = NULL;
    mhsa_status st = mhsa__llama_load_ex(p, 0, MHSA_F32, &m);
    unlink(p);
    ck_assert_msg(st == MHSA_ERR_FORMAT && !m, "%s: status %s", what,
                  mhsa_status_str(st));
    ck_assert_msg(strstr(mhsa_last_error(), what), "message \"%s\" does "
                  "not name %s", mhsa_last_error(), what);
}

START_TEST(refuses_bad_keys)
{
    gopts o = std_gopts();
    o.key_length = 0;
    check_refused(o, "gemma3.attention.key_length");
    o = std_gopts();
    o.key_length = 2000000000;   // times 2 heads: past INT_MAX
    check_refused(o, "gemma3.attention.key_length");
    o = std_gopts();
    o.key_length = o.value_length = 16;   // the tensors are 32 per head
    check_refused(o, "blk.0.attn_q.weight");
    o = std_gopts();
    o.value_length = 16;
    check_refused(o, "gemma3.attention.value_length");
    o = std_gopts();
    o.window = 0;
    check_refused(o, "gemma3.attention.sliding_window");
    o = std_gopts();
    o.window = GCTX + 1;
    check_refused(o, "gemma3.attention.sliding_window");
    o = std_gopts();
    o.window = -1;               // absent: required
    check_refused(o, "gemma3.attention.sliding_window");
    o = std_gopts();
    o.no_k_norm = 1;
    check_refused(o, "blk.0.attn_k_norm.weight");
    o = std_gopts();
    o.extra_key = "gemma3.final_logit_softcapping";
    check_refused(o, "gemma3.final_logit_softcapping");
    o = std_gopts();
    o.scaling = "linear";
    check_refused(o, "gemma3.rope.scaling.type");
    // key_length absent: d_model / n_head = 16, which the tensors are not.
    o = std_gopts();
    o.key_length = o.value_length = -1;
    check_refused(o, "blk.0.attn_q.weight");
}
END_TEST

int main(void)
{
    Suite *s = suite_create("gemma3");
    TCase *tc = tcase_create("gemma3");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, logits_match_reference, 0, N_ISAS);
    tcase_add_test(tc, token_by_token);
    tcase_add_test(tc, window_per_layer);
    tcase_add_test(tc, refuses_bad_keys);
    suite_add_tcase(s, tc);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
