// sampler.c — the public sampler (include/mhsa_model.h): the repetition
// penalty on a copy of the logits, then nn/sample.h's draw. The scratch
// (the penalised logits, the candidates' order, which tokens were seen)
// is allocated at create, so sampling allocates nothing.
#include "mhsa_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "nn/sample.h"

struct mhsa_sampler {
    mhsa_sampler_params p;
    int V;
    uint64_t rng;
    float *z;              // (V) the penalised logits
    int *order;            // (V) the candidates
    unsigned char *seen;   // (V) 1: penalised already in this call
};

mhsa_status mhsa_sampler_create(const mhsa_sampler_params *params,
                                int n_vocab, mhsa_sampler **out)
{
    static const char fn[] = "mhsa_sampler_create";
    if (!params || !out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !params ? "params" : "out");
    const mhsa_sampler_params *p = params;
    if (n_vocab < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: n_vocab = %d (need >= "
                          "1)", fn, n_vocab);
    if (!isfinite(p->temperature) || p->temperature < 0.0f)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: temperature = %g (need "
                          "0 for greedy, or finite and > 0)", fn,
                          (double)p->temperature);
    if (p->top_k < 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: top_k = %d (need >= 0)",
                          fn, p->top_k);
    if (!(p->top_p >= 0.0f && p->top_p <= 1.0f))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: top_p = %g (need [0, "
                          "1])", fn, (double)p->top_p);
    if (!(p->min_p >= 0.0f && p->min_p <= 1.0f))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: min_p = %g (need [0, "
                          "1])", fn, (double)p->min_p);
    if (!isfinite(p->repeat_penalty) || p->repeat_penalty < 0.0f)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: repeat_penalty = %g "
                          "(need 0 or 1 for none, or finite and > 0)", fn,
                          (double)p->repeat_penalty);
    if (p->repeat_last_n < 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: repeat_last_n = %d "
                          "(need >= 0)", fn, p->repeat_last_n);
    mhsa_sampler *s = calloc(1, sizeof *s);
    size_t V = (size_t)n_vocab;
    if (s) {
        s->z = malloc(V * sizeof(float));
        s->order = malloc(V * sizeof(int));
        s->seen = calloc(V, 1);
    }
    if (!s || !s->z || !s->order || !s->seen) {
        mhsa_sampler_destroy(s);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: scratch for %d logits",
                          fn, n_vocab);
    }
    s->p = *p;
    s->V = n_vocab;
    s->rng = p->seed;
    *out = s;
    return MHSA_OK;
}

void mhsa_sampler_destroy(mhsa_sampler *s)
{
    if (s)
        MHSA_FREE_ALL(s->z, s->order, s->seen, s);
}

void mhsa_sampler_reset(mhsa_sampler *s)
{
    if (s)
        s->rng = s->p.seed;
}

mhsa_status mhsa_sampler_sample(mhsa_sampler *s, const float *logits,
                                size_t n_vocab, const int32_t *history,
                                size_t n_history, int32_t *token)
{
    static const char fn[] = "mhsa_sampler_sample";
    if (!s || !logits || !token || (!history && n_history))
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL%s", fn,
                          !s ? "s" : !logits ? "logits" : !token ? "token"
                          : "history", s && logits && token
                          ? " with n_history > 0" : "");
    if (n_vocab != (size_t)s->V)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: n_vocab = %zu; the "
                          "sampler was made for %d", fn, n_vocab, s->V);
    float pen = s->p.repeat_penalty;
    int penalise = pen > 0.0f && pen != 1.0f && n_history > 0;
    size_t from = 0;
    if (penalise && s->p.repeat_last_n > 0 &&
        n_history > (size_t)s->p.repeat_last_n)
        from = n_history - (size_t)s->p.repeat_last_n;
    if (penalise)
        for (size_t i = from; i < n_history; i++)
            if (history[i] < 0 || history[i] >= s->V)
                return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: history[%zu] = "
                                  "%d is outside [0, %d)", fn, i,
                                  (int)history[i], s->V);
    const float *z = logits;
    if (penalise) {
        // Each token once, however often it occurs (as llama.cpp's
        // penalties sampler without its frequency and presence terms).
        memcpy(s->z, logits, n_vocab * sizeof(float));
        for (size_t i = from; i < n_history; i++) {
            int32_t t = history[i];
            if (s->seen[t])
                continue;
            s->seen[t] = 1;
            s->z[t] = s->z[t] > 0.0f ? s->z[t] / pen : s->z[t] * pen;
        }
        for (size_t i = from; i < n_history; i++)
            s->seen[history[i]] = 0;
        z = s->z;
    }
    *token = mhsa__sample_token(z, s->V, s->p.temperature, s->p.top_k,
                                s->p.top_p, s->p.min_p, &s->rng, s->order);
    return MHSA_OK;
}
