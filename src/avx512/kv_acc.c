// kv_acc.c — AVX-512 decode accumulation over cached V rows stored as
// fp32, F16 or BF16 (contract in kernels.h; the tiles and the bits:
// vgemv.h).
#include "avx512/avx512.h"
#include "avx512/vgemv.h"
#include "kernels/kv_plan.h"

void mhsa_kv_acc__avx512(size_t m, size_t n, size_t d, const float *p,
                         size_t ldp, const void *v, size_t ldv,
                         mhsa_dtype dt, float *o, size_t ldo)
{
#define ACC_ALL(t) acc_all(m, n, d, p, ldp, v, ldv, t, o, ldo)
    MHSA_KV_BY_DTYPE(dt, ACC_ALL);
#undef ACC_ALL
}
