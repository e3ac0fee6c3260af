// llama_decode.c — one attention layer of a Llama-style model: weights
// under Hugging Face names, grouped-query attention, rotary position
// embedding; a prompt prefilled in one call, then decoding token by token
// through the KV cache.
//
//   llama_decode [-w WEIGHTS] [-p PREFIX] [-d D_MODEL] [-H HEADS]
//                [-k KV_HEADS] [-r ROPE_DIM] [-t ROPE_THETA] [-i]
//                [-W WINDOW] [-P PROMPT_TOKENS] [-n NEW_TOKENS] [-b BATCH]
//
// 1. The layer is configured as Llama's attention is: no biases, causal,
//    n_kv_heads key/value heads shared by groups of query heads (Llama 2
//    70B and Llama 3: 8 of them for 64 or 32 query heads), RoPE over the
//    whole head (rope_dim = dh) in Hugging Face's pairing (feature i with
//    i + dh/2; -i for the interleaved pairs of Meta's original checkpoints),
//    theta 10000 (Llama 3: -t 500000). -W adds Mistral's sliding window.
// 2. The weights come from a .safetensors file whose tensors are named as
//    transformers names them: PREFIX + q_proj.weight (D, D), k_proj.weight
//    and v_proj.weight (KV_HEADS*dh, D), o_proj.weight (D, D); mhsa also
//    reads PyTorch's in_proj_* and the GPT's c_q ... c_proj. Without -w the
//    program writes random weights under those names first
//    (mhsa-llama-weights.safetensors) and loads them back, so it runs out
//    of the box. Loading a real checkpoint: -w model-00001-of-00002
//    .safetensors -p model.layers.0.self_attn. with its D, H, KV_HEADS.
// 3. Everything that allocates happens up front; then the prompt is
//    prefilled with one mhsa_forward_cached call (RoPE at positions
//    0 .. P-1) and each new token is one more call (position = tokens
//    cached so far). Prefill throughput and per-token latency are printed.
// 4. Self-check: one causal mhsa_forward over the whole P + N tokens must
//    give the same outputs (to fp32 rounding) as prefill + decode; the exit
//    status says whether it did. CI runs this.
//
// Only the attention layer is here: a real model adds the embeddings,
// RMSNorm, the MLP and the residual stream around it, and feeds back the
// token it samples; these inputs are stand-ins for that stream.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "mhsa.h"

#define EXAMPLE_NAME "llama_decode"
#include "example_util.h"

// Deterministic inputs in [-1, 1): stand-ins for the residual stream.
static float next_input(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(*s >> 40) / (float)(1 << 23) - 1.0f;
}

// part (B, n, D) = positions [t0, t0 + n) of whole (B, T, D).
static void gather(float *part, const float *whole, int B, int T, int t0,
                   int n, size_t D)
{
    for (int b = 0; b < B; b++)
        memcpy(part + (size_t)b * (size_t)n * D,
               whole + ((size_t)b * (size_t)T + (size_t)t0) * D,
               (size_t)n * D * sizeof(float));
}

// Positions [t0, t0 + n) of whole (B, T, D) = part (B, n, D).
static void scatter(float *whole, const float *part, int B, int T, int t0,
                    int n, size_t D)
{
    for (int b = 0; b < B; b++)
        memcpy(whole + ((size_t)b * (size_t)T + (size_t)t0) * D,
               part + (size_t)b * (size_t)n * D,
               (size_t)n * D * sizeof(float));
}

static void usage(FILE *f, const char *prog)
{
    fprintf(f, "usage: %s [-w WEIGHTS] [-p PREFIX] [-d D_MODEL] [-H HEADS] "
            "[-k KV_HEADS] [-r ROPE_DIM] [-t ROPE_THETA] [-i] [-W WINDOW] "
            "[-P PROMPT_TOKENS] [-n NEW_TOKENS] [-b BATCH]\n", prog);
}

