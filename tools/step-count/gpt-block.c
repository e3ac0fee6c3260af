/* gpt-block — the latency bench's GPT block (B8 T64 D64 H4, causal,
 * biases: bench_latency.c's gpt_block row) through the public API for
 * step-count.c, as tiny-forward.c: one call to warm up, then N calls
 * (argv[1], default 1) between the markers SIGUSR1 and SIGUSR2. Prints
 * the ISA and a sum of the outputs, so runs on two builds can be checked
 * for the same bits as well. Build and run: see step-count.c. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "mhsa.h"

int main(int argc, char **argv)
{
    enum { B = 8, T = 64, D = 64, H = 4 };
    int calls = argc > 1 ? atoi(argv[1]) : 1;
    mhsa_config cfg = { .d_model = D, .n_heads = H, .max_seq_len = T,
                        .causal = 1, .bias = 1 };
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    size_t n = (size_t)B * T * D;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    if (!x || !y || mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_block_init_random(blk, 42) != MHSA_OK ||
        mhsa_workspace_create(blk, B, &ws) != MHSA_OK) {
        fprintf(stderr, "gpt-block: %s\n", mhsa_last_error());
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    int bad = mhsa_forward(blk, ws, x, B, T, NULL, y, NULL) != MHSA_OK;
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    raise(SIGUSR1);
    for (int i = 0; i < calls && !bad; i++)
        bad = mhsa_forward(blk, ws, x, B, T, NULL, y, NULL) != MHSA_OK;
    raise(SIGUSR2);
    if (bad) {
        fprintf(stderr, "gpt-block: %s\n", mhsa_last_error());
        return 1;
    }
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += y[i];
    printf("isa %s sum %.9g\n", mhsa_isa_name(mhsa_active_isa()), s);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x);
    free(y);
    return 0;
}
