// bench_gpt.c — the tiny GPT of mhsa_train.h: one training step
// (forward, backward, AdamW) on byte tokens at the tiny preset (L=2 D=64
// H=4 T=32 B=8) and at L=4 D=128 H=4 T=128 B=8, and one decoding step
// through the KV cache, at 1 and all threads. items/s are tokens/s.
//
// FLOP convention: 6 * (matrix parameters) per token for the linear layers
// (forward 2, backward 4), plus 3 x the causal attention core's
// 2*B*H*T*T*dh; embeddings, norms and GELU not counted.
#include <omp.h>
#include <stdlib.h>

#include "bench_util.h"
#include "mhsa_train.h"
#include "shim.h"

static const char *const gpt_names[] = { "L", "D", "H", "T", "B",
                                         "threads" };

static mhsa_gpt *make(mhsa_bench_state *st, int L, int D, int H, int T,
                      int B)
{
    mhsa_gpt_config c = { 0 };
    c.vocab = 256;
    c.n_layer = L;
    c.n_embd = D;
    c.n_head = H;
    c.block_size = T;
    c.max_batch = B;
    mhsa_gpt *g = NULL;
    if (mhsa_gpt_create(&c, &g) != MHSA_OK ||
        mhsa_gpt_init_random(g, 1) != MHSA_OK) {
        mhsa_bench_skip(st, mhsa_last_error());
        mhsa_gpt_destroy(g);
        return NULL;
    }
    return g;
}

// Matrix parameters (the FLOP count's base).
static double matrix_params(const mhsa_gpt *g)
{
    double n = 0;
    for (int i = 0; i < mhsa_gpt_n_tensors(g); i++) {
        mhsa_gpt_tensor t;
        mhsa_gpt_get_tensor(g, i, &t);
        if (t.rank == 2 && t.shape[0] != 256)   // not the embeddings
            n += (double)t.numel;
    }
    return n + 256.0 * (double)mhsa_gpt_get_config(g)->n_embd;   // head
}

static void bm_train_step(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int L = (int)mhsa_bench_arg(st, 0), D = (int)mhsa_bench_arg(st, 1);
    int H = (int)mhsa_bench_arg(st, 2), T = (int)mhsa_bench_arg(st, 3);
    int B = (int)mhsa_bench_arg(st, 4);
    int threads = (int)mhsa_bench_arg(st, 5), saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    mhsa_gpt *g = make(st, L, D, H, T, B);
    int32_t *tok = malloc(2 * (size_t)B * T * sizeof(int32_t));
    if (g && tok) {
        int32_t *tgt = tok + (size_t)B * T;
        for (int i = 0; i < B * T; i++) {
            tok[i] = (i * 37) % 256;
            tgt[i] = (i * 91 + 5) % 256;
        }
        mhsa_optim_config oc = mhsa_optim_defaults(MHSA_OPTIM_ADAMW);
        oc.weight_decay = 0.1f;
        oc.clip_norm = 1.0f;
        float loss;
        while (mhsa_bench_keep_running(st)) {
            mhsa_gpt_forward(g, tok, tgt, B, T, 0.0, &loss);
            mhsa_gpt_backward(g);
            mhsa_gpt_step(g, &oc, NULL);
        }
        double tokens = (double)B * T;
        double flops = 6.0 * matrix_params(g) * tokens +
                       3.0 * 2.0 * B * (double)T * T * D * L;
        mhsa_bench_set_items(st, mhsa_bench_iterations(st) * B * T);
        mhsa_bench_rate(st, "GFLOP", flops * 1e-9);
        mhsa_bench_rate(st, "frac_peak", flops * 1e-9 /
                        mhsa_bench_peak_gflops(mhsa_active_isa(), threads));
    }
    free(tok);
    mhsa_gpt_destroy(g);
    omp_set_num_threads(saved);
}

// One decoding step with a cache of T - 1 positions (refilled outside the
// clock when it is full).
static void bm_decode_step(mhsa_bench_state *st, const void *ctx)
{
    (void)ctx;
    int L = (int)mhsa_bench_arg(st, 0), D = (int)mhsa_bench_arg(st, 1);
    int H = (int)mhsa_bench_arg(st, 2), T = (int)mhsa_bench_arg(st, 3);
    int threads = (int)mhsa_bench_arg(st, 5), saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    mhsa_gpt *g = make(st, L, D, H, T, 1);
    mhsa_gpt_cache *c = NULL;
    int32_t *tok = malloc((size_t)T * sizeof(int32_t));
    float logits[256];
    if (g && tok && mhsa_gpt_cache_create(g, T, &c) == MHSA_OK) {
        for (int i = 0; i < T; i++)
            tok[i] = (i * 37) % 256;
        while (mhsa_bench_keep_running(st)) {
            if (mhsa_gpt_cache_len(c) == T) {
                mhsa_bench_pause(st);
                mhsa_gpt_cache_reset(c);
                mhsa_gpt_forward_cached(g, c, tok, T / 2, logits);
                mhsa_bench_resume(st);
            }
            mhsa_gpt_forward_cached(g, c, tok, 1, logits);
        }
        mhsa_bench_use(logits);
        mhsa_bench_set_items(st, mhsa_bench_iterations(st));
    } else if (g) {
        mhsa_bench_skip(st, mhsa_last_error());
    }
    free(tok);
    mhsa_gpt_cache_destroy(c);
    mhsa_gpt_destroy(g);
    omp_set_num_threads(saved);
}

void mhsa_bench_register_gpt(void)
{
    int64_t tc[2];
    int ntc = mhsa_bench_thread_counts(tc);
    static const int64_t shapes[][5] = {   // L, D, H, T, B
        { 2, 64, 4, 32, 8 }, { 4, 128, 4, 128, 8 },
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int c = 0; c < ntc; c++) {
            const int64_t *a = shapes[s];
            int64_t args[6] = { a[0], a[1], a[2], a[3], a[4], tc[c] };
            mhsa_bench_add("gpt_train_step", bm_train_step, NULL, 6, args,
                           gpt_names);
            mhsa_bench_add("gpt_decode_step", bm_decode_step, NULL, 6, args,
                           gpt_names);
        }
}
