// interop_driver.c — the C half of the PyTorch interoperability test,
// driven by mha_interop.py. Uses only the public API, as an embedder would.
//
//   interop_driver [--kv-heads HKV] [--rope DIM] [--rope-theta X]
//                  [--names torch|hf|c]
//                  WEIGHTS PREFIX D H CAUSAL BIAS B T X_IN Y_OUT
//                  [SAVE_PATH SAVE_PREFIX]
//
// Loads the block (HKV key/value heads, default H; rotary embedding of
// DIM features, Hugging Face's pairing, base X) from WEIGHTS (tensors
// named PREFIX + any one set of names mhsa knows), runs mhsa_forward on
// X_IN (raw little-endian fp32, (B, T, D)), writes Y_OUT the same way and,
// if asked, saves the block's weights to SAVE_PATH under the set of names
// given by --names (default torch).
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mhsa.h"

static int fail(const char *what, mhsa_status s)
{
    fprintf(stderr, "interop_driver: %s: %s: %s\n", what,
            mhsa_status_str(s), mhsa_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    mhsa_config cfg = {0};
    mhsa_names names = MHSA_NAMES_TORCH;
    const char *prog = argv[0];
    while (argc > 2 && strncmp(argv[1], "--", 2) == 0) {
        if (strcmp(argv[1], "--kv-heads") == 0) {
            cfg.n_kv_heads = atoi(argv[2]);
        } else if (strcmp(argv[1], "--rope") == 0) {
            cfg.rope_dim = atoi(argv[2]);
        } else if (strcmp(argv[1], "--rope-theta") == 0) {
            cfg.rope_theta = strtof(argv[2], NULL);
        } else if (strcmp(argv[1], "--names") == 0) {
            names = strcmp(argv[2], "hf") == 0  ? MHSA_NAMES_HF
                  : strcmp(argv[2], "c") == 0   ? MHSA_NAMES_C
                  : MHSA_NAMES_TORCH;
        } else {
            break;
        }
        argv += 2;
        argc -= 2;
    }
    if (argc != 11 && argc != 13) {
        fprintf(stderr, "usage: %s [--kv-heads HKV] [--rope DIM] "
                "[--rope-theta X] [--names torch|hf|c] WEIGHTS PREFIX D H "
                "CAUSAL BIAS B T X_IN Y_OUT [SAVE_PATH SAVE_PREFIX]\n", prog);
        return 2;
    }
    cfg.d_model = atoi(argv[3]);
    cfg.n_heads = atoi(argv[4]);
    cfg.causal = atoi(argv[5]);
    cfg.bias = atoi(argv[6]);
    int B = atoi(argv[7]), T = atoi(argv[8]);
    cfg.max_seq_len = T;
    size_t n = (size_t)B * (size_t)T * (size_t)cfg.d_model;

    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_status s = mhsa_block_create(&cfg, &blk);
    if (s != MHSA_OK)
        return fail("create", s);
    s = mhsa_block_load_safetensors(blk, argv[1], argv[2]);
    if (s != MHSA_OK)
        return fail("load", s);
    s = mhsa_workspace_create(blk, B, &ws);
    if (s != MHSA_OK)
        return fail("workspace", s);

    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    FILE *f = fopen(argv[9], "rb");
    if (!x || !y || !f || fread(x, sizeof *x, n, f) != n) {
        fprintf(stderr, "interop_driver: cannot read %zu floats from %s\n",
                n, argv[9]);
        return 1;
    }
    fclose(f);
    s = mhsa_forward(blk, ws, x, B, T, NULL, y, NULL);
    if (s != MHSA_OK)
        return fail("forward", s);
    f = fopen(argv[10], "wb");
    if (!f || fwrite(y, sizeof *y, n, f) != n || fclose(f) != 0) {
        fprintf(stderr, "interop_driver: cannot write %s\n", argv[10]);
        return 1;
    }
    if (argc == 13) {
        s = mhsa_block_save_safetensors_ex(blk, argv[11], argv[12], names);
        if (s != MHSA_OK)
            return fail("save", s);
    }
    free(x);
    free(y);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    return 0;
}
