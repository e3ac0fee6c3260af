// test_small_heads_bwd.c — the fused backward of several heads' small
// tiles at once (kernels.h: attn_small_heads_bwd) against the table's
// attn_small_bwd on each head alone, bit for bit, on every ISA table that
// has the kernel (the AVX-512 one; the SIMDe-emulated AVX-512 table too,
// loop index N_ISAS, where the CPU runs AVX-512 natively).
// Random tiles: 1 to 4 heads, rows and keys 1..17, head widths 8 and
// others (declined), causal masks with offsets, key padding, windows,
// masks and infinite lse (declined), random first rows and key ends of
// the chains (r0, kend; one array for all heads or a copy each, a copy
// that differs declined), dq only, dk/dv only or both, gradients that
// already hold values (the sums are added to them), heads whose outputs
// are not side by side (declined). Where the heads kernel takes the tiles
// the gradients must be attn_small_bwd's bits; where it declines, not one
// value may have changed; every plain set (dh 8, no mask, finite lse, no
// window cutting a row's keys, side by side) must be taken. And every
// input and output against PROT_NONE pages.
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guard.h"
#include "util.h"

enum { N_CASES = 3000, DH = 8, MAXH = 4, MAXN = 17 };

typedef struct bwd_case {
    size_t nh, tq, n, dh, ld;   // ld: rows of dout, o, dq, dk, dv
    float *q[MAXH], *k[MAXH], *v[MAXH], *lse[MAXH];
    float *dout, *o, *grads;    // grads: dq, dk, dv rows (3 blocks)
    size_t r0[MAXN], kend[MAXN];
    size_t own_r0[MAXH][MAXN], own_kend[MAXH][MAXN];   // per-head copies
    mhsa_small_bwd_args p[MAXH];
    mhsa_attn_small_bwd_args g[MAXH];
    int plain;
} bwd_case;

static float mask_buf[MAXN * 20];

static void make_case(bwd_case *c, rng *r)
{
    memset(c, 0, sizeof *c);
    size_t nh = (size_t)(rng_int(r, 0, 2) ? MAXH : rng_int(r, 1, MAXH));
    size_t n = (size_t)rng_int(r, 1, MAXN);
    size_t tq = (size_t)rng_int(r, 1, rng_int(r, 0, 3) ? (int)n : MAXN);
    static const size_t dhs[] = { 8, 8, 8, 8, 8, 8, 8, 4, 9, 16 };
    size_t dh = dhs[rng_int(r, 0, 9)];
    size_t rows = tq > n ? tq : n;
    c->nh = nh, c->tq = tq, c->n = n, c->dh = dh;
    c->ld = nh * dh + (size_t)rng_int(r, 0, 5);
    c->plain = dh == DH && tq <= 16 && n <= 16;
    for (size_t hh = 0; hh < nh; hh++) {
        c->q[hh] = malloc(tq * dh * sizeof(float));
        c->k[hh] = malloc(n * dh * sizeof(float));
        c->v[hh] = malloc(n * dh * sizeof(float));
        c->lse[hh] = malloc(tq * sizeof(float));
        fill_uniform(r, c->q[hh], tq * dh, -2.0f, 2.0f);
        fill_uniform(r, c->k[hh], n * dh, -2.0f, 2.0f);
        fill_uniform(r, c->v[hh], n * dh, -2.0f, 2.0f);
        fill_uniform(r, c->lse[hh], tq, -1.0f, 4.0f);
        if (rng_int(r, 0, 5) == 0) {   // ties and zeros
            fill_small_ints(r, c->q[hh], tq * dh, 1);
            fill_small_ints(r, c->k[hh], n * dh, 1);
        }
    }
    if (rng_int(r, 0, 19) == 0) {   // an infinite lse: declined
        c->lse[rng_int(r, 0, (int)nh - 1)][rng_int(r, 0, (int)tq - 1)] =
            rng_int(r, 0, 1) ? INFINITY : -INFINITY;
        c->plain = 0;
    }
    c->dout = malloc(tq * c->ld * sizeof(float));
    c->o = malloc(tq * c->ld * sizeof(float));
    c->grads = malloc(3 * rows * c->ld * sizeof(float));
    fill_uniform(r, c->dout, tq * c->ld, -2.0f, 2.0f);
    fill_uniform(r, c->o, tq * c->ld, -2.0f, 2.0f);
    fill_uniform(r, c->grads, 3 * rows * c->ld, -1.0f, 1.0f);
    for (size_t j = 0; j < n; j++)   // sometimes past tq: no chain
        c->r0[j] = (size_t)rng_int(r, 0, rng_int(r, 0, 3) ? 0 : (int)tq);
    for (size_t i = 0; i < tq; i++)
        c->kend[i] = rng_int(r, 0, 3) ? n : (size_t)rng_int(r, 0, (int)n);
    mhsa_mask_view mv = { NULL, 0, 0, 0, rng_int(r, 0, 1), 0, 0 };
    mv.q0 = rng_int(r, 0, 1) ? (n > tq ? n - tq : 0)
                             : (size_t)rng_int(r, 0, (int)n);
    static const size_t windows[] = { 0, 0, 0, 0, 1, 5, 16, 40 };
    mv.window = windows[rng_int(r, 0, 7)];
    if (mhsa_window_first(mv.q0 + tq - 1, mv.window) != 0)
        c->plain = 0;
    mv.klen = rng_int(r, 0, 3) ? 0 : (size_t)rng_int(r, 1, (int)n);
    if (rng_int(r, 0, 19) == 0) {   // a mask: declined
        fill_uniform(r, mask_buf, sizeof mask_buf / sizeof *mask_buf, -1.0f,
                     1.0f);
        mv.mask = mask_buf;
        mv.ldmask = 20;
        c->plain = 0;
    }
    int do_dq = rng_int(r, 0, 3) != 0, do_dkv = !do_dq || rng_int(r, 0, 2);
    float scale = rng_uniform(r, 0.1f, 1.0f);
    float *dq = c->grads, *dk = dq + rows * c->ld, *dv = dk + rows * c->ld;
    int apart = rng_int(r, 0, 15) == 0 && nh > 1;   // not side by side
    if (apart)
        c->plain = 0;
    // Each head its own copy of the ranges (equal, or one value off:
    // declined), or all one array.
    int copies = rng_int(r, 0, 2) == 0, off = copies && nh > 1 &&
                                              rng_int(r, 0, 3) == 0;
    for (size_t hh = 0; hh < nh; hh++) {
        memcpy(c->own_r0[hh], c->r0, sizeof c->r0);
        memcpy(c->own_kend[hh], c->kend, sizeof c->kend);
    }
    if (off) {
        if (rng_int(r, 0, 1) && do_dkv)
            c->own_r0[nh - 1][rng_int(r, 0, (int)n - 1)] += 1;
        else if (do_dq) {
            size_t *ke = &c->own_kend[nh - 1][rng_int(r, 0, (int)tq - 1)];
            *ke = *ke ? *ke - 1 : 1;   // still within [0, n]
        }
        c->plain = 0;
    }
    for (size_t hh = 0; hh < nh; hh++) {
        size_t col = hh * dh + (apart && hh == nh - 1 ? 1 : 0);
        if (col + dh > c->ld)
            col = hh * dh;
        mhsa_small_bwd_args sb = {
            tq, n, dh, c->q[hh], c->k[hh], c->v[hh], c->dout + col, c->ld,
            NULL, 16, NULL, 16, scale, dq + col, dk + col, dv + col, c->ld,
            copies ? c->own_r0[hh] : c->r0,
            copies ? c->own_kend[hh] : c->kend, do_dq, do_dkv,
        };
        c->p[hh] = sb;
        mhsa_attn_small_bwd_args ga = { &c->p[hh], mv, c->lse[hh],
                                        c->o + col, c->ld };
        c->g[hh] = ga;
    }
}

