// kv_dot.c — AVX-512 decode scores over cached K rows stored as fp32, F16
// or BF16 (contract in kernels.h; the tiles and the bits: vgemv.h).
#include "avx512/avx512.h"
#include "avx512/vgemv.h"

void mhsa_kv_dot__avx512(size_t m, size_t n, size_t d, const float *q,
                         size_t ldq, const void *k, size_t ldk,
                         mhsa_dtype dt, float *s, size_t lds)
{
    switch (dt) {
    case MHSA_F16:
        dot_all(m, n, d, q, ldq, k, ldk, MHSA_F16, s, lds);
        return;
    case MHSA_BF16:
        dot_all(m, n, d, q, ldq, k, ldk, MHSA_BF16, s, lds);
        return;
    case MHSA_F32:
        break;
    }
    dot_all(m, n, d, q, ldq, k, ldk, MHSA_F32, s, lds);
}
