// test_llama_quant.c — the Llama runner computing on the GGUF file's own
// weights (llama.h: MHSA__WEIGHTS_FILE) against the same file dequantized
// to fp32 (MHSA_F32), for every matrix type file mode reads: computed
// (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K), fp (F32, F16, BF16)
// and converted to Q8_0 (Q2_K, IQ4_NL).
//
// The files are small models written here with tests/gguf_writer.c. The
// blocks are random bytes with each block's f16 scale fields (d, and the
// mins m / dmin) set to a fixed value per type, chosen so that the weights
// are about 0.05 in size: the test compares two ways of computing on the
// same bytes, so the blocks need not be any quantizer's output, and random
// quants and sub-block scales reach every bit of each layout.
//
// Checks: the logits of a prefill and of decoding steps, file mode vs f32
// mode, within a bound (below); bit-exact logits on 1 and 2 threads, and
// with the matrices packed (kernels/quant.h's P16, where the ISA's table
// packs them) or left in the file's layout (MHSA_QPACK=0); and a prompt
// prefilled at once vs token by token within the same bound.
// (Not bit for bit: qmm's rows are independent of the batch
// (kernels/quant.h), but the attention's batched path sums in another
// order than its one-row step, "the same rows to fp32 rounding"
// (include/mhsa.h), and an fp32 difference can move an int8 rounding of
// the next product.)
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gguf_writer.h"
#include "kernels/half.h"
#include "models/gguf/gguf.h"
#include "models/gguf/gguf_dequant.h"
#include "models/llama/llama.h"
#include "util.h"

// 256 wide so the k-quants have whole rows; 4 heads of 64 sharing 2 KV
// heads; F = 512; wide enough that a step's MLP runs on the threads.
enum { D = 256, H = 4, KV = 2, DH = 64, F = 512, V = 96, L = 2, CTX = 48 };
enum { P = 24, S = 4 };   // prompt tokens, decoding steps

typedef struct qtype {
    uint32_t ggml;
    float d, mn;          // the scale fields' values (mn: 0, no min)
    int d_at, mn_at;      // their byte offsets in the block
} qtype;

// d for weights of about 0.05: 0.05 over the typical size of what d
// multiplies (the quant, times the sub-block scale for k-quants); the
// mins centre the unsigned quants.
static const qtype types[] = {
    { MHSA_GGML_Q8_0, 0.05f / 74, 0, 0, 0 },
    { MHSA_GGML_Q4_0, 0.05f / 4.6f, 0, 0, 0 },
    { MHSA_GGML_Q4_1, 0.05f / 8.8f, -7.5f * 0.05f / 8.8f, 0, 2 },
    { MHSA_GGML_Q5_0, 0.05f / 9.2f, 0, 0, 0 },
    { MHSA_GGML_Q5_1, 0.05f / 18, -15.5f * 0.05f / 18, 0, 2 },
    { MHSA_GGML_Q4_K, 0.05f / (32 * 8.8f), 7.5f * 0.05f / (32 * 8.8f), 0, 2 },
    { MHSA_GGML_Q5_K, 0.05f / (32 * 18), 15.5f * 0.05f / (32 * 18), 0, 2 },
    { MHSA_GGML_Q6_K, 0.05f / (74 * 18), 0, 208, 0 },
    { MHSA_GGML_Q2_K, 0.05f / (8 * 1.8f), 1.5f * 0.05f / (8 * 1.8f), 80,
      82 },
    { MHSA_GGML_IQ4_NL, 0.05f / 60, 0, 0, 0 },
    { MHSA_GGML_F32, 0, 0, 0, 0 },
    { MHSA_GGML_F16, 0, 0, 0, 0 },
    { MHSA_GGML_BF16, 0, 0, 0, 0 },
};
enum { N_TYPES = sizeof types / sizeof types[0] };

static int is_fp(uint32_t t)
{
    return t == MHSA_GGML_F32 || t == MHSA_GGML_F16 || t == MHSA_GGML_BF16;
}

static void put_f16(unsigned char *p, float v)
{
    uint16_t h = mhsa_f32_to_f16(v);
    p[0] = (unsigned char)(h & 0xff);
    p[1] = (unsigned char)(h >> 8);
}

