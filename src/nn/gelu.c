// gelu.c — the MLP activations: GELU in GPT-2's tanh form (Hendrycks &
// Gimpel 2016; PyTorch's F.gelu(x, approximate='tanh')), forward and
// backward, the SwiGLU gate of Llama's MLP and the GeGLU gate of Gemma's
// (forward).
//
//   u = s (x + c x^3),  s = sqrt(2/pi),  c = 0.044715
//   y = 0.5 x (1 + tanh u)
//   dy/dx = 0.5 (1 + tanh u) + 0.5 x (1 - tanh^2 u) s (1 + 3 c x^2)
//
// tanh u = 1 - 2 / (1 + exp(2u)), with exp from exp_pos below: libm's
// tanhf is a scalar call, slow over the tiny preset's 64k hidden units
// (docs/performance.md, "Measurements behind the code"), while this loop
// vectorises. Each element is computed on its own, so the bits never
// depend on threads.
//
// SwiGLU (Shazeer 2020): h = silu(g) * u with silu(g) = g * sigmoid(g) and
// sigmoid(g) = e / (1 + e) for g >= 0, 1 / (1 + e) below, e = exp(|g|)
// from the same exp_pos (exp(-g) of a large negative g would overflow).
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/fpenv.h"
#include "layers.h"

#define GELU_S 0.7978845608028654f   // sqrt(2 / pi)
#define GELU_C 0.044715f

// exp(x) for x in [0, 88] (clamped above; all the tanh below needs): Cody
// & Waite's reduction x = n ln2 + r, |r| <= ln2/2, with ln2 split in two so
// that n ln2 is exact enough, then Cephes' degree-5 expf polynomial for
// exp(r), and 2^n put into the exponent bits. n is read from the bits of
// x log2(e) + 1.5*2^23 (the addition rounds to an integer in the low
// mantissa bits): no float-to-int conversion. The clamp is an integer
// select because GCC 12 does not vectorise this loop with a float one
// (it threads the comparison into control flow); as written it does.
static inline float exp_pos(float x)
{
    // min(x, 88) on the bits (unsigned order is float order for x >= 0;
    // a NaN becomes 88, and the GELU's factor x brings the NaN back).
    uint32_t xb, lim = 0x42b00000u;   // 88.0f
    memcpy(&xb, &x, sizeof xb);
    xb = xb > lim ? lim : xb;
    memcpy(&x, &xb, sizeof x);
    const float magic = 12582912.0f;   // 1.5 * 2^23
    float t = x * 1.44269504088896341f + magic;
    float n = t - magic;
    float r = x - n * 0.693359375f;
    r = r - n * -2.12194440e-4f;
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    float e = p * (r * r) + r + 1.0f;
    uint32_t tb, mb;
    memcpy(&tb, &t, sizeof tb);
    memcpy(&mb, &magic, sizeof mb);
    uint32_t sb = (tb - mb + 127u) << 23;   // 2^n, n in [0, 127]
    float s;
    memcpy(&s, &sb, sizeof s);
    return e * s;
}

// tanh u = sign(u) (1 - 2 / (1 + exp(2|u|))): exp of a non-negative
// argument only, so it never underflows.
static inline float tanh_approx(float u)
{
    float a = 1.0f - 2.0f / (1.0f + exp_pos(2.0f * fabsf(u)));
    return copysignf(a, u);
}

float mhsa__tanh_approx(float x) { return tanh_approx(x); }

static inline float tanh_of(float x)
{
    return tanh_approx(GELU_S * (x + GELU_C * (x * x * x)));
}

// Elements per parallel chunk: whole cache lines, fixed (not by threads).
enum { CHUNK = 4096 };

