// blockutil.c — random attention problems (see blockutil.h).
#include <math.h>
#include <stdlib.h>

#include "blockutil.h"

void problem_make(problem *p, rng *r, int B, int T, int D, int H, int causal,
                  int bias, enum mask_kind mk)
{
    mhsa_config cfg = { D, H, T, causal, bias };
    p->cfg = cfg;
    p->B = B;
    p->T = T;
    size_t d = (size_t)D, bt = (size_t)B * T;
    float ws = 1.0f / sqrtf((float)D) * 1.7f;
    p->w_qkv = malloc(3 * d * d * sizeof(float));
    p->w_out = malloc(d * d * sizeof(float));
    fill_uniform(r, p->w_qkv, 3 * d * d, -ws, ws);
    fill_uniform(r, p->w_out, d * d, -ws, ws);
    p->b_qkv = p->b_out = NULL;
    if (bias) {
        p->b_qkv = malloc(3 * d * sizeof(float));
        p->b_out = malloc(d * sizeof(float));
        fill_uniform(r, p->b_qkv, 3 * d, -0.5f, 0.5f);
        fill_uniform(r, p->b_out, d, -0.5f, 0.5f);
    }
    p->x = malloc(bt * d * sizeof(float));
    p->dy = malloc(bt * d * sizeof(float));
    fill_uniform(r, p->x, bt * d, -1.0f, 1.0f);
    fill_uniform(r, p->dy, bt * d, -1.0f, 1.0f);
    p->mask = NULL;
    if (mk != MASK_NONE) {
        size_t tt = (size_t)T * T;
        p->mask = malloc(tt * sizeof(float));
        for (size_t i = 0; i < tt; i++) {
            int c = rng_int(r, 0, 9);
            p->mask[i] = c == 0 ? -INFINITY
                       : c == 1 ? -1e30f
                       : rng_uniform(r, -2.0f, 1.0f);
        }
        if (mk == MASK_DEAD_ROWS)
            for (int t = 0; t < T; t += 3)
                for (int j = 0; j < T; j++)
                    p->mask[(size_t)t * T + j] = -INFINITY;
    }
}

void problem_free(problem *p)
{
    free(p->w_qkv);
    free(p->b_qkv);
    free(p->w_out);
    free(p->b_out);
    free(p->x);
    free(p->mask);
    free(p->dy);
}

mhsa_block *problem_block(const problem *p)
{
    mhsa_block *blk = NULL;
    ck_assert_int_eq(mhsa_block_create(&p->cfg, &blk), MHSA_OK);
    ck_assert_int_eq(mhsa_block_set_weights(blk, p->w_qkv, p->b_qkv,
                                            p->w_out, p->b_out), MHSA_OK);
    return blk;
}

ref_mha problem_ref(const problem *p)
{
    ref_mha m = { p->B, p->T, p->cfg.d_model, p->cfg.n_heads, p->cfg.causal,
                  p->cfg.bias, p->w_qkv, p->b_qkv, p->w_out, p->b_out, p->x,
                  p->mask };
    return m;
}
