// attention.c — FlashAttention-style forward and backward of one query block
// of one head, on the packed-GEMM micro-kernel and the online softmax.
//
// Forward (Milakov & Gimelshein 2018; Dao et al. 2022): for each key tile
//   S = Q K^T (q pre-scaled), then the online-softmax step rescales the
//   running output O and sum l by exp(m_old - m_new) and turns S into
//   P = exp(S - m_new); O += P V. At the end O /= l and lse = m + log l.
// No T x T buffer: S is one br x bc tile.
//
// Backward (FlashAttention-2): with P recomputed per tile from lse,
//   dP = dO V^T, dS = P * (dP - delta) with delta = rowsum(dO * O),
//   dV += P^T dO, dK += dS^T Q, dQ += scale * dS K.
//
// Blocked keys (causal, sliding window, padding or -INFINITY mask) are never
// read: whole tiles that no row of a block sees are skipped, the softmax
// kernels decide the rest before looking at a score, and when a head's K,
// V, Q or dO hold a non-finite value the products over keys switch to loops
// that skip blocked pairs, since 0 * NaN in a GEMM would leak a blocked
// key's NaN. Scores of keys (and queries) holding inf or NaN are made NaN
// before the softmax, so that a +inf among them is not taken for a score
// that overflowed (kernels.h): what a row reads propagates to it.
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "attention.h"
#include "tiles.h"
#include "gemm/gemm.h"
#include "gemm/round_bf16.h"
#include "kernels/log_f32.h"
#include "small_bwd.h"
#include "small_view.h"


static mhsa_mask_view mask_view(const head_args *a, size_t j0)
{
    mhsa_mask_view mv = { a->mask ? a->mask + j0 : NULL, a->ldmask,
                          a->q_pos, j0, a->causal, a->window, a->klen };
    return mv;
}

// The rule of kernels.h for one (row, key), for the scalar paths.
static int blocked(const head_args *a, size_t r, size_t j)
{
    mhsa_mask_view mv = mask_view(a, 0);
    size_t lo, hi;
    mhsa_mask_view_range(&mv, r, a->tk, &lo, &hi);
    if (j < lo || j >= hi)
        return 1;
    return a->mask && a->mask[r * a->ldmask + j] == -INFINITY;
}

// One past the last key any row of the block can see: under the causal
// mask none after the last row's position, and none in the padding.
static size_t key_end(const head_args *a)
{
    size_t end = a->tk;
    if (a->causal && a->q_pos + a->tq < end)   // one past the last row
        end = a->q_pos + a->tq;
    if (a->klen && a->klen < end)
        end = a->klen;
    return end;
}

// The first key tile any row of the block can see: with a sliding window
// the first row sees keys from mhsa_window_first on, and later rows fewer, so
// the tiles before are skipped (work O(T * W), not O(T^2)).
static size_t tile_start(const head_args *a, size_t bc)
{
    size_t lo = mhsa_window_first(a->q_pos, a->window);
    return lo ? lo / bc * bc : 0;   // no window: no division
}

// Rows [j0, j0 + n) of the head's K or V as fp32: the stored rows
// themselves, or 16-bit rows converted into `conv` (n x dh).
static const float *kv_rows(const mhsa_kernels *k, const head_args *a,
                            int is_v, size_t j0, size_t n, float *conv)
{
    if (a->kv_dtype == MHSA_F32)
        return (is_v ? a->v : a->k) + j0 * a->dh;
    const uint16_t *src = is_v ? a->v16 : a->k16;
    k->cvt_to_f32(n * a->dh, src + j0 * a->dh, a->kv_dtype, conv);
    return conv;
}

// The first row of x (rows x cols, ld) holding inf or NaN; rows if none.
static size_t first_bad_row(const mhsa_kernels *k, const float *x,
                            size_t rows, size_t cols, size_t ld)
{
    if (k->rows_finite(rows, cols, x, ld))   // the usual case, in one pass
        return rows;
    size_t r = 0;
    while (r < rows && k->rows_finite(1, cols, x + r * ld, ld))
        r++;
    return r;
}

