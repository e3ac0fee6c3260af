// kernels.h — the kernel table and the written contract of every kernel.
//
// One table per ISA (src/<isa>/table.c). Every kernel is a single-threaded
// pure function: no OpenMP, no malloc, no globals, no error paths. Strides are
// in elements. A kernel reads and writes exactly the elements its arguments
// describe: never past n of caller memory (tails are masked or scalar), and
// no alignment beyond float's is assumed.
//
// Kernels run in the library's floating-point state (fpenv.h): round to
// nearest, subnormals are zero (x86 FTZ+DAZ, AArch64 FPCR.FZ). So an fp32
// subnormal operand counts as a zero of its sign and no fp32 arithmetic
// result is subnormal: the exp of every ISA gives +0 below ln(FLT_MIN)
// (its 2^n scaling multiplies under FTZ), online-softmax rescaling factors
// that would be subnormal are 0, and so are products that would be. The
// kernel tests call kernels in the default state as well; both agree
// wherever no subnormal is involved.
//
// Six families:
//  1. packed GEMM: pack_a / pack_b into micro-panels, sgemm_ukr on one tile
//     (BLIS: the loops, blocking and threads live once in src/gemm/gemm.c);
//  2. softmax: the masked online-softmax update of one block of score rows
//     (Milakov & Gimelshein 2018, "Online normalizer calculation for
//     softmax"; FlashAttention), its backward, and a plain whole-row softmax;
//  3. scale_copy: one contiguous row copied with a scale, the row of the
//     strided 4-D copy (src/attn/permute.c) that splits the QKV projection
//     into heads and merges heads back;
//  4. gemv: one-row products, and the decode products over K/V rows stored
//     in the KV cache's dtype (fp32, f16 or bf16), converted in registers;
//  5. conversions between fp32 and the cache's 16-bit storage types;
//  6. optional bf16 GEMM tile sets (AMX, AVX512-BF16) for bf16 compute:
//     packers to bf16 panels and a micro-kernel, run by gemm/gemm_bf16.c.
// 16-bit weights (mhsa_config.weight_dtype): a decoding step's W x over
// F16 / BF16 rows is gemv_n16 (it reads the 16-bit rows, 2 bytes an
// element, widened in registers, as several long sequential streams of
// whole rows, kernels/gemv_plan.h, where kv_dot's blocks are made for
// short cache rows); a few rows (a short prompt) read W once through
// kv_dot (gemm.h, mhsa_gemv_rows_16m); and for more rows the GEMM widens
// a 16-bit B with cvt_to_f32 into a slab in L1 that
// pack_b packs from (gemm/pack_b16.c), so sgemm_ukr reads fp32 panels
// only inside the cache-sized KC block, as for fp32 B.
#ifndef MHSA_KERNELS_H
#define MHSA_KERNELS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "mhsa.h"
#include "kernels/quant.h"

// ---- softmax ------------------------------------------------------------

// Which keys a query row may see. Key j (absolute position k0 + j) is blocked
// for query row r (absolute position q = q0 + r) when
//   causal && k0 + j > q               (the causal mask),
//   window && k0 + j + window <= q     (outside a sliding window of W keys),
//   klen && k0 + j >= klen             (key padding: the sequence's length),
//   or mask && mask[r*ldmask + j] == -INFINITY.
// So row r sees at most the keys [lo, hi) that mhsa_mask_view_range gives,
// minus the -INFINITY mask entries. A blocked key's score is never read (it
// may hold NaN) and its weight is an exact +0.0f. Any finite mask value,
// however negative, is added like any other. The mask pointer is already
// offset to (row q0, key k0). window and klen are 0 when unused.
typedef struct mhsa_mask_view {
    const float *mask;   // additive (rows, ldmask) or NULL
    size_t ldmask;
    size_t q0, k0;       // absolute positions of row 0 and key 0
    int causal;
    size_t window;       // 0: no window; else W (see above)
    size_t klen;         // 0: no padding; else keys >= klen are blocked
} mhsa_mask_view;

// The first key position a row at position q sees under a sliding window of
// W keys (window 0: none, key 0): the window rule, written once here for the
// kernels and the drivers (attn/view.h) alike.
static inline size_t mhsa_window_first(size_t q, size_t window)
{
    return window && q + 1 > window ? q + 1 - window : 0;
}

// Keys [*lo, *hi) (0 <= lo <= hi <= n) of a tile of n keys that row r may
// see by position (causal, window, klen); the mask may block more of them.
// Plain C, shared by every ISA's kernels and the drivers so that all apply
// one rule.
static inline void mhsa_mask_view_range(const mhsa_mask_view *mv, size_t r,
                                        size_t n, size_t *lo, size_t *hi)
{
    size_t q = mv->q0 + r, k0 = mv->k0;
    size_t end = k0 + n;                       // one past the last key
    if (mv->causal && q + 1 < end)
        end = q + 1;
    if (mv->klen && mv->klen < end)
        end = mv->klen;
    size_t start = mhsa_window_first(q, mv->window);
    if (start < k0)
        start = k0;
    *hi = end > k0 ? end - k0 : 0;
    *lo = start - k0 < *hi ? start - k0 : *hi;
}

