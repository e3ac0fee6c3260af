// ref.c — naive double-precision attention (see ref.h). Slow and plain on
// purpose: every step is the textbook formula.
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref.h"

// ---- every variant ---------------------------------------------------------

size_t refv_nqkv(const refv *m)
{
    return (size_t)(m->H + 2 * m->Hkv) * (size_t)(m->D / m->H);
}

// Round x (a float) to a binary format with `bits` significant bits,
// normal exponents down to emin (values below are multiples of
// 2^(emin - bits + 1)), overflowing at `big`: frexp and nearbyint in
// double (ties to even), written independently of the library's bit code.
static double round_fmt(double x, int bits, int emin, double big)
{
    if (x == 0.0 || !isfinite(x))
        return x;
    int e;
    double m = frexp(x, &e);           // x = m 2^e, 0.5 <= |m| < 1
    double r;
    if (e - 1 >= emin)
        r = ldexp(nearbyint(ldexp(m, bits)), e - bits);
    else
        r = ldexp(nearbyint(ldexp(x, bits - 1 - emin)), emin - bits + 1);
    return fabs(r) >= big ? copysign(INFINITY, r) : r;
}

static double kv_round(double x, int kind)
{
    x = (float)x;   // the cache stores the fp32 value, rounded
    if (kind == 1)
        return round_fmt(x, 11, -14, 65536.0);
    if (kind == 2)
        return round_fmt(x, 8, -126, ldexp(1.0, 128));
    return x;
}

// The rotation of pairs (u, v) of one head vector at position p.
static void rope(const refv *m, double *x, int p)
{
    int R = m->rope_dim, half = R / 2;
    double theta = m->rope_theta > 0 ? m->rope_theta : 10000.0;
    for (int i = 0; i < half; i++) {
        double a = p * pow(theta, -2.0 * i / R);
        int iu = m->rope_interleaved ? 2 * i : i;
        int iv = m->rope_interleaved ? 2 * i + 1 : i + half;
        double u = x[iu], v = x[iv];
        x[iu] = u * cos(a) - v * sin(a);
        x[iv] = u * sin(a) + v * cos(a);
    }
}

static int blocked(const refv *m, int b, int i, int j)
{
    int pi = m->pos0 + i, pj = m->pos0 + j;
    if (m->causal && pj > pi)
        return 1;
    if (m->window > 0 && pj <= pi - m->window)
        return 1;
    if (m->seq_len && j >= m->seq_len[b])
        return 1;
    return m->mask && m->mask[(size_t)i * m->T + j] == -INFINITY;
}

// The forward with its activations: qkv (B*T, refv_nqkv) as attended
// (rotated, rounded), attn (B, H, T, T) the weights or NULL, ctx (B*T, D),
// zeroed by the caller.
static void run(const refv *m, double *qkv, double *attn, double *ctx,
                double *y)
{
    int B = m->B, T = m->T, D = m->D, H = m->H, Hkv = m->Hkv, dh = D / H;
    int nq = (int)refv_nqkv(m), group = H / Hkv;
    double scale = 1.0 / sqrt((double)dh);
    double *row = malloc(sizeof(double) * (size_t)T);
    for (int r = 0; r < B * T; r++) {
        double *o = qkv + (size_t)r * nq;
        for (int c = 0; c < nq; c++) {
            double s = m->b_qkv ? m->b_qkv[c] : 0.0;
            for (int i = 0; i < D; i++)
                s += (double)m->x[(size_t)r * D + i] * m->w_qkv[(size_t)c * D + i];
            o[c] = s;
        }
        int p = m->pos0 + r % T;
        for (int h = 0; h < H + Hkv && m->rope_dim; h++)   // q and k heads
            rope(m, o + h * dh, p);
        for (int c = D; c < nq && m->kv_round; c++)
            o[c] = kv_round(o[c], m->kv_round);
    }
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < T; i++) {
                const double *q = qkv + ((size_t)b * T + i) * nq + h * dh;
                int g = h / group;
                double mx = -INFINITY;
                for (int j = 0; j < T; j++) {
                    row[j] = -INFINITY;
                    if (blocked(m, b, i, j))
                        continue;
                    const double *k = qkv + ((size_t)b * T + j) * nq + D +
                                      g * dh;
                    double s = 0;
                    for (int d = 0; d < dh; d++)
                        s += q[d] * k[d];
                    s *= scale;
                    if (m->mask)
                        s += m->mask[(size_t)i * T + j];
                    row[j] = s;
                    mx = s > mx ? s : mx;
                }
                double sum = 0;
                for (int j = 0; j < T; j++) {
                    row[j] = mx == -INFINITY || row[j] == -INFINITY
                             ? 0.0 : exp(row[j] - mx);
                    sum += row[j];
                }
                double *c = ctx + ((size_t)b * T + i) * D + h * dh;
                for (int j = 0; j < T; j++) {
                    double w = sum > 0 ? row[j] / sum : 0.0;
                    if (attn)
                        attn[(((size_t)b * H + h) * T + i) * T + j] = w;
                    const double *v = qkv + ((size_t)b * T + j) * nq + D +
                                      (Hkv + g) * dh;
                    for (int d = 0; d < dh && w != 0.0; d++)
                        c[d] += w * v[d];
                }
            }
    for (int r = 0; r < B * T; r++)
        for (int o = 0; o < D; o++) {
            double s = m->b_out ? m->b_out[o] : 0.0;
            for (int i = 0; i < D; i++)
                s += ctx[(size_t)r * D + i] * m->w_out[(size_t)o * D + i];
            y[(size_t)r * D + o] = s;
        }
    free(row);
}

void refv_forward(const refv *m, double *y, double *attn)
{
    size_t bt = (size_t)m->B * m->T;
    double *qkv = malloc(sizeof(double) * bt * refv_nqkv(m));
    double *ctx = calloc(bt * (size_t)m->D, sizeof(double));
    run(m, qkv, attn, ctx, y);
    free(qkv);
    free(ctx);
}

// ---- the plain block ------------------------------------------------------

// The plain block as a variant with every addition off: the same forward.
static refv as_refv(const ref_mha *m)
{
    refv v = { .B = m->B, .T = m->T, .D = m->D, .H = m->H, .Hkv = m->H,
               .causal = m->causal, .bias = m->bias,
               .w_qkv = m->w_qkv, .b_qkv = m->bias ? m->b_qkv : NULL,
               .w_out = m->w_out, .b_out = m->bias ? m->b_out : NULL,
               .x = m->x, .mask = m->mask };
    return v;
}

typedef struct acts {
    double *qkv;   // (B*T, 3D)
    double *p;     // (B, H, T, T) softmax weights
    double *ctx;   // (B*T, D)
} acts;

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
    refv v = as_refv(m);
    refv_forward(&v, y, attn);
}

void ref_backward(const ref_mha *m, const float *dy, double *dx,
                  double *g_w_qkv, double *g_b_qkv, double *g_w_out,
                  double *g_b_out)
{
    int B = m->B, T = m->T, D = m->D, H = m->H, dh = D / H;
    size_t bt = (size_t)B * T;
    double scale = 1.0 / sqrt((double)dh);
    refv v = as_refv(m);
    acts a = alloc_acts(m);
    double *y = calloc(bt * D, sizeof(double));
    run(&v, a.qkv, a.p, a.ctx, y);
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