// range(args..., i0, i1) over the elements [0, n) in CHUNK pieces: on the
// calling thread below the threshold (rows.c: no parallel region), else
// split over a team. Each element is computed on its own, so the bits do
// not depend on the split.
#define OVER_CHUNKS(n, range, ...)                                            \
    do {                                                                      \
        size_t n_ = (n), chunks_ = (n_ + CHUNK - 1) / CHUNK;                  \
        int nt_ = mhsa__layer_threads(chunks_, CHUNK);                        \
        if (nt_ <= 1) {                                                       \
            range(__VA_ARGS__, 0, n_);                                        \
            break;                                                            \
        }                                                                     \
        _Pragma("omp parallel num_threads(nt_)")                              \
        {                                                                     \
            mhsa_fpstate fp_ = mhsa__fp_enter_team();                         \
            _Pragma("omp for schedule(static)")                               \
            for (size_t c_ = 0; c_ < chunks_; c_++)                           \
                range(__VA_ARGS__, c_ * CHUNK,                                \
                      (c_ + 1) * CHUNK < n_ ? (c_ + 1) * CHUNK : n_);         \
            mhsa__fp_leave_team(fp_);                                         \
        }                                                                     \
    } while (0)

// Elements [i0, i1): y, and with dydx the derivative too.
MHSA_CLONES static void gelu_range(float *y, float *dydx, const float *x,
                                   size_t i0, size_t i1)
{
    if (!dydx) {
        for (size_t i = i0; i < i1; i++) {
            float xi = x[i];
            y[i] = 0.5f * xi * (1.0f + tanh_of(xi));
        }
        return;
    }
    for (size_t i = i0; i < i1; i++) {
        float xi = x[i];
        float t = tanh_of(xi);
        float du = GELU_S * (1.0f + 3.0f * GELU_C * (xi * xi));
        y[i] = 0.5f * xi * (1.0f + t);
        dydx[i] = 0.5f * (1.0f + t) + 0.5f * xi * ((1.0f - t * t) * du);
    }
}

MHSA_CLONES static void mul_range(float *dx, const float *dydx,
                                  const float *dy, size_t i0, size_t i1)
{
    for (size_t i = i0; i < i1; i++)
        dx[i] = dy[i] * dydx[i];
}

void mhsa__gelu_forward_range(float *y, const float *x, size_t i0,
                              size_t i1)
{
    gelu_range(y, NULL, x, i0, i1);
}

void mhsa__gelu_forward(float *y, float *dydx, const float *x, size_t n)
{
    OVER_CHUNKS(n, gelu_range, y, dydx, x);
}

void mhsa__gelu_backward(float *dx, const float *dydx, const float *dy,
                         size_t n)
{
    OVER_CHUNKS(n, mul_range, dx, dydx, dy);
}

MHSA_CLONES static void swiglu_range(float *h, const float *g,
                                     const float *u, size_t i0, size_t i1)
{
    for (size_t i = i0; i < i1; i++) {
        float gi = g[i], e = exp_pos(fabsf(gi));
        float sig = (gi >= 0.0f ? e : 1.0f) / (1.0f + e);
        h[i] = gi * sig * u[i];
    }
}

void mhsa__swiglu_forward(float *h, const float *g, const float *u, size_t n)
{
    OVER_CHUNKS(n, swiglu_range, h, g, u);
}

void mhsa__swiglu_forward_range(float *h, const float *g, const float *u,
                                size_t i0, size_t i1)
{
    swiglu_range(h, g, u, i0, i1);
}

// GeGLU (Shazeer 2020; Gemma's MLP): h = gelu_tanh(g) * u.
MHSA_CLONES static void geglu_range(float *h, const float *g,
                                    const float *u, size_t i0, size_t i1)
{
    for (size_t i = i0; i < i1; i++) {
        float gi = g[i];
        h[i] = 0.5f * gi * (1.0f + tanh_of(gi)) * u[i];
    }
}

void mhsa__geglu_forward(float *h, const float *g, const float *u, size_t n)
{
    OVER_CHUNKS(n, geglu_range, h, g, u);
}

void mhsa__geglu_forward_range(float *h, const float *g, const float *u,
                               size_t i0, size_t i1)
{
    geglu_range(h, g, u, i0, i1);
}
