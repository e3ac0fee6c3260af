// attend.h — one attention call over every (sequence, head), as forward,
// the cached calls and decode share it: the job (view.h) and the scratch it
// works in (scratch.h).
#ifndef MHSA_ATTEND_H
#define MHSA_ATTEND_H

#include "scratch.h"
#include "view.h"

// Runs the job: derives its view once, sends the decode sequences through
// decode.c and the others through FlashAttention-style tiles (attention.c)
// over (sequence, head, query block). ctx rows past a sequence's rows are
// left alone. Returns 1, or 0 when the job reads q, k, v in place
// (attn_job.ldqkv) and the fused small view declined a block: the outputs
// are then incomplete, and the caller splits the heads and runs the job
// again without ldqkv.
int mhsa__attention(const mhsa_kernels *k, const attn_scratch *s,
                    const attn_job *j);

// Whether the job's q (batch, H, tq, dh) and fp32 k, v (batch, Hkv, kv_t,
// dh) hold only finite values: one pass each, which a one-thread call
// makes instead of every block's checks of its rows (head_args.
// inputs_finite; the backward adds its dO).
int mhsa__attn_inputs_finite(const mhsa_kernels *k, const attn_job *j);

// lse[i] = lse[i] + mhsa_log_f32(lsum[i]) for rows rows: the log-sum-exp
// of a forward run with attn_job.lsum, when its backward needs it. The
// same expression (through the table's vector lse_add_log where it has
// one, the same bits), as a forward without lsum writes.
void mhsa__attn_finish_lse(const mhsa_kernels *k, size_t rows, float *lse,
                           const float *lsum);

#endif
