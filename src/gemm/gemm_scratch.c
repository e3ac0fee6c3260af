// gemm_scratch.c — sizes of the GEMM drivers' scratch (gemm_scratch.h):
// an mc x kc block of A per thread, and kc rows of B rounded up to whole
// nr-column panels, from the table's blocking (kernels.h).
#include "gemm_scratch.h"

#include "core/alloc.h"

size_t mhsa_gemm_a_floats(const mhsa_kernels *k)
{
    return k->blocking.mc * k->blocking.kc;
}

size_t mhsa_gemm_b_floats(const mhsa_kernels *k, size_t n)
{
    size_t f, nr = (size_t)k->nr;
    if (n > ((size_t)-1) / 2 ||
        !mhsa__mul(k->blocking.kc, (n + nr - 1) / nr * nr, &f))
        return 0;
    return f;
}
