// ref.c — naive double-precision attention (see ref.h). Slow and plain on
// purpose: every step is the textbook formula.
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

typedef struct acts {
    double *qkv;   // (B*T, 3D)
    double *p;     // (B, H, T, T) softmax weights
    double *ctx;   // (B*T, D)
} acts;

static int blocked(const ref_mha *m, int i, int j)
{
    if (m->causal && j > i)
        return 1;
    return m->mask && m->mask[(size_t)i * m->T + j] == -INFINITY;
}

static void run(const ref_mha *m, acts *a, double *y)
{
    int B = m->B, T = m->T, D = m->D, H = m->H, dh = D / H;
    double scale = 1.0 / sqrt((double)dh);
    for (int r = 0; r < B * T; r++)
        for (int o = 0; o < 3 * D; o++) {
            double s = m->bias ? m->b_qkv[o] : 0.0;
            for (int i = 0; i < D; i++)
                s += (double)m->x[(size_t)r * D + i] *
                     m->w_qkv[(size_t)o * D + i];
            a->qkv[(size_t)r * 3 * D + o] = s;
        }
    double *row = malloc(sizeof(double) * (size_t)T);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const double *q = a->qkv + ((size_t)b * T + i) * 3 * D + h * dh;
                double mx = -INFINITY;
                for (int j = 0; j < T; j++) {
                    if (blocked(m, i, j)) {
                        row[j] = -INFINITY;
                        continue;
                    }
                    const double *k = a->qkv + ((size_t)b * T + j) * 3 * D +
                                      D + h * dh;
                    double s = 0;
                    for (int d = 0; d < dh; d++)
                        s += q[d] * k[d];
                    s *= scale;
                    if (m->mask)
                        s += m->mask[(size_t)i * T + j];
                    row[j] = s;
                    if (s > mx)
                        mx = s;
                }
                double *p = a->p + (((size_t)b * H + h) * T + i) * T;
                double sum = 0;
                for (int j = 0; j < T; j++) {
                    p[j] = (mx == -INFINITY || row[j] == -INFINITY)
                         ? 0.0 : exp(row[j] - mx);
                    sum += p[j];
                }
                for (int j = 0; j < T; j++)
                    p[j] = sum > 0 ? p[j] / sum : 0.0;
                double *c = a->ctx + ((size_t)b * T + i) * D + h * dh;
                for (int d = 0; d < dh; d++) {
                    double s = 0;
                    for (int j = 0; j < T; j++)
                        if (p[j] != 0.0)
                            s += p[j] * a->qkv[((size_t)b * T + j) * 3 * D +
                                               2 * D + h * dh + d];
                    c[d] = s;
                }
            }
    free(row);
    for (int r = 0; r < B * T; r++)
        for (int o = 0; o < D; o++) {
            double s = m->bias ? m->b_out[o] : 0.0;
            for (int i = 0; i < D; i++)
                s += a->ctx[(size_t)r * D + i] * m->w_out[(size_t)o * D + i];
            y[(size_t)r * D + o] = s;
        }
}

static acts alloc_acts(const ref_mha *m)
{
    size_t bt = (size_t)m->B * m->T, D = (size_t)m->D;
    acts a = { calloc(bt * 3 * D, sizeof(double)),
               calloc((size_t)m->B * m->H * m->T * m->T, sizeof(double)),
               calloc(bt * D, sizeof(double)) };
    return a;
}

static void free_acts(acts *a)
{
    free(a->qkv);
    free(a->p);
    free(a->ctx);
}

void ref_forward(const ref_mha *m, double *y, double *attn)
{
    acts a = alloc_acts(m);
    run(m, &a, y);
    if (attn)
        memcpy(attn, a.p, sizeof(double) * (size_t)m->B * m->H * m->T * m->T);
    free_acts(&a);
}

