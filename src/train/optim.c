// optim.c — AdamW and SGD updates of one tensor.
//
// AdamW follows torch.optim.AdamW (Loshchilov & Hutter 2019, "Decoupled
// Weight Decay Regularization"): the decay shrinks the weights directly
// instead of being added to the gradient, so it is not rescaled by the
// adaptive denominator. The bias corrections 1 - beta^step are computed in
// double once per call; each element is then updated in fp32 on its own, so
// no order of summation is involved at all.
#include <math.h>

#include "core/fpenv.h"
#include "nn/layers.h"
#include "core/status.h"
#include "train_internal.h"

mhsa_optim_config mhsa_optim_defaults(mhsa_optim_kind kind)
{
    mhsa_optim_config c = { 0 };
    c.kind = kind;
    c.lr = kind == MHSA_OPTIM_SGD ? 1e-1f : 1e-3f;
    c.beta1 = 0.9f;
    c.beta2 = 0.999f;
    c.eps = 1e-8f;
    return c;
}

// Shared by mhsa_optim_update and mhsa_lm_step so that a bad config is
// rejected before any tensor is touched.
mhsa_status mhsa__optim_check(const mhsa_optim_config *c, const char *fn)
{
    if (!c)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: cfg is NULL", fn);
    if (c->kind != MHSA_OPTIM_ADAMW && c->kind != MHSA_OPTIM_SGD)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: cfg->kind = %d unknown",
                          fn, (int)c->kind);
    if (!(c->lr > 0.0f) || !isfinite(c->lr))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: cfg->lr = %g (need > 0)",
                          fn, (double)c->lr);
    if (!(c->weight_decay >= 0.0f) || !isfinite(c->weight_decay))
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: cfg->weight_decay = %g (need >= 0)", fn,
                          (double)c->weight_decay);
    if (!(c->clip_norm >= 0.0f) || !isfinite(c->clip_norm))
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: cfg->clip_norm = %g (need >= 0)", fn,
                          (double)c->clip_norm);
    if (c->kind == MHSA_OPTIM_ADAMW) {
        if (!(c->beta1 >= 0.0f && c->beta1 < 1.0f))
            return mhsa__fail(MHSA_ERR_INVALID_ARG,
                              "%s: cfg->beta1 = %g (need [0, 1))", fn,
                              (double)c->beta1);
        if (!(c->beta2 >= 0.0f && c->beta2 < 1.0f))
            return mhsa__fail(MHSA_ERR_INVALID_ARG,
                              "%s: cfg->beta2 = %g (need [0, 1))", fn,
                              (double)c->beta2);
        if (!(c->eps > 0.0f) || !isfinite(c->eps))
            return mhsa__fail(MHSA_ERR_INVALID_ARG,
                              "%s: cfg->eps = %g (need > 0)", fn,
                              (double)c->eps);
    }
    return MHSA_OK;
}

// The AdamW loop: each element on its own (vectorised; on x86-64 also as
// an AVX2 clone, the same operations per element, see layers.h).
MHSA_CLONES static void adamw(size_t n, float *p, const float *g, float *m,
                              float *v, float grad_scale, float shrink,
                              float lr, float b1, float b2, float bc1,
                              float bc2, float eps)
{
    for (size_t i = 0; i < n; i++) {
        float gi = g[i] * grad_scale;
        p[i] *= shrink;
        m[i] = b1 * m[i] + (1.0f - b1) * gi;
        v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
        float mhat = m[i] / bc1;
        float vhat = v[i] / bc2;
        p[i] -= lr * mhat / (sqrtf(vhat) + eps);
    }
}

mhsa_status mhsa__optim_check_step(const char *fn, const void *model,
                                   const char *what,
                                   const mhsa_optim_config *cfg)
{
    if (!model)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn, what);
    return mhsa__optim_check(cfg, fn);
}

float mhsa__clip_scale(const mhsa_optim_config *cfg, double norm)
{
    if (cfg->clip_norm > 0.0f && norm > (double)cfg->clip_norm)
        return (float)((double)cfg->clip_norm / (norm + 1e-6));
    return 1.0f;
}

static mhsa_status optim_update(const mhsa_optim_config *cfg, int64_t step,
                                size_t n, float *p, const float *g, float *m,
                                float *v, float grad_scale, int decay)
{
    mhsa_status st = mhsa__optim_check(cfg, "mhsa_optim_update");
    if (st != MHSA_OK)
        return st;
    if (!p || !g)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_optim_update: %s is "
                          "NULL", !p ? "p" : "g");
    if (cfg->kind == MHSA_OPTIM_ADAMW && (!m || !v))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_optim_update: %s is "
                          "NULL (AdamW needs its moments)", !m ? "m" : "v");
    if (step < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_optim_update: step = "
                          "%lld (need >= 1)", (long long)step);
    if (!isfinite(grad_scale))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_optim_update: "
                          "grad_scale = %g", (double)grad_scale);
    float lr = cfg->lr;
    float wd = decay ? cfg->weight_decay : 0.0f;
    if (cfg->kind == MHSA_OPTIM_SGD) {
        for (size_t i = 0; i < n; i++)
            p[i] -= lr * (g[i] * grad_scale + wd * p[i]);
        return MHSA_OK;
    }
    float b1 = cfg->beta1, b2 = cfg->beta2, eps = cfg->eps;
    float bc1 = (float)(1.0 - pow((double)b1, (double)step));
    float bc2 = (float)(1.0 - pow((double)b2, (double)step));
    adamw(n, p, g, m, v, grad_scale, 1.0f - lr * wd, lr, b1, b2, bc1, bc2,
          eps);
    return MHSA_OK;
}

mhsa_status mhsa_optim_update(const mhsa_optim_config *cfg, int64_t step,
                              size_t n, float *p, const float *g, float *m,
                              float *v, float grad_scale, int decay)
{
    MHSA__FP_RETURN(optim_update(cfg, step, n, p, g, m, v, grad_scale, decay));
}

mhsa_status mhsa__optim_step(const mhsa_optim_config *cfg, double norm,
                             int64_t *step, float *param, const float *grad,
                             float *m, float *v, int n_tensors,
                             mhsa__slice (*slice)(const void *ctx, int k),
                             const void *ctx, float *grad_norm)
{
    float scale = mhsa__clip_scale(cfg, norm);
    ++*step;
    for (int k = 0; k < n_tensors; k++) {
        mhsa__slice t = slice(ctx, k);
        mhsa_status st = mhsa_optim_update(cfg, *step, t.n, param + t.off,
                                           grad + t.off, m + t.off,
                                           v + t.off, scale, t.decay);
        if (st != MHSA_OK)
            return st;   // cannot happen: cfg was checked by the caller
    }
    if (grad_norm)
        *grad_norm = (float)norm;
    return MHSA_OK;
}
