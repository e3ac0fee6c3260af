// test_weight_names.c — the weight names of 0.2 (API.md "Weight names"):
// the same GQA weights written under PyTorch's in_proj_*, Hugging Face's
// q/k/v/o_proj and GPT's c_q/c_k/c_v/c_proj load to the same bits; partial
// sets, missing biases and wrong shapes give MHSA_ERR_FORMAT naming the
// tensor and leave the block alone; mhsa_block_save_safetensors_ex writes
// each set with the documented names and shapes and round-trips.
//
// Test case (run alone: test_weight_names names): names.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "refrun.h"
#include "io/safetensors.h"
#include "tmpdir.h"

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

// ---- a GQA block's weights, split by tensor ----------------------------------------

typedef struct wset {
    int D, H, Hkv, dh, bias;
    size_t rows;                       // (H + 2 Hkv) dh
    float *w_qkv, *b_qkv, *w_out, *b_out;
} wset;

static void wset_make(wset *w, int D, int H, int Hkv, int bias, uint64_t seed)
{
    w->D = D;
    w->H = H;
    w->Hkv = Hkv;
    w->dh = D / H;
    w->bias = bias;
    w->rows = (size_t)(H + 2 * Hkv) * w->dh;
    size_t d = (size_t)D;
    w->w_qkv = malloc(w->rows * d * 4);
    w->b_qkv = malloc(w->rows * 4);
    w->w_out = malloc(d * d * 4);
    w->b_out = malloc(d * 4);
    rng r = { seed };
    fill_uniform(&r, w->w_qkv, w->rows * d, -1, 1);
    fill_uniform(&r, w->b_qkv, w->rows, -1, 1);
    fill_uniform(&r, w->w_out, d * d, -1, 1);
    fill_uniform(&r, w->b_out, d, -1, 1);
}

static void wset_free(wset *w)
{
    free(w->w_qkv);
    free(w->b_qkv);
    free(w->w_out);
    free(w->b_out);
}

static mhsa_block *wset_block(const wset *w, const wset *weights)
{
    mhsa_config c = { w->D, w->H, 16, 1, w->bias };
    c.n_kv_heads = w->Hkv;
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&c, &blk), MHSA_OK);
    if (weights)
        ck_assert_int_eq(mhsa_block_set_weights(blk, weights->w_qkv,
                                                weights->b_qkv, weights->w_out,
                                                weights->b_out), MHSA_OK);
    return blk;
}

// The block's weights equal w's, bit for bit.
static int block_has(const mhsa_block *blk, const wset *w)
{
    size_t d = (size_t)w->D;
    wset g = *w;
    g.w_qkv = malloc(w->rows * d * 4);
    g.b_qkv = malloc(w->rows * 4);
    g.w_out = malloc(d * d * 4);
    g.b_out = malloc(d * 4);
    ck_assert_int_eq(mhsa_block_get_weights(blk, g.w_qkv, g.b_qkv, g.w_out,
                                            g.b_out), MHSA_OK);
    int same = !memcmp(g.w_qkv, w->w_qkv, w->rows * d * 4) &&
               !memcmp(g.w_out, w->w_out, d * d * 4) &&
               (!w->bias || (!memcmp(g.b_qkv, w->b_qkv, w->rows * 4) &&
                             !memcmp(g.b_out, w->b_out, d * 4)));
    wset_free(&g);
    return same;
}

enum { SET_TORCH, SET_HF, SET_C };
// What to leave out of or change in a file.
enum { ALL, NO_K_WEIGHT, NO_Q_BIAS, K_SHAPE_D, NO_BIASES };