// mhsa_mask_view_range without a window for the rows r < 16 of a tile at
// once (the small backward kernels): lo = 0 and hi = max(0, min(*e, *c +
// r)), with *e = min(n, klen - k0) and *c = q0 + 1 - k0 under the causal
// mask, clamped to [-16, 17], past which it decides nothing for r < 16
// (17 without it). Small integers, exact as floats for the lanes.
static inline void mhsa_mask_view_hi16(const mhsa_mask_view *mv, size_t n,
                                       float *e, float *c)
{
    size_t k0 = mv->k0, end = k0 + n;
    if (mv->klen && mv->klen < end)
        end = mv->klen;
    *e = end > k0 ? (float)(end - k0) : 0.0f;
    *c = 17.0f;
    if (mv->causal)
        *c = mv->q0 + 17 < k0       ? -16.0f
             : mv->q0 + 1 > k0 + 17 ? 17.0f
                                     : (float)(mv->q0 + 17 - k0) - 16.0f;
}

// Scores that overflow. A score of +INFINITY from finite inputs is the
// limit of a key that outweighs all others: a row whose largest unblocked
// score is +INFINITY shares its weight equally among its +INFINITY keys,
// and every other key gets 0 (never exp(inf - inf) = NaN). A row whose
// every unblocked score is -INFINITY is treated like a fully blocked row.
// Non-finite inputs are not scores that overflow: a +INFINITY (or NaN)
// mask entry of an unblocked key makes its score NaN, and so the row NaN
// (inf in what a row reads propagates); the drivers turn the scores of
// keys and queries holding inf or NaN into NaN before the kernels see them.

// One online-softmax step over a tile of n keys for `rows` query rows.
// In:  s (rows, lds) raw scores (already scaled); running max m and sum l per
//      row (m = -INFINITY, l = 0 before the first tile); o (rows, ldo) the
//      unnormalised output accumulator, dv columns wide.
// Out: s overwritten with p = exp(s + mask - m_new) (exact 0 where blocked);
//      m = m_new = max(m_old, max unblocked s + mask);
//      o *= alpha and l = l * alpha + sum(p), alpha = exp(m_old - m_new).
// A row with no unblocked key so far keeps m = -INFINITY, l = 0, o untouched
// and gets p = 0 (never NaN). NaN in an unblocked score makes that row NaN.
// When m_new is +INFINITY: p = 1 for the +INFINITY scores and 0 for the
// others (NaN scores stay NaN), and alpha = 1 if m_old is +INFINITY too,
// else 0 (so l counts the row's +INFINITY keys).
// s_room: 0, or a column count n <= s_room <= lds up to which each row of
// s may be written: a kernel may then store whole vectors of p past n,
// whose lanes there are +0 (masked stores are slow on AMD cores). The
// values in [0, n), m, l and o are the same either way.
typedef struct mhsa_softmax_args {
    size_t rows, n;
    float *s;  size_t lds;
    mhsa_mask_view mv;
    float *m, *l;        // (rows)
    float *o;  size_t ldo, dv;
    size_t s_room;
} mhsa_softmax_args;

// Backward of softmax, one tile, with p recomputed from the saved
// log-sum-exp: p = exp(s + mask - lse) (exact 0 where blocked, and the whole
// row 0 when lse == -INFINITY); ds = p * (dp - delta).
// A row with lse == +INFINITY (its forward had +INFINITY scores, see above)
// takes p = inf_w[r] for its +INFINITY scores and 0 for the others.
// In:  s (rows, lds) raw scaled scores; dp (rows, lddp) = dO V^T;
//      lse, delta (rows) with delta = rowsum(dO * O); inf_w (rows) the
//      weight of one +INFINITY key (1 / their count) for rows whose lse is
//      +INFINITY, or NULL when no row's lse is +INFINITY.
// Out: s overwritten with p; dp overwritten with ds (exact 0 where blocked).
typedef struct mhsa_softmax_grad_args {
    size_t rows, n;
    float *s;  size_t lds;
    float *dp; size_t lddp;
    mhsa_mask_view mv;
    const float *lse, *delta;
    const float *inf_w;
} mhsa_softmax_grad_args;

// ---- the whole attention of a small view ---------------------------------

// One head's forward over one tile of n keys (keys [0, n), already cut to
// the last key any row sees) for tq query rows, fused: S = Q K^T, the
// online softmax from m = -INFINITY, l = 0, and O = P V / l, kept in
// registers and read straight from the unpacked rows (attn/small_view.c).
// It must give the bits the table's tiled path gives for the same view
// (attention.c: S by sgemm_ukr's chain over dh from +0, softmax_online on
// the one tile, O = +0 + sgemm_ukr's chain over the keys the row's panel
// of mr rows can see, then O *= 1 / l; a row with l == 0 gets O = +0),
// and declines whatever it cannot match: it returns 0, maybe having
// written o, m and l, when the view is too large for it or when a score,
// a masked score or an output is not finite (NaN and inf inputs, scores
// that overflow), and the caller then runs the tiled path, which writes
// every output again. A row whose keys are all blocked is handled here
// (m = -INFINITY, l = 0, O = +0).
// q, k and v may also be read in place in the QKV projection's rows
// (forward.c's unsplit small forward): rows ldq / ldkv apart, and q
// multiplied by qscale on load, fl(qscale * q), the split's rounding.
typedef struct mhsa_attn_small_args {
    size_t tq, n, dh;
    const float *q;          // (tq, dh), rows ldq apart
    const float *k, *v;      // (n, dh), rows ldkv apart
    size_t ldq, ldkv;        // 0: dh
    float qscale;            // 0: q is pre-scaled
    mhsa_mask_view mv;       // k0 = 0; mask (tq, ldmask) or NULL
    float *o;  size_t ldo;   // (tq, dh) out
    float *m, *l;            // (tq) out: each row's max and sum
} mhsa_attn_small_args;

