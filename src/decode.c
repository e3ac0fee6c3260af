// decode.c — attention for one query row per head that sees every key
// (decoding one token with the KV cache, or a forward with T = 1).
//
// A GEMM tile would waste mr - 1 rows and packing would double the memory
// traffic, so K and V are streamed once, unpacked, by the gemv kernels:
// s = K q, the online-softmax step on s, o += s V. The keys are split into
// fixed chunks (independent of the thread count), each leaving a partial
// (m, l, o); the partials merge in chunk order.
#include <math.h>
#include <omp.h>
#include <string.h>

#include "forward.h"
#include "fpenv.h"

// Keys per chunk: enough tasks for every thread even with one sequence and
// few heads, and 256 x dh of K and V per chunk stays in L2.
enum { DECODE_CHUNK = 256 };

int mhsa__is_decode(const attn_job *j)
{
    return j->tq == 1 && !j->mask && !j->attn &&
           (!j->causal || j->q_pos + 1 >= j->tk);
}

size_t mhsa__decode_partial_floats(size_t batch, size_t H, size_t t,
                                   size_t dh)
{
    return batch * H * ((t + DECODE_CHUNK - 1) / DECODE_CHUNK) * (dh + 2);
}

void mhsa__attention_decode(const mhsa_kernels *k, mhsa_workspace *ws,
                            const attn_job *j)
{
    size_t dh = j->dh, bhs = j->batch * j->H;
    size_t nch = (j->tk + DECODE_CHUNK - 1) / DECODE_CHUNK;
    size_t tasks = bhs * nch, stride = dh + 2;
    double bytes = 2.0 * (double)bhs * (double)j->tk * (double)dh;
    int nt = mhsa__threads(ws, 2.0 * bytes, tasks);
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        mhsa_fpstate fp = mhsa__fp_enter();
        float *s = ws->tiles + (size_t)omp_get_thread_num() * ws->tile_floats;
#pragma omp for schedule(static)
        for (size_t task = 0; task < tasks; task++) {
            size_t bh = task / nch, c = task % nch;
            size_t j0 = c * DECODE_CHUNK;
            size_t n = j->tk - j0 < DECODE_CHUNK ? j->tk - j0 : DECODE_CHUNK;
            const float *kc = j->k + (bh * j->kv_t + j0) * dh;
            const float *vc = j->v + (bh * j->kv_t + j0) * dh;
            float *part = ws->decode + task * stride;   // m, l, o[dh]
            part[0] = -INFINITY;
            part[1] = 0.0f;
            memset(part + 2, 0, dh * sizeof(float));
            k->gemv_n(n, dh, kc, dh, j->q + bh * dh, s, 0.0f);
            mhsa_softmax_args sa = { 1, n, s, n,
                                     { NULL, 0, 0, 0, 0 },
                                     part, part + 1, part + 2, dh, dh };
            k->softmax_online(&sa);
            k->gemv_t(n, dh, s, vc, dh, part + 2);
        }
#pragma omp for schedule(static)
        for (size_t bh = 0; bh < bhs; bh++) {
            const float *p0 = ws->decode + bh * nch * stride;
            float mx = -INFINITY, l = 0.0f;
            for (size_t c = 0; c < nch; c++)
                if (p0[c * stride] > mx)
                    mx = p0[c * stride];
            size_t b = bh / j->H, h = bh % j->H;
            float *o = j->ctx + b * j->H * dh + h * dh;
            memset(o, 0, dh * sizeof(float));
            if (mx == -INFINITY) {   // no finite score anywhere
                // An unblocked NaN score leaves its chunk l = NaN (see the
                // softmax contract): the row is NaN, not a silent zero.
                float lsum = 0.0f;
                for (size_t c = 0; c < nch; c++)
                    lsum += p0[c * stride + 1];
                if (lsum != lsum)
                    for (size_t d = 0; d < dh; d++)
                        o[d] = lsum;
                if (j->lse)
                    j->lse[bh] = lsum != lsum ? lsum : -INFINITY;
                continue;
            }
            for (size_t c = 0; c < nch; c++) {
                const float *p = p0 + c * stride;
                float w = expf(p[0] - mx);
                l += w * p[1];
                for (size_t d = 0; d < dh; d++)
                    o[d] += w * p[2 + d];
            }
            float inv = 1.0f / l;
            for (size_t d = 0; d < dh; d++)
                o[d] *= inv;
            if (j->lse)
                j->lse[bh] = mx + logf(l);
        }
        mhsa__fp_leave(fp);
    }
}