// The tensors of one name set, written by hand (not by the library).
static void write_set(const char *path, const char *prefix, const wset *w,
                      int set, int change)
{
    static const char *const proj[3][4] = {
        { "", "", "", "" },
        { "q_proj", "k_proj", "v_proj", "o_proj" },
        { "c_q", "c_k", "c_v", "c_proj" },
    };
    size_t d = (size_t)w->D, nk = (size_t)w->Hkv * w->dh;
    char names[8][160];
    mhsa_st_tensor t[8];
    int n = 0;
    int with_bias = w->bias && change != NO_BIASES;
    float *kbig = NULL;
#define PUT(nm, data_, nd, d0, d1)                                          \
    do {                                                                    \
        snprintf(names[n], sizeof names[n], "%s%s", prefix, nm);            \
        t[n] = (mhsa_st_tensor){ names[n], nd, { d0, d1 }, data_ };         \
        n++;                                                                \
    } while (0)
    if (set == SET_TORCH) {
        PUT("in_proj_weight", w->w_qkv, 2, w->rows, d);
        if (with_bias)
            PUT("in_proj_bias", w->b_qkv, 1, w->rows, 0);
        PUT("out_proj.weight", w->w_out, 2, d, d);
        if (with_bias)
            PUT("out_proj.bias", w->b_out, 1, d, 0);
    } else {
        const float *wp[3] = { w->w_qkv, w->w_qkv + d * d,
                               w->w_qkv + (d + nk) * d };
        const float *bp[3] = { w->b_qkv, w->b_qkv + d, w->b_qkv + d + nk };
        size_t rows[3] = { d, nk, nk };
        char nm[64];
        for (int i = 0; i < 3; i++) {
            if (!(i == 1 && change == NO_K_WEIGHT)) {
                snprintf(nm, sizeof nm, "%s.weight", proj[set][i]);
                if (i == 1 && change == K_SHAPE_D) {   // k as if H = Hkv
                    kbig = calloc(d * d, 4);
                    PUT(nm, kbig, 2, d, d);
                } else {
                    PUT(nm, wp[i], 2, rows[i], d);
                }
            }
            if (with_bias && !(i == 0 && change == NO_Q_BIAS)) {
                snprintf(nm, sizeof nm, "%s.bias", proj[set][i]);
                PUT(nm, bp[i], 1, rows[i], 0);
            }
        }
        snprintf(nm, sizeof nm, "%s.weight", proj[set][3]);
        PUT(nm, w->w_out, 2, d, d);
        if (with_bias) {
            snprintf(nm, sizeof nm, "%s.bias", proj[set][3]);
            PUT(nm, w->b_out, 1, d, 0);
        }
    }
#undef PUT
    ck_assert_int_eq(mhsa__st_write_f32(path, t, (size_t)n), MHSA_OK);
    free(kbig);
}

static const char *const files[] = { "torch.st", "hf.st", "c.st", "bad.st",
                                     "out.st", "both.st" };

// The same weights under each set load to the same bits; with a prefix
// too; a file holding two complete sets loads the PyTorch one.
START_TEST(three_name_sets_load_the_same_bits)
{
    static const struct { int D, H, Hkv, bias; } shapes[] = {
        { 32, 4, 4, 1 }, { 32, 8, 2, 1 }, { 48, 6, 1, 0 },
    };
    static const char *const prefixes[] = { "", "model.layers.0.self_attn." };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (size_t p = 0; p < 2; p++) {
            wset w, other;
            wset_make(&w, shapes[s].D, shapes[s].H, shapes[s].Hkv,
                      shapes[s].bias, 10 + s);
            wset_make(&other, shapes[s].D, shapes[s].H, shapes[s].Hkv,
                      shapes[s].bias, 20 + s);
            for (int set = 0; set < 3; set++) {
                const char *path = tpath(files[set]);
                write_set(path, prefixes[p], &w, set, ALL);
                mhsa_block *blk = wset_block(&w, &other);
                mhsa_status st = mhsa_block_load_safetensors(blk, path,
                                                             prefixes[p]);
                ck_assert_msg(st == MHSA_OK, "set %d, D %d H %d Hkv %d: %s",
                              set, w.D, w.H, w.Hkv, mhsa_last_error());
                ck_assert_msg(block_has(blk, &w), "set %d, Hkv %d: weights "
                              "differ after loading", set, w.Hkv);
                mhsa_block_destroy(blk);
            }
            // Present biases are ignored when the block has none.
            if (!w.bias) {
                wset wb = w;
                wb.bias = 1;
                write_set(tpath("hf.st"), prefixes[p], &wb, SET_HF, ALL);
                mhsa_block *blk = wset_block(&w, &other);
                ck_assert_int_eq(mhsa_block_load_safetensors(
                                     blk, tpath("hf.st"), prefixes[p]),
                                 MHSA_OK);
                ck_assert(block_has(blk, &w));
                mhsa_block_destroy(blk);
            }
            wset_free(&w);
            wset_free(&other);
        }
    // Two complete sets in one file: PyTorch's is tried first.
    wset a, b;
    wset_make(&a, 32, 8, 2, 1, 31);
    wset_make(&b, 32, 8, 2, 1, 32);
    size_t d = 32, nk = 8;
    mhsa_st_tensor t[12] = {
        { "in_proj_weight", 2, { a.rows, d }, a.w_qkv },
        { "in_proj_bias", 1, { a.rows }, a.b_qkv },
        { "out_proj.weight", 2, { d, d }, a.w_out },
        { "out_proj.bias", 1, { d }, a.b_out },
        { "q_proj.weight", 2, { d, d }, b.w_qkv },
        { "k_proj.weight", 2, { nk, d }, b.w_qkv + d * d },
        { "v_proj.weight", 2, { nk, d }, b.w_qkv + (d + nk) * d },
        { "o_proj.weight", 2, { d, d }, b.w_out },
        { "q_proj.bias", 1, { d }, b.b_qkv },
        { "k_proj.bias", 1, { nk }, b.b_qkv + d },
        { "v_proj.bias", 1, { nk }, b.b_qkv + d + nk },
        { "o_proj.bias", 1, { d }, b.b_out },
    };
    ck_assert_int_eq(mhsa__st_write_f32(tpath("both.st"), t, 12), MHSA_OK);
    mhsa_block *blk = wset_block(&a, &b);
    ck_assert_int_eq(mhsa_block_load_safetensors(blk, tpath("both.st"), ""),
                     MHSA_OK);
    ck_assert_msg(block_has(blk, &a), "with two complete sets, the PyTorch "
                  "one is not the one loaded");
    // HF alone (the torch tensors under a prefix nobody asks for)
    for (int i = 0; i < 4; i++)
        t[i].name = (const char *[]){ "x.in_proj_weight", "x.in_proj_bias",
                                      "x.out_proj.weight",
                                      "x.out_proj.bias" }[i];
    ck_assert_int_eq(mhsa__st_write_f32(tpath("both.st"), t, 12), MHSA_OK);
    ck_assert_int_eq(mhsa_block_load_safetensors(blk, tpath("both.st"), ""),
                     MHSA_OK);
    ck_assert(block_has(blk, &b));
    mhsa_block_destroy(blk);
    wset_free(&a);
    wset_free(&b);
    tpath_remove();
}
END_TEST

