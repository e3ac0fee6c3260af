// block.c — the attention block's lifetime: create, weights in and out,
// deterministic random init, and packing the weights once for the GEMM.
#include <math.h>
#include <stdatomic.h>
#include <string.h>

#include "core/fpenv.h"
#include "gemm/round_bf16.h"
#include "objects.h"
#include "rope_factors.h"

static _Atomic uint64_t next_block_id = 1;

// Packed weights are sized for the table that pads them most (each rounds
// n up to its own NR), so a later mhsa_select_isa can repack without
// allocating. 0 on overflow.
static size_t packed_floats(size_t kdim, size_t n)
{
    size_t most = 0;
    for (mhsa_isa i = MHSA_ISA_SCALAR; i <= MHSA_ISA_LAST; i++) {
        const mhsa_kernels *k = mhsa_kernels_for(i);
        if (!k)
            continue;
        size_t f = mhsa_gemm_prepacked_floats(k, kdim, n);
        if (f == 0)
            return 0;
        if (f > most)
            most = f;
    }
    return most;
}

// The 0.1 fields, then the 0.2 ones (zero means "as before"); every
// message names the field and its value.
static mhsa_status check_config(const char *fn, const mhsa_config *cfg)
{
    if (cfg->d_model <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: d_model = %d must be > 0",
                          fn, cfg->d_model);
    if (cfg->n_heads <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: n_heads = %d must be > 0",
                          fn, cfg->n_heads);
    if (cfg->max_seq_len <= 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: max_seq_len = %d must be > 0", fn,
                          cfg->max_seq_len);
    if (cfg->causal != 0 && cfg->causal != 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: causal = %d must be 0 or 1", fn, cfg->causal);
    if (cfg->bias != 0 && cfg->bias != 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: bias = %d must be 0 or 1", fn, cfg->bias);
    if (cfg->d_model % cfg->n_heads != 0)
        return mhsa__fail(MHSA_ERR_SHAPE, "%s: d_model = %d is not divisible "
                          "by n_heads = %d", fn, cfg->d_model, cfg->n_heads);
    int dh = cfg->d_model / cfg->n_heads;
    if (cfg->n_kv_heads < 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: n_kv_heads = %d must be >= 0 (0 means "
                          "n_heads)", fn, cfg->n_kv_heads);
    if (cfg->rope_dim < 0 || cfg->rope_dim % 2 != 0 || cfg->rope_dim > dh)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: rope_dim = %d must be 0 or even in 2..%d "
                          "(the head size)", fn, cfg->rope_dim, dh);
    if (!(cfg->rope_theta >= 0.0f) || isinf(cfg->rope_theta))
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: rope_theta = %g must be finite and >= 0 (0 "
                          "means 10000)", fn, (double)cfg->rope_theta);
    if (cfg->rope_interleaved != 0 && cfg->rope_interleaved != 1)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: rope_interleaved = %d must be 0 or 1", fn,
                          cfg->rope_interleaved);
    if (cfg->window < 0)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: window = %d must be >= 0", fn, cfg->window);
    if (cfg->window > 0 && !cfg->causal)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: window = %d needs a causal block (causal = "
                          "0)", fn, cfg->window);
    if (cfg->n_kv_heads > 0 && cfg->n_heads % cfg->n_kv_heads != 0)
        return mhsa__fail(MHSA_ERR_SHAPE,
                          "%s: n_heads = %d is not divisible by n_kv_heads "
                          "= %d", fn, cfg->n_heads, cfg->n_kv_heads);
    if (cfg->weight_dtype != MHSA_F32 && cfg->weight_dtype != MHSA_F16 &&
        cfg->weight_dtype != MHSA_BF16)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: weight_dtype = %d is not MHSA_F32 (0), "
                          "MHSA_F16 (1) or MHSA_BF16 (2)", fn,
                          cfg->weight_dtype);
    if (cfg->compute_dtype != MHSA_F32 && cfg->compute_dtype != MHSA_BF16)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: compute_dtype = %d is not MHSA_F32 (0) or "
                          "MHSA_BF16 (2)%s", fn, cfg->compute_dtype,
                          cfg->compute_dtype == MHSA_F16
                              ? ": F16 compute is not offered" : "");
    return MHSA_OK;
}