// Scores of a tile (tq x n, lds) whose query row or key row holds inf or
// NaN become NaN: such a row reads a non-finite value, and a blocked key's
// score is never read anyway. qbad (tq) flags the rows, kbad is the first
// bad key of the tile (n if none).
static void nanify(const mhsa_kernels *k, const float *kt, size_t n,
                   size_t dh, size_t kbad, const float *qbad, size_t tq,
                   float *s, size_t lds)
{
    for (size_t r = 0; r < tq; r++)
        if (qbad[r] != 0.0f)
            for (size_t j = 0; j < n; j++)
                s[r * lds + j] = NAN;
    for (size_t j = kbad; j < n; j++)
        if (!k->rows_finite(1, dh, kt + j * dh, dh))
            for (size_t r = 0; r < tq; r++)
                s[r * lds + j] = NAN;
}

// The A side of a tile product: a block packed by mhsa_tile_pack_a
// (panels of mr rows at depth ld), or, where the table has sgemm_ukr_ra
// and the products are fp32, the rows themselves (row stride ld, times
// alpha) read in place by it. Q, dO, P and dS are each read by a few
// nr-column panels only (one for P V at dh <= nr), so their packing cost
// as much as the products they fed; the row-major tile gives the packed
// tile's bits (kernels.h), so which side a block takes never shows.
typedef struct a_side {
    const float *p;
    size_t ld;     // in place: row stride; packed: the panels' depth
    float alpha;   // in place: the factor the pack would have folded in
    int in_place;
} a_side;

// rows (m x depth, row stride ld) times alpha as an A side: in place, or
// packed into buf.
static a_side a_rows(const mhsa_kernels *k, const head_args *a, size_t m,
                     size_t depth, const float *rows, size_t ld,
                     float alpha, float *buf)
{
    if (a->compute == MHSA_F32 && mhsa_tile_has_ra(k)) {
        a_side s = { rows, ld, alpha, 1 };
        return s;
    }
    mhsa_tile_pack_a(k, m, depth, rows, ld, 0, alpha, a->compute, buf);
    a_side s = { buf, depth, 1.0f, 0 };
    return s;
}

// C (h x w, ldc) = beta * C + rows [i, i + h) of A at depth kd times the
// B panel bp: one micro-tile.
static void ukr(const mhsa_kernels *k, const a_side *A, size_t i, size_t kd,
                const float *bp, float *c, size_t ldc, size_t h, size_t w,
                float beta)
{
    if (A->in_place)
        k->sgemm_ukr_ra(kd, A->p + i * A->ld, A->ld, A->alpha, bp, c, ldc,
                        h, w, beta, NULL);
    else
        k->sgemm_ukr(kd, A->p + i * A->ld, bp, c, ldc, h, w, beta, NULL);
}

// C (m x n, ldc) = beta * C + A (m x kd) Bp: the whole block.
static void tile_gemm(const mhsa_kernels *k, const a_side *A, size_t m,
                      size_t n, size_t kd, const float *bp, float *c,
                      size_t ldc, float beta)
{
    if (A->in_place)
        mhsa_tile_gemm_ra(k, m, n, kd, A->p, A->ld, A->alpha, bp, c, ldc,
                          beta);
    else
        mhsa_tile_gemm(k, m, n, kd, A->p, bp, c, ldc, beta);
}

// On a tile that crosses the diagonal, S = Q K^T and O += P V run per
// panel of mr rows only over the keys that panel can see: with one block-
// wide key range, a block of br rows would spend br/T of the causal work
// (14% at br = 72, T = 512) on products the mask throws away. S columns a
// panel skips are blocked for all its rows, so the softmax never reads
// them (it writes their p = 0), and the P V sum over a panel stops where
// its p become zeros.
static void diag_scores(const mhsa_kernels *k, const head_args *a, size_t j0,
                        size_t n, const a_side *qa, const float *kb, float *s,
                        size_t lds)
{
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr, dh = a->dh;
    for (size_t i = 0; i < a->tq; i += mr) {
        size_t h = a->tq - i < mr ? a->tq - i : mr;
        size_t ni = mhsa__attn_panel_keys(a, j0, n, i + h);
        for (size_t j = 0; j < ni; j += nr) {
            size_t w = ni - j < nr ? ni - j : nr;
            ukr(k, qa, i, dh, kb + j * dh, s + i * lds + j, lds, h, w,
                0.0f);
        }
    }
}

