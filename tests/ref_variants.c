// ref_variants.c — see ref_variants.h. Slow and plain on purpose.
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ref_variants.h"

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

void refv_forward(const refv *m, double *y, double *attn)
{
    int B = m->B, T = m->T, D = m->D, H = m->H, Hkv = m->Hkv, dh = D / H;
    int nq = (int)refv_nqkv(m), group = H / Hkv;
    double scale = 1.0 / sqrt((double)dh);
    double *qkv = malloc(sizeof(double) * (size_t)B * T * nq);
    double *ctx = calloc((size_t)B * T * D, sizeof(double));
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
    free(qkv);
    free(ctx);
    free(row);
}