// cos and sin of every angle p * theta^(-2i/R) / factors[i] (factors NULL:
// 1), in double: a float angle at p = 32768 would already be off by up to
// 2e-3 radians.
static void rope_tables(mhsa_block *b, const float *factors)
{
    double theta = b->cfg.rope_theta > 0.0f ? (double)b->cfg.rope_theta
                                            : 10000.0;
    size_t half = b->rope_half, R = 2 * half;
    for (size_t i = 0; i < half; i++) {
        double inv_freq = pow(theta, -2.0 * (double)i / (double)R);
        if (factors)
            inv_freq /= (double)factors[i];
        for (size_t p = 0; p < (size_t)b->cfg.max_seq_len; p++) {
            double a = (double)p * inv_freq;
            b->rope_cos[p * half + i] = (float)cos(a);
            b->rope_sin[p * half + i] = (float)sin(a);
        }
    }
}

// A block of cfg (checked), with its weights, or without them (shell):
// then only the rotary tables are allocated.
static mhsa_status create(const mhsa_config *cfg, int shell, mhsa_block **out)
{
    const char *fn = shell ? "mhsa__block_create_shell" : "mhsa_block_create";
    size_t D = (size_t)cfg->d_model, H = (size_t)cfg->n_heads, dh = D / H;
    size_t Hkv = cfg->n_kv_heads > 0 ? (size_t)cfg->n_kv_heads : H;
    size_t nqkv = (H + 2 * Hkv) * dh;    // <= 3D: no overflow
    size_t half = (size_t)cfg->rope_dim / 2, n_rope = 0;
    mhsa_dtype wdt = (mhsa_dtype)cfg->weight_dtype;
    size_t n_wqkv, n_wout, p_qkv = packed_floats(D, nqkv),
           p_out = packed_floats(D, D);
    if (!mhsa__mul(nqkv, D, &n_wqkv) || !mhsa__mul(D, D, &n_wout) ||
        !p_qkv || !p_out || n_wqkv > SIZE_MAX / sizeof(float) ||
        p_qkv > SIZE_MAX / sizeof(float))
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: d_model = %d overflows size_t", fn,
                          cfg->d_model);
    if (half && (!mhsa__mul((size_t)cfg->max_seq_len, half, &n_rope) ||
                 n_rope > SIZE_MAX / sizeof(float)))
        return mhsa__fail(MHSA_ERR_NO_MEMORY,
                          "%s: rotary tables for max_seq_len = %d x "
                          "rope_dim = %d overflow size_t", fn,
                          cfg->max_seq_len, cfg->rope_dim);

    mhsa_block *b = mhsa__alloc(sizeof *b);
    if (!b)
        goto oom;
    b->cfg = *cfg;
    b->D = D;
    b->H = H;
    b->dh = dh;
    b->Hkv = Hkv;
    b->group = H / Hkv;
    b->nqkv = nqkv;
    b->rope_half = half;
    b->wdt = wdt;
    b->cdt = (mhsa_dtype)cfg->compute_dtype;
    b->shell = shell;
    if (!shell) {
        b->w_qkv = mhsa__alloc(n_wqkv * mhsa_dtype_size(wdt));
        b->w_out = mhsa__alloc(n_wout * mhsa_dtype_size(wdt));
        if (!b->w_qkv || !b->w_out)
            goto oom;
    }
    if (!shell && wdt == MHSA_F32) {
        b->w_qkv_packed = mhsa__alloc(p_qkv * sizeof(float));
        b->w_out_packed = mhsa__alloc(p_out * sizeof(float));
        if (!b->w_qkv_packed || !b->w_out_packed)
            goto oom;
    }
    if (cfg->bias) {
        b->b_qkv = mhsa__alloc(nqkv * sizeof(float));
        b->b_out = mhsa__alloc(D * sizeof(float));
        if (!b->b_qkv || !b->b_out)
            goto oom;
    }
    if (half) {
        b->rope_cos = mhsa__alloc(n_rope * sizeof(float));
        b->rope_sin = mhsa__alloc(n_rope * sizeof(float));
        if (!b->rope_cos || !b->rope_sin)
            goto oom;
        // In the library's FP state: the caller's rounding mode must not
        // change the tables' bits.
        mhsa_fpstate fp = mhsa__fp_enter();
        rope_tables(b, NULL);
        mhsa__fp_leave(fp);
    }
    b->id = atomic_fetch_add(&next_block_id, 1);
    if (!shell)
        mhsa__block_repack(b);   // zero weights, packed for the active table
    *out = b;
    return MHSA_OK;
oom:
    mhsa_block_destroy(b);
    return mhsa__fail(MHSA_ERR_NO_MEMORY, "%s: out of memory for d_model = "
                      "%d", fn, cfg->d_model);
}