// Rows [r0, r1) of C (ldc), dh wide, set to +0.
static void zero_rows(float *c, size_t ldc, size_t r0, size_t r1, size_t dh)
{
    for (size_t r = r0; r < r1; r++)
        memset(c + r * ldc, 0, dh * sizeof(float));
}

// C (tq x dh, ldc) = beta C + P V with P (tq x n: packed at depth n, or in
// place) and V packed as NR-column panels whose first n rows are used,
// panel j at vb + j * vdepth (vdepth >= n: a tile packed once for every
// query block holds all its keys, of which a causal block may use fewer):
// O += P V in the forward, dQ += dS K in the backward. diag: each mr-row
// panel stops at its last visible key (see diag_scores). beta is 0 or 1;
// 0 is the forward's first tile, whose O would be +0: the tile stores the
// sum itself, which gives +0 + sum's bits (a sum of products from +0 is
// never -0), and a panel that sees no key gets its +0 rows.
static void diag_pv(const mhsa_kernels *k, const head_args *a, size_t j0,
                    size_t n, int diag, const a_side *pa, const float *vb,
                    size_t vdepth, float *c, size_t ldc, float beta)
{
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr, dh = a->dh;
    for (size_t i = 0; i < a->tq; i += mr) {
        size_t h = a->tq - i < mr ? a->tq - i : mr;
        size_t ki = diag ? mhsa__attn_panel_keys(a, j0, n, i + h) : n;
        if (ki == 0) {
            if (beta == 0.0f)
                zero_rows(c, ldc, i, i + h, dh);
            continue;
        }
        for (size_t j = 0; j < dh; j += nr) {
            size_t w = dh - j < nr ? dh - j : nr;
            ukr(k, pa, i, ki, vb + j * vdepth, c + i * ldc + j, ldc, h, w,
                beta);
        }
    }
}

// C (n x dh, ldc) += P^T dO with P^T (n x tq) and dO (tq x dh) packed at
// depth tq (dV, and dK from dS^T Q): a panel of mr keys starts its sum at
// the first row that sees its first key; the rows before have p = 0 there,
// and leaving out a sum's leading +0 products changes no bits.
static void diag_keys(const mhsa_kernels *k, const head_args *a, size_t j0,
                      size_t n, const float *pa, const float *bp, float *c,
                      size_t ldc)
{
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr, dh = a->dh, tq = a->tq;
    for (size_t i = 0; i < n; i += mr) {
        size_t h = n - i < mr ? n - i : mr;
        size_t key = j0 + i;   // row r sees it when q_pos + r >= key
        size_t r0 = key > a->q_pos ? key - a->q_pos : 0;
        if (r0 >= tq)
            continue;
        for (size_t j = 0; j < dh; j += nr) {
            size_t w = dh - j < nr ? dh - j : nr;
            k->sgemm_ukr(tq - r0, pa + i * tq + r0 * mr, bp + j * tq + r0 * nr,
                         c + i * ldc + j, ldc, h, w, 1.0f, NULL);
        }
    }
}

// The n key rows c[0:n] (stride a->ldg) += src^T b: src is the (tq, n)
// tile at stride ld, packed into pa; b is the packed (tq, dh) panel. On a
// tile crossing the causal diagonal (diag) only the panels that see each
// other run (diag_keys).
static void keys_acc(const mhsa_kernels *k, const head_args *a, size_t j0,
                     size_t n, int diag, const float *src, size_t ld,
                     float *pa, const float *b, float *c)
{
    mhsa_tile_pack_a(k, n, a->tq, src, ld, 1, 1.0f, a->compute, pa);
    if (diag)
        diag_keys(k, a, j0, n, pa, b, c, a->ldg);
    else
        mhsa_tile_gemm(k, n, a->dh, a->tq, pa, b, c, a->ldg, 1.0f);
}