// The same forward for nh <= 4 views at once that differ only in the head:
// view hh (< nh) is the mhsa_attn_small_args view with q + hh * dh, k[hh],
// v[hh], o + hh * dh, m + hh * ldml and l + hh * ldml, and everything else
// as given (no mask: mv.mask is NULL). A table's kernel may take only some
// of these (its own sizes; avx512: dh 8); it returns 1 having written
// every view's outputs with the bits attn_small gives them, or 0 (maybe
// having written some), and the caller then runs the views one by one.
typedef struct mhsa_attn_heads_args {
    size_t nh, tq, n, dh;
    const float *q;             // head hh: (tq, dh) at q + hh * dh, ld ldq
    const float *k[4], *v[4];   // head hh: (n, dh), rows ldkv apart
    size_t ldq, ldkv;           // 0: nh * dh (q), dh (k, v)
    float qscale;               // 0: q is pre-scaled
    mhsa_mask_view mv;          // k0 = 0, mask NULL
    float *o;  size_t ldo;      // head hh: (tq, dh) at o + hh * dh
    float *m, *l;  size_t ldml; // head hh: (tq) at m + hh * ldml, l + ...
} mhsa_attn_heads_args;

// ---- small attention backward ---------------------------------------------

// The products of one attention-backward tile small enough to skip packing
// (tq and n keys <= MHSA_SMALL_BWD_MAX, dh <= MHSA_SMALL_BWD_MAX, fp32
// operands), for the drivers of attn/attention.c: they give the bits of the
// packed-GEMM path of the same table exactly. Every sum below starts at +0
// and adds its products in the order given, each one rounded as that
// table's sgemm_ukr rounds it (one FMA where its ukr uses FMA, else a
// product then a sum), and a sum is added to its destination last (the
// ukr's beta == 1: dst + sum).
// small_bwd_scores: s[r*lds + j] = sum over d < dh of q[r][d] * k[j][d] and
//   dp[r*lddp + j] = sum over d of dout[r][d] * v[j][d], r < tq, j < n;
//   rows of s and dp have room for MHSA_SMALL_BWD_MAX columns (lds, lddp
//   >= it), and columns n.. of that room are overwritten with scratch.
// small_bwd_grads, with p = s and ds = dp after softmax_grad:
//   if do_dkv, for each key j with r0[j] < tq:
//     dv[j] += sum over r in [r0[j], tq) of p[r][j] * dout[r]
//     dk[j] += sum over r in [r0[j], tq) of ds[r][j] * q[r]
//   if do_dq, for each row r with kend[r] > 0:
//     dq[r] += sum over j < kend[r] of (scale * ds[r][j]) * k[j]
//   (scale * ds rounded to fp32 first, as pack_a folds alpha in).
// q (tq x dh, ld dh); k, v (n x dh, ld dh); dout (tq x dh, ld lddo);
// dq (tq rows), dk and dv (n rows), dh wide, ld ldg.
enum { MHSA_SMALL_BWD_MAX = 16 };
typedef struct mhsa_small_bwd_args {
    size_t tq, n, dh;
    const float *q, *k, *v;
    const float *dout; size_t lddo;
    float *s;  size_t lds;
    float *dp; size_t lddp;
    float scale;
    float *dq, *dk, *dv; size_t ldg;
    const size_t *r0;     // (n) first row of key j's dv / dk sums
    const size_t *kend;   // (tq) keys in row r's dq sum
    int do_dq, do_dkv;
} mhsa_small_bwd_args;

// The fused backward of the same small tile (attn/small_bwd.c): what
// small_bwd_scores, softmax_grad and small_bwd_grads compute in turn, in
// one pass that keeps S, dP, P and dS in registers (p's s and dp are not
// used). mv is the tile's mask view and lse (tq) softmax_grad's; it
// computes softmax_grad's delta = rowsum(dO * O) itself from o (tq, ldo),
// each row's products summed in order from +0 (mhsa__attn_deltas' plain
// C: one rounding per product and per sum).
// The same bits as those three calls; it returns 1 having written dq, dk
// and dv, or 0 having written nothing when it cannot take the tile (sizes
// past MHSA_SMALL_BWD_MAX, an additive mask, a row whose lse is infinite),
// and the caller then runs the three calls.
typedef struct mhsa_attn_small_bwd_args {
    const mhsa_small_bwd_args *p;
    mhsa_mask_view mv;
    const float *lse;
    const float *o; size_t ldo;
} mhsa_attn_small_bwd_args;

// The same fused backward for nh <= 4 tiles at once that differ only in
// the head (attn/small_bwd.c: the heads of one sequence): h[hh] is head
// hh's tile as attn_small_bwd takes it. Every field but q, k, v, dout,
// lse, o, dq, dk and dv is head 0's in all of them, and dout, o, dq, dk
// and dv of head hh are head 0's + hh * dh (the heads side by side in
// their rows; q, k, v and lse may be anywhere). A table's kernel may take
// only some of these (its own sizes; avx512: dh 8) and checks all of the
// above itself: it returns 1 having written every head's dq, dk and dv
// with the bits attn_small_bwd gives them, or 0 having written nothing.
typedef struct mhsa_attn_heads_bwd_args {
    size_t nh;
    const mhsa_attn_small_bwd_args *h[4];
} mhsa_attn_heads_bwd_args;

// The tiles a fused small backward takes (the rule every ISA's applies
// before writing anything): sizes within MHSA_SMALL_BWD_MAX, no additive
// mask, and every row's lse finite. mhsa_attn_small_bwd_sizes_fit is the
// first two parts alone, for a kernel that checks the lse with vectors.
static inline int mhsa_attn_small_bwd_sizes_fit(
    const mhsa_attn_small_bwd_args *g)
{
    const mhsa_small_bwd_args *a = g->p;
    return a->tq != 0 && a->tq <= MHSA_SMALL_BWD_MAX && a->n != 0 &&
           a->n <= MHSA_SMALL_BWD_MAX && a->dh != 0 &&
           a->dh <= MHSA_SMALL_BWD_MAX && !g->mv.mask;
}

