// tiles.c — a thread's tile memory and the backward's per-row pieces
// (tiles.h), for the tiled path (attention.c) and the small backward's
// three calls (small_bwd.c) alike.
#include "tiles.h"
#include "kernels/bwd_delta.h"

void mhsa__attn_bwd_rows(const mhsa_kernels *k, size_t dh, float *tiles,
                         float **s, float **dp, float **delta)
{
    tile_views t = mhsa__attn_carve(k, dh, tiles);
    *s = t.s, *dp = t.dp, *delta = t.delta;
}

size_t mhsa__attn_tile_floats(const mhsa_kernels *k, size_t dh)
{
    size_t sz[N_VIEWS], total = 0;
    mhsa__attn_view_sizes(k, dh, sz);
    for (int i = 0; i < N_VIEWS; i++)
        total += sz[i];
    return total;
}

void mhsa__attn_deltas(const head_args *a, float *delta)
{
    mhsa_bwd_delta(a->tq, a->dh, a->o, a->ldo, a->dout, a->lddo, delta);
}