size_t mhsa__head_kpack_floats(const mhsa_kernels *k, size_t tk, size_t dh)
{
    return mhsa__attn_up(tk, (size_t)k->nr) * dh;   // bc is a multiple of nr
}

size_t mhsa__head_vpack_floats(const mhsa_kernels *k, size_t tk, size_t dh)
{
    return tk * mhsa__attn_up(dh, (size_t)k->nr);
}

void mhsa__head_pack_kv(const mhsa_kernels *k, size_t tk, size_t dh,
                        size_t tile, const void *kd, const void *vd,
                        mhsa_dtype dt, mhsa_dtype cdt, float *kpack,
                        float *vpack, float *tiles, float *vbad, float *kbad)
{
    size_t bc = mhsa__attn_bc(k), j0 = tile * bc;
    size_t n = tk - j0 < bc ? tk - j0 : bc;
    tile_views t = mhsa__attn_carve(k, dh, tiles);
    head_args a = { .dh = dh, .kv_dtype = dt, .k = kd, .v = vd,
                    .k16 = kd, .v16 = vd };
    const float *kt = kv_rows(k, &a, 0, j0, n, t.kc);
    const float *vt = kv_rows(k, &a, 1, j0, n, t.vc);
    mhsa_tile_pack_b(k, dh, n, kt, dh, 1, cdt, kpack + j0 * dh);
    mhsa_tile_pack_b(k, n, dh, vt, dh, 0, cdt,
                     vpack + j0 * mhsa__attn_up(dh, (size_t)k->nr));
    *vbad = (float)first_bad_row(k, vt, n, dh, dh);
    *kbad = (float)first_bad_row(k, kt, n, dh, dh);
}