static inline int mhsa_attn_small_bwd_fits(const mhsa_attn_small_bwd_args *g)
{
    const mhsa_small_bwd_args *a = g->p;
    if (!mhsa_attn_small_bwd_sizes_fit(g))
        return 0;
    for (size_t r = 0; r < a->tq; r++)
        if (g->lse[r] == INFINITY || g->lse[r] == -INFINITY)
            return 0;
    return 1;
}

// The views a kernel for several heads of width dh takes (attn_small_heads,
// the rule every ISA's applies): 1 to 4 heads, at most 16 rows and keys,
// no additive mask, no window that cuts a row's first keys, k0 = 0.
static inline int mhsa_attn_heads_fit(const mhsa_attn_heads_args *a,
                                      size_t dh)
{
    const mhsa_mask_view *mv = &a->mv;
    return a->nh >= 1 && a->nh <= 4 && a->tq >= 1 && a->tq <= 16 &&
           a->n >= 1 && a->n <= 16 && a->dh == dh && !mv->mask &&
           mhsa_window_first(mv->q0 + a->tq - 1, mv->window) == 0 &&
           mv->k0 == 0;
}

// The tiles a backward kernel for several heads of width dh takes
// (attn_small_heads_bwd), but for their lse, which the kernels check in
// vectors: 1 to 4 heads, head 0's tile within mhsa_attn_small_bwd_sizes_fit
// without a window cutting a row's first keys, and every head's tile head
// 0's but for q, k, v, dout, lse, o, dq, dk and dv, with dout, o and the
// gradients it computes side by side (kernels.h's mhsa_attn_heads_bwd_args).
static inline int mhsa_attn_heads_bwd_fit(const mhsa_attn_heads_bwd_args *a,
                                          size_t dh)
{
    size_t nh = a->nh;
    if (nh == 0 || nh > 4)
        return 0;
    const mhsa_attn_small_bwd_args *g0 = a->h[0];
    const mhsa_small_bwd_args *p0 = g0->p;
    const mhsa_mask_view *mv = &g0->mv;
    size_t tq = p0->tq;
    if (!mhsa_attn_small_bwd_sizes_fit(g0) || p0->dh != dh ||
        mv->k0 != 0 || mhsa_window_first(mv->q0 + tq - 1, mv->window) != 0)
        return 0;
    for (size_t hh = 1; hh < nh; hh++) {
        const mhsa_attn_small_bwd_args *gh = a->h[hh];
        const mhsa_small_bwd_args *ph = gh->p;
        size_t o = hh * dh;
        if (ph->tq != tq || ph->n != p0->n || ph->dh != dh ||
            ph->lddo != p0->lddo || ph->scale != p0->scale ||
            ph->ldg != p0->ldg || ph->do_dq != p0->do_dq ||
            ph->do_dkv != p0->do_dkv || ph->dout != p0->dout + o ||
            gh->o != g0->o + o || gh->ldo != g0->ldo ||
            (p0->do_dq && ph->dq != p0->dq + o) ||
            (p0->do_dkv && (ph->dk != p0->dk + o || ph->dv != p0->dv + o)) ||
            gh->mv.mask || gh->mv.q0 != mv->q0 || gh->mv.k0 != 0 ||
            gh->mv.causal != mv->causal || gh->mv.window != mv->window ||
            gh->mv.klen != mv->klen)
            return 0;
        // (one array for every head, as small_bwd.c passes them, needs
        // no look at its values)
        for (size_t j = 0; p0->do_dkv && ph->r0 != p0->r0 && j < p0->n; j++)
            if (ph->r0[j] != p0->r0[j])
                return 0;
        for (size_t r = 0; p0->do_dq && ph->kend != p0->kend && r < tq; r++)
            if (ph->kend[r] != p0->kend[r])
                return 0;
    }
    return 1;
}

// What every ISA's kernel for several heads' backward reads of the tiles
// it took (mhsa_attn_heads_bwd_fit): head 0's sizes, dO and O (the heads
// side by side) and scale, and each head's q, k and v (heads past nh
// repeat head nh - 1's, so a kernel can load four without a branch).
typedef struct mhsa_heads_bwd_tiles {
    size_t nh, tq, n;
    const float *q[4], *k[4], *v[4];
    const float *dout, *o;
    size_t lddo, ldo;
    float scale;
} mhsa_heads_bwd_tiles;

static inline void mhsa_heads_bwd_tiles_of(const mhsa_attn_heads_bwd_args *a,
                                           mhsa_heads_bwd_tiles *t)
{
    const mhsa_attn_small_bwd_args *g0 = a->h[0];
    const mhsa_small_bwd_args *p0 = g0->p;
    t->nh = a->nh, t->tq = p0->tq, t->n = p0->n;
    t->dout = p0->dout, t->lddo = p0->lddo;
    t->o = g0->o, t->ldo = g0->ldo, t->scale = p0->scale;
    for (size_t hh = 0; hh < 4; hh++) {
        const mhsa_small_bwd_args *ph = a->h[hh < a->nh ? hh : a->nh - 1]->p;
        t->q[hh] = ph->q;
        t->k[hh] = ph->k;
        t->v[hh] = ph->v;
    }
}

// How many of the entries x[i..], at most `most`, equal x[i]: the small
// backward's runs of keys sharing r0, or of rows sharing kend.
static inline size_t mhsa_run_length(const size_t *x, size_t i, size_t n,
                                     size_t most)
{
    size_t g = 1;
    while (g < most && i + g < n && x[i + g] == x[i])
        g++;
    return g;
}