int main(int argc, char **argv)
{
    const char *weights = NULL, *prefix = "model.layers.0.self_attn.";
    int D = 512, H = 8, Hkv = 2, rope = -1, interleaved = 0, window = 0;
    int P = 64, N = 64, B = 1, opt;
    float theta = 10000.0f;
    while ((opt = getopt(argc, argv, "w:p:d:H:k:r:t:iW:P:n:b:h")) != -1) {
        switch (opt) {
        case 'w': weights = optarg; break;
        case 'p': prefix = optarg; break;
        case 'd': D = atoi(optarg); break;
        case 'H': H = atoi(optarg); break;
        case 'k': Hkv = atoi(optarg); break;
        case 'r': rope = atoi(optarg); break;
        case 't': theta = strtof(optarg, NULL); break;
        case 'i': interleaved = 1; break;
        case 'W': window = atoi(optarg); break;
        case 'P': P = atoi(optarg); break;
        case 'n': N = atoi(optarg); break;
        case 'b': B = atoi(optarg); break;
        case 'h': usage(stdout, argv[0]); return 0;
        default: usage(stderr, argv[0]); return 2;
        }
    }
    if (P < 1 || N < 1 || B < 1 || H < 1) {
        fprintf(stderr, "llama_decode: -P, -n, -b and -H must be >= 1\n");
        return 2;
    }
    int T = P + N;

    // The Llama attention layer. Bad values (Hkv not dividing H, an odd
    // rope_dim, ...) are refused here with a message naming the field.
    mhsa_config cfg = {0};
    cfg.d_model = D;
    cfg.n_heads = H;
    cfg.max_seq_len = T;
    cfg.causal = 1;
    cfg.bias = 0;                  // Llama's projections have no biases
    cfg.n_kv_heads = Hkv;
    cfg.rope_dim = rope >= 0 ? rope : D / H;   // default: the whole head
    cfg.rope_theta = theta;
    cfg.rope_interleaved = interleaved;
    cfg.window = window;
    mhsa_block *blk = NULL;
    CHECK(mhsa_block_create(&cfg, &blk));

    if (!weights) {
        // No checkpoint given: write one under Hugging Face's names, as a
        // model exported by transformers would have them.
        CHECK(mhsa_block_init_random(blk, 7));
        const char *path = "mhsa-llama-weights.safetensors";
        mhsa_status s = mhsa_block_save_safetensors_ex(blk, path, prefix,
                                                       MHSA_NAMES_HF);
        if (s == MHSA_OK) {
            printf("wrote random weights to %s (%sq_proj.weight, ...)\n",
                   path, prefix);
            weights = path;
        } else if (s == MHSA_ERR_UNSUPPORTED) {
            printf("no safetensors support: using random weights\n");
        } else {
            CHECK(s);
        }
    }
    if (weights)
        CHECK(mhsa_block_load_safetensors(blk, weights, prefix));

    // One workspace and one cache per concurrent request, sized once. The
    // cache holds Hkv heads: H/Hkv times smaller than multi-head attention.
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *cache = NULL;
    CHECK(mhsa_workspace_create(blk, B, &ws));
    CHECK(mhsa_kv_cache_create(blk, B, T, &cache));
    printf("mhsa %s, ISA %s: D=%d H=%d n_kv_heads=%d dh=%d rope_dim=%d "
           "theta=%g %s window=%d, B=%d\n", mhsa_version(),
           mhsa_isa_name(mhsa_active_isa()), D, H, Hkv, D / H, cfg.rope_dim,
           (double)theta, interleaved ? "interleaved" : "half-split",
           window, B);
    printf("KV cache for %d positions: %zu bytes\n", T,
           mhsa_kv_cache_bytes(cache));

    size_t row = (size_t)D, all = (size_t)B * (size_t)T * row;
    float *x = malloc(all * sizeof *x), *y_cached = malloc(all * sizeof *x);
    float *y_full = malloc(all * sizeof *x);
    float *x_p = malloc((size_t)B * (size_t)P * row * sizeof *x);
    float *y_p = malloc((size_t)B * (size_t)P * row * sizeof *x);
    double *lat = malloc((size_t)N * sizeof *lat);
    if (!x || !y_cached || !y_full || !x_p || !y_p || !lat) {
        fprintf(stderr, "llama_decode: out of memory\n");
        return 1;
    }
    uint64_t seed = 1;
    for (size_t i = 0; i < all; i++)
        x[i] = next_input(&seed);

    // Prefill: the whole prompt in one call (positions 0 .. P-1).
    gather(x_p, x, B, T, 0, P, row);
    double t0 = 1e6 * now_s();
    CHECK(mhsa_forward_cached(blk, ws, cache, x_p, B, P, y_p));
    double prefill_us = 1e6 * now_s() - t0;
    scatter(y_cached, y_p, B, T, 0, P, row);
    printf("prefill %d tokens: %.1f us (%.0f tokens/s)\n", B * P,
           prefill_us, B * P / (prefill_us * 1e-6));

    // Decode: one token per sequence per call, at position P + t; each
    // call attends over everything cached (or the last W with a window).
    for (int t = 0; t < N; t++) {
        gather(x_p, x, B, T, P + t, 1, row);
        double t1 = 1e6 * now_s();
        CHECK(mhsa_forward_cached(blk, ws, cache, x_p, B, 1, y_p));
        lat[t] = 1e6 * now_s() - t1;
        scatter(y_cached, y_p, B, T, P + t, 1, row);
    }
    qsort(lat, (size_t)N, sizeof *lat, cmp_double);
    printf("decode %d tokens: per token p50 %.1f us, p99 %.1f us, max %.1f "
           "us; cache holds %d positions\n", N, percentile(lat, N, 50),
           percentile(lat, N, 99), lat[N - 1], mhsa_kv_cache_len(cache));

    // Self-check against one causal forward over all P + N positions.
    CHECK(mhsa_forward(blk, ws, x, B, T, NULL, y_full, NULL));
    double num = 0, den = 1;
    for (size_t i = 0; i < all; i++) {
        double d = fabs((double)y_cached[i] - (double)y_full[i]);
        num = d > num || d != d ? d : num;
        den = fabs((double)y_full[i]) > den ? fabs((double)y_full[i]) : den;
    }
    double err = num / den;
    printf("prefill + decode vs full forward: rel err %.2e %s\n", err,
           err <= 1e-4 ? "(ok)" : "(MISMATCH)");

    free(x);
    free(y_cached);
    free(y_full);
    free(x_p);
    free(y_p);
    free(lat);
    mhsa_kv_cache_destroy(cache);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    return err <= 1e-4 ? 0 : 1;
}