// A (rows, cols) matrix of type q: its bytes (malloc'd) in *bytes.
static unsigned char *make_mat(rng *r, const qtype *q, size_t rows,
                               size_t cols, size_t *bytes)
{
    const mhsa_ggml_type_info *info = mhsa__ggml_type(q->ggml);
    size_t nb = rows * cols / info->block;
    *bytes = nb * info->bytes;
    unsigned char *p = malloc(*bytes);
    ck_assert_ptr_nonnull(p);
    if (is_fp(q->ggml)) {
        for (size_t i = 0; i < rows * cols; i++) {
            float v = rng_uniform(r, -0.087f, 0.087f);   // rms 0.05
            if (q->ggml == MHSA_GGML_F32) {
                memcpy(p + 4 * i, &v, 4);
            } else {
                uint16_t h = q->ggml == MHSA_GGML_F16 ? mhsa_f32_to_f16(v)
                                                      : mhsa_f32_to_bf16(v);
                p[2 * i] = (unsigned char)(h & 0xff);
                p[2 * i + 1] = (unsigned char)(h >> 8);
            }
        }
        return p;
    }
    for (size_t i = 0; i < *bytes; i++)
        p[i] = (unsigned char)rng_u64(r);
    for (size_t b = 0; b < nb; b++) {
        unsigned char *blk = p + b * info->bytes;
        // A random sign and size within 2x, per block.
        float s = rng_uniform(r, 0.5f, 1.5f) * (rng_u64(r) & 1 ? 1 : -1);
        put_f16(blk + q->d_at, q->d * s);
        if (q->mn != 0)
            put_f16(blk + q->mn_at, q->mn * (s < 0 ? -s : s));
    }
    return p;
}

// A model with every matrix of type q (the head its own tensor, or tied
// to the embedding) written to path.
static void write_model(const qtype *q, int tied, const char *path)
{
    static const struct { const char *name; int rows, cols; } mats[] = {
        {"attn_q", D, D}, {"attn_k", KV * DH, D}, {"attn_v", KV * DH, D},
        {"attn_output", D, D}, {"ffn_gate", F, D}, {"ffn_up", F, D},
        {"ffn_down", D, F},
    };
    enum { N_MATS = sizeof mats / sizeof mats[0] };
    static char names[L][N_MATS + 2][48];
    gw_tensor t[3 + L * (N_MATS + 2)];
    unsigned char *owned[3 + L * (N_MATS + 2)];
    size_t nt = 0, no = 0, bytes;
    rng r = {20261206u + q->ggml};
    static float norm[D];
    for (int i = 0; i < D; i++)
        norm[i] = rng_uniform(&r, 0.8f, 1.2f);
    owned[no] = make_mat(&r, q, V, D, &bytes);
    t[nt++] = (gw_tensor){"token_embd.weight", 2, {D, V}, q->ggml,
                          owned[no++], bytes};
    if (!tied) {
        owned[no] = make_mat(&r, q, V, D, &bytes);
        t[nt++] = (gw_tensor){"output.weight", 2, {D, V}, q->ggml,
                              owned[no++], bytes};
    }
    t[nt++] = (gw_tensor){"output_norm.weight", 1, {D}, MHSA_GGML_F32, norm,
                          D * 4};
    for (int l = 0; l < L; l++) {
        snprintf(names[l][0], 48, "blk.%d.attn_norm.weight", l);
        snprintf(names[l][1], 48, "blk.%d.ffn_norm.weight", l);
        t[nt++] = (gw_tensor){names[l][0], 1, {D}, MHSA_GGML_F32, norm,
                              D * 4};
        t[nt++] = (gw_tensor){names[l][1], 1, {D}, MHSA_GGML_F32, norm,
                              D * 4};
        for (int i = 0; i < N_MATS; i++) {
            char *n = names[l][2 + i];
            snprintf(n, 48, "blk.%d.%s.weight", l, mats[i].name);
            owned[no] = make_mat(&r, q, (size_t)mats[i].rows,
                                 (size_t)mats[i].cols, &bytes);
            t[nt++] = (gw_tensor){n, 2, {(uint64_t)mats[i].cols,
                                         (uint64_t)mats[i].rows}, q->ggml,
                                  owned[no++], bytes};
        }
    }
    gw w = {0};
    gw_header(&w, 3, nt, 8);
    gw_llama_shape(&w, L, CTX, D, F, H, KV, 1e-5f);
    gw_tensors(&w, t, nt, 32);
    ck_assert_int_eq(gw_save(&w, path), 0);
    gw_free(&w);
    for (size_t i = 0; i < no; i++)
        free(owned[i]);
}

static void model_path(char *buf, size_t n)
{
    const char *d = getenv("TMPDIR");
    snprintf(buf, n, "%s/mhsa-llama-quant-%ld.gguf", d && d[0] ? d : "/tmp",
             (long)getpid());
}

static int32_t tokens[P + S];