// ---- the table ----------------------------------------------------------

// Cache blocking of the GEMM driver (src/gemm/gemm.c, BLIS's loops) for
// one table: a function of the register tile and of the caches of the
// CPU, so it lives in the table and no driver tests an ISA. Each
// src/<isa>/table.c holds fixed numbers; the tables dispatch hands out
// (mhsa__kernels, mhsa_kernels_for) carry numbers derived from this CPU's
// caches instead (kernels/blocking.c), unless MHSA_BLOCKING=table
// (dispatch.c).
typedef struct mhsa_gemm_blocking {
    // Depth of one packed block: the kc x nr B micro-panel stays in L1
    // while the A panels stream past. Each C element sums its K blocks in
    // order, so the bits depend on kc: it is fixed per table and process.
    size_t kc;
    // Rows of op(A) per packed block (L2), a multiple of mr.
    size_t mc;
    // Columns of C per parallel chunk, a multiple of nr (how finely a
    // GEMM's work is split; never by the thread count).
    size_t nc;
} mhsa_gemm_blocking;

// ---- bf16 GEMM tiles ------------------------------------------------------

// A bf16-compute GEMM (gemm/gemm_bf16.h) multiplies bf16(alpha * op(A)) by
// bf16(op(B)), each rounded to nearest even (alpha folded into A in fp32
// first, as pack_a folds it), and accumulates in fp32. A table whose CPU
// has bf16 dot-product instructions lists tile sets for them: AVX512-BF16
// (vdpbf16ps: per fp32 lane, acc += a[2i+1]*b[2i+1] then + a[2i]*b[2i])
// and AMX (TDPBF16PS: 16x16 fp32 += 16x32 bf16 by 32x16 bf16). Both read
// operands in pairs of depth: the packers write K padded with zeros to a
// multiple of kgran, so a padded step adds 0 * 0.
//
// Packed layouts (bf16 elements, uint16_t; kp = round_up(k, kgran) / 2
// depth pairs; rows >= m and columns >= n are 0):
//  - B, both tile sets: ceil(n/nr) panels, panel p at bp + p*nr*2*kp;
//    inside, pair row q holds for each column j the two depths 2q, 2q+1:
//    bp[p*nr*2*kp + (q*nr + j)*2 + t] = bf16(op(B)[2q + t][p*nr + j]).
//    That is vdpbf16ps's B operand (16 columns x 1 pair per zmm) and, for
//    AMX, the "pairs of rows interleaved" layout TDPBF16PS wants for its
//    second source (16 pair rows of 64 bytes per tile, row stride nr*4
//    bytes).
//  - A, AVX512-BF16 (a_layout MHSA_BF16_A_PAIRS): ceil(m/mr) panels of
//    mr*2*kp; inside, ap[(q*mr + i)*2 + t] = bf16(alpha*op(A)[i][2q+t])
//    (one 32-bit broadcast per row and pair).
//  - A, AMX (MHSA_BF16_A_ROWS32): ceil(m/mr) panels; inside, for each
//    32-deep step s, mr rows of 32 contiguous depths:
//    ap[(s*mr + i)*32 + kk] = bf16(alpha*op(A)[i][32s + kk]), so rows
//    16h..16h+15 of a step are one 16 x 64-byte tile (stride 64 bytes).
// bf16 rounding is vcvtne2ps2bf16's: NaN quiet with its top payload bits
// (bits >> 16 | 0x0040), fp32 subnormals to a zero of their sign (the
// library's DAZ reads them as zero in the fp32 path too).
typedef enum mhsa_bf16_a_layout {
    MHSA_BF16_A_PAIRS = 1,
    MHSA_BF16_A_ROWS32 = 2,
} mhsa_bf16_a_layout;

// What a tile set needs from the CPU and OS (gemm_bf16.c asks
// core/cpu_features): nothing (the test-only emulations), AVX512_BF16, or
// AMX-TILE + AMX-BF16 with the tile data permission granted by Linux.
typedef enum mhsa_bf16_needs {
    MHSA_BF16_NEEDS_NOTHING = 0,
    MHSA_BF16_NEEDS_AVX512_BF16 = 1,
    MHSA_BF16_NEEDS_AMX_BF16 = 2,
} mhsa_bf16_needs;

