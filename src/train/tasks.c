// tasks.c — the toy sequence tasks of the training demo.
//
// Both tasks build a row of T + 1 tokens s and use s[0..T) as the input and
// s[1..T] as the targets (next-token prediction).
//   repeat:    s[i] = r for one random r: the next token is the current one.
//   induction: s[i] = r[i mod h], h = T / 2, r random: from position h - 1
//              on, the next token sits h - 1 positions back, so attention has
//              to look back by a fixed offset; earlier positions are noise and
//              do not count (target -1).
// splitmix64 (rng.c) gives the same stream on every platform.
#include "core/status.h"
#include "train_internal.h"

// Uniform in [0, V): the modulo bias of 2^64 mod V is below 2^-57 for the
// vocabularies used here, far below anything a test could see.
static int32_t draw(uint64_t *s, int V)
{
    return (int32_t)(mhsa__splitmix64(s) % (uint64_t)V);
}

const char *mhsa_task_name(mhsa_task task)
{
    switch (task) {
    case MHSA_TASK_REPEAT:    return "repeat";
    case MHSA_TASK_INDUCTION: return "induction";
    }
    return "unknown";
}

mhsa_status mhsa_task_batch(mhsa_task task, uint64_t *rng_state, int B, int T,
                            int V, int32_t *tokens, int32_t *targets)
{
    if (!rng_state || !tokens || !targets)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_task_batch: %s is NULL",
                          !rng_state ? "rng_state"
                          : !tokens ? "tokens" : "targets");
    if (task != MHSA_TASK_REPEAT && task != MHSA_TASK_INDUCTION)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_task_batch: task = %d unknown", (int)task);
    if (B < 1 || T < 1 || V < 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_task_batch: B = %d, "
                          "T = %d, V = %d (need >= 1)", B, T, V);
    if (task == MHSA_TASK_INDUCTION && T < 2)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_task_batch: induction needs T >= 2, got %d",
                          T);
    for (int b = 0; b < B; b++) {
        int32_t *tok = tokens + (size_t)b * (size_t)T;    // (T)
        int32_t *tgt = targets + (size_t)b * (size_t)T;   // (T)
        if (task == MHSA_TASK_REPEAT) {
            int32_t r = draw(rng_state, V);
            for (int t = 0; t < T; t++) {
                tok[t] = r;
                tgt[t] = r;
            }
            continue;
        }
        int h = T / 2;
        // The first h tokens are random; everything after repeats them.
        for (int t = 0; t < h; t++)
            tok[t] = draw(rng_state, V);
        for (int t = h; t < T; t++)
            tok[t] = tok[t - h];
        for (int t = 0; t < T; t++)
            tgt[t] = t >= h - 1 ? tok[(t + 1) % h] : -1;
    }
    return MHSA_OK;
}
