// bench_tune.c — the GEMM tuning harness: `./build/bench --tune`
// runs the SGEMM driver on copies of one ISA's table with other block sizes
// (kc, mc, nc) and prints them best first, as GFLOP/s and as a fraction
// of the FMA peak measured in the same run (bench_roofline.c).
//
//   ./build/bench --tune [--isa NAME] [--threads N] [--rounds R]
//                        [--shape M,N,K]... [--points "kc,mc,nc;..."]
//
// The points are timed in rounds, one call each per round, in turn, so a
// machine whose load drifts (other builds on a shared box) slows every
// point alike; the best round of each point is its figure (noise only
// lowers a round), the median shown beside it. At 1 thread a round is
// timed in the thread's CPU time (a loaded machine's waits left out), at
// more in wall-clock time (judge those on a quiet machine only). Default shapes: SGEMM
// 1024^3 and the block's QKV projection at B*T = 4096 (4096x1536x512);
// default points: kc, mc and nc each varied around the rule's numbers
// (kernels/blocking.c), then the table's fixed numbers and the rule's.
//
// Register tiles: each table has one tile (AVX2 6x16, AVX-512 12x32, NEON
// 8x12, scalar 4x8), tried with its own; a second tile for one ISA would
// be a second table to list here.
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "kernels/blocking.h"
#include "gemm/gemm.h"
#include "kernels/kernels.h"
#include "shim.h"

enum { MAX_POINTS = 64, MAX_SHAPES = 8, MAX_ROUNDS = 200 };

typedef struct point {
    mhsa_gemm_blocking bl;
    const char *mark;            // "rule", "table" or ""
    double sec[MAX_ROUNDS];
} point;