typedef struct mhsa_bf16_tiles {
    const char *name;          // "avx512_bf16" or "amx_bf16"
    mhsa_bf16_needs needs;
    int emulated;              // 1: the test-only C emulation of the ISA
    int mr, nr;                // the C block one ukr call computes
    int kgran;                 // packed depth is a multiple of this
    mhsa_bf16_a_layout a_layout;
    // kc (in elements of depth, a multiple of kgran), mc (a multiple of
    // mr) and nc (a multiple of nr), as mhsa_gemm_blocking. The driver
    // runs these only where they fit the fp32 scratch of the table
    // holding this set (gemm_bf16.c: bf16_fits).
    mhsa_gemm_blocking blocking;
    // Packs an m x k block (m <= mr) of op(A), op(A)[i][kk] = trans ?
    // a[kk*lda + i] : a[i*lda + kk], as one A panel of the layout above:
    // bf16(alpha * op(A)), alpha multiplied in fp32.
    void (*pack_a)(size_t m, size_t k, const float *a, size_t lda, int trans,
                   float alpha, uint16_t *ap);
    // Packs a k x n block (n <= nr) of op(B) stored as dt (F32, F16 or
    // BF16; ldb in elements of dt), op(B)[kk][j] = trans ? b[j*ldb + kk] :
    // b[kk*ldb + j], as one B panel. F16 and BF16 are widened exactly
    // first, then rounded like F32 (so a BF16 value keeps its bits, but a
    // NaN is made quiet and a subnormal becomes a zero of its sign).
    void (*pack_b)(size_t k, size_t n, const void *b, mhsa_dtype dt,
                   size_t ldb, int trans, uint16_t *bp);
    // One block: C[i][j] (i < m <= mr, j < n <= nr) from the panels of
    // depth k (unpadded; the panels hold round_up(k, kgran)). beta == 0
    // never reads C. AVX512-BF16: C = beta*C + acc, acc summed from 0
    // over the pairs in order, one vdpbf16ps per pair. AMX: the tile
    // starts at beta*C (exactly C when beta == 1) and each 32-deep step
    // adds TDPBF16PS's sum, so the driver's K blocks form one chain of
    // additions. k == 0: C = beta*C. Elements outside m x n untouched.
    void (*ukr)(size_t k, const uint16_t *ap, const uint16_t *bp, float *c,
                size_t ldc, size_t m, size_t n, float beta);
    // AMX only (else NULL): thread_begin loads the tile configuration
    // (LDTILECFG: 8 tiles of 16 rows x 64 bytes) in the calling thread,
    // which every ukr call then relies on; thread_end releases the tile
    // state (TILERELEASE). The driver calls both once per thread and GEMM.
    void (*thread_begin)(void);
    void (*thread_end)(void);
} mhsa_bf16_tiles;

