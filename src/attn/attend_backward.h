// attend_backward.h — the attention backward over every (sequence, head)
// of a recorded forward, as attend.h runs the forward: the task split and
// the per-block arguments, given the job, the scratch and where the
// gradients go, never the workspace itself.
#ifndef MHSA_ATTEND_BACKWARD_H
#define MHSA_ATTEND_BACKWARD_H

#include "scratch.h"
#include "view.h"

// Where the backward reads dO and writes dq, dk and dv: one row per token
// (sequence b's row t is row b * tq + t).
//   dout: head h's dO at dout + row * lddo + h * dh;
//   dqkv: the row [dq of the H heads | dk of the Hkv | dv of the Hkv],
//         ld floats apart (ld >= (H + 2 Hkv) dh).
typedef struct attn_grads {
    const float *dout;
    size_t lddo;
    float *dqkv;
    size_t ld;
} attn_grads;

// dq, dk and dv of the job's forward (its q, k, v, O = ctx and lse, which
// must hold the log-sum-exp: mhsa__attn_finish_lse) into g->dqkv, which
// is overwritten (every row's dq, dk and dv: no caller zeroes it). The
// bits never depend on the thread count (attend_backward.c says how).
void mhsa__attention_backward(const mhsa_kernels *k, const attn_scratch *s,
                              const attn_job *j, const attn_grads *g);

#endif
