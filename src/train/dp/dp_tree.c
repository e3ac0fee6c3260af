// dp_tree.c — the fixed summation tree of dp_tree.h.
#include "dp_tree.h"

int mhsa__dp_tree_split(int lo, int hi)
{
    int p = 1;
    while (2 * p < hi - lo)
        p *= 2;
    return lo + p;
}

int mhsa__dp_tree_height(int n)
{
    int h = 0;
    while ((1 << h) < n)
        h++;
    return h;
}

static void cover(int lo, int hi, int a, int b, int *los, int *his, int cap,
                  int *n)
{
    if (hi <= a || b <= lo)
        return;
    if (a <= lo && hi <= b) {
        if (*n < cap) {
            los[*n] = lo;
            his[*n] = hi;
        }
        (*n)++;
        return;
    }
    // A leaf is always inside or outside [a, b), so here hi - lo >= 2.
    int mid = mhsa__dp_tree_split(lo, hi);
    cover(lo, mid, a, b, los, his, cap, n);
    cover(mid, hi, a, b, los, his, cap, n);
}

int mhsa__dp_tree_cover(int G, int a, int b, int *lo, int *hi, int cap)
{
    int n = 0;
    cover(0, G, a, b, lo, hi, cap, &n);
    return n;
}

// Node [lo, hi) at depth d: its left child goes into out (the node's own
// destination), its right child into scratch[d]; the right subtree only
// writes scratch[d..], so the left result survives it. out is either the
// caller's buffer or scratch[e] of an ancestor, e < d.
static int sum(int lo, int hi, size_t len, dp_tree_source src, void *ctx,
               float *out, float *const *scratch, int d, const float **res)
{
    int r = src(ctx, lo, hi, out, res);
    if (r != 0)
        return r < 0 ? -1 : 0;
    int mid = mhsa__dp_tree_split(lo, hi);
    const float *a, *b;
    if (sum(lo, mid, len, src, ctx, out, scratch, d + 1, &a) != 0 ||
        sum(mid, hi, len, src, ctx, scratch[d], scratch, d + 1, &b) != 0)
        return -1;
    // Elementwise, each element has one writer: any thread count, same bits.
    #pragma omp parallel for schedule(static) if (len >= 65536)
    for (size_t i = 0; i < len; i++)
        out[i] = a[i] + b[i];
    *res = out;
    return 0;
}

int mhsa__dp_tree_sum(int lo, int hi, size_t len, dp_tree_source src, void *ctx,
                      float *out, float *const *scratch, const float **res)
{
    return sum(lo, hi, len, src, ctx, out, scratch, 0, res);
}
