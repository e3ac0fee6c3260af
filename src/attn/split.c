// split.c — the split of the QKV projection into heads, with the rotary
// position embedding and the KV cache's storage type (split.h).
//
// RoPE (Su et al. 2021, "RoFormer"): pair (u, v) of a head vector at
// position p, i < R/2, angle a = p * theta^(-2i/R) from the block's tables:
//   (u, v) -> (u cos a - v sin a, u sin a + v cos a),
// pairs (x[i], x[i + R/2]) (GPT-NeoX, Hugging Face) or (x[2i], x[2i+1])
// (GPT-J, Meta). The rotation is orthogonal, so its gradient is R^T.
// Plain fp32 arithmetic without contraction: the same bits on every ISA.
#include <math.h>
#include <omp.h>
#include <string.h>

#include "core/threads.h"
#include "permute.h"
#include "split.h"

// dst (dh) = scale * R(p) src; features past R are only scaled. cs and sn
// are the tables' row for position p.
static void rope_row(const head_layout *lay, const float *cs, const float *sn,
                     const float *src, float *dst, float scale)
{
    size_t half = lay->rope_half, dh = lay->dh;
    if (lay->rope_interleaved) {
        for (size_t i = 0; i < half; i++) {
            float u = src[2 * i], v = src[2 * i + 1];
            dst[2 * i] = (u * cs[i] - v * sn[i]) * scale;
            dst[2 * i + 1] = (u * sn[i] + v * cs[i]) * scale;
        }
    } else {
        for (size_t i = 0; i < half; i++) {
            float u = src[i], v = src[i + half];
            dst[i] = (u * cs[i] - v * sn[i]) * scale;
            dst[i + half] = (u * sn[i] + v * cs[i]) * scale;
        }
    }
    for (size_t i = 2 * half; i < dh; i++)
        dst[i] = scale * src[i];
}

// src (dh) -> dst row of the storage type, through tmp when it rotates
// or converts.
static void store_row(const mhsa_kernels *k, const head_layout *lay,
                      size_t p, const float *src, void *dst, mhsa_dtype dt,
                      int rotate, float *tmp)
{
    size_t dh = lay->dh, half = lay->rope_half;
    const float *row = src;
    if (rotate) {
        float *out = dt == MHSA_F32 ? dst : tmp;
        rope_row(lay, lay->rope_cos + p * half, lay->rope_sin + p * half,
                 src, out, 1.0f);
        row = out;
    }
    if (dt != MHSA_F32)
        k->cvt_from_f32(dh, row, dst, dt);
    else if (row != dst)
        memcpy(dst, row, dh * sizeof(float));
}

// One sequence's first `rows` rows, rotated or converted: q (H heads) and
// k, v (Hkv heads) at positions p0 + r (the plain split is plain_head).
static void split_seq(const mhsa_kernels *k, const head_layout *lay,
                      const split_args *a, size_t b, size_t p0, size_t rows)
{
    size_t H = lay->H, Hkv = lay->Hkv, dh = lay->dh, D = lay->D;
    size_t nqkv = lay->nqkv, t = a->t, es = mhsa_dtype_size(a->dt);
    float scale = 1.0f / sqrtf((float)dh);
    const float *src = a->qkv + b * t * nqkv;
    float *q = a->q + b * H * t * dh;
    char *kd = (char *)a->k + (b * Hkv * a->kv_t + p0) * dh * es;
    char *vd = (char *)a->v + (b * Hkv * a->kv_t + p0) * dh * es;
    // Rows past `rows` are not tokens of the sequence (ragged cached
    // calls): nothing reads their q, and their positions may lie past the
    // rotation tables.
    size_t half = lay->rope_half;
    for (size_t r = 0; r < rows; r++) {
        const float *row = src + r * nqkv;
        size_t p = p0 + r;
        for (size_t h = 0; h < H; h++) {
            float *dst = q + (h * t + r) * dh;
            if (half)
                rope_row(lay, lay->rope_cos + p * half,
                         lay->rope_sin + p * half, row + h * dh, dst, scale);
            else
                for (size_t i = 0; i < dh; i++)
                    dst[i] = scale * row[h * dh + i];
        }
        for (size_t h = 0; h < Hkv; h++) {
            size_t off = (h * a->kv_t + r) * dh * es;
            store_row(k, lay, p, row + D + h * dh, kd + off, a->dt, half != 0,
                      a->tmp);
            store_row(k, lay, p, row + D + (Hkv + h) * dh, vd + off, a->dt, 0,
                      a->tmp);
        }
    }
}

// Part `part` (0 q, 1 k, 2 v) of the plain split (no rotation, fp32
// storage) for heads [h0, h0 + nh) of the nb sequences from b0, which
// share their first position p0 and row count `rows`: one strided copy.
// q takes all t rows, scaled by 1 / sqrt(dh); k and v their `rows` rows
// at positions p0 ...
static void plain_part(const mhsa_kernels *k, const head_layout *lay,
                       const split_args *a, size_t b0, size_t nb, int part,
                       size_t h0, size_t nh, size_t p0, size_t rows)
{
    size_t H = lay->H, Hkv = lay->Hkv, dh = lay->dh, D = lay->D;
    size_t nqkv = lay->nqkv, t = a->t, kv_t = a->kv_t;
    const float *src = a->qkv + b0 * t * nqkv;
    mhsa_permute_args p;
    if (part == 0) {
        p = (mhsa_permute_args){ nb, nh, t, dh,
                                 src + h0 * dh, t * nqkv, dh, nqkv,
                                 a->q + (b0 * H + h0) * t * dh, H * t * dh,
                                 t * dh, dh, 1.0f / sqrtf((float)dh) };
    } else {
        float *dst = (float *)(part == 2 ? a->v : a->k);
        p = (mhsa_permute_args){
            nb, nh, rows, dh,
            src + D + ((part == 2 ? Hkv : 0) + h0) * dh, t * nqkv, dh, nqkv,
            dst + ((b0 * Hkv + h0) * kv_t + p0) * dh, Hkv * kv_t * dh,
            kv_t * dh, dh, 1.0f };
    }
    mhsa__permute_4d(k, &p);
}