// The logits of a P-token prefill (last row) and S decoding steps, in
// out[(S + 1) * V]; the model of path loaded as wdt on nt threads; with
// one_by_one the prompt goes in token by token.
static void run(const char *path, int wdt, int nt, int one_by_one,
                float *out)
{
    int saved = omp_get_max_threads();
    omp_set_num_threads(nt);
    mhsa_llama *m = NULL;
    mhsa_status st = mhsa__llama_load_ex(path, 0, wdt, &m);
    ck_assert_msg(st == MHSA_OK, "load as %d: %s", wdt, mhsa_last_error());
    mhsa_llama_cache *c;
    ck_assert_int_eq(mhsa__llama_cache_create(m, MHSA_F32, &c), MHSA_OK);
    if (one_by_one)
        for (int i = 0; i < P; i++)
            ck_assert_int_eq(mhsa__llama_forward(m, c, tokens + i, 1, 0,
                                                 out), MHSA_OK);
    else
        ck_assert_int_eq(mhsa__llama_forward(m, c, tokens, P, 0, out),
                         MHSA_OK);
    for (int s = 0; s < S; s++)
        ck_assert_int_eq(mhsa__llama_forward(m, c, tokens + P + s, 1, 0,
                                             out + (s + 1) * V), MHSA_OK);
    mhsa__llama_cache_destroy(c);
    mhsa__llama_destroy(m);
    omp_set_num_threads(saved);
}

static double rms(const float *x, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    return sqrt(s / (double)n);
}

static double rms_diff(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return sqrt(s / (double)n);
}

// The bound on rms(file - f32) over the logits, relative to their rms.
// Quantized types: each product rounds its input to int8 per block, an
// error of at most amax / 254 per element (kernels/quant.h), about
// amax / 127 / sqrt(12) ~ 0.6 % of the input's rms for Gaussian-like
// rows (amax ~ 2.5 rms over 32 values); about 3 sequential products a
// layer plus the head add up in quadrature to ~1.5-3 % of the logits'
// rms (measured: up to 3.1 %). 6 % leaves a margin, while a wrong block
// layout, scale or min gives errors of the logits' own size. fp types:
// only the fp32 summation order differs (1e-4).
static double bound(uint32_t t)
{
    return is_fp(t) ? 1e-4 : 0.06;
}

START_TEST(file_mode_matches_f32_mode)
{
    const qtype *q = &types[_i];
    char path[512];
    model_path(path, sizeof path);
    write_model(q, _i % 2, path);
    for (int i = 0; i < P + S; i++)
        tokens[i] = (i * 37 + 11) % V;
    static float ref[(S + 1) * V], fm[(S + 1) * V], fm2[(S + 1) * V],
        seq[(S + 1) * V], flat[(S + 1) * V];
    run(path, MHSA_F32, 1, 0, ref);
    run(path, MHSA__WEIGHTS_FILE, 1, 0, fm);
    run(path, MHSA__WEIGHTS_FILE, 2, 0, fm2);
    run(path, MHSA__WEIGHTS_FILE, 1, 1, seq);
    ck_assert_int_eq(setenv("MHSA_QPACK", "0", 1), 0);
    run(path, MHSA__WEIGHTS_FILE, 2, 0, flat);
    ck_assert_int_eq(unsetenv("MHSA_QPACK"), 0);
    unlink(path);
    const char *name = mhsa__ggml_type(q->ggml)->name;
    size_t n = (S + 1) * V;
    ck_assert(all_finite(ref, n) && all_finite(fm, n));
    double scale = rms(ref, n), e = rms_diff(fm, ref, n) / scale;
    ck_assert_msg(scale > 0.1, "%s: logits rms %g: a degenerate model",
                  name, scale);
    ck_assert_msg(e <= bound(q->ggml), "%s: rms(file - f32) = %.3g of the "
                  "logits' rms %.3g, over %.3g", name, e, scale,
                  bound(q->ggml));
    ck_assert_msg(!memcmp(fm, fm2, sizeof fm), "%s: file mode differs on 1 "
                  "and 2 threads", name);
    ck_assert_msg(!memcmp(fm, flat, sizeof fm), "%s: file mode differs "
                  "packed and in the file's layout", name);
    double es = rms_diff(seq, fm, n) / scale;
    ck_assert_msg(es <= bound(q->ggml), "%s: prompt token by token vs at "
                  "once: %.3g of the rms, over %.3g", name, es,
                  bound(q->ggml));
    printf("%-7s %s: file vs f32 %.2e, token by token %.2e (of rms %.3f)\n",
           name, _i % 2 ? "tied" : "untied", e, es, scale);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("llama_quant");
    TCase *tc = tcase_create("llama_quant");
    tcase_set_timeout(tc, 300);
    tcase_add_loop_test(tc, file_mode_matches_f32_mode, 0, N_TYPES);
    suite_add_tcase(s, tc);
    return s;
}

int main(void) { return run_suite(suite()); }
