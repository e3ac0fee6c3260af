// test_small_heads.c — the fused forward of several heads at once
// (kernels.h: attn_small_heads, attn/small_view.c's
// mhsa__heads_forward_small) against the same views one at a time, bit
// for bit, on every ISA table that has the kernel (the AVX-512 one; the
// SIMDe-emulated AVX-512 table too, loop index N_ISAS, where the CPU
// runs AVX-512 natively).
//  - kernel_matches_views: the kernel against the table's attn_small per
//    head, on random views: 1 to 4 heads, rows and keys 1..17, head
//    widths 8 and others (which it must decline), causal masks with
//    offsets, key padding, windows, masks (declined), q scaled on load or
//    not, row strides past the heads, K and V side by side or each head
//    elsewhere (grouped-query heads sharing one), ties, NaN and inf, scores
//    that overflow. Where both take a view, o, m and l must be the same
//    bits, and o's other columns must survive; every plain view (dh 8, no
//    mask, no window cutting a row's keys, finite, no overflow) must be
//    taken; a view the heads kernel takes and attn_small declines may
//    only be one whose scores overflow (the kernel skips the key slots a
//    group of rows cannot see; the second test checks those against the
//    tiled path).
//  - group_equals_one_by_one: mhsa__heads_forward_small on the blocks of
//    a sequence's heads read in place (as attend.c runs them, grouped
//    query heads too) against each block through mhsa__head_forward_small
//    or, where that declines, the tiled path: o, lse and lsum the same
//    bits (lsum 1 for a row that sees no key).
//  - kernel_stays_in_bounds: every input and output against PROT_NONE
//    pages on either side, at the edges of the sizes.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "util.h"
#include "attn/attention.h"
#include "attn/small_view.h"

enum { N_CASES = 3000, DH = 8, MAXH = 4 };

typedef struct heads_case {
    size_t nh, tq, n, dh, ldq, ldkv, ldo;
    float *q, *kv;        // q: tq rows of ldq; kv: K and V rows of ldkv
    mhsa_attn_heads_args a;
    int plain, big;
} heads_case;

static void poke(rng *g, float *x, size_t n)
{
    static const float bad[] = { NAN, INFINITY, -INFINITY };
    x[rng_int(g, 0, (int)n - 1)] = bad[rng_int(g, 0, 2)];
}

static float mask_buf[17 * 19];

static void make_case(heads_case *c, rng *g)
{
    memset(c, 0, sizeof *c);
    size_t nh = (size_t)(rng_int(g, 0, 2) ? MAXH : rng_int(g, 1, MAXH));
    size_t n = (size_t)rng_int(g, 1, 17);
    size_t tq = (size_t)rng_int(g, 1, rng_int(g, 0, 3) ? (int)n : 17);
    static const size_t dhs[] = { 8, 8, 8, 8, 8, 8, 4, 7, 9, 16 };
    size_t dh = dhs[rng_int(g, 0, 9)];
    c->nh = nh, c->tq = tq, c->n = n, c->dh = dh;
    c->ldq = nh * dh + (size_t)rng_int(g, 0, 1) * (size_t)rng_int(g, 1, 9);
    c->ldo = nh * dh + (size_t)rng_int(g, 0, 5);
    // K of head hh at column kcol[hh] of a kv row, V 2 * MAXH * dh + 3
    // further: side by side, or grouped (heads sharing a kv head), or
    // scattered.
    size_t kcol[MAXH];
    int layout = rng_int(g, 0, 2);
    for (size_t hh = 0; hh < nh; hh++)
        kcol[hh] = layout == 0   ? hh * dh
                   : layout == 1 ? hh / 2 * dh
                                 : (MAXH - 1 - hh) * (dh + 1);
    size_t voff = MAXH * (dh + 1) + 3;
    c->ldkv = 2 * voff + (size_t)rng_int(g, 0, 4);
    c->q = malloc(tq * c->ldq * sizeof(float));
    c->kv = malloc(n * c->ldkv * sizeof(float));
    c->big = rng_int(g, 0, 9) == 0;
    float range = c->big ? 3e18f : 2.0f;
    fill_uniform(g, c->q, tq * c->ldq, -range, range);
    fill_uniform(g, c->kv, n * c->ldkv, -range, range);
    for (size_t j = 0; j < n; j++)   // V in a normal range
        fill_uniform(g, c->kv + j * c->ldkv + voff, voff, -2.0f, 2.0f);
    if (rng_int(g, 0, 4) == 0) {   // ties, zeros of either sign
        fill_small_ints(g, c->q, tq * c->ldq, 1);
        fill_small_ints(g, c->kv, n * c->ldkv, 1);
        for (size_t i = 0; i < tq * c->ldq; i++)
            c->q[i] = c->q[i] == 0.0f && rng_int(g, 0, 1) ? -0.0f : c->q[i];
    }
    c->plain = !c->big && dh == DH && n <= 16 && tq <= 16;
    if (rng_int(g, 0, 11) == 0)
        poke(g, c->q, tq * c->ldq), c->plain = 0;
    if (rng_int(g, 0, 7) == 0)
        poke(g, c->kv, n * c->ldkv), c->plain = 0;
    mhsa_attn_heads_args *a = &c->a;
    a->nh = nh, a->tq = tq, a->n = n, a->dh = dh;
    a->q = c->q, a->ldq = c->ldq, a->ldkv = c->ldkv;
    for (size_t hh = 0; hh < nh; hh++) {
        a->k[hh] = c->kv + kcol[hh];
        a->v[hh] = c->kv + voff + kcol[hh];
    }
    a->qscale = rng_int(g, 0, 1) ? 0.0f : rng_uniform(g, 0.1f, 1.0f);
    a->mv.causal = rng_int(g, 0, 1);
    a->mv.q0 = rng_int(g, 0, 1) ? (n > tq ? n - tq : 0)
                                : (size_t)rng_int(g, 0, (int)n);
    static const size_t windows[] = { 0, 0, 0, 0, 1, 5, 16, 40 };
    a->mv.window = windows[rng_int(g, 0, 7)];
    if (mhsa_window_first(a->mv.q0 + tq - 1, a->mv.window) != 0)
        c->plain = 0;
    a->mv.klen = rng_int(g, 0, 3) ? 0 : (size_t)rng_int(g, 1, (int)n);
    if (rng_int(g, 0, 19) == 0) {   // a mask: declined
        fill_uniform(g, mask_buf, sizeof mask_buf / sizeof *mask_buf, -1.0f,
                     1.0f);
        a->mv.mask = mask_buf;
        a->mv.ldmask = 19;
        c->plain = 0;
    }
}

