// layernorm.c — LayerNorm over the last dimension (Ba, Kiros & Hinton
// 2016), forward and backward, as PyTorch's nn.LayerNorm(D) (eps 1e-5,
// biased variance).
//
// Forward, one row x (D):
//   mean = sum(x) / D,  var = sum((x - mean)^2) / D,  rstd = 1/sqrt(var+eps)
//   norm = (x - mean) * rstd,  y = norm * w + b
// Backward (llm.c's form), with g = w * dy:
//   dx += rstd * (g - mean(g) - norm * mean(g * norm))
//   dw += sum over rows of norm * dy,  db += sum over rows of dy
// Statistics are summed in eight interleaved lanes (a fixed order the
// compiler can vectorise) and combined in a fixed tree. Rows are split
// over threads; dw and db are summed over rows in order on one thread.
//
// Also RMSNorm (Zhang & Sennrich 2019; Llama's norm), forward only:
//   rstd = 1/sqrt(sum(x^2)/D + eps),  y = (x * rstd) * w
// in that order of operations, as llama.cpp's rms_norm followed by its
// multiply by the weight.
#include <math.h>

#include "core/fpenv.h"
#include "layers.h"

#define LN_EPS 1e-5f

// sum of a[i] over i < n: eight lanes, then a fixed tree.
static float sum8(const float *a, size_t n)
{
    float s[8] = { 0 };
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            s[l] += a[i + (size_t)l];
    for (int l = 0; i < n; i++, l++)
        s[l] += a[i];
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// sum of (a[i] - m)^2, the same way.
static float sumsq8(const float *a, float m, size_t n)
{
    float s[8] = { 0 };
    size_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) {
            float t = a[i + (size_t)l] - m;
            s[l] += t * t;
        }
    for (int l = 0; i < n; i++, l++) {
        float t = a[i] - m;
        s[l] += t * t;
    }
    return ((s[0] + s[4]) + (s[2] + s[6])) + ((s[1] + s[5]) + (s[3] + s[7]));
}

// One row: y, and its mean and 1/std.
MHSA_CLONES static void ln_row(float *yn, float *mean, float *rstd,
                               const float *xn, const float *w,
                               const float *b, size_t D)
{
    float m = sum8(xn, D) / (float)D;
    float v = sumsq8(xn, m, D) / (float)D;
    float rs = 1.0f / sqrtf(v + LN_EPS);
    for (size_t d = 0; d < D; d++)
        yn[d] = (xn[d] - m) * rs * w[d] + b[d];
    *mean = m;
    *rstd = rs;
}

void mhsa__layernorm_forward(float *y, float *mean, float *rstd,
                             const float *x, const float *w, const float *b,
                             size_t N, size_t D)
{
    int nt = mhsa__layer_threads(N, 3 * D);
    if (nt <= 1) {   // no parallel region below the threshold (rows.c)
        for (size_t n = 0; n < N; n++)
            ln_row(y + n * D, mean + n, rstd + n, x + n * D, w, b, D);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++)
            ln_row(y + n * D, mean + n, rstd + n, x + n * D, w, b, D);
        mhsa__fp_leave_team(fp);
    }
}

MHSA_CLONES static void rms_row(float *yn, const float *xn, const float *w,
                                size_t D, float eps)
{
    float rs = 1.0f / sqrtf(sumsq8(xn, 0.0f, D) / (float)D + eps);
    for (size_t d = 0; d < D; d++)
        yn[d] = xn[d] * rs * w[d];
}

void mhsa__rmsnorm_forward(float *y, const float *x, const float *w,
                           size_t N, size_t D, float eps)
{
    int nt = mhsa__layer_threads(N, 3 * D);
    if (nt <= 1) {   // no parallel region below the threshold (rows.c)
        for (size_t n = 0; n < N; n++)
            rms_row(y + n * D, x + n * D, w, D, eps);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++)
            rms_row(y + n * D, x + n * D, w, D, eps);
        mhsa__fp_leave_team(fp);
    }
}

// dx of one row (added).
MHSA_CLONES static void ln_row_backward(float *dxn, const float *dyn,
                                        const float *xn, const float *w,
                                        float m, float rs, size_t D)
{
    float sg[8] = { 0 }, sgn[8] = { 0 };   // sums of g and g * norm
    size_t d = 0;
    for (; d + 8 <= D; d += 8)
        for (int l = 0; l < 8; l++) {
            size_t i = d + (size_t)l;
            float g = w[i] * dyn[i];
            sg[l] += g;
            sgn[l] += g * ((xn[i] - m) * rs);
        }
    for (int l = 0; d < D; d++, l++) {
        float g = w[d] * dyn[d];
        sg[l] += g;
        sgn[l] += g * ((xn[d] - m) * rs);
    }
    float g_mean = (((sg[0] + sg[4]) + (sg[2] + sg[6])) +
                    ((sg[1] + sg[5]) + (sg[3] + sg[7]))) / (float)D;
    float gn_mean = (((sgn[0] + sgn[4]) + (sgn[2] + sgn[6])) +
                     ((sgn[1] + sgn[5]) + (sgn[3] + sgn[7]))) / (float)D;
    for (d = 0; d < D; d++) {
        float norm = (xn[d] - m) * rs;
        float g = w[d] * dyn[d];
        dxn[d] += (g - g_mean - norm * gn_mean) * rs;
    }
}

// dw and db over all rows, in row order (one thread: the sums' order).
MHSA_CLONES static void ln_param_grads(float *dw, float *db, const float *dy,
                                       const float *x, const float *mean,
                                       const float *rstd, size_t N,
                                       size_t D)
{
    for (size_t n = 0; n < N; n++) {
        const float *xn = x + n * D, *dyn = dy + n * D;    // (D) each
        float m = mean[n], rs = rstd[n];
        for (size_t d = 0; d < D; d++) {
            dw[d] += (xn[d] - m) * rs * dyn[d];
            db[d] += dyn[d];
        }
    }
}

void mhsa__layernorm_backward(float *dx, float *dw, float *db,
                              const float *dy, const float *x,
                              const float *w, const float *mean,
                              const float *rstd, size_t N, size_t D)
{
    int nt = mhsa__layer_threads(N, 4 * D);
    if (nt <= 1) {   // no parallel region below the threshold (rows.c)
        for (size_t n = 0; n < N; n++)
            ln_row_backward(dx + n * D, dy + n * D, x + n * D, w, mean[n],
                            rstd[n], D);
        ln_param_grads(dw, db, dy, x, mean, rstd, N, D);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++)
            ln_row_backward(dx + n * D, dy + n * D, x + n * D, w, mean[n],
                            rstd[n], D);
        mhsa__fp_leave_team(fp);
    }
    ln_param_grads(dw, db, dy, x, mean, rstd, N, D);
}