void mhsa__head_forward(const mhsa_kernels *k, const head_args *a,
                        float *tiles)
{
    if (mhsa__head_forward_small(k, a))   // a small view, fused
        return;
    size_t tq = a->tq, dh = a->dh, bc = mhsa__attn_bc(k);
    size_t kend = key_end(a);
    tile_views t = mhsa__attn_carve(k, dh, tiles);

    a_side qa = a_rows(k, a, tq, dh, a->q, dh, 1.0f, t.qa);
    int q_ok = a->inputs_finite ||
               k->rows_finite(tq, dh, a->q, dh);   // the block in one pass
    // O is not zeroed here: the first tile's P V stores it (beta 0, the
    // bits of +0 + the sum, which is never -0), see diag_pv.
    for (size_t r = 0; r < tq; r++) {
        t.m[r] = -INFINITY;
        t.l[r] = 0.0f;
        t.delta[r] = !q_ok && !k->rows_finite(1, dh, a->q + r * dh, dh);
    }
    for (size_t j0 = tile_start(a, bc); j0 < kend; j0 += bc) {
        size_t n = kend - j0 < bc ? kend - j0 : bc;
        // Every row sees the whole tile, or the tile crosses the diagonal.
        int diag = mhsa__attn_panel_keys(a, j0, n, 1) < n;
        // S = Q K^T: K tile read transposed into NR-wide panels.
        const float *kb = t.kb, *kt = NULL;
        size_t kbad;
        if (a->kpack) {
            kb = a->kpack + j0 * dh;
            kbad = (size_t)a->kbad[j0 / bc];
        } else {
            kt = kv_rows(k, a, 0, j0, n, t.kc);
            mhsa_tile_pack_b(k, dh, n, kt, dh, 1, a->compute, t.kb);
            kbad = a->inputs_finite ? n : first_bad_row(k, kt, n, dh, dh);
        }
        if (diag)
            diag_scores(k, a, j0, n, &qa, kb, t.s, bc);
        else
            tile_gemm(k, &qa, tq, n, dh, kb, t.s, bc, 0.0f);
        if (!q_ok || kbad < n) {   // rare: inf/NaN in what rows read
            if (!kt)
                kt = kv_rows(k, a, 0, j0, n, t.kc);
            nanify(k, kt, n, dh, kbad, t.delta, tq, t.s, bc);
        }
        // s_room: the S tile's rows are bc wide whatever n is. On the
        // first tile O is +0, which any alpha in [0, 1] leaves +0: dv = 0
        // skips the rescale that cannot change a bit (a one-tile call's
        // only one).
        int first = j0 == tile_start(a, bc);
        mhsa_softmax_args sa = { tq, n, t.s, bc, mask_view(a, j0), t.m, t.l,
                                 a->o, a->ldo, first ? 0 : dh, bc };
        k->softmax_online(&sa);
        // Only V matters here: a non-finite K score is never read when
        // blocked and makes its row NaN when not, as it should; but a
        // blocked key's p = 0 times a NaN in V would leak into the GEMM.
        // (Checked once per head when its tiles were packed up front.)
        const float *vt = NULL;
        int v_ok;
        if (a->vbad) {
            v_ok = (size_t)a->vbad[j0 / bc] >= n;
        } else {
            vt = kv_rows(k, a, 1, j0, n, t.vc);
            v_ok = a->inputs_finite || k->rows_finite(n, dh, vt, dh);
        }
        if (v_ok) {   // O += P V
            a_side pa = a_rows(k, a, tq, n, t.s, bc, 1.0f, t.pa);
            const float *vb = t.vb;
            size_t vdepth = n;
            if (a->vpack) {   // packed with all the tile's keys
                vb = a->vpack + j0 * mhsa__attn_up(dh, (size_t)k->nr);
                vdepth = a->tk - j0 < bc ? a->tk - j0 : bc;
            } else {
                mhsa_tile_pack_b(k, n, dh, vt, dh, 0, a->compute, t.vb);
            }
            diag_pv(k, a, j0, n, diag, &pa, vb, vdepth, a->o, a->ldo,
                    first ? 0.0f : 1.0f);
        } else {      // a non-finite V: skip blocked pairs explicitly
            if (!vt)
                vt = kv_rows(k, a, 1, j0, n, t.vc);
            if (first)
                zero_rows(a->o, a->ldo, 0, tq, dh);
            for (size_t r = 0; r < tq; r++)
                for (size_t j = 0; j < n; j++) {
                    if (blocked(a, r, j0 + j))
                        continue;
                    float p = t.s[r * bc + j];
                    const float *vj = vt + j * dh;
                    float *o = a->o + r * a->ldo;
                    if (a->compute == MHSA_BF16) {   // as the GEMM would
                        p = mhsa__bf16_round(p);
                        for (size_t d = 0; d < dh; d++)
                            o[d] += p * mhsa__bf16_round(vj[d]);
                        continue;
                    }
                    for (size_t d = 0; d < dh; d++)
                        o[d] += p * vj[d];
                }
        }
    }
    for (size_t r = 0; r < tq; r++) {
        float *o = a->o + r * a->ldo;
        if (t.l[r] == 0.0f) {   // every key blocked: zero context, not NaN
            memset(o, 0, dh * sizeof(float));
            if (a->lse)
                a->lse[r] = -INFINITY;
            if (a->lsum)   // -inf + log(1) = -inf
                a->lsum[r] = 1.0f;
            continue;
        }
        // In place through the table's row op (one IEEE multiply an
        // element, as the loop it replaces): perf found that loop, 4 floats
        // a step in this generic file, a visible part of the GPT block's
        // forward (docs/performance.md, "Measurements behind the code").
        k->scale_copy(dh, o, o, 1.0f / t.l[r]);
        if (a->lsum) {   // the log-sum-exp when a backward asks for it
            a->lse[r] = t.m[r];
            a->lsum[r] = t.l[r];
        } else if (a->lse) {
            a->lse[r] = t.m[r] + mhsa_log_f32(t.l[r]);
        }
    }
}