static void free_case(heads_case *c)
{
    free(c->q);
    free(c->kv);
}

// Outputs of the nh heads: o (tq rows of ldo), m and l (nh rows of tq).
typedef struct outs {
    float *o, *m, *l;
} outs;

static void outs_alloc(outs *u, const heads_case *c)
{
    u->o = alloc_guarded(c->tq * c->ldo);
    u->m = alloc_guarded(c->nh * c->tq);
    u->l = alloc_guarded(c->nh * c->tq);
    for (size_t i = 0; i < c->tq * c->ldo; i++)
        u->o[i] = 777.25f;   // columns no head owns must survive
    fill_nan(u->m, c->nh * c->tq);
    fill_nan(u->l, c->nh * c->tq);
}

static void outs_free(outs *u)
{
    free_guarded(u->o);
    free_guarded(u->m);
    free_guarded(u->l);
}

static int outs_same(const outs *x, const outs *y, const heads_case *c)
{
    size_t no = c->tq * c->ldo, nm = c->nh * c->tq;
    return !memcmp(x->o, y->o, no * sizeof(float)) &&
           !memcmp(x->m, y->m, nm * sizeof(float)) &&
           !memcmp(x->l, y->l, nm * sizeof(float)) && guard_ok(x->o, no) &&
           guard_ok(x->m, nm) && guard_ok(x->l, nm);
}

// Head hh's view as attn_small takes it.
static mhsa_attn_small_args view_of(const heads_case *c, size_t hh,
                                    outs *u)
{
    const mhsa_attn_heads_args *a = &c->a;
    mhsa_attn_small_args s = {
        .tq = c->tq, .n = c->n, .dh = c->dh, .q = c->q + hh * c->dh,
        .k = a->k[hh], .v = a->v[hh], .ldq = c->ldq, .ldkv = c->ldkv,
        .qscale = a->qscale, .mv = a->mv, .o = u->o + hh * c->dh,
        .ldo = c->ldo, .m = u->m + hh * c->tq, .l = u->l + hh * c->tq,
    };
    return s;
}

static const mhsa_kernels *table_at(int i)
{
    const mhsa_kernels *k = table_or_emulated(i);
    if (k && !k->attn_small_heads) {
        printf("%s: no fused kernel for several heads\n", k->name);
        return NULL;
    }
    return k;
}