static void expect_format(mhsa_block *blk, const wset *keep,
                          const char *path, const char *what,
                          const char *must1, const char *must2)
{
    mhsa_status s = mhsa_block_load_safetensors(blk, path, "");
    const char *msg = mhsa_last_error();
    printf("%s: %s: %s\n", what, mhsa_status_str(s), msg);
    ck_assert_msg(s == MHSA_ERR_FORMAT, "%s: %s", what, mhsa_status_str(s));
    ck_assert_msg(!must1 || strstr(msg, must1), "%s: message \"%s\" does not "
                  "name %s", what, msg, must1);
    ck_assert_msg(!must2 || strstr(msg, must2), "%s: message \"%s\" does not "
                  "name %s", what, msg, must2);
    ck_assert_msg(block_has(blk, keep), "%s: a failed load changed the "
                  "block", what);
}

// A file with no complete set names the first missing tensor of the
// PyTorch set (API.md); a complete set with a tensor of the wrong shape
// names that tensor, its expected and its found shape.
START_TEST(partial_sets_and_bad_shapes)
{
    wset w, keep;
    wset_make(&w, 32, 8, 2, 1, 41);   // k, v: (8, 32)
    wset_make(&keep, 32, 8, 2, 1, 42);
    mhsa_block *blk = wset_block(&w, &keep);
    const char *p = tpath("bad.st");
    for (int set = SET_HF; set <= SET_C; set++) {
        write_set(p, "", &w, set, NO_K_WEIGHT);
        expect_format(blk, &keep, p, set == SET_HF ? "HF without k_proj"
                      : "c_* without c_k", "in_proj_weight", NULL);
        write_set(p, "", &w, set, NO_Q_BIAS);
        expect_format(blk, &keep, p, set == SET_HF ? "HF without q_proj.bias"
                      : "c_* without c_q.bias", NULL, NULL);
        write_set(p, "", &w, set, NO_BIASES);
        expect_format(blk, &keep, p, "no biases for a block with bias", NULL,
                      NULL);
        write_set(p, "", &w, set, K_SHAPE_D);
        expect_format(blk, &keep, p, set == SET_HF ? "k_proj (D, D) in GQA"
                      : "c_k (D, D) in GQA",
                      set == SET_HF ? "k_proj.weight" : "c_k.weight", "32");
    }
    // the fused layout with 3D rows, as 0.1 wrote it for H heads
    wset mha;
    wset_make(&mha, 32, 8, 8, 1, 43);
    write_set(p, "", &mha, SET_TORCH, ALL);
    expect_format(blk, &keep, p, "in_proj_weight (3D, D) in GQA",
                  "in_proj_weight", "96");
    wset_free(&mha);
    mhsa_block_destroy(blk);
    wset_free(&w);
    wset_free(&keep);
    tpath_remove();
}
END_TEST