void mhsa__head_weights(const mhsa_kernels *k, const head_args *a,
                        float *tiles)
{
    size_t tq = a->tq, dh = a->dh, bc = mhsa__attn_bc(k);
    tile_views t = mhsa__attn_carve(k, dh, tiles);
    mhsa_tile_pack_a(k, tq, dh, a->q, dh, 0, 1.0f, a->compute, t.qa);
    for (size_t r = 0; r < tq; r++)
        t.delta[r] = !k->rows_finite(1, dh, a->q + r * dh, dh);
    for (size_t j0 = 0; j0 < a->tk; j0 += bc) {
        size_t n = a->tk - j0 < bc ? a->tk - j0 : bc;
        const float *kt = kv_rows(k, a, 0, j0, n, t.kc);
        mhsa_tile_pack_b(k, dh, n, kt, dh, 1, a->compute, t.kb);
        mhsa_tile_gemm(k, tq, n, dh, t.qa, t.kb, a->attn + j0, a->ldattn,
                       0.0f);
        nanify(k, kt, n, dh, first_bad_row(k, kt, n, dh, dh), t.delta, tq,
               a->attn + j0, a->ldattn);
    }
    for (size_t r = 0; r < tq; r++) {
        float *w = a->attn + r * a->ldattn;
        for (size_t j = 0; j < a->tk; j++) {
            if (blocked(a, r, j))
                w[j] = -INFINITY;
            else if (a->mask)
                w[j] += a->mask[r * a->ldmask + j];
        }
        k->softmax_row(a->tk, w, w);
        // A row that read a NaN (or +inf) is normalised by a NaN sum, and
        // 0 * NaN would make its blocked weights NaN too: they stay +0.
        if (!k->rows_finite(1, a->tk, w, a->tk))
            for (size_t j = 0; j < a->tk; j++)
                if (blocked(a, r, j))
                    w[j] = 0.0f;
    }
}

// One unblocked (row, key) pair of backward_safe with compute dtype BF16:
// each product of operands rounded as the tile GEMMs round them (dQ's
// operand is bf16(scale * dS), alpha folded in before rounding).
static void bf16_safe_pair(const head_args *a, float pr, float dsr,
                           const float *q, const float *dout,
                           const float *kj, float *dv, float *dk, float *dq)
{
    float p = mhsa__bf16_round(pr), ds = mhsa__bf16_round(dsr);
    float dss = mhsa__bf16_round(a->scale * dsr);
    for (size_t d = 0; d < a->dh && !a->skip_dkv; d++) {
        dv[d] += p * mhsa__bf16_round(dout[d]);
        dk[d] += ds * mhsa__bf16_round(q[d]);
    }
    for (size_t d = 0; d < a->dh && !a->skip_dq; d++)
        dq[d] += dss * mhsa__bf16_round(kj[d]);
}

// dst (rows x dh, ld) += scalar loops over unblocked (r, j) pairs; used when
// a head holds non-finite values (see the file comment).
static void backward_safe(const head_args *a, size_t j0, size_t n,
                          const float *p, const float *ds, size_t ld)
{
    int do_q = !a->skip_dq, do_kv = !a->skip_dkv;
    size_t dh = a->dh;
    for (size_t r = 0; r < a->tq; r++)
        for (size_t j = 0; j < n; j++) {
            if (blocked(a, r, j0 + j))
                continue;
            float pr = p[r * ld + j], dsr = ds[r * ld + j];
            const float *q = a->q + r * dh, *dout = a->dout + r * a->lddo;
            const float *kj = a->k + (j0 + j) * dh;
            float *dv = a->dv + (j0 + j) * a->ldg;
            float *dk = a->dk + (j0 + j) * a->ldg;
            float *dq = a->dq + r * a->ldg;
            if (a->compute == MHSA_BF16) {   // the GEMMs' rounded operands
                bf16_safe_pair(a, pr, dsr, q, dout, kj, dv, dk, dq);
                continue;
            }
            for (size_t d = 0; d < dh && do_kv; d++) {
                dv[d] += pr * dout[d];
                dk[d] += dsr * q[d];
            }
            for (size_t d = 0; d < dh && do_q; d++)
                dq[d] += a->scale * (dsr * kj[d]);
        }
}

