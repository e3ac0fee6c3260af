// test_faults.c — allocation failure injected at every allocation that
// creating a block, workspace, KV cache, gradients or training model (and
// reading or writing a weight file, GPT models, caches, checkpoints and
// text corpora) makes: each such call then returns
// MHSA_ERR_NO_MEMORY, leaves *out untouched, leaks nothing, and the objects
// made before keep working with the same bits. Compute calls (forward,
// backward, decode, training steps) allocate nothing at all.
//
// Failures come from the library's hook mhsa__alloc_fail_at(n). Leaks are
// counted exactly: this test is linked with -Wl,--wrap=posix_memalign and
// --wrap=free (tests/meson.build), so every block the library's allocator
// takes from the C library, and every one it gives back, passes through
// the wrappers below.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/alloc.h"
#include "blockutil.h"
#include "mhsa_train.h"

// ---- live allocation tracking ----------------------------------------------

int  __real_posix_memalign(void **p, size_t align, size_t n);
void __real_free(void *p);

enum { MAX_TRACKED = 4096 };
static void *tracked[MAX_TRACKED];
static size_t n_live, n_overflow;

int __wrap_posix_memalign(void **p, size_t align, size_t n);
int __wrap_posix_memalign(void **p, size_t align, size_t n)
{
    int rc = __real_posix_memalign(p, align, n);
    if (rc == 0) {
        size_t i = 0;
        while (i < MAX_TRACKED && tracked[i])
            i++;
        if (i < MAX_TRACKED)
            tracked[i] = *p;
        else
            n_overflow++;
        n_live++;
    }
    return rc;
}

void __wrap_free(void *p);
void __wrap_free(void *p)
{
    if (p)
        for (size_t i = 0; i < MAX_TRACKED; i++)
            if (tracked[i] == p) {
                tracked[i] = NULL;
                n_live--;
                break;
            }
    __real_free(p);
}

// ---- one call, failed at each of its allocations ---------------------------

typedef struct env {
    mhsa_block *blk;          // made before the faults, must keep working
    mhsa_block *gqa;          // a GQA + RoPE block (cfg_v02), the same
    mhsa_lm *lm;
    mhsa_gpt *gpt;
    char gpt_path[80];        // a saved checkpoint of gpt
    char text_path[80];       // a small text file
    const char *st_path;      // a saved weight file of blk's config
    char tmp_path[64];
    mhsa_names names;         // the set of names op_load_ex / op_save_ex use
    char names_path[3][80];   // blk saved under each set of names
} env;

// op makes one object into *obj (or leaves obj alone when the call makes
// none); destroy frees it.
typedef mhsa_status (*op_fn)(env *e, void **obj);
typedef void (*destroy_fn)(void *obj);

static void fault_every(const char *name, env *e, op_fn op, destroy_fn destroy,
                        int expect_allocs)
{
    size_t live0 = n_live;
    void *obj = NULL;
    mhsa__alloc_fail_at(0);
    ck_assert_msg(op(e, &obj) == MHSA_OK, "%s: %s", name, mhsa_last_error());
    size_t n = mhsa__alloc_fail_at(0);
    if (destroy)
        destroy(obj);
    ck_assert_msg(n_live == live0, "%s: %zu blocks still live after destroy",
                  name, n_live - live0);
    if (expect_allocs)
        ck_assert_msg(n > 0, "%s made no allocation", name);
    int sentinel;
    for (size_t i = 1; i <= n; i++) {
        obj = &sentinel;
        mhsa__alloc_fail_at(i);
        mhsa_status st = op(e, &obj);
        size_t made = mhsa__alloc_fail_at(0);
        ck_assert_msg(st == MHSA_ERR_NO_MEMORY,
                      "%s with allocation %zu of %zu failing: %s", name, i,
                      n, mhsa_status_str(st));
        ck_assert_msg(made >= i, "%s: stopped after %zu allocations", name,
                      made);
        ck_assert_msg(obj == &sentinel, "%s: *out written on failure", name);
        ck_assert_msg(n_live == live0, "%s: allocation %zu failing leaks %zu "
                      "blocks", name, i, n_live - live0);
        ck_assert(mhsa_last_error()[0] != '\0');
    }
    ck_assert_uint_eq(n_overflow, 0);
    printf("%-37s %2zu allocations, each failed in turn: NO_MEMORY, no "
           "leak\n", name, n);
}

static const mhsa_config cfg = { 12, 3, 16, 1, 1 };

static mhsa_status op_block(env *e, void **obj)
{
    (void)e;
    return mhsa_block_create(&cfg, (mhsa_block **)obj);
}