// save_ex writes each set under its names and shapes, F32; loading it back
// gives the same bits; an unknown set is INVALID_ARG and writes nothing.
START_TEST(save_ex_round_trips)
{
    static const char *const expect[3][4] = {
        { "in_proj_weight", "in_proj_bias", "out_proj.weight",
          "out_proj.bias" },
        { "q_proj.weight", "k_proj.weight", "v_proj.weight",
          "o_proj.weight" },
        { "c_q.weight", "c_k.weight", "c_v.weight", "c_proj.weight" },
    };
    for (int bias = 0; bias < 2; bias++) {
        wset w, other;
        wset_make(&w, 32, 8, 2, bias, 51);
        wset_make(&other, 32, 8, 2, bias, 52);
        mhsa_block *a = wset_block(&w, &w), *b = wset_block(&w, &other);
        size_t d = 32, nk = 8;
        for (int set = 0; set < 3; set++) {
            const char *p = tpath("out.st");
            ck_assert_int_eq(mhsa_block_save_safetensors_ex(
                                 a, p, "layer.", (mhsa_names)set), MHSA_OK);
            mhsa_st_file *f = NULL;
            ck_assert_int_eq(mhsa__st_open(p, &f), MHSA_OK);
            size_t want_n = set == SET_TORCH ? (bias ? 4 : 2)
                                             : (bias ? 8 : 4);
            ck_assert_uint_eq(mhsa__st_count(f), want_n);
            int nd;
            size_t dims[MHSA_ST_MAX_DIMS];
            for (int i = 0; i < 4; i++) {
                if (set == SET_TORCH && !bias && (i == 1 || i == 3))
                    continue;
                char nm[64];
                snprintf(nm, sizeof nm, "layer.%s", expect[set][i]);
                ck_assert_msg(mhsa__st_shape(f, nm, &nd, dims),
                              "set %d: no %s", set, nm);
                size_t want0 = set == SET_TORCH
                    ? (i == 0 ? w.rows : i == 1 ? w.rows : d)
                    : (i == 1 || i == 2 ? nk : d);
                ck_assert_msg(dims[0] == want0, "set %d: %s has %zu rows, "
                              "not %zu", set, nm, dims[0], want0);
            }
            mhsa__st_close(f);
            ck_assert_int_eq(mhsa_block_set_weights(b, other.w_qkv,
                                                    other.b_qkv, other.w_out,
                                                    other.b_out), MHSA_OK);
            ck_assert_int_eq(mhsa_block_load_safetensors(b, p, "layer."),
                             MHSA_OK);
            ck_assert_msg(block_has(b, &w), "set %d bias %d: round trip",
                          set, bias);
        }
        // MHSA_NAMES_TORCH is what save_safetensors writes
        ck_assert_int_eq(mhsa_block_save_safetensors(a, tpath("torch.st"),
                                                     ""), MHSA_OK);
        ck_assert_int_eq(mhsa_block_save_safetensors_ex(a, tpath("hf.st"),
                                                        "", MHSA_NAMES_TORCH),
                         MHSA_OK);
        FILE *f1 = fopen(tpath("torch.st"), "rb"), *f2 =
            fopen(tpath("hf.st"), "rb");
        int same = 1, c1, c2;
        do {
            c1 = fgetc(f1);
            c2 = fgetc(f2);
            same &= c1 == c2;
        } while (c1 != EOF && c2 != EOF);
        fclose(f1);
        fclose(f2);
        ck_assert_msg(same, "save_ex(MHSA_NAMES_TORCH) differs from save");
        // an unknown set
        unlink(tpath("c.st"));
        ck_assert_int_eq(mhsa_block_save_safetensors_ex(a, tpath("c.st"), "",
                                                        (mhsa_names)3),
                         MHSA_ERR_INVALID_ARG);
        const char *msg = mhsa_last_error();
        printf("names 3: %s\n", msg);
        ck_assert_msg(strstr(msg, "names") && strstr(msg, "3"), "names 3: "
                      "message \"%s\" should name the argument and value",
                      msg);
        ck_assert(access(tpath("c.st"), F_OK) != 0);
        ck_assert_int_eq(mhsa_block_save_safetensors_ex(a, tpath("c.st"), "",
                                                        (mhsa_names)-1),
                         MHSA_ERR_INVALID_ARG);
        mhsa_block_destroy(a);
        mhsa_block_destroy(b);
        wset_free(&w);
        wset_free(&other);
    }
    tpath_remove();
}
END_TEST

static void add_names(TCase *tc)
{
    tcase_add_test(tc, three_name_sets_load_the_same_bits);
    tcase_add_test(tc, partial_sets_and_bad_shapes);
    tcase_add_test(tc, save_ex_round_trips);
}

int main(int argc, char **argv)
{
    static const tcase_def defs[] = { { "names", add_names } };
    return run_tcases("weight_names", defs, N_OF(defs), argc, argv);
}