mhsa_status mhsa_block_create(const mhsa_config *cfg, mhsa_block **out)
{
    if (!out || !cfg)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_block_create: %s is "
                          "NULL", !out ? "out" : "cfg");
    mhsa_status st = check_config("mhsa_block_create", cfg);
    if (st != MHSA_OK)
        return st;
    return create(cfg, 0, out);
}

mhsa_status mhsa__block_create_shell(const mhsa_config *cfg,
                                     mhsa_block **out)
{
    static const char fn[] = "mhsa__block_create_shell";
    if (!out || !cfg)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !out ? "out" : "cfg");
    mhsa_status st = check_config(fn, cfg);
    if (st != MHSA_OK)
        return st;
    if (cfg->bias)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: bias = 1: a block "
                          "without weights has no biases either", fn);
    return create(cfg, 1, out);
}

mhsa_status mhsa__check_weights(const char *fn, const mhsa_block *blk)
{
    if (blk->shell)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: the block holds no "
                          "weights (made by mhsa__block_create_shell for a "
                          "model that projects Q, K, V and the output "
                          "itself)", fn);
    return MHSA_OK;
}

void mhsa_block_destroy(mhsa_block *b)
{
    if (!b)
        return;
    MHSA_FREE_ALL(b->w_qkv, b->b_qkv, b->w_out, b->b_out, b->w_qkv_packed,
                  b->w_out_packed, b->rope_cos, b->rope_sin, b);
}

const mhsa_config *mhsa_block_config(const mhsa_block *blk)
{
    return blk ? &blk->cfg : NULL;
}

size_t mhsa_block_weight_bytes(const mhsa_block *blk)
{
    if (!blk || blk->shell)
        return 0;
    size_t D = blk->D, nqkv = blk->nqkv;
    size_t bytes = (nqkv * D + D * D) * mhsa_dtype_size(blk->wdt);
    if (blk->cfg.bias)
        bytes += (nqkv + D) * sizeof(float);
    return bytes;
}

void mhsa__block_repack(mhsa_block *b)
{
    const mhsa_kernels *k = mhsa__kernels();
    if (b->wdt == MHSA_F32) {
        // y = x W^T: op(B) = W^T, i.e. B = W read transposed (trans_b = 1).
        mhsa_gemm_prepack_b(k, b->D, b->nqkv, b->w_qkv, b->D, 1,
                            b->w_qkv_packed);
        mhsa_gemm_prepack_b(k, b->D, b->D, b->w_out, b->D, 1,
                            b->w_out_packed);
        if (b->cdt == MHSA_BF16) {
            mhsa__round_bf16(b->w_qkv_packed,
                             mhsa_gemm_prepacked_floats(k, b->D, b->nqkv));
            mhsa__round_bf16(b->w_out_packed,
                             mhsa_gemm_prepacked_floats(k, b->D, b->D));
        }
        b->packed_for = k;
    }
    b->version++;
}

// n weights from fp32 into the block's storage, rounded to its dtype
// (round to nearest even, beyond the F16 range +-inf: the conversion
// kernels' contract). memmove for fp32: the caller may pass views of the
// block's own weights.
static void store_weights(const mhsa_block *b, void *dst, const float *src,
                          size_t n)
{
    if (b->wdt == MHSA_F32)
        memmove(dst, src, n * sizeof(float));
    else
        mhsa__kernels()->cvt_from_f32(n, src, dst, b->wdt);
}

// n stored weights as fp32 (exact).
static void load_weights(const mhsa_block *b, float *dst, const void *src,
                         size_t n)
{
    if (b->wdt == MHSA_F32)
        memmove(dst, src, n * sizeof(float));
    else
        mhsa__kernels()->cvt_to_f32(n, src, b->wdt, dst);
}

static mhsa_status check_weight_ptrs(const char *fn, const mhsa_block *blk,
                                     const void *w_qkv, const void *b_qkv,
                                     const void *w_out, const void *b_out)
{
    if (!blk || !w_qkv || !w_out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s is NULL", fn,
                          !blk ? "blk" : !w_qkv ? "w_qkv" : "w_out");
    if (blk->cfg.bias && !b_qkv)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: b_qkv is NULL but the block has bias = 1", fn);
    if (blk->cfg.bias && !b_out)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "%s: b_out is NULL but the block has bias = 1", fn);
    return mhsa__check_weights(fn, blk);
}

