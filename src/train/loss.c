// loss.c — mean cross-entropy over rows of logits with a stable
// log-softmax, and its gradient.
//
// For one row with logits z (V) and target c:
//   lse  = m + log(sum_j exp(z_j - m)),  m = max_j z_j
//   loss = lse - z_c
//   dz_j = (exp(z_j - lse) - [j == c]) / counted
// Subtracting the max keeps every exp in (0, 1], so logits of magnitude 1e4
// give no inf/NaN. The sum of exps and the mean over rows are taken in
// double, in row order, so the result does not depend on threads.
#include <math.h>

#include "core/fpenv.h"
#include "core/status.h"
#include "train_internal.h"

mhsa_status mhsa_cross_entropy(int n, int V, const float *logits,
                               const int32_t *targets, float *loss,
                               float *row_loss, float *dlogits)
{
    MHSA__FP_RETURN(mhsa__cross_entropy_over(n, V, logits, targets, 0, loss,
                                             row_loss, dlogits));
}

mhsa_status mhsa__cross_entropy_over(int n, int V, const float *logits,
                                     const int32_t *targets, size_t count,
                                     float *loss, float *row_loss,
                                     float *dlogits)
{
    if (!logits || !targets || !loss)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_cross_entropy: %s is NULL",
                          !logits ? "logits" : !targets ? "targets" : "loss");
    if (n < 1 || V < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_cross_entropy: n = %d, V = %d (need >= 1)",
                          n, V);
    size_t counted = 0;
    for (int i = 0; i < n; i++) {
        if (targets[i] < -1 || targets[i] >= V)
            return mhsa__fail(MHSA_ERR_INVALID_ARG,
                              "mhsa_cross_entropy: targets[%d] = %d is "
                              "outside [-1, %d)", i, (int)targets[i], V);
        counted += targets[i] >= 0;
    }
    if (count && count < counted)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_cross_entropy: count = "
                          "%zu is below the %zu counted rows of this call",
                          count, counted);
    // Scale for the mean (over this call's rows, or over the whole batch
    // these rows belong to); rows without a target contribute nothing.
    if (count)
        counted = count;
    double inv = counted ? 1.0 / (double)counted : 0.0;
    double total = 0.0;
    for (int i = 0; i < n; i++) {
        const float *z = logits + (size_t)i * (size_t)V;   // (V)
        int c = targets[i];
        float *dz = dlogits ? dlogits + (size_t)i * (size_t)V : NULL;
        if (c < 0) {
            if (row_loss)
                row_loss[i] = 0.0f;
            for (int j = 0; dz && j < V; j++)
                dz[j] = 0.0f;
            continue;
        }
        float m = z[0];
        for (int j = 1; j < V; j++)
            if (z[j] > m)
                m = z[j];
        double s = 0.0;
        for (int j = 0; j < V; j++)
            s += exp((double)z[j] - (double)m);
        double lse = (double)m + log(s);
        double l = lse - (double)z[c];
        total += l;
        if (row_loss)
            row_loss[i] = (float)l;
        for (int j = 0; dz && j < V; j++) {
            double p = exp((double)z[j] - lse);
            dz[j] = (float)((p - (j == c ? 1.0 : 0.0)) * inv);
        }
    }
    *loss = (float)(total * inv);
    return MHSA_OK;
}