// Wall-clock time, or at 1 thread the thread's CPU time: on a shared
// machine a call of tens of milliseconds is rarely left to run
// uninterrupted, and the time it spent descheduled is not the GEMM's.
static double now(int threads)
{
    struct timespec ts;
    clock_gettime(threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC,
                  &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int add_point(point *p, int n, const mhsa_kernels *k,
                     mhsa_gemm_blocking b, const char *mark)
{
    b = mhsa__blocking_fit(k->mr, k->nr, b);
    for (int i = 0; i < n; i++)
        if (p[i].bl.kc == b.kc && p[i].bl.mc == b.mc && p[i].bl.nc == b.nc) {
            if (*mark)   // the rule's numbers are the table's
                p[i].mark = *p[i].mark ? "rule = table" : mark;
            return n;
        }
    if (n == MAX_POINTS)
        return n;
    p[n].bl = b;
    p[n].mark = mark;
    return n + 1;
}

static int default_points(const mhsa_kernels *k, point *p)
{
    const mhsa_kernels *t = mhsa__fixed_table(k->isa);
    mhsa_gemm_blocking r = mhsa__blocking_for_caches(k->mr, k->nr,
                                                     mhsa__cpu_caches());
    static const size_t kcs[] = { 128, 192, 256, 320, 384, 512 };
    static const size_t mcs[] = { 48, 72, 96, 120, 144, 192, 264 };
    static const size_t ncs[] = { 64, 128, 192, 256, 384, 512 };
    int n = 0;
    n = add_point(p, n, k, r, "rule");
    if (t)
        n = add_point(p, n, k, t->blocking, "table");
    for (size_t i = 0; i < sizeof kcs / sizeof kcs[0]; i++)
        n = add_point(p, n, k, (mhsa_gemm_blocking){ kcs[i], r.mc, r.nc }, "");
    for (size_t i = 0; i < sizeof mcs / sizeof mcs[0]; i++)
        n = add_point(p, n, k, (mhsa_gemm_blocking){ r.kc, mcs[i], r.nc }, "");
    for (size_t i = 0; i < sizeof ncs / sizeof ncs[0]; i++)
        n = add_point(p, n, k, (mhsa_gemm_blocking){ r.kc, r.mc, ncs[i] }, "");
    return n;
}

static int listed_points(const mhsa_kernels *k, const char *s, point *p)
{
    int n = 0;
    while (*s) {
        unsigned long kc, mc, nc;
        int used = 0;
        if (sscanf(s, "%lu,%lu,%lu%n", &kc, &mc, &nc, &used) != 3 || !kc) {
            fprintf(stderr, "bench --tune: bad point list at '%s'\n", s);
            return 0;
        }
        n = add_point(p, n, k, (mhsa_gemm_blocking){ kc, mc, nc }, "");
        s += used;
        while (*s == ';' || *s == ' ')
            s++;
    }
    return n;
}

static float *floats_filled(size_t n, unsigned seed)
{
    float *x = mhsa_bench_floats(n);
    if (x)
        mhsa_bench_fill(x, n, seed);
    return x;
}

// Times every point on one shape in rounds and prints the table.
static int tune_shape(const mhsa_kernels *base, point *pts, int np,
                      size_t m, size_t n, size_t kd, int threads, int rounds)
{
    float *a = floats_filled(m * kd, 1), *b = floats_filled(kd * n, 2);
    float *c = mhsa_bench_floats(m * n);
    size_t af = 0, bf = 0;
    for (int i = 0; i < np; i++) {
        mhsa_kernels k = *base;
        k.blocking = pts[i].bl;
        if (mhsa_gemm_a_floats(&k) > af) af = mhsa_gemm_a_floats(&k);
        if (mhsa_gemm_b_floats(&k, n) > bf) bf = mhsa_gemm_b_floats(&k, n);
    }
    mhsa_gemm_scratch s = { mhsa_bench_floats((size_t)threads * af),
                            mhsa_bench_floats(bf), bf, threads };
    if (!a || !b || !c || !s.a || !s.b) {
        fprintf(stderr, "bench --tune: out of memory\n");
        free(a); free(b); free(c); free(s.a); free(s.b);
        return 1;
    }
    int saved = omp_get_max_threads();
    omp_set_num_threads(threads);
    double peak = mhsa_bench_peak_gflops(base->isa, threads);
    for (int r = -1; r < rounds; r++)   // round -1 warms up, untimed
        for (int i = 0; i < np; i++) {
            mhsa_kernels k = *base;
            k.blocking = pts[i].bl;
            double t0 = now(threads);
            mhsa_sgemm(&k, &s, 0, 0, m, n, kd, 1.0f, a, kd, b, n, NULL,
                       0.0f, c, n);
            if (r >= 0)
                pts[i].sec[r] = now(threads) - t0;
        }
    double peak_end = mhsa_bench_peak_gflops(base->isa, threads);
    omp_set_num_threads(saved);
    double gf = 2e-9 * (double)m * n * kd, ref = 0.0;
    double best[MAX_POINTS], med[MAX_POINTS];
    int order[MAX_POINTS];
    for (int i = 0; i < np; i++) {
        qsort(pts[i].sec, (size_t)rounds, sizeof(double), cmp_double);
        best[i] = gf / pts[i].sec[0];
        med[i] = gf / pts[i].sec[rounds / 2];
        if (!strncmp(pts[i].mark, "rule", 4)) ref = best[i];
        order[i] = i;
    }
    for (int i = 1; i < np; i++)   // best first (insertion sort, few points)
        for (int j = i; j > 0 && best[order[j]] > best[order[j - 1]]; j--) {
            int t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
        }
    if (ref == 0.0) ref = best[order[0]];
    printf("\n%s sgemm %zux%zux%zu, %d thread%s, %d rounds (%s time); FMA "
           "peak %.1f GFLOP/s (%.1f at the end)\n", base->name, m, n, kd,
           threads, threads > 1 ? "s" : "", rounds,
           threads == 1 ? "CPU" : "wall", peak, peak_end);
    printf("%5s %5s %5s %9s %8s %9s %8s\n", "kc", "mc", "nc", "best", "of_peak",
           "median", "vs_rule");
    for (int o = 0; o < np; o++) {
        int i = order[o];
        printf("%5zu %5zu %5zu %9.1f %8.3f %9.1f %8.3f  %s\n", pts[i].bl.kc,
               pts[i].bl.mc, pts[i].bl.nc, best[i], best[i] / peak, med[i],
               best[i] / ref, pts[i].mark);
    }
    free(a); free(b); free(c); free(s.a); free(s.b);
    return 0;
}

int mhsa_bench_tune(int argc, char **argv)
{
    const char *isa_name = NULL, *points = NULL;
    int threads = 1, rounds = 20, nshapes = 0;
    size_t shapes[MAX_SHAPES][3];
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long m, n, k;
        if (!strcmp(argv[i], "--tune")) continue;
        if (v && !strcmp(argv[i], "--isa")) { isa_name = v; i++; }
        else if (v && !strcmp(argv[i], "--threads")) { threads = atoi(v); i++; }
        else if (v && !strcmp(argv[i], "--rounds")) { rounds = atoi(v); i++; }
        else if (v && !strcmp(argv[i], "--points")) { points = v; i++; }
        else if (v && !strcmp(argv[i], "--shape") && nshapes < MAX_SHAPES &&
                 sscanf(v, "%lu,%lu,%lu", &m, &n, &k) == 3 && m && n && k) {
            shapes[nshapes][0] = m; shapes[nshapes][1] = n;
            shapes[nshapes][2] = k; nshapes++; i++;
        } else {
            fprintf(stderr, "usage: bench --tune [--isa NAME] [--threads N] "
                    "[--rounds R] [--shape M,N,K]... [--points "
                    "\"kc,mc,nc;...\"]\n");
            return 2;
        }
    }
    if (threads < 1 || threads > 64 || rounds < 1 || rounds > MAX_ROUNDS) {
        fprintf(stderr, "bench --tune: threads 1..64, rounds 1..%d\n",
                MAX_ROUNDS);
        return 2;
    }
    if (!nshapes) {
        static const size_t def[][3] = { { 1024, 1024, 1024 },
                                         { 4096, 1536, 512 } };
        memcpy(shapes, def, sizeof def);
        nshapes = 2;
    }
    const mhsa_kernels *k = mhsa__kernels();
    if (isa_name) {
        k = NULL;
        for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++)
            if (!strcmp(isa_name, mhsa_isa_name(i)))
                k = mhsa_kernels_for(i);
        if (!k) {
            fprintf(stderr, "bench --tune: isa %s not available\n", isa_name);
            return 2;
        }
    }
    static point pts[MAX_POINTS];
    int np = points ? listed_points(k, points, pts) : default_points(k, pts);
    if (!np)
        return 2;
    const mhsa_cpu_caches *cc = mhsa__cpu_caches();
    printf("caches: L1d %zu KiB, L2 %zu KiB, L3 %zu KiB (%s); blocking "
           "from %s; load average at start: ", cc->l1d >> 10, cc->l2 >> 10,
           cc->l3 >> 10, cc->source, mhsa__blocking_source());
    FILE *f = fopen("/proc/loadavg", "r");
    char la[64] = "?";
    if (f) { if (!fgets(la, sizeof la, f)) la[0] = 0; fclose(f); }
    printf("%s", la);
    for (int s = 0; s < nshapes; s++)
        if (tune_shape(k, pts, np, shapes[s][0], shapes[s][1], shapes[s][2],
                       threads, rounds))
            return 1;
    return 0;
}