mhsa_status mhsa_block_set_weights(mhsa_block *blk,
                                   const float *w_qkv, const float *b_qkv,
                                   const float *w_out, const float *b_out)
{
    mhsa_status st = check_weight_ptrs("mhsa_block_set_weights", blk, w_qkv,
                                       b_qkv, w_out, b_out);
    if (st != MHSA_OK)
        return st;
    size_t D = blk->D, nqkv = blk->nqkv;
    store_weights(blk, blk->w_qkv, w_qkv, nqkv * D);
    store_weights(blk, blk->w_out, w_out, D * D);
    if (blk->cfg.bias) {
        memmove(blk->b_qkv, b_qkv, nqkv * sizeof(float));
        memmove(blk->b_out, b_out, D * sizeof(float));
    }
    mhsa__block_repack(blk);
    return MHSA_OK;
}

mhsa_status mhsa_block_get_weights(const mhsa_block *blk,
                                   float *w_qkv, float *b_qkv,
                                   float *w_out, float *b_out)
{
    mhsa_status st = check_weight_ptrs("mhsa_block_get_weights", blk, w_qkv,
                                       b_qkv, w_out, b_out);
    if (st != MHSA_OK)
        return st;
    size_t D = blk->D, nqkv = blk->nqkv;
    load_weights(blk, w_qkv, blk->w_qkv, nqkv * D);
    load_weights(blk, w_out, blk->w_out, D * D);
    if (blk->cfg.bias) {
        memmove(b_qkv, blk->b_qkv, nqkv * sizeof(float));
        memmove(b_out, blk->b_out, D * sizeof(float));
    }
    return MHSA_OK;
}

// splitmix64, and a uniform draw in [-bound, bound) computed in double from
// 53 random bits and rounded once: the same bits on every platform.
static uint64_t splitmix64(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// Into the block's storage (rounded like set weights), drawn in fp32
// chunks so that 16-bit weights need no fp32 copy of the matrix.
static void xavier_uniform(const mhsa_block *b, void *w, size_t fan_out,
                           size_t fan_in, uint64_t *state)
{
    enum { CHUNK = 256 };
    float buf[CHUNK];
    double bound = sqrt(6.0 / (double)(fan_in + fan_out));
    size_t es = mhsa_dtype_size(b->wdt), n = fan_out * fan_in;
    for (size_t i0 = 0; i0 < n; i0 += CHUNK) {
        size_t c = n - i0 < CHUNK ? n - i0 : CHUNK;
        for (size_t i = 0; i < c; i++) {
            double u = (double)(splitmix64(state) >> 11) * 0x1.0p-53;
            buf[i] = (float)((2.0 * u - 1.0) * bound);
        }
        store_weights(b, (char *)w + i0 * es, buf, c);
    }
}

static mhsa_status block_init_random(mhsa_block *blk, uint64_t seed)
{
    if (!blk)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa_block_init_random: blk is NULL");
    mhsa_status st = mhsa__check_weights("mhsa_block_init_random", blk);
    if (st != MHSA_OK)
        return st;
    uint64_t state = seed;
    size_t D = blk->D, nqkv = blk->nqkv;
    // As torch.nn.MultiheadAttention: in_proj_weight (3D, D) as one matrix
    // (with grouped-query attention, the whole (nqkv, D) matrix's shape).
    xavier_uniform(blk, blk->w_qkv, nqkv, D, &state);
    xavier_uniform(blk, blk->w_out, D, D, &state);
    if (blk->cfg.bias) {
        memset(blk->b_qkv, 0, nqkv * sizeof(float));
        memset(blk->b_out, 0, D * sizeof(float));
    }
    mhsa__block_repack(blk);
    return MHSA_OK;
}

mhsa_status mhsa_block_init_random(mhsa_block *blk, uint64_t seed)
{
    MHSA__FP_RETURN(block_init_random(blk, seed));
}

mhsa_status mhsa__block_set_rope_factors(mhsa_block *blk,
                                         const float *factors)
{
    static const char fn[] = "mhsa__block_set_rope_factors";
    if (!blk || !blk->rope_half)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: %s", fn,
                          !blk ? "blk is NULL" : "the block has no RoPE");
    for (size_t i = 0; factors && i < blk->rope_half; i++)
        if (!(factors[i] > 0.0f) || isinf(factors[i]))
            return mhsa__fail(MHSA_ERR_INVALID_ARG, "%s: factors[%zu] = %g "
                              "must be finite and > 0", fn, i,
                              (double)factors[i]);
    rope_tables(blk, factors);
    return MHSA_OK;
}
