/* latency-row — a row of the latency benchmark (bench/bench_latency.c)
 * through the public API, as a marked program for step-count.c:
 *
 *   latency-row ROW [N] [bwd]
 *
 * ROW is tiny (B8 T12 D32 H4, causal), gpt (B8 T64 D64 H4, causal) or
 * encoder (B1 T32 D384 H12, not causal, key padding: 27 of 32 keys), all
 * with biases. One call warms up, then N calls (default 1) run between
 * the markers SIGUSR1 and SIGUSR2; with "bwd" each call is a forward and
 * a backward (dx and every gradient). Prints the ISA and a sum of the
 * outputs, so runs on two builds can be checked for the same bits as
 * well. Build and run: see step-count.c. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mhsa.h"

typedef struct row {
    const char *name;
    int B, T, D, H, causal, valid;
} row;

static const row rows[] = {
    { "tiny", 8, 12, 32, 4, 1, 12 },
    { "gpt", 8, 64, 64, 4, 1, 64 },
    { "encoder", 1, 32, 384, 12, 0, 27 },
};

int main(int argc, char **argv)
{
    const row *r = NULL;
    for (size_t i = 0; argc > 1 && i < sizeof rows / sizeof rows[0]; i++)
        if (strcmp(argv[1], rows[i].name) == 0)
            r = &rows[i];
    if (!r) {
        fprintf(stderr, "usage: latency-row tiny|gpt|encoder [N] [bwd]\n");
        return 2;
    }
    int calls = argc > 2 ? atoi(argv[2]) : 1;
    int bwd = argc > 3 && strcmp(argv[3], "bwd") == 0;
    mhsa_config cfg = { .d_model = r->D, .n_heads = r->H,
                        .max_seq_len = r->T, .causal = r->causal,
                        .bias = 1 };
    mhsa_block *blk = NULL;
    mhsa_workspace *ws = NULL;
    mhsa_grads *g = NULL;
    size_t n = (size_t)r->B * r->T * r->D;
    float *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y);
    float *dx = malloc(n * sizeof *dx);
    int *seq_len = malloc((size_t)r->B * sizeof *seq_len);
    if (!x || !y || !dx || !seq_len ||
        mhsa_block_create(&cfg, &blk) != MHSA_OK ||
        mhsa_block_init_random(blk, 42) != MHSA_OK ||
        mhsa_workspace_create(blk, r->B, &ws) != MHSA_OK ||
        mhsa_grads_create(blk, &g) != MHSA_OK) {
        fprintf(stderr, "latency-row: %s\n", mhsa_last_error());
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
    for (int b = 0; b < r->B; b++)
        seq_len[b] = r->valid;
    mhsa_forward_args a = { x, r->B, r->T, NULL,
                            r->valid < r->T ? seq_len : NULL, y, NULL };
    // dy = x: any fixed values will do.
    int bad = mhsa_forward_ex(blk, ws, &a) != MHSA_OK ||
              (bwd && mhsa_backward(blk, ws, x, dx, g) != MHSA_OK);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    raise(SIGUSR1);
    for (int i = 0; i < calls && !bad; i++)
        bad = mhsa_forward_ex(blk, ws, &a) != MHSA_OK ||
              (bwd && mhsa_backward(blk, ws, x, dx, g) != MHSA_OK);
    raise(SIGUSR2);
    if (bad) {
        fprintf(stderr, "latency-row: %s\n", mhsa_last_error());
        return 1;
    }
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += y[i] + (bwd ? dx[i] : 0.0f);
    printf("isa %s sum %.9g\n", mhsa_isa_name(mhsa_active_isa()), s);
    mhsa_grads_destroy(g);
    mhsa_workspace_destroy(ws);
    mhsa_block_destroy(blk);
    free(x);
    free(y);
    free(dx);
    free(seq_len);
    return 0;
}