// For rows whose forward max score was +inf (lse == +inf, kernels.h):
// infw[r] = 1 / the number of their unblocked +inf scores, counted on the
// same scores the tiles below recompute. Returns 0 (infw unused) when no
// row of the block has lse == +inf, the usual case.
static int inf_weights(const mhsa_kernels *k, const head_args *a,
                       const tile_views *t, const a_side *qa, size_t kend)
{
    size_t tq = a->tq, dh = a->dh, bc = mhsa__attn_bc(k);
    int any = 0;
    for (size_t r = 0; r < tq; r++) {
        t->infw[r] = 0.0f;
        any |= a->lse[r] == INFINITY;
    }
    if (!any)
        return 0;
    for (size_t j0 = tile_start(a, bc); j0 < kend; j0 += bc) {
        size_t n = kend - j0 < bc ? kend - j0 : bc;
        mhsa_tile_pack_b(k, dh, n, a->k + j0 * dh, dh, 1, a->compute,
                         t->kb);
        tile_gemm(k, qa, tq, n, dh, t->kb, t->s, bc, 0.0f);
        for (size_t r = 0; r < tq; r++) {
            if (a->lse[r] != INFINITY)
                continue;
            for (size_t j = 0; j < n; j++) {
                if (blocked(a, r, j0 + j))
                    continue;
                float x = t->s[r * bc + j];
                if (a->mask)
                    x += a->mask[r * a->ldmask + j0 + j];
                t->infw[r] += x == INFINITY;   // a count, for now
            }
        }
    }
    for (size_t r = 0; r < tq; r++)
        if (a->lse[r] == INFINITY)
            t->infw[r] = 1.0f / t->infw[r];
    return 1;
}

// Whether the block's K and V rows from its first tile to kend, its Q and
// its dO are all finite (known, or checked here).
static int block_finite(const mhsa_kernels *k, const head_args *a,
                        size_t kend, size_t bc)
{
    size_t tq = a->tq, dh = a->dh;
    size_t k0 = tile_start(a, bc) < kend ? tile_start(a, bc) : kend;
    return a->inputs_finite ||
           (k->rows_finite(kend - k0, dh, a->k + k0 * dh, dh) &&
            k->rows_finite(kend - k0, dh, a->v + k0 * dh, dh) &&
            k->rows_finite(tq, dh, a->q, dh) &&
            k->rows_finite(tq, dh, a->dout, a->lddo));
}

