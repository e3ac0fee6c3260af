// decode.c — embedding mhsa the way a latency-sensitive server would.
//
//   decode [-w WEIGHTS] [-p PREFIX] [-d D_MODEL] [-H HEADS] [-n TOKENS]
//          [-b BATCH] [--dtype f32|f16|bf16]
//
// 1. Weights come from a .safetensors file, named as PyTorch's
//    nn.MultiheadAttention state_dict() names them (PREFIX + in_proj_weight,
//    ...). Without -w the program first writes a random one
//    (mhsa-decode-weights.safetensors in the current directory), so it runs
//    out of the box.
// 2. Everything that allocates happens once, up front: the block, ONE
//    workspace and ONE KV cache sized for the longest sequence. The decode
//    loop then allocates nothing: a request can never fail half-way for
//    lack of memory, and latency has no malloc in it.
// 3. Tokens are decoded one at a time with mhsa_forward_cached, each call
//    timed; p50/p99/max per-token latency are printed at the end.
// 4. As a self-check, one causal mhsa_forward over the whole sequence must
//    reproduce the token-by-token outputs (the exit status says whether it
//    did), which is what CI runs.
// 5. --dtype f16 or bf16 stores the cache's K and V in 16 bits: half the
//    memory per token, and half the bytes each decode step reads. The
//    forward works in fp32 throughout, so with a 16-bit cache the check
//    allows the rounding of K and V: relative error 1e-3 for F16 (11
//    significant bits), 1e-2 for BF16 (8), instead of 1e-4.
//
// Threads: mhsa uses OpenMP inside each call. For one small decode step the
// work is tiny, so OMP_NUM_THREADS=1 often gives the lowest latency; a server
// that runs its own thread pool (one request per thread, each with its own
// workspace and cache, sharing the block) should also keep OpenMP at 1
// thread so the two pools do not oversubscribe the cores.
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <getopt.h>
#include <time.h>

#include "mhsa.h"

#define EXAMPLE_NAME "decode"
#include "example_util.h"

// Deterministic inputs in [-1, 1): stand-ins for token embeddings.
static float next_input(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (float)(*s >> 40) / (float)(1 << 23) - 1.0f;
}

