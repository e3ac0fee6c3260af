// lse_log.c — mhsa_lse_add_log__scalar (kernels.h: lse_add_log): the
// log-sum-exp finish lse[i] = lse[i] + log(lsum[i]) through the reference
// logarithm (kernels/log_f32.h), whose double operations the vector
// kernels repeat lane by lane; so this is their bit-exact reference.
#include "kernels/log_f32.h"
#include "scalar/scalar.h"

void mhsa_lse_add_log__scalar(size_t n, float *lse, const float *lsum)
{
    for (size_t i = 0; i < n; i++)
        lse[i] = lse[i] + mhsa_log_f32(lsum[i]);
}
