// xent.c — softmax cross-entropy over V classes, forward and backward.
//
// Forward, one row of logits z (V) with target c:
//   p = softmax(z)             (the table's softmax_row kernel: max
//                               subtracted, vectorised exp)
//   loss = -log p[c]           (in double; when p[c] underflows to 0, the
//                               exact lse(z) - z[c] in double instead)
// Backward: dz = (p - onehot(c)) * scale, scale = 1 / (the caller's count),
// written over p. Rows run in parallel, each on its own; the row losses are
// summed in row order afterwards, so no bit depends on the thread count.
#include <math.h>

#include "core/fpenv.h"
#include "nn/layers.h"
#include "xent.h"

static double lse_minus_target(const float *z, size_t V, int c)
{
    float m = z[0];
    for (size_t j = 1; j < V; j++)
        m = z[j] > m ? z[j] : m;
    double s = 0.0;
    for (size_t j = 0; j < V; j++)
        s += exp((double)z[j] - (double)m);
    return (double)m + log(s) - (double)z[c];
}

// Row n: its probabilities and its loss.
static void xent_row(const mhsa_kernels *k, float *probs, float *loss,
                     const float *logits, const int32_t *targets, size_t V,
                     size_t n)
{
    const float *z = logits + n * V;    // (V)
    float *p = probs + n * V;           // (V)
    k->softmax_row(V, z, p);
    int c = targets[n];
    if (c < 0)
        loss[n] = 0.0f;
    else if (p[c] > 0.0f)
        loss[n] = (float)-log((double)p[c]);
    else
        loss[n] = (float)lse_minus_target(z, V, c);
}

double mhsa__xent_forward(const mhsa_kernels *k, float *probs, float *loss,
                          const float *logits, const int32_t *targets,
                          size_t N, size_t V)
{
    int nt = mhsa__layer_threads(N, 4 * V);
    if (nt <= 1) {   // no parallel region below the threshold (rows.c)
        for (size_t n = 0; n < N; n++)
            xent_row(k, probs, loss, logits, targets, V, n);
    } else {
#pragma omp parallel num_threads(nt)
        {
            mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
            for (size_t n = 0; n < N; n++)
                xent_row(k, probs, loss, logits, targets, V, n);
            mhsa__fp_leave_team(fp);
        }
    }
    double sum = 0.0;
    for (size_t n = 0; n < N; n++)
        sum += (double)loss[n];
    return sum;
}

// One row p (V): probabilities in, dz out.
MHSA_CLONES static void xent_row_backward(float *p, int c, size_t V,
                                          float scale)
{
    if (c < 0) {
        for (size_t j = 0; j < V; j++)
            p[j] = 0.0f;
        return;
    }
    float pc = p[c];
    for (size_t j = 0; j < V; j++)
        p[j] *= scale;
    p[c] = (pc - 1.0f) * scale;
}

void mhsa__xent_backward(float *probs, const int32_t *targets, size_t N,
                         size_t V, float scale)
{
    int nt = mhsa__layer_threads(N, V);
    if (nt <= 1) {   // no parallel region below the threshold (rows.c)
        for (size_t n = 0; n < N; n++)
            xent_row_backward(probs + n * V, targets[n], V, scale);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++)
            xent_row_backward(probs + n * V, targets[n], V, scale);
        mhsa__fp_leave_team(fp);
    }
}