// Head copy u of the plain split, a team's unit: sequence u / (H + 2 Hkv),
// then its q heads, k heads and v heads in turn.
static void plain_head(const mhsa_kernels *k, const head_layout *lay,
                       const split_args *a, size_t u)
{
    size_t H = lay->H, Hkv = lay->Hkv, per = H + 2 * Hkv;
    size_t b = u / per, h = u % per;
    int part = h < H ? 0 : h < H + Hkv ? 1 : 2;
    size_t head = part == 0 ? h : part == 1 ? h - H : h - H - Hkv;
    plain_part(k, lay, a, b, 1, part, head, 1,
               a->pos ? a->pos[b] : a->pos0,
               a->rows ? (size_t)a->rows[b] : a->t);
}

// The plain split of the nb sequences from b0 (sharing p0 and rows) on the
// calling thread: q's, k's and v's heads each in one loop nest over every
// head and sequence, without a call and two divisions per head as
// plain_head (a tiny forward's split made 96).
static void plain_seqs(const mhsa_kernels *k, const head_layout *lay,
                       const split_args *a, size_t b0, size_t nb, size_t p0,
                       size_t rows)
{
    plain_part(k, lay, a, b0, nb, 0, 0, lay->H, p0, rows);
    plain_part(k, lay, a, b0, nb, 1, 0, lay->Hkv, p0, rows);
    plain_part(k, lay, a, b0, nb, 2, 0, lay->Hkv, p0, rows);
}

// The plain split on the calling thread: all sequences in one plain_seqs
// when they share position and length (a forward), else one at a time.
static void plain_serial(const mhsa_kernels *k, const head_layout *lay,
                         const split_args *a)
{
    if (!a->pos && !a->rows) {
        plain_seqs(k, lay, a, 0, a->batch, a->pos0, a->t);
        return;
    }
    for (size_t b = 0; b < a->batch; b++)
        plain_seqs(k, lay, a, b, 1, a->pos ? a->pos[b] : a->pos0,
                   a->rows ? (size_t)a->rows[b] : a->t);
}

typedef struct plain_ctx {
    const mhsa_kernels *k;
    const head_layout *lay;
    const split_args *a;
    size_t units;
} plain_ctx;

// The plain split's head copies, shared by the team (mhsa__team_run).
static void plain_body(void *p)
{
    const plain_ctx *c = p;
#pragma omp for schedule(static)
    for (size_t u = 0; u < c->units; u++)
        plain_head(c->k, c->lay, c->a, u);
}

void mhsa__split_heads(const mhsa_kernels *k, const head_layout *lay,
                       const split_args *a)
{
    if (!lay->rope_half && a->dt == MHSA_F32) {
        // The plain split is batch * (H + 2 Hkv) independent head copies,
        // a pass over the whole projection bound by memory: run on one
        // thread it was a serial section between the parallel GEMM and
        // attention. A copy's bits do not depend on which
        // thread makes it.
        size_t units = a->batch * (lay->H + 2 * lay->Hkv);
        double work = (double)a->batch * (double)a->t * (double)lay->nqkv;
        int nt = mhsa__threads(omp_get_max_threads(), work, units);
        if (nt <= 1) {
            plain_serial(k, lay, a);
            return;
        }
        plain_ctx c = { k, lay, a, units };
        mhsa__team_run(nt, plain_body, &c);
        return;
    }
    for (size_t b = 0; b < a->batch; b++) {
        size_t p0 = a->pos ? a->pos[b] : a->pos0;
        size_t rows = a->rows ? (size_t)a->rows[b] : a->t;
        split_seq(k, lay, a, b, p0, rows);
    }
}

// (du, dv) -> R(p)^T (du, dv) = (du cos a + dv sin a, -du sin a + dv cos a)
static void rope_back_row(const head_layout *lay, size_t p, float *g)
{
    size_t half = lay->rope_half;
    const float *cs = lay->rope_cos + p * half, *sn = lay->rope_sin + p * half;
    size_t step = lay->rope_interleaved ? 2 : 1;
    size_t other = lay->rope_interleaved ? 1 : half;
    for (size_t i = 0; i < half; i++) {
        float *u = g + i * step, *v = u + other;
        float du = *u, dv = *v;
        *u = du * cs[i] + dv * sn[i];
        *v = dv * cs[i] - du * sn[i];
    }
}

void mhsa__rope_backward(const head_layout *lay, size_t batch, size_t t,
                         float *dqkv)
{
    if (!lay->rope_half)
        return;
    size_t heads = lay->H + lay->Hkv, dh = lay->dh;   // q's, then k's
    for (size_t b = 0; b < batch; b++)
        for (size_t r = 0; r < t; r++) {
            float *row = dqkv + (b * t + r) * lay->nqkv;
            for (size_t h = 0; h < heads; h++)
                rope_back_row(lay, r, row + h * dh);
        }
}