static mhsa_status op_workspace(env *e, void **obj)
{
    return mhsa_workspace_create(e->blk, 3, (mhsa_workspace **)obj);
}

static mhsa_status op_cache(env *e, void **obj)
{
    return mhsa_kv_cache_create(e->blk, 2, 16, (mhsa_kv_cache **)obj);
}

// The 0.2 variants: grouped-query heads and RoPE tables.
static const mhsa_config cfg_v02 = { 12, 6, 16, 1, 1, 2, 2, 500.0f, 1, 5 };

static mhsa_status op_block_v02(env *e, void **obj)
{
    (void)e;
    return mhsa_block_create(&cfg_v02, (mhsa_block **)obj);
}

static mhsa_status op_cache_f16(env *e, void **obj)
{
    mhsa_kv_config kc = { 2, 16, MHSA_F16 };
    return mhsa_kv_cache_create_ex(e->blk, &kc, (mhsa_kv_cache **)obj);
}

// A workspace, gradients and a BF16 cache of a GQA + RoPE block (other
// sizes than the multi-head block's: K/V heads, fewer w_qkv rows).
static mhsa_status op_workspace_v02(env *e, void **obj)
{
    return mhsa_workspace_create(e->gqa, 3, (mhsa_workspace **)obj);
}

static mhsa_status op_grads_v02(env *e, void **obj)
{
    return mhsa_grads_create(e->gqa, (mhsa_grads **)obj);
}

static mhsa_status op_cache_bf16_v02(env *e, void **obj)
{
    mhsa_kv_config kc = { 3, 16, MHSA_BF16 };
    return mhsa_kv_cache_create_ex(e->gqa, &kc, (mhsa_kv_cache **)obj);
}

static mhsa_status op_grads(env *e, void **obj)
{
    return mhsa_grads_create(e->blk, (mhsa_grads **)obj);
}

static const mhsa_lm_config lm_cfg = { 11, 8, 2, 9, 3 };

static mhsa_status op_lm(env *e, void **obj)
{
    (void)e;
    return mhsa_lm_create(&lm_cfg, (mhsa_lm **)obj);
}

static const mhsa_gpt_config gpt_cfg = { 13, 2, 8, 2, 5, 2, 0, 0, 0 };

static mhsa_status op_gpt(env *e, void **obj)
{
    (void)e;
    return mhsa_gpt_create(&gpt_cfg, (mhsa_gpt **)obj);
}

static mhsa_status op_gpt_cache(env *e, void **obj)
{
    return mhsa_gpt_cache_create(e->gpt, 5, (mhsa_gpt_cache **)obj);
}

// Loading into the existing model: on failure its parameters are unchanged.
static mhsa_status op_gpt_load(env *e, void **obj)
{
    (void)obj;
    size_t n = mhsa_gpt_n_params(e->gpt);
    float *before = malloc(n * sizeof(float));
    memcpy(before, mhsa_gpt_params(e->gpt), n * sizeof(float));
    mhsa_status st = mhsa_gpt_load(e->gpt, e->gpt_path, 1);
    if (st != MHSA_OK)
        ck_assert(!memcmp(before, mhsa_gpt_params(e->gpt),
                          n * sizeof(float)));
    free(before);
    return st;
}

static mhsa_status op_gpt_save(env *e, void **obj)
{
    (void)obj;
    return mhsa_gpt_save(e->gpt, e->gpt_path, 1, NULL, 0);
}

static mhsa_status op_text(env *e, void **obj)
{
    return mhsa_text_load(e->text_path, 0.25, (mhsa_text **)obj);
}

// A training step and a decoding step of the GPT: no allocation at all.
static float gpt_loss(mhsa_gpt *g)
{
    const int32_t tok[2 * 5] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
    const int32_t tgt[2 * 5] = { 2, 3, 4, 5, 6, 7, 8, 9, 10, 11 };
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    float loss, logits[13];
    mhsa_gpt_cache *c = NULL;
    ck_assert_int_eq(mhsa_gpt_cache_create(g, 5, &c), MHSA_OK);
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa_gpt_forward(g, tok, tgt, 2, 5, 0, &loss), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_backward(g), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_step(g, &oc, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, c, tok, 3, logits), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_forward_cached(g, c, tok, 1, logits), MHSA_OK);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);
    mhsa_gpt_cache_destroy(c);
    return loss;
}

