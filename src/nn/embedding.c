// embedding.c — token and position embeddings, forward and backward.
//
//   x[b, t, :] = wte[tokens[b, t], :] + wpe[t, :]   (wpe NULL: wte only,
//                                                    positions come from RoPE)
// Backward scatters dx back into the rows it was read from. A token that
// appears twice adds twice, so the rows are visited in order on one thread:
// the sums, and their bits, never depend on the thread count. With 16-bit
// weights (mhsa_gpt_config.weight_dtype) the forward reads the tables as
// stored and widens each row; an fp32 row is copied, and widening is exact,
// so one forward serves every dtype with the bits of wte + wpe.
#include "core/fpenv.h"
#include "kernels/half.h"
#include "layers.h"

void mhsa__embed_backward(float *dwte, float *dwpe, const float *dx,
                          const int32_t *tokens, size_t B, size_t T,
                          size_t D)
{
    for (size_t n = 0; n < B * T; n++) {
        const float *g = dx + n * D;                        // (D)
        float *te = dwte + (size_t)tokens[n] * D;           // (D)
        for (size_t d = 0; d < D; d++)
            te[d] += g[d];
        if (dwpe) {
            float *pe = dwpe + (n % T) * D;                 // (D)
            for (size_t d = 0; d < D; d++)
                pe[d] += g[d];
        }
    }
}

// Row n of x from tables stored as dt (position pos0 + n % T).
static void embed_row_dt(const mhsa_kernels *k, float *x,
                         const int32_t *tokens, const void *wte,
                         const void *wpe, mhsa_dtype dt, size_t T,
                         size_t pos0, size_t D, size_t n)
{
    size_t row = D * mhsa_dtype_size(dt);   // bytes of one stored row
    float *xn = x + n * D;                              // (D)
    k->cvt_to_f32(D, (const char *)wte + (size_t)tokens[n] * row, dt, xn);
    if (!wpe)
        return;
    const char *pe = (const char *)wpe + (pos0 + n % T) * row;
    for (size_t d = 0; d < D; d++)   // widening is exact
        xn[d] += mhsa_load_as_f32(pe, d, dt);
}

void mhsa__embed_forward(const mhsa_kernels *k, float *x,
                         const int32_t *tokens, const void *wte,
                         const void *wpe, mhsa_dtype dt, size_t N, size_t T,
                         size_t pos0, size_t D)
{
    int nt = mhsa__layer_threads(N, D);
    if (nt <= 1) {   // no parallel region below the threshold (rows.c)
        for (size_t n = 0; n < N; n++)
            embed_row_dt(k, x, tokens, wte, wpe, dt, T, pos0, D, n);
        return;
    }
#pragma omp parallel num_threads(nt)
    {
        mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
        for (size_t n = 0; n < N; n++)
            embed_row_dt(k, x, tokens, wte, wpe, dt, T, pos0, D, n);
        mhsa__fp_leave_team(fp);
    }
}
