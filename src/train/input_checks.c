// input_checks.c — the argument checks every language model of the
// training library makes on a batch of token ids (the synthetic-task model
// of model.c and the GPT of gpt.c), with one wording of their errors.
#include "core/status.h"
#include "train_internal.h"

mhsa_status mhsa__check_ids(const char *fn, const char *what,
                            const int32_t *ids, size_t n, int lo, int V)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < lo || ids[i] >= V)
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s[%zu] = %d is "
                              "outside [%d, %d)", fn, what, i, (int)ids[i],
                              lo, V);
    return MHSA_OK;
}

mhsa_status mhsa__check_batch(const char *fn, int B, int T, int max_batch,
                              int max_T, const char *max_T_name)
{
    if (B < 1 || T < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: B = %d, T = %d (need "
                          ">= 1)", fn, B, T);
    if (B > max_batch)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: B = %d > max_batch = %d", fn,
                          B, max_batch);
    if (T > max_T)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: T = %d > %s = %d", fn, T,
                          max_T_name, max_T);
    return MHSA_OK;
}