// All of a block's weights, flat (bias == 1, D = 12; w_qkv has 3D rows or
// fewer with grouped-query heads); the rest of the N_W floats stays zero.
enum { N_W = 3 * 12 * 12 + 3 * 12 + 12 * 12 + 12 };
static void get_all(const mhsa_block *blk, float *w)
{
    const mhsa_config *c = mhsa_block_config(blk);
    int hkv = c->n_kv_heads ? c->n_kv_heads : c->n_heads;
    size_t D = 12, qkv = D + 2 * (size_t)hkv * (D / (size_t)c->n_heads);
    ck_assert(c->d_model == 12 && c->bias == 1);
    memset(w, 0, N_W * sizeof *w);
    ck_assert_int_eq(mhsa_block_get_weights(blk, w, w + qkv * D,
                                            w + qkv * D + qkv,
                                            w + qkv * D + qkv + D * D),
                     MHSA_OK);
}

// Loading into the existing block: on failure its weights are unchanged.
static mhsa_status op_load(env *e, void **obj)
{
    float before[N_W], after[N_W];
    get_all(e->blk, before);
    (void)obj;   // makes no object
    mhsa_status st = mhsa_block_load_safetensors(e->blk, e->st_path, "attn.");
    get_all(e->blk, after);
    if (st != MHSA_OK)
        ck_assert(!memcmp(before, after, sizeof before));
    return st;
}

static mhsa_status op_save(env *e, void **obj)
{
    (void)obj;
    return mhsa_block_save_safetensors(e->blk, e->tmp_path, "x.");
}

// The same with the Hugging Face and c_* names: a file holding the set
// e->names is loaded (its tensors split into the fused w_qkv), or saved.
static mhsa_status op_load_ex(env *e, void **obj)
{
    e->st_path = e->names_path[e->names];
    return op_load(e, obj);
}

static mhsa_status op_save_ex(env *e, void **obj)
{
    (void)obj;
    return mhsa_block_save_safetensors_ex(e->blk, e->tmp_path, "x.",
                                          e->names);
}

static void destroy_block(void *p) { mhsa_block_destroy(p); }
static void destroy_ws(void *p) { mhsa_workspace_destroy(p); }
static void destroy_cache(void *p) { mhsa_kv_cache_destroy(p); }
static void destroy_grads(void *p) { mhsa_grads_destroy(p); }
static void destroy_lm(void *p) { mhsa_lm_destroy(p); }
static void destroy_gpt(void *p) { mhsa_gpt_destroy(p); }
static void destroy_gpt_cache(void *p) { mhsa_gpt_cache_destroy(p); }
static void destroy_text(void *p) { mhsa_text_destroy(p); }

// forward + backward + decode of fixed inputs on fresh objects (blk is
// cfg's block or the GQA + RoPE one, d_model 12, max_seq_len 16).
static void compute(mhsa_block *blk, const float *x, float *y, float *dx,
                    float *dec)
{
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    mhsa_kv_cache *c = NULL;
    ck_assert_int_eq(mhsa_workspace_create(blk, 2, &ws), MHSA_OK);
    ck_assert_int_eq(mhsa_grads_create(blk, &g), MHSA_OK);
    // The GQA block decodes through an F16 cache.
    mhsa_kv_config kc = { 2, 16, mhsa_block_config(blk)->n_kv_heads
                                 ? MHSA_F16 : MHSA_F32 };
    ck_assert_int_eq(mhsa_kv_cache_create_ex(blk, &kc, &c), MHSA_OK);
    // The compute calls themselves allocate nothing, the ragged ones
    // included.
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa_forward(blk, ws, x, 2, 16, NULL, y, NULL), MHSA_OK);
    ck_assert_int_eq(mhsa_backward(blk, ws, x, dx, g), MHSA_OK);
    ck_assert_int_eq(mhsa_forward_cached(blk, ws, c, x, 2, 5, dec), MHSA_OK);
    int seq_len[2] = { 16, 9 }, n_new[2] = { 1, 0 };
    float *y2 = malloc(2 * 16 * 12 * sizeof(float));
    mhsa_forward_args fa = { x, 2, 16, NULL, seq_len, y2, NULL };
    mhsa_cached_args ca = { x, 2, 1, n_new, y2 };
    ck_assert_int_eq(mhsa_forward_ex(blk, ws, &fa), MHSA_OK);
    ck_assert_int_eq(mhsa_forward_cached_ex(blk, ws, c, &ca), MHSA_OK);
    ck_assert_int_eq(mhsa_kv_cache_reset_seq(c, 1), MHSA_OK);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);
    free(y2);
    mhsa_kv_cache_destroy(c);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
}