void ref_backward(const ref_mha *m, const float *dy, double *dx,
                  double *g_w_qkv, double *g_b_qkv, double *g_w_out,
                  double *g_b_out)
{
    int B = m->B, T = m->T, D = m->D, H = m->H, dh = D / H;
    size_t bt = (size_t)B * T;
    double scale = 1.0 / sqrt((double)dh);
    acts a = alloc_acts(m);
    double *y = calloc(bt * D, sizeof(double));
    run(m, &a, y);
    double *dctx = calloc(bt * D, sizeof(double));
    double *dqkv = calloc(bt * 3 * D, sizeof(double));
    double *dp = calloc((size_t)T, sizeof(double));
    for (size_t r = 0; r < bt; r++)
        for (int i = 0; i < D; i++) {
            double s = 0;
            for (int o = 0; o < D; o++)
                s += (double)dy[r * D + o] * m->w_out[(size_t)o * D + i];
            dctx[r * D + i] = s;
        }
    if (g_w_out)
        for (int o = 0; o < D; o++)
            for (int i = 0; i < D; i++) {
                double s = 0;
                for (size_t r = 0; r < bt; r++)
                    s += (double)dy[r * D + o] * a.ctx[r * D + i];
                g_w_out[(size_t)o * D + i] = s;
            }
    if (g_b_out)
        for (int o = 0; o < D; o++) {
            double s = 0;
            for (size_t r = 0; r < bt; r++)
                s += dy[r * D + o];
            g_b_out[o] = s;
        }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const double *p = a.p + (((size_t)b * H + h) * T + i) * T;
                const double *dc = dctx + ((size_t)b * T + i) * D + h * dh;
                double dot = 0;
                for (int j = 0; j < T; j++) {
                    const double *v = a.qkv + ((size_t)b * T + j) * 3 * D +
                                      2 * D + h * dh;
                    double s = 0;
                    for (int d = 0; d < dh; d++)
                        s += dc[d] * v[d];
                    dp[j] = s;
                    dot += p[j] * s;
                    double *dv = dqkv + ((size_t)b * T + j) * 3 * D + 2 * D +
                                 h * dh;
                    for (int d = 0; d < dh; d++)
                        dv[d] += p[j] * dc[d];
                }
                const double *q = a.qkv + ((size_t)b * T + i) * 3 * D + h * dh;
                double *dq = dqkv + ((size_t)b * T + i) * 3 * D + h * dh;
                for (int j = 0; j < T; j++) {
                    double ds = p[j] * (dp[j] - dot) * scale;
                    if (ds == 0.0)
                        continue;
                    const double *k = a.qkv + ((size_t)b * T + j) * 3 * D +
                                      D + h * dh;
                    double *dk = dqkv + ((size_t)b * T + j) * 3 * D + D +
                                 h * dh;
                    for (int d = 0; d < dh; d++) {
                        dq[d] += ds * k[d];
                        dk[d] += ds * q[d];
                    }
                }
            }
    if (dx)
        for (size_t r = 0; r < bt; r++)
            for (int i = 0; i < D; i++) {
                double s = 0;
                for (int o = 0; o < 3 * D; o++)
                    s += dqkv[r * 3 * D + o] * m->w_qkv[(size_t)o * D + i];
                dx[r * D + i] = s;
            }
    if (g_w_qkv)
        for (int o = 0; o < 3 * D; o++)
            for (int i = 0; i < D; i++) {
                double s = 0;
                for (size_t r = 0; r < bt; r++)
                    s += dqkv[r * 3 * D + o] * m->x[r * D + i];
                g_w_qkv[(size_t)o * D + i] = s;
            }
    if (g_b_qkv)
        for (int o = 0; o < 3 * D; o++) {
            double s = 0;
            for (size_t r = 0; r < bt; r++)
                s += dqkv[r * 3 * D + o];
            g_b_qkv[o] = s;
        }
    free(dp);
    free(dqkv);
    free(dctx);
    free(y);
    free_acts(&a);
}