typedef struct mhsa_kernels {
    mhsa_isa isa;
    const char *name;          // == mhsa_isa_name(isa)
    int mr, nr;                // sgemm register tile
    mhsa_gemm_blocking blocking;

    // Packs an m x k block of op(A) into ceil(m/mr) micro-panels, panel p at
    // ap + p*mr*k, column-major inside: ap[p*mr*k + kk*mr + i] =
    // alpha * op(A)[p*mr + i][kk], and 0 for rows p*mr + i >= m.
    // op(A)[i][kk] = trans ? a[kk*lda + i] : a[i*lda + kk].
    void (*pack_a)(size_t m, size_t k, const float *a, size_t lda, int trans,
                   float alpha, float *ap);
    // Packs a k x n block of op(B) into ceil(n/nr) micro-panels, panel p at
    // bp + p*nr*k, row-major inside: bp[p*nr*k + kk*nr + j] =
    // op(B)[kk][p*nr + j], and 0 for columns p*nr + j >= n.
    // op(B)[kk][j] = trans ? b[j*ldb + kk] : b[kk*ldb + j].
    void (*pack_b)(size_t k, size_t n, const float *b, size_t ldb, int trans,
                   float *bp);
    // One tile: C[i][j] = beta*C[i][j] + sum_kk ap[kk*mr+i] * bp[kk*nr+j] for
    // i < m <= mr, j < n <= nr. beta == 0 never reads C (NaN there is fine);
    // beta == 1 adds exactly. Elements of C outside m x n are not touched.
    // k == 0 is allowed (the sum is 0). The sum runs over kk in order.
    // With bias (a row of n floats, else NULL) C[i][j] = bias[j] + sum, the
    // bits of beta == 1 over C rows preset to the bias; beta is unused and
    // C is not read (the GEMM's first depth block of a biased product).
    void (*sgemm_ukr)(size_t k, const float *ap, const float *bp, float *c,
                      size_t ldc, size_t m, size_t n, float beta,
                      const float *bias);
    // The same tile with A read row-major straight from the caller's matrix
    // instead of a packed panel, for GEMMs whose packed A would be used by
    // too few column panels to pay for its packing (gemm.c says when):
    // A[i][kk] = fl(alpha * a[i*lda + kk]) for i < m, the value pack_a
    // stores, multiplied in registers, and rows >= m are never read. With
    // bias (a row of n floats, else NULL) C[i][j] = bias[j] + sum, the bits
    // of beta == 1 over C rows preset to the bias, and beta is unused. Each
    // C element is the packed tile's sum, bit for bit (same products in the
    // same order, same final add), so a caller may pick either tile for any
    // block. NULL in a table: the caller packs A and uses sgemm_ukr.
    void (*sgemm_ukr_ra)(size_t k, const float *a, size_t lda, float alpha,
                         const float *bp, float *c, size_t ldc, size_t m,
                         size_t n, float beta, const float *bias);
    // The same tile with A transposed in place, op(A) of a trans_a GEMM
    // (the backward's weight gradients: X^T dY): A[i][kk] = fl(alpha *
    // a[kk*lda + i]) for i < m, columns >= m of a never read; the rest as
    // sgemm_ukr_ra (the packed tile's bits). NULL: the caller packs A.
    void (*sgemm_ukr_ta)(size_t k, const float *a, size_t lda, float alpha,
                         const float *bp, float *c, size_t ldc, size_t m,
                         size_t n, float beta, const float *bias);
    // The GEMM driver reads A row-major through sgemm_ukr_ra (transposed:
    // sgemm_ukr_ta), unpacked,
    // when op(B) has at most this many nr-column panels (0: never), a
    // number measured per ISA (src/<isa>/table.c; gemm.c says why).
    int ra_max_panels;

    void (*softmax_online)(const mhsa_softmax_args *a);
    void (*softmax_grad)(const mhsa_softmax_grad_args *a);
    // y[j] = exp(x[j] - max) / sum over the n values; -INFINITY entries give
    // an exact 0, and a row that is all -INFINITY gives all zeros. A row
    // whose max is +INFINITY gives 1/count to each of its +INFINITY entries
    // and 0 to the rest. A row holding a NaN may give NaN everywhere,
    // -INFINITY entries included (callers that promise zeros for blocked
    // keys reset them). In place (y == x) is allowed.
    void (*softmax_row)(size_t n, const float *x, float *y);
    // Optional (NULL: the drivers use the packed GEMM): the unpacked
    // products of a small backward tile, see mhsa_small_bwd_args.
    void (*small_bwd_scores)(const mhsa_small_bwd_args *a);
    void (*small_bwd_grads)(const mhsa_small_bwd_args *a);
    // Their fused form with softmax_grad (mhsa_attn_small_bwd_args), or
    // NULL: the tile takes the three calls.
    int (*attn_small_bwd)(const mhsa_attn_small_bwd_args *a);
    // That for up to 4 heads' tiles at once (mhsa_attn_heads_bwd_args), or
    // NULL: each tile goes to attn_small_bwd alone.
    int (*attn_small_heads_bwd)(const mhsa_attn_heads_bwd_args *a);

    // dst[i] = scale * src[i], i < n (dst and src do not overlap, or are
    // the same row: in place, as the attention's final O /= l runs); scale
    // == 1 copies the bits unchanged (NaN payloads, signs of zero).
    void (*scale_copy)(size_t n, const float *src, float *dst, float scale);

    // 1 when every x[r*ld + c], r < rows, c < cols, is finite, 0 when any
    // is +-INFINITY or NaN (of any sign or payload; subnormals and zeros
    // are finite). Elements between rows (c >= cols) are never read; rows
    // or cols 0 gives 1. The attention drivers (attn/attention.c) ask it
    // of every Q, K, V and dO block, to route inf and NaN to their exact
    // paths (kernels.h's rules above).
    int (*rows_finite)(size_t rows, size_t cols, const float *x, size_t ld);

    // lse[i] = lse[i] + mhsa_log_f32(lsum[i]) for i < n, bit for bit
    // (kernels/log_f32.h: the same double operations in each lane): the
    // log-sum-exp of rows whose max and sum a forward kept. Never NULL:
    // tables without a vector one (neon) take the scalar reference.
    // (When lse[i] and the log are both NaN, either payload: C adds in
    // either order.)
    void (*lse_add_log)(size_t n, float *lse, const float *lsum);

    // acc[c] = acc[c] + x[0*ld + c] + x[1*ld + c] + ... + x[(rows-1)*ld + c]
    // for c < cols, added in that order (the bits of the scalar loop), x
    // not read past a row's cols: the bias gradients' column sums. Never
    // NULL: tables without a vector one (neon) take the scalar reference.
    void (*colsum_add)(size_t rows, size_t cols, const float *x, size_t ld,
                       float *acc);

    // Matrix-vector products for one-row work (decoding one token), where a
    // GEMM tile would waste mr - 1 rows of work and packing would double
    // the memory traffic. Both stream the matrix once, unpacked.
    // gemv_n: y[j] = beta*y[j] + sum_i a[j*lda + i] * x[i], j < n, i < d.
    //         beta == 0 never reads y. The i sum runs in a fixed order, and
    //         a row's bits do not depend on n or on the rows beside it
    //         (the one-row products split rows between threads freely).
    void (*gemv_n)(size_t n, size_t d, const float *a, size_t lda,
                   const float *x, float *y, float beta);
    // gemv_t: y[i] += sum_j p[j] * a[j*lda + i], i < d, j < n; rows j with
    //         p[j] == 0 are still read (callers pass only unblocked rows).
    void (*gemv_t)(size_t n, size_t d, const float *p, const float *a,
                   size_t lda, float *y);

    // The decode products over a K or V cache whose rows (stride ld
    // elements of the dtype) are stored as dt, read once for m query rows
    // (a group of query heads sharing one kv head) and converted in
    // registers; no fp32 copy of the cache is made. Row r's result has the
    // same bits whatever m is, and with MHSA_F32 the bits of gemv_n (beta
    // 0) / gemv_t on that row alone.
    // kv_dot: s[r*lds + j] = sum_i q[r*ldq + i] * K[j][i], r < m, j < n,
    //         i < d. Reads n rows of d elements of dt (2 bytes each for
    //         F16 / BF16) once and q once per block of rows; also the
    //         one-row product of a 16-bit weight matrix (m = 1, any d).
    void (*kv_dot)(size_t m, size_t n, size_t d, const float *q, size_t ldq,
                   const void *k, size_t ldk, mhsa_dtype dt, float *s,
                   size_t lds);
    // kv_acc: o[r*ldo + i] += sum_j p[r*ldp + j] * V[j][i], r < m, i < d,
    //         j < n in order; rows j with p == 0 are still read.
    void (*kv_acc)(size_t m, size_t n, size_t d, const float *p, size_t ldp,
                   const void *v, size_t ldv, mhsa_dtype dt, float *o,
                   size_t ldo);

    // gemv_n16: y[j] = beta*y[j] + sum_i A[j][i] * x[i], j < n, i < d, A's
    //         rows (lda elements apart) stored as dt = MHSA_F16 or
    //         MHSA_BF16 (2 bytes an element), widened in registers: the
    //         one-row product of a 16-bit weight matrix. beta == 0 never
    //         reads y. A row's sum is in a fixed order that depends on d
    //         only (not on n or on the other rows): gemv_n's, so a row
    //         has the bits of gemv_n on that row widened to fp32 (the
    //         streaming plan both share: kernels/gemv_plan.h).
    void (*gemv_n16)(size_t n, size_t d, const void *a, size_t lda,
                     mhsa_dtype dt, const float *x, float *y, float beta);

    // Conversions of n values between fp32 and a storage type (dst and src
    // do not overlap). To F16 (IEEE binary16) and BF16 (the top half of an
    // fp32): round to nearest even; F16 overflow gives +-inf, results below
    // the F16 normal range are F16 subnormals (or +-0); a NaN stays a NaN
    // with its sign and the top payload bits, made quiet (F16: sign |
    // 0x7e00 | mantissa >> 13; BF16: (bits >> 16) | 0x0040), as F16C's
    // vcvtps2ph and AArch64's fcvtn do. From F16/BF16 the value is exact.
    // MHSA_F32 copies. The scalar versions are the bit-exact reference.
    // In the library's state (FTZ/DAZ) the F16 conversions still make F16
    // subnormals from fp32 normals and read them back exactly (they are
    // fp32 normals): the scalar ones are integer code, and vcvtps2ph /
    // vcvtph2ps ignore FTZ and (for F16 inputs) DAZ, as AArch64's fcvtn /
    // fcvtl ignore FZ (FZ16 governs half precision and stays clear). An
    // fp32 subnormal input rounds to +-0 in F16 either way. BF16 is integer
    // code on every ISA: a BF16 subnormal pattern widens to its fp32
    // subnormal bits, which the arithmetic then reads as zero; the library
    // never stores one, since its fp32 results are never subnormal.
    // tests/test_subnormal.c checks both states give the same bits.
    void (*cvt_from_f32)(size_t n, const float *src, void *dst,
                         mhsa_dtype dt);
    // cvt_to_f32 reads n elements of dt (2 bytes each for F16 / BF16) and
    // writes n floats; it also widens 16-bit weights for packing.
    void (*cvt_to_f32)(size_t n, const void *src, mhsa_dtype dt, float *dst);

    // bf16 GEMM tile sets (above), best first, NULL-terminated; NULL for
    // tables without any. Which one runs is gemm_bf16.c's choice, from the
    // CPU and OS (cpu_features) and MHSA_BF16_TILES.
    const mhsa_bf16_tiles *const *bf16;

    // The fused forward of a small view (above), or NULL: every view takes
    // the tiled path. Returns 1 when it has written the view's outputs.
    int (*attn_small)(const mhsa_attn_small_args *a);
    // The fused forward of up to 4 heads' small views at once (above), or
    // NULL: each view goes to attn_small alone.
    int (*attn_small_heads)(const mhsa_attn_heads_args *a);

    // The products of quantized weights (kernels/quant.h: the block
    // formats, the activations' int8 forms and the contract). Never NULL:
    // a table without its own takes the scalar references; dispatch may
    // hand out a set the CPU runs better (kernels/dispatch.c).
    const mhsa_qkernels *q;
} mhsa_kernels;