void mhsa__head_backward(const mhsa_kernels *k, const head_args *a,
                         float *tiles)
{
    size_t tq = a->tq, dh = a->dh, bc = mhsa__attn_bc(k);
    size_t kend = key_end(a);
    int safe = block_finite(k, a, kend, bc);

    for (size_t r = 0; r < tq && !a->skip_dq && !a->dq_zeroed; r++)
        memset(a->dq + r * a->ldg, 0, dh * sizeof(float));
    size_t jend = a->key1 && a->key1 < kend ? a->key1 : kend;
    size_t jstart = tile_start(a, bc) > a->key0 ? tile_start(a, bc) : a->key0;
    // One small tile (it takes delta = rowsum(dO * O) itself), or the
    // tiles below with delta first, O the forward's normalised output.
    if (mhsa__head_backward_small(k, a, safe, jstart, jend, kend, bc,
                                  tiles))
        return;
    tile_views t = mhsa__attn_carve(k, dh, tiles);
    mhsa__attn_deltas(a, t.delta);
    a_side qa = a_rows(k, a, tq, dh, a->q, dh, 1.0f, t.qa);
    a_side da = a_rows(k, a, tq, dh, a->dout, a->lddo, 1.0f, t.da);
    const float *infw = inf_weights(k, a, &t, &qa, kend) ? t.infw : NULL;
    if (!a->skip_dkv) {
        mhsa_tile_pack_b(k, tq, dh, a->q, dh, 0, a->compute, t.qb);
        mhsa_tile_pack_b(k, tq, dh, a->dout, a->lddo, 0, a->compute, t.db);
    }

    // Each tile's products are the same whichever part a call computes, so
    // splitting a head into a dk/dv pass and a dq pass keeps the bits.
    for (size_t j0 = jstart; j0 < jend; j0 += bc) {
        size_t n = kend - j0 < bc ? kend - j0 : bc;
        const float *kt = a->k + j0 * dh, *vt = a->v + j0 * dh;
        // On a tile crossing the causal diagonal every product below runs
        // only over the (row, key) panels that see each other (see
        // diag_scores); the softmax gradient never reads the rest.
        int diag = safe && mhsa__attn_panel_keys(a, j0, n, 1) < n;
        mhsa_tile_pack_b(k, dh, n, kt, dh, 1, a->compute, t.kb);     // K^T
        mhsa_tile_pack_b(k, dh, n, vt, dh, 1, a->compute, t.vb);     // V^T
        if (diag) {
            diag_scores(k, a, j0, n, &qa, t.kb, t.s, bc);
            diag_scores(k, a, j0, n, &da, t.vb, t.dp, bc);
        } else {
            tile_gemm(k, &qa, tq, n, dh, t.kb, t.s, bc, 0.0f);
            tile_gemm(k, &da, tq, n, dh, t.vb, t.dp, bc, 0.0f);
        }
        mhsa_softmax_grad_args ga = { tq, n, t.s, bc, t.dp, bc,
                                      mask_view(a, j0), a->lse, t.delta,
                                      infw };
        k->softmax_grad(&ga);   // s = P, dp = dS
        if (!safe) {
            backward_safe(a, j0, n, t.s, t.dp, bc);
            continue;
        }
        if (!a->skip_dkv) {
            // dV[j0:j0+n] += P^T dO, dK[j0:j0+n] += dS^T Q
            keys_acc(k, a, j0, n, diag, t.s, bc, t.pa, t.db,
                     a->dv + j0 * a->ldg);
            keys_acc(k, a, j0, n, diag, t.dp, bc, t.pa, t.qb,
                     a->dk + j0 * a->ldg);
        }
        if (a->skip_dq)
            continue;
        // dQ += scale * dS K
        a_side dsa = a_rows(k, a, tq, n, t.dp, bc, a->scale, t.pa);
        mhsa_tile_pack_b(k, n, dh, kt, dh, 0, a->compute, t.kb);     // K
        if (diag)
            diag_pv(k, a, j0, n, 1, &dsa, t.kb, n, a->dq, a->ldg, 1.0f);
        else
            tile_gemm(k, &dsa, tq, dh, n, t.kb, a->dq, a->ldg, 1.0f);
    }
}

void mhsa__heads_backward(const mhsa_kernels *k, const head_args *a,
                          size_t nh, float *tiles)
{
    size_t bc = mhsa__attn_bc(k), kend = key_end(a);
    size_t jend = a->key1 && a->key1 < kend ? a->key1 : kend;
    size_t jstart = tile_start(a, bc) > a->key0 ? tile_start(a, bc) : a->key0;
    int safe = k->attn_small_heads_bwd != NULL;
    for (size_t hh = 0; safe && hh < nh; hh++) {
        safe = block_finite(k, &a[hh], kend, bc);
        for (size_t r = 0; r < a->tq && !a->skip_dq && !a->dq_zeroed; r++)
            memset(a[hh].dq + r * a->ldg, 0, a->dh * sizeof(float));
    }
    if (safe && mhsa__heads_backward_small(k, a, nh, jstart, jend, kend, bc))
        return;
    for (size_t hh = 0; hh < nh; hh++)
        mhsa__head_backward(k, &a[hh], tiles);
}