START_TEST(kernel_matches_views)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k)
        return;
    rng g = { 0x4ead5u + (uint64_t)_i };
    int n = test_count(N_CASES), took = 0, plain = 0, plain_took = 0;
    int only_heads = 0;
    for (int t = 0; t < n; t++) {
        heads_case c;
        make_case(&c, &g);
        outs h, v;
        outs_alloc(&h, &c);
        outs_alloc(&v, &c);
        mhsa_attn_heads_args a = c.a;
        a.o = h.o, a.ldo = c.ldo, a.m = h.m, a.l = h.l, a.ldml = c.tq;
        int fast = k->attn_small_heads(&a);
        int views = 1;
        for (size_t hh = 0; hh < c.nh; hh++) {
            mhsa_attn_small_args s = view_of(&c, hh, &v);
            views &= k->attn_small(&s);
        }
        took += fast;
        plain += c.plain;
        plain_took += c.plain && fast;
        ck_assert_msg(!(c.plain && !fast), "%s case %d: a plain view "
                      "declined (nh %zu tq %zu n %zu)", k->name, t, c.nh,
                      c.tq, c.n);
        if (fast && !views) {   // see the file comment
            ck_assert_msg(c.big, "%s case %d: taken here, declined one by "
                          "one, not an overflow case", k->name, t);
            only_heads++;
        }
        ck_assert_msg(!(fast && views) || outs_same(&h, &v, &c),
                      "%s case %d: nh %zu tq %zu n %zu dh %zu causal %d q0 "
                      "%zu klen %zu window %zu qscale %g: heads and views "
                      "differ", k->name, t, c.nh, c.tq, c.n, c.dh,
                      c.a.mv.causal, c.a.mv.q0, c.a.mv.klen, c.a.mv.window,
                      (double)c.a.qscale);
        outs_free(&h);
        outs_free(&v);
        free_case(&c);
    }
    printf("%s: %d of %d views of several heads fused (%d plain, all "
           "taken; %d taken that one by one declined)\n", k->name, took, n,
           plain, only_heads);
    ck_assert_int_gt(plain, n / 4);
}
END_TEST

// One sequence's nh heads read in place from projection rows (q at
// column hh * dh, K and V of kv head hh / group), as view.c sets blocks.
START_TEST(group_equals_one_by_one)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k)
        return;
    float *tiles = malloc(mhsa__attn_tile_floats(k, 40) * sizeof(float));
    rng g = { 0x9e7u + (uint64_t)_i };
    int n = test_count(N_CASES / 2), took = 0;
    for (int t = 0; t < n; t++) {
        size_t nh = (size_t)rng_int(&g, 2, MAXH), group = rng_int(&g, 0, 1)
                                                             ? 1 : 2;
        size_t T = (size_t)rng_int(&g, 1, 16), dh = rng_int(&g, 0, 5) ? DH
                                                                    : 16;
        size_t tq = T, hkv = (nh + group - 1) / group;
        size_t ld = (nh + 2 * hkv) * dh + (size_t)rng_int(&g, 0, 3);
        float *qkv = malloc(T * ld * sizeof(float));
        int big = rng_int(&g, 0, 9) == 0;
        fill_uniform(&g, qkv, T * ld, big ? -3e18f : -2.0f,
                     big ? 3e18f : 2.0f);
        if (rng_int(&g, 0, 15) == 0)
            poke(&g, qkv, T * ld);
        float *o[2], *lse[2], *lsum[2];
        size_t ldo = nh * dh + 1;
        head_args a[2][MAXH];
        int causal = rng_int(&g, 0, 1);
        size_t klen = rng_int(&g, 0, 2) ? 0 : (size_t)rng_int(&g, 1,
                                                              (int)T);
        for (int w = 0; w < 2; w++) {
            o[w] = alloc_guarded(tq * ldo);
            lse[w] = alloc_guarded(nh * tq);
            lsum[w] = alloc_guarded(nh * tq);
            fill_nan(o[w], tq * ldo);
            for (size_t hh = 0; hh < nh; hh++) {
                head_args *b = &a[w][hh];
                memset(b, 0, sizeof *b);
                b->tq = tq, b->tk = T, b->dh = dh, b->causal = causal;
                b->klen = klen, b->scale = 1.0f / sqrtf((float)dh);
                b->ldqkv = ld;
                b->q = qkv + hh * dh;
                b->k = qkv + (nh + hh / group) * dh;
                b->v = qkv + (nh + hkv + hh / group) * dh;
                b->k16 = b->k, b->v16 = b->v;
                b->kv_dtype = MHSA_F32, b->compute = MHSA_F32;
                b->o = o[w] + hh * dh, b->ldo = ldo;
                b->lse = lse[w] + hh * tq, b->lsum = lsum[w] + hh * tq;
            }
        }
        const float *kh[MAXH], *vh[MAXH];
        for (size_t hh = 0; hh < nh; hh++)
            kh[hh] = a[0][hh].k, vh[hh] = a[0][hh].v;
        int fast = mhsa__heads_forward_small(k, &a[0][0], nh, kh, vh);
        for (size_t hh = 0; hh < nh; hh++)
            if (!mhsa__head_forward_small(k, &a[1][hh])) {
                // the tiled path reads split heads: q scaled, ld dh
                head_args b = a[1][hh];
                float *qs = malloc(tq * dh * sizeof(float));
                float *ks = malloc(T * dh * sizeof(float));
                float *vs = malloc(T * dh * sizeof(float));
                for (size_t r = 0; r < T; r++)
                    for (size_t d = 0; d < dh; d++) {
                        qs[r * dh + d] = b.scale * b.q[r * ld + d];
                        ks[r * dh + d] = b.k[r * ld + d];
                        vs[r * dh + d] = b.v[r * ld + d];
                    }
                b.q = qs, b.k = ks, b.v = vs, b.k16 = ks, b.v16 = vs;
                b.ldqkv = 0;
                mhsa__head_forward(k, &b, tiles);
                free(qs);
                free(ks);
                free(vs);
            }
        took += fast;
        ck_assert_msg(!fast ||
                      (!memcmp(o[0], o[1], tq * ldo * sizeof(float)) &&
                       !memcmp(lse[0], lse[1], nh * tq * sizeof(float)) &&
                       !memcmp(lsum[0], lsum[1], nh * tq * sizeof(float)) &&
                       guard_ok(o[0], tq * ldo) && guard_ok(lse[0], nh * tq)
                       && guard_ok(lsum[0], nh * tq)),
                      "%s case %d: nh %zu group %zu T %zu dh %zu causal %d "
                      "klen %zu big %d: heads at once and one by one differ",
                      k->name, t, nh, group, T, dh, causal, klen, big);
        for (int w = 0; w < 2; w++) {
            free_guarded(o[w]);
            free_guarded(lse[w]);
            free_guarded(lsum[w]);
        }
        free(qkv);
    }
    printf("%s: %d of %d head groups fused at once\n", k->name, took, n);
    ck_assert_int_gt(took, n / 2);
    free(tiles);
}
END_TEST