// Bytes of one stored element of dt (4 or 2).
static inline size_t mhsa_dtype_size(mhsa_dtype dt)
{
    return dt == MHSA_F32 ? 4 : 2;
}

// Tables this build has (each defined in src/<isa>/table.c).
extern const mhsa_kernels mhsa_kernels_scalar;
#if MHSA_HAVE_AVX2
extern const mhsa_kernels mhsa_kernels_avx2;
#endif
#if MHSA_HAVE_NEON
extern const mhsa_kernels mhsa_kernels_neon;
// Its quantized products with SDOT (src/neon/quant_dot.c): the q that
// dispatch hands out on CPUs with the dotprod extension (the table itself
// holds the plain-NEON set, which every AArch64 CPU runs).
extern const mhsa_qkernels mhsa_qkernels_neon_dotprod;
#endif
#if MHSA_HAVE_AVX512
extern const mhsa_kernels mhsa_kernels_avx512;
#endif

// The last value of mhsa_isa: loops over every ISA run SCALAR..LAST.
#define MHSA_ISA_LAST MHSA_ISA_AVX512

// The active table (chosen once, see kernels/dispatch.c). Never NULL.
const mhsa_kernels *mhsa__kernels(void);
// The best table this CPU runs (scalar when nothing else), what
// MHSA_ISA unset and mhsa_select_isa(MHSA_ISA_AUTO) take.
const mhsa_kernels *mhsa__best_table(void);
// Installs k (from mhsa_kernels_for or mhsa__best_table, never NULL) as
// the active table: mhsa_select_isa's step once it has validated k.
void mhsa__set_active(const mhsa_kernels *k);
// The table for one ISA if this build has it and the CPU supports it, else
// NULL. Used by tests and benchmarks to run every ISA side by side.
const mhsa_kernels *mhsa_kernels_for(mhsa_isa isa);
// Test-only hook (dispatch.c): k (or NULL to remove it) stands in for
// k->isa where this build or CPU lacks that ISA, so that a test program can
// run the whole library on the emulated AVX-512 kernels. Call before any
// block is created; never called by the library.
void mhsa__set_stand_in(const mhsa_kernels *k);
// The table set by mhsa__set_stand_in, or NULL.
const mhsa_kernels *mhsa__stand_in(void);
// The built table for isa with its fixed block sizes (src/<isa>/table.c),
// whether or not the CPU runs it; NULL if not built. What dispatch hands
// out is a copy whose blocking is derived from the CPU's caches
// (dispatch.c, MHSA_BLOCKING).
const mhsa_kernels *mhsa__fixed_table(mhsa_isa isa);
// Where the blocking of the tables dispatch hands out came from, for
// mhsa-info: "cpu caches (kernels/blocking.c)", "table (MHSA_BLOCKING=table)"
// or "MHSA_BLOCKING".
const char *mhsa__blocking_source(void);

#endif
