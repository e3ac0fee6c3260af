// kv_dot.c — AVX-512 decode scores over cached K rows stored as fp32, F16
// or BF16 (contract in kernels.h; the tiles and the bits: vgemv.h).
#include "avx512/avx512.h"
#include "avx512/vgemv.h"
#include "kernels/kv_plan.h"

void mhsa_kv_dot__avx512(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const void *k, size_t ldk,
                         mhsa_dtype dt, float *s, size_t lds)
{
#define DOT_ALL(t) dot_all(m, n, d, q, ldq, k, ldk, t, s, lds)
    MHSA_KV_BY_DTYPE(dt, DOT_ALL);
#undef DOT_ALL
}