static void free_case(bwd_case *c)
{
    for (size_t hh = 0; hh < c->nh; hh++) {
        free(c->q[hh]);
        free(c->k[hh]);
        free(c->v[hh]);
        free(c->lse[hh]);
    }
    free(c->dout);
    free(c->o);
    free(c->grads);
}

// The heads kernel's arguments for c, its gradients moved to grads.
static mhsa_attn_heads_bwd_args heads_of(bwd_case *c, float *grads,
                                         mhsa_small_bwd_args *p,
                                         mhsa_attn_small_bwd_args *g)
{
    mhsa_attn_heads_bwd_args a = { c->nh, { NULL } };
    ptrdiff_t shift = grads - c->grads;
    for (size_t hh = 0; hh < c->nh; hh++) {
        p[hh] = c->p[hh];
        p[hh].dq += shift, p[hh].dk += shift, p[hh].dv += shift;
        g[hh] = c->g[hh];
        g[hh].p = &p[hh];
        a.h[hh] = &g[hh];
    }
    return a;
}

static const mhsa_kernels *table_at(int i)
{
    const mhsa_kernels *k = table_or_emulated(i);
    if (k && !k->attn_small_heads_bwd) {
        printf("%s: no fused backward for several heads\n", k->name);
        return NULL;
    }
    return k;
}