static float lm_loss(mhsa_lm *lm)
{
    int32_t tok[3 * 9], tgt[3 * 9];
    uint64_t st = 5;
    ck_assert_int_eq(mhsa_task_batch(MHSA_TASK_REPEAT, &st, 3, 9, 11, tok,
                                     tgt), MHSA_OK);
    mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
    float loss, gn;
    mhsa__alloc_fail_at(0);
    ck_assert_int_eq(mhsa_lm_forward(lm, tok, tgt, 3, 9, &loss, NULL),
                     MHSA_OK);
    ck_assert_int_eq(mhsa_lm_backward(lm), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_step(lm, &oc, &gn), MHSA_OK);
    ck_assert_uint_eq(mhsa__alloc_fail_at(0), 0);   // no allocation per step
    return loss;
}

START_TEST(every_allocation_fails_in_turn)
{
    env e = { 0 };
    ck_assert_int_eq(mhsa_block_create(&cfg, &e.blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(e.blk, 7), MHSA_OK);
    ck_assert_int_eq(mhsa_block_create(&cfg_v02, &e.gqa), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(e.gqa, 8), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_create(&lm_cfg, &e.lm), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_init_random(e.lm, 3), MHSA_OK);
    const char *tmp = getenv("TMPDIR");
    snprintf(e.tmp_path, sizeof e.tmp_path, "%s/mhsa_faults_%ld.st",
             tmp && strlen(tmp) < 32 ? tmp : "/tmp", (long)getpid());
    e.st_path = e.tmp_path;
#ifdef MHSA_TEST_SAFETENSORS
    ck_assert_int_eq(mhsa_block_save_safetensors(e.blk, e.st_path, "attn."),
                     MHSA_OK);
#endif
    for (int k = 0; k < 3; k++)
        snprintf(e.names_path[k], sizeof e.names_path[k], "%s.%d",
                 e.tmp_path, k);
    ck_assert_int_eq(mhsa_gpt_create(&gpt_cfg, &e.gpt), MHSA_OK);
    ck_assert_int_eq(mhsa_gpt_init_random(e.gpt, 4), MHSA_OK);
    snprintf(e.gpt_path, sizeof e.gpt_path, "%s.gpt", e.tmp_path);
    snprintf(e.text_path, sizeof e.text_path, "%s.txt", e.tmp_path);
    FILE *tf = fopen(e.text_path, "w");
    fputs("some text to read, long enough for a window or two.", tf);
    fclose(tf);
    size_t n = 2 * 16 * 12;
    float *x = malloc(n * sizeof(float)), *y0 = malloc(n * 4);
    float *dx0 = malloc(n * 4), *dec0 = malloc(n * 4);
    float *y1 = malloc(n * 4), *dx1 = malloc(n * 4), *dec1 = malloc(n * 4);
    rng r = { 3 };
    fill_uniform(&r, x, n, -1, 1);
    compute(e.blk, x, y0, dx0, dec0);
    float *gy0 = malloc(n * 4), *gdx0 = malloc(n * 4), *gdec0 = malloc(n * 4);
    float *gy1 = malloc(n * 4), *gdx1 = malloc(n * 4), *gdec1 = malloc(n * 4);
    compute(e.gqa, x, gy0, gdx0, gdec0);
    float loss0 = lm_loss(e.lm);
    // the second step of a model that saw no fault, for comparison
    mhsa_lm *twin = NULL;
    ck_assert_int_eq(mhsa_lm_create(&lm_cfg, &twin), MHSA_OK);
    ck_assert_int_eq(mhsa_lm_init_random(twin, 3), MHSA_OK);
    ck_assert(lm_loss(twin) == loss0);
    float loss_twin = lm_loss(twin);

    fault_every("mhsa_block_create", &e, op_block, destroy_block, 1);
    fault_every("mhsa_workspace_create", &e, op_workspace, destroy_ws, 1);
    fault_every("mhsa_kv_cache_create", &e, op_cache, destroy_cache, 1);
    fault_every("mhsa_block_create (GQA, RoPE)", &e, op_block_v02,
                destroy_block, 1);
    fault_every("mhsa_kv_cache_create_ex (F16)", &e, op_cache_f16,
                destroy_cache, 1);
    fault_every("mhsa_workspace_create (GQA, RoPE)", &e, op_workspace_v02,
                destroy_ws, 1);
    fault_every("mhsa_grads_create (GQA)", &e, op_grads_v02, destroy_grads,
                1);
    fault_every("mhsa_kv_cache_create_ex (GQA, BF16)", &e, op_cache_bf16_v02,
                destroy_cache, 1);
    fault_every("mhsa_grads_create", &e, op_grads, destroy_grads, 1);
    fault_every("mhsa_lm_create", &e, op_lm, destroy_lm, 1);
    float gl0 = gpt_loss(e.gpt);
    fault_every("mhsa_gpt_create", &e, op_gpt, destroy_gpt, 1);
    fault_every("mhsa_gpt_cache_create", &e, op_gpt_cache, destroy_gpt_cache,
                1);
    fault_every("mhsa_text_load", &e, op_text, destroy_text, 1);
#ifdef MHSA_TEST_SAFETENSORS
    fault_every("mhsa_block_load_safetensors", &e, op_load, NULL, 1);
    e.st_path = e.tmp_path;
    fault_every("mhsa_block_save_safetensors", &e, op_save, NULL, 1);
    fault_every("mhsa_gpt_save", &e, op_gpt_save, NULL, 1);
    fault_every("mhsa_gpt_load", &e, op_gpt_load, NULL, 1);
    // Every set of names, with a multi-head block and a grouped-query one
    // (its K/V tensors fewer rows than Q's).
    static const char *const set_name[3] = {"torch", "hf", "c"};
    mhsa_block *mha = e.blk, *gqa = NULL;
    ck_assert_int_eq(mhsa_block_create(&cfg_v02, &gqa), MHSA_OK);
    ck_assert_int_eq(mhsa_block_init_random(gqa, 9), MHSA_OK);
    for (int g = 0; g < 2; g++) {
        e.blk = g ? gqa : mha;
        for (int k = 0; k < 3; k++) {
            char what[64];
            e.names = (mhsa_names)k;
            ck_assert_int_eq(mhsa_block_save_safetensors_ex(e.blk,
                             e.names_path[k], "attn.", e.names), MHSA_OK);
            snprintf(what, sizeof what, "load_safetensors (%s%s)",
                     set_name[k], g ? ", GQA" : "");
            fault_every(what, &e, op_load_ex, NULL, 1);
            snprintf(what, sizeof what, "save_safetensors_ex (%s%s)",
                     set_name[k], g ? ", GQA" : "");
            fault_every(what, &e, op_save_ex, NULL, 1);
        }
    }
    e.blk = mha;
    mhsa_block_destroy(gqa);
#else
    (void)op_gpt_save;
    (void)op_gpt_load;
    (void)op_load;
    (void)op_save;
    (void)op_load_ex;
    (void)op_save_ex;
#endif
    // What existed before the faults still works, with the same bits.
    compute(e.blk, x, y1, dx1, dec1);
    ck_assert(!memcmp(y0, y1, n * 4) && !memcmp(dx0, dx1, n * 4));
    ck_assert(!memcmp(dec0, dec1, 2 * 5 * 12 * 4));
    compute(e.gqa, x, gy1, gdx1, gdec1);
    ck_assert(!memcmp(gy0, gy1, n * 4) && !memcmp(gdx0, gdx1, n * 4));
    ck_assert(!memcmp(gdec0, gdec1, 2 * 5 * 12 * 4));
    ck_assert(lm_loss(e.lm) == loss_twin);
    // The GPT still trains (its loss moved after the first step).
    ck_assert(gpt_loss(e.gpt) != gl0);
    mhsa_gpt_destroy(e.gpt);
    unlink(e.gpt_path);
    unlink(e.text_path);

    unlink(e.tmp_path);
    for (int k = 0; k < 3; k++)
        unlink(e.names_path[k]);
    mhsa_lm_destroy(twin);
    mhsa_lm_destroy(e.lm);
    mhsa_block_destroy(e.blk);
    mhsa_block_destroy(e.gqa);
    float *more[] = { gy0, gdx0, gdec0, gy1, gdx1, gdec1 };
    for (size_t i = 0; i < sizeof more / sizeof *more; i++)
        free(more[i]);
    free(x);
    free(y0);
    free(dx0);
    free(dec0);
    free(y1);
    free(dx1);
    free(dec1);
    ck_assert_uint_eq(n_live, 0);
}
END_TEST

// The counting itself: a block made and destroyed is seen coming and going
// (so a zero above means something).
START_TEST(tracking_sees_library_blocks)
{
    mhsa_block *b = NULL;
    size_t live0 = n_live;
    ck_assert_int_eq(mhsa_block_create(&cfg, &b), MHSA_OK);
    ck_assert_uint_gt(n_live, live0);
    mhsa_block_destroy(b);
    ck_assert_uint_eq(n_live, live0);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("faults");
    TCase *tc = tcase_create("faults");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, tracking_sees_library_blocks);
    tcase_add_test(tc, every_allocation_fails_in_turn);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
