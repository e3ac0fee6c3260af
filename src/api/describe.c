// describe.c — mhsa_describe: what the library chose on this machine and
// why, as text (the report `mhsa-info` prints): the ISAs, the CPU and the
// features later kernels use, the bf16 tile set, the cache sizes and the
// GEMM blocking each runnable table got. Everything it reads is internal on
// purpose (it changes with the kernels); this is its one public face.
#include <stdarg.h>
#include <stdio.h>

#include "core/cpu_caches.h"
#include "core/cpu_features.h"
#include "gemm/gemm_bf16.h"
#include "kernels/kernels.h"

// The report so far: buf (cap bytes, NUL-terminated when cap > 0) holds
// its first cap - 1 bytes; len counts all of it.
typedef struct out {
    char *buf;
    size_t cap, len;
} out;

__attribute__((format(printf, 2, 3)))
static void put(out *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

// Whether this build has isa's kernels (dispatch still asks the CPU).
static int built(mhsa_isa isa)
{
    switch (isa) {
    case MHSA_ISA_SCALAR: return 1;
#if MHSA_HAVE_AVX2
    case MHSA_ISA_AVX2:   return 1;
#endif
#if MHSA_HAVE_NEON
    case MHSA_ISA_NEON:   return 1;
#endif
#if MHSA_HAVE_AVX512
    case MHSA_ISA_AVX512: return 1;
#endif
    default:              return 0;
    }
}

// What an ISA's kernels need from the CPU and OS (dispatch.c checks it).
static const char *needs(mhsa_isa isa)
{
    switch (isa) {
    case MHSA_ISA_AVX2:
        return "this CPU lacks AVX2, FMA or F16C, or the OS does not save "
               "the YMM state";
    case MHSA_ISA_AVX512:
        return "this CPU lacks AVX-512 F/BW/VL/DQ, or the OS does not save "
               "the opmask and ZMM state";
    default:
        return "not supported here";
    }
}

size_t mhsa_describe(char *buf, size_t cap)
{
    out o = { buf, buf ? cap : 0, 0 };
    if (o.cap)
        buf[0] = '\0';
    put(&o, "mhsa %s\n", mhsa_version());
    put(&o, "active isa: %s\n", mhsa_isa_name(mhsa_active_isa()));
    put(&o, "available:");
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++)
        if (mhsa_kernels_for(i))
            put(&o, " %s", mhsa_isa_name(i));
    put(&o, "\n");
    // Kernels this build has but the CPU (or OS) cannot run, said plainly.
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++)
        if (built(i) && !mhsa_kernels_for(i))
            put(&o, "not on this CPU: %s (%s)\n", mhsa_isa_name(i),
                needs(i));
    // Features the CPU and OS give that later kernels use (BF16 compute).
    const mhsa_cpu_features *f = mhsa__cpu_features();
    if (f->family)
        put(&o, "cpu: %s family %d model %d\n",
            f->vendor == MHSA_CPU_INTEL ? "Intel"
            : f->vendor == MHSA_CPU_AMD ? "AMD" : "other",
            f->family, f->model);
    put(&o, "cpu features:%s%s%s%s%s%s%s%s\n",
        f->avx2_fma_f16c ? " avx2+fma+f16c" : "",
        f->avx512 ? " avx512f/bw/vl/dq" : "",
        f->avx512_vnni ? " avx512_vnni" : "",
        f->avx512_bf16 ? " avx512_bf16" : "",
        f->avx512_fp16 ? " avx512_fp16" : "", f->amx_bf16 ? " amx_bf16" : "",
        f->neon ? " neon" : "", f->neon_dotprod ? " dotprod" : "");
    // The bf16 tile set of the active table, and why: forced by
    // MHSA_BF16_TILES, a row of the table of measured CPUs, or the
    // one-time measurement (which runs here if nothing ran it before).
    const mhsa_kernels *k = mhsa__kernels();
    mhsa_bf16_choice ch = mhsa__bf16_choice(k);
    char why[256];
    mhsa__bf16_explain(&ch, why, sizeof why);
    put(&o, "bf16 tiles: %s (MHSA_BF16_TILES %s): %s%s\n",
        ch.tiles ? ch.tiles->name : "none", mhsa__bf16_selected(), why,
        ch.tiles ? "" : "; bf16 compute takes the exact fp32 fallback");
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
        const mhsa_kernels *t = i == MHSA_ISA_AVX512
#if MHSA_HAVE_AVX512
                                ? &mhsa_kernels_avx512
#else
                                ? NULL
#endif
                                : mhsa_kernels_for(i);
        for (const mhsa_bf16_tiles *const *b = t ? t->bf16 : NULL; b && *b;
             b++)
            if (!mhsa_gemm_bf16_runnable(*b) || !mhsa_kernels_for(i))
                put(&o, "not on this CPU: bf16 tiles %s (needs %s)\n",
                    (*b)->name,
                    (*b)->needs == MHSA_BF16_NEEDS_AMX_BF16
                        ? "AMX-TILE + AMX-BF16, AVX512_BF16 and the "
                          "OS tile data permission"
                        : "AVX512_BF16");
    }
    const mhsa_cpu_caches *c = mhsa__cpu_caches();
    put(&o, "caches: L1d %zu KiB and L2 %zu KiB per core, L3 %zu KiB (%s)\n",
        c->l1d >> 10, c->l2 >> 10, c->l3 >> 10, c->source);
    // The GEMM block sizes each runnable table got, beside its fixed ones.
    put(&o, "gemm blocking from %s:\n", mhsa__blocking_source());
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
        const mhsa_kernels *r = mhsa_kernels_for(i);
        const mhsa_kernels *t = mhsa__fixed_table(i);
        if (!r || !t)
            continue;
        put(&o, "  %-7s tile %dx%d: kc %zu mc %zu nc %zu (table.c: kc %zu "
            "mc %zu nc %zu)\n", r->name, r->mr, r->nr, r->blocking.kc,
            r->blocking.mc, r->blocking.nc, t->blocking.kc,
            t->blocking.mc, t->blocking.nc);
    }
    return o.len;
}