START_TEST(heads_match_one_by_one)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k)
        return;
    rng r = { 0xbacdu + (uint64_t)_i };
    int n = test_count(N_CASES), took = 0, plain = 0;
    for (int t = 0; t < n; t++) {
        bwd_case c;
        make_case(&c, &r);
        size_t rows = c.tq > c.n ? c.tq : c.n, ng = 3 * rows * c.ld;
        float *mine = malloc(ng * sizeof(float));
        memcpy(mine, c.grads, ng * sizeof(float));
        mhsa_small_bwd_args p[MAXH];
        mhsa_attn_small_bwd_args g[MAXH];
        mhsa_attn_heads_bwd_args a = heads_of(&c, mine, p, g);
        int fast = k->attn_small_heads_bwd(&a);
        float *before = malloc(ng * sizeof(float));
        memcpy(before, c.grads, ng * sizeof(float));
        int views = 1;
        for (size_t hh = 0; hh < c.nh; hh++)
            views &= k->attn_small_bwd(&c.g[hh]);
        took += fast;
        plain += c.plain;
        ck_assert_msg(!(c.plain && !fast), "%s case %d: plain tiles "
                      "declined (nh %zu tq %zu n %zu)", k->name, t, c.nh,
                      c.tq, c.n);
        if (fast)
            ck_assert_msg(views && !memcmp(mine, c.grads,
                                           ng * sizeof(float)),
                          "%s case %d: nh %zu tq %zu n %zu dh %zu causal %d "
                          "q0 %zu klen %zu window %zu dq %d dkv %d: heads "
                          "(taken) and one by one (taken %d) differ",
                          k->name, t, c.nh, c.tq, c.n, c.dh,
                          c.g[0].mv.causal, c.g[0].mv.q0, c.g[0].mv.klen,
                          c.g[0].mv.window, c.p[0].do_dq, c.p[0].do_dkv,
                          views);
        else
            ck_assert_msg(!memcmp(mine, before, ng * sizeof(float)),
                          "%s case %d: declined but wrote", k->name, t);
        free(mine);
        free(before);
        free_case(&c);
    }
    printf("%s: %d of %d head sets fused at once (%d plain, all taken)\n",
           k->name, took, n, plain);
    ck_assert_int_gt(plain, n / 4);
}
END_TEST

START_TEST(kernel_stays_in_bounds)
{
    const mhsa_kernels *k = table_at(_i);
    if (!k)
        return;
    static const size_t tqs[] = { 1, 5, 12, 16 };
    static const size_t ns[] = { 1, 7, 12, 16 };
    float src[16 * 32];
    rng r = { 0xb0b6u };
    fill_uniform(&r, src, 16 * 32, -1.0f, 1.0f);
    size_t r0[16] = { 0 }, kend[16];
    int took = 0, runs = 0;
    for (size_t nh = 1; nh <= MAXH; nh++)
        for (size_t x = 0; x < 4; x++)
            for (size_t y = 0; y < 4; y++)
                for (int v = 0; v < 4; v++) {
                    size_t tq = tqs[x], n = ns[y], w = nh * DH;
                    guard_side side = v & 1 ? GUARD_BEFORE : GUARD_AFTER;
                    for (size_t i = 0; i < tq; i++)
                        kend[i] = n;
                    float *q[MAXH], *kk[MAXH], *vv[MAXH], *lse[MAXH];
                    float *dout = guard_copy(tq * w, side, src, 1);
                    float *o = guard_copy(tq * w, side, src, 1);
                    float *dq = guard_copy(tq * w, side, NULL, 0);
                    float *dk = guard_copy(n * w, side, NULL, 0);
                    float *dv = guard_copy(n * w, side, NULL, 0);
                    mhsa_small_bwd_args p[MAXH];
                    mhsa_attn_small_bwd_args g[MAXH];
                    mhsa_attn_heads_bwd_args a = { nh, { NULL } };
                    for (size_t hh = 0; hh < nh; hh++) {
                        q[hh] = guard_copy(tq * DH, side, src, 1);
                        kk[hh] = guard_copy(n * DH, side, src, 1);
                        vv[hh] = guard_copy(n * DH, side, src, 1);
                        lse[hh] = guard_copy(tq, side, src, 1);
                        mhsa_small_bwd_args sb = {
                            tq, n, DH, q[hh], kk[hh], vv[hh], dout + hh * DH,
                            w, NULL, 16, NULL, 16, 0.35f, dq + hh * DH,
                            dk + hh * DH, dv + hh * DH, w, r0, kend, 1, 1,
                        };
                        p[hh] = sb;
                        mhsa_attn_small_bwd_args ga = {
                            &p[hh], { NULL, 0, n > tq ? n - tq : 0, 0,
                                      (v >> 1) & 1, 0, 0 },
                            lse[hh], o + hh * DH, w,
                        };
                        g[hh] = ga;
                        a.h[hh] = &g[hh];
                    }
                    took += k->attn_small_heads_bwd(&a);
                    runs++;
                    for (size_t hh = 0; hh < nh; hh++) {
                        guard_free(q[hh]);
                        guard_free(kk[hh]);
                        guard_free(vv[hh]);
                        guard_free(lse[hh]);
                    }
                    guard_free(dout);
                    guard_free(o);
                    guard_free(dq);
                    guard_free(dk);
                    guard_free(dv);
                }
    printf("%s: %d of %d guarded head sets fused\n", k->name, took, runs);
    ck_assert_int_eq(took, runs);
}
END_TEST

int main(void)
{
    note_quick("a quarter of the random tiles");
    Suite *s = suite_create("small_heads_bwd");
    TCase *tc = tcase_create("small_heads_bwd");
    tcase_add_loop_test(tc, heads_match_one_by_one, 0, N_ISAS + 1);
    tcase_add_loop_test(tc, kernel_stays_in_bounds, 0, N_ISAS + 1);
    suite_add_tcase(s, tc);
    return run_suite(s);
}
