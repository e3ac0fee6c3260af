// sample.c — mhsa__sample_token (sample.h).
#include "nn/sample.h"

#include <math.h>

#include "core/rng.h"

// The sampler's order of candidates: higher logit first, and on a tie the
// lower index. A strict total order on finite and infinite logits, so the
// k best are one set in one order however they are found; the softmax
// sums below run in that order, so their bits depend only on the logits.
static int better(const float *z, int a, int b)
{
    return z[a] > z[b] || (z[a] == z[b] && a < b);
}

// h[0..n) is a heap with the worst candidate at the root; restores that
// below position i.
static void sift_down(const float *z, int *h, int n, int i)
{
    for (;;) {
        int w = i, l = 2 * i + 1, r = l + 1;
        if (l < n && better(z, h[w], h[l]))
            w = l;
        if (r < n && better(z, h[w], h[r]))
            w = r;
        if (w == i)
            return;
        int t = h[i];
        h[i] = h[w];
        h[w] = t;
        i = w;
    }
}

// order[0..k) = the k best of 0..V-1, best first: a heap of the k best so
// far (worst at the root, so a newcomer is compared with it once), then
// heapsort, which moves the worst to the end each round.
static void top_k_sorted(const float *z, int V, int k, int *order)
{
    for (int j = 0; j < k; j++)
        order[j] = j;
    for (int i = k / 2 - 1; i >= 0; i--)
        sift_down(z, order, k, i);
    for (int j = k; j < V; j++)
        if (better(z, j, order[0])) {
            order[0] = j;
            sift_down(z, order, k, 0);
        }
    for (int n = k - 1; n > 0; n--) {
        int t = order[0];
        order[0] = order[n];
        order[n] = t;
        sift_down(z, order, n, 0);
    }
}

int mhsa__sample_token(const float *logits, int V, float temperature,
                       int top_k, float top_p, float min_p, uint64_t *rng,
                       int *order)
{
    if (temperature <= 0.0f) {
        int best = 0;
        for (int j = 1; j < V; j++)
            if (logits[j] > logits[best])
                best = j;
        return best;
    }
    int k = top_k > 0 && top_k < V ? top_k : V;
    top_k_sorted(logits, V, k, order);
    double top = (double)logits[order[0]] / temperature, sum = 0.0;
    // The nucleus: the shortest prefix whose weights reach top_p of the
    // k candidates' (computed only when asked, so that without it the
    // sums below are the sampler's of before, bit for bit).
    if (top_p > 0.0f && top_p < 1.0f) {
        double all = 0.0;
        for (int i = 0; i < k; i++)
            all += exp((double)logits[order[i]] / temperature - top);
        double c = 0.0, want = (double)top_p * all;
        int keep = k;
        for (int i = 0; i < k; i++) {
            c += exp((double)logits[order[i]] / temperature - top);
            if (c >= want) {
                keep = i + 1;
                break;
            }
        }
        k = keep;
    }
    // min-p: the weight relative to the best candidate's (which is 1).
    if (min_p > 0.0f) {
        int keep = 1;
        while (keep < k &&
               exp((double)logits[order[keep]] / temperature - top) >=
                   (double)min_p)
            keep++;
        k = keep;
    }
    for (int i = 0; i < k; i++)
        sum += exp((double)logits[order[i]] / temperature - top);
    double u = (double)(mhsa__splitmix64(rng) >> 11) * 0x1.0p-53 * sum;
    double c = 0.0;
    for (int i = 0; i < k; i++) {
        c += exp((double)logits[order[i]] / temperature - top);
        if (u < c)
            return order[i];
    }
    return order[k - 1];
}