int main(int argc, char **argv)
{
    const char *weights = NULL, *prefix = "";
    int D = 256, H = 8, n_tok = 128, B = 1, opt;
    mhsa_dtype dtype = MHSA_F32;
    static const struct option longs[] = {
        { "dtype", required_argument, NULL, 't' },
        { "help", no_argument, NULL, 'h' },
        { NULL, 0, NULL, 0 },
    };
    while ((opt = getopt_long(argc, argv, "w:p:d:H:n:b:h", longs, NULL)) !=
           -1) {
        switch (opt) {
        case 'w': weights = optarg; break;
        case 'p': prefix = optarg; break;
        case 'd': D = atoi(optarg); break;
        case 'H': H = atoi(optarg); break;
        case 'n': n_tok = atoi(optarg); break;
        case 'b': B = atoi(optarg); break;
        case 't':
            if (strcmp(optarg, "f32") == 0) {
                dtype = MHSA_F32;
            } else if (strcmp(optarg, "f16") == 0) {
                dtype = MHSA_F16;
            } else if (strcmp(optarg, "bf16") == 0) {
                dtype = MHSA_BF16;
            } else {
                fprintf(stderr, "decode: --dtype: '%s' is not f32, f16 or "
                        "bf16\n", optarg);
                return 2;
            }
            break;
        default:
            fprintf(stderr, "usage: %s [-w WEIGHTS] [-p PREFIX] [-d D_MODEL] "
                    "[-H HEADS] [-n TOKENS] [-b BATCH] "
                    "[--dtype f32|f16|bf16]\n", argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    static const char *const dtype_names[] = { "f32", "f16", "bf16" };
    // The check's tolerance: the API's 1e-4, plus the rounding of the
    // cached K and V to 11 (F16) or 8 (BF16) significant bits.
    static const double tolerance[] = { 1e-4, 1e-3, 1e-2 };
    double tol = tolerance[dtype];
    if (n_tok < 1 || B < 1) {
        fprintf(stderr, "decode: -n and -b must be >= 1\n");
        return 2;
    }

    // The block's shape must match the file's tensors (a mismatch is
    // reported by the load, naming the tensor and both shapes). causal = 1:
    // a KV cache only exists for autoregressive blocks.
    mhsa_config cfg = {0};
    cfg.d_model = D;
    cfg.n_heads = H;
    cfg.max_seq_len = n_tok;
    cfg.causal = 1;
    cfg.bias = 1;
    mhsa_block *blk = NULL;
    CHECK(mhsa_block_create(&cfg, &blk));

    if (!weights) {
        // No file given: make one, as a training run would have. A build
        // without safetensors support (-Dsafetensors=disabled) says
        // MHSA_ERR_UNSUPPORTED; then decode with the random weights as is.
        CHECK(mhsa_block_init_random(blk, 42));
        const char *path = "mhsa-decode-weights.safetensors";
        mhsa_status s = mhsa_block_save_safetensors(blk, path, prefix);
        if (s == MHSA_OK) {
            printf("wrote random weights to %s\n", path);
            weights = path;
        } else if (s == MHSA_ERR_UNSUPPORTED) {
            printf("no safetensors support: using random weights\n");
        } else {
            CHECK(s);
        }
    }
    if (weights)
        CHECK(mhsa_block_load_safetensors(blk, weights, prefix));

    // One workspace and one KV cache per concurrent request; both are sized
    // here and never grow. (A server keeps a pool of them and calls
    // mhsa_kv_cache_reset between requests.)
    mhsa_workspace *ws = NULL;
    mhsa_kv_cache *cache = NULL;
    CHECK(mhsa_workspace_create(blk, B, &ws));
    mhsa_kv_config kc = { B, n_tok, dtype };
    CHECK(mhsa_kv_cache_create_ex(blk, &kc, &cache));
    printf("mhsa %s, ISA %s, D=%d H=%d B=%d, %d tokens; workspace %zu B, "
           "KV cache (%s) %zu B\n", mhsa_version(),
           mhsa_isa_name(mhsa_active_isa()), D, H, B, n_tok,
           mhsa_workspace_bytes(ws), dtype_names[dtype],
           mhsa_kv_cache_bytes(cache));

    // x (B, n_tok, D): the whole input sequence, so the self-check below can
    // replay it; the loop feeds column t, i.e. (B, 1, D), one step at a time.
    size_t row = (size_t)D, all = (size_t)B * (size_t)n_tok * row;
    float *x = malloc(all * sizeof *x), *y_step = malloc(all * sizeof *x);
    float *x_t = malloc((size_t)B * row * sizeof *x);
    float *y_t = malloc((size_t)B * row * sizeof *x);
    float *y_full = malloc(all * sizeof *x);
    double *lat = malloc((size_t)n_tok * sizeof *lat);
    if (!x || !y_step || !x_t || !y_t || !y_full || !lat) {
        fprintf(stderr, "decode: out of memory\n");
        return 1;
    }
    uint64_t seed = 1;
    for (size_t i = 0; i < all; i++)
        x[i] = next_input(&seed);

    // The decode loop: gather token t of every sequence, one cached step,
    // scatter the outputs. Only mhsa_forward_cached is timed.
    for (int t = 0; t < n_tok; t++) {
        for (int b = 0; b < B; b++)
            memcpy(x_t + (size_t)b * row,
                   x + ((size_t)b * n_tok + (size_t)t) * row,
                   row * sizeof *x);
        double t0 = 1e6 * now_s();
        CHECK(mhsa_forward_cached(blk, ws, cache, x_t, B, 1, y_t));
        lat[t] = 1e6 * now_s() - t0;
        for (int b = 0; b < B; b++)
            memcpy(y_step + ((size_t)b * n_tok + (size_t)t) * row,
                   y_t + (size_t)b * row, row * sizeof *x);
    }
    printf("cache holds %d positions\n", mhsa_kv_cache_len(cache));

    qsort(lat, (size_t)n_tok, sizeof *lat, cmp_double);
    printf("per-token latency: p50 %.1f us, p99 %.1f us, max %.1f us\n",
           percentile(lat, n_tok, 50), percentile(lat, n_tok, 99),
           lat[n_tok - 1]);

    // Self-check: decoding token by token equals one causal forward over the
    // whole sequence, to fp32 rounding (the API's promise) and, with a
    // 16-bit cache, the rounding of K and V.
    CHECK(mhsa_forward(blk, ws, x, B, n_tok, NULL, y_full, NULL));
    double num = 0, den = 1;
    for (size_t i = 0; i < all; i++) {
        double d = fabs((double)y_step[i] - (double)y_full[i]);
        num = d > num || d != d ? d : num;
        den = fabs((double)y_full[i]) > den ? fabs((double)y_full[i]) : den;
    }
    double err = num / den;
    printf("token-by-token vs full forward: rel err %.2e (tolerance %.0e) "
           "%s\n", err, tol, err <= tol ? "(ok)" : "(MISMATCH)");

    free(x);
    free(y_step);
    free(x_t);
    free(y_t);
    free(y_full);
    free(lat);
    mhsa_kv_cache_destroy(cache);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    return err <= tol ? 0 : 1;
}