START_TEST(kernel_stays_in_bounds)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k)
        return;
    static const size_t tqs[] = { 1, 5, 12, 13, 16 };
    static const size_t ns[] = { 1, 7, 8, 12, 16 };
    float src[16 * 32];
    rng g = { 0xb0b5u };
    fill_uniform(&g, src, 16 * 32, -1.0f, 1.0f);
    int took = 0, runs = 0;
    for (size_t nh = 1; nh <= MAXH; nh++)
        for (size_t x = 0; x < 5; x++)
            for (size_t y = 0; y < 5; y++)
                for (int v = 0; v < 4; v++) {
                    size_t tq = tqs[x], n = ns[y], w = nh * DH;
                    guard_side side = v & 1 ? GUARD_BEFORE : GUARD_AFTER;
                    int causal = (v >> 1) & 1;
                    float *q = guard_copy(tq * w, side, src, 1);
                    float *kk = guard_copy(n * w, side, src, 1);
                    float *vv = guard_copy(n * w, side, src, 1);
                    float *o = guard_copy(tq * w, side, NULL, 0);
                    float *m = guard_copy(nh * tq, side, NULL, 0);
                    float *l = guard_copy(nh * tq, side, NULL, 0);
                    mhsa_attn_heads_args a = {
                        .nh = nh, .tq = tq, .n = n, .dh = DH, .q = q,
                        .ldkv = w,
                        .mv = { NULL, 0, n > tq ? n - tq : 0, 0, causal, 0,
                                0 },
                        .o = o, .ldo = w, .m = m, .l = l, .ldml = tq,
                    };
                    for (size_t hh = 0; hh < nh; hh++) {
                        a.k[hh] = kk + hh * DH;
                        a.v[hh] = vv + hh * DH;
                    }
                    took += k->attn_small_heads(&a);
                    runs++;
                    guard_free(q);
                    guard_free(kk);
                    guard_free(vv);
                    guard_free(o);
                    guard_free(m);
                    guard_free(l);
                }
    printf("%s: %d of %d guarded head groups fused\n", k->name, took, runs);
    ck_assert_int_eq(took, runs);   // finite inputs in its sizes: all
}
END_TEST

int main(void)
{
    note_quick("a quarter of the random views");
    Suite *s = suite_create("small_heads");
    TCase *tc = tcase_create("small_heads");
    tcase_add_loop_test(tc, kernel_matches_views, 0, N_ISAS + 1);
    tcase_add_loop_test(tc, group_equals_one_by_one, 0, N_ISAS + 1);
    tcase_add_loop_test(tc, kernel_stays_in_bounds, 0, N_ISAS + 1);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
