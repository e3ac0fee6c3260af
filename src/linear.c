// linear.c — the block's projections (linear.h).
#include <string.h>

#include "fpenv.h"
#include "linear.h"
#include "threads.h"

void mhsa__linear(const mhsa_kernels *k, const mhsa_workspace *ws,
                  size_t rows, size_t n, size_t kdim, const float *x,
                  const float *w, const float *w_packed, const float *b,
                  float *y)
{
    if (b)   // start from the bias, then accumulate x W^T onto it
        for (size_t r = 0; r < rows; r++)
            memcpy(y + r * n, b, n * sizeof(float));
    if (rows == 1) {
        // One token: stream W once, unpacked (a GEMM tile would waste
        // mr - 1 rows). Fixed chunks of outputs, one writer each.
        enum { CH = 64 };
        size_t chunks = (n + CH - 1) / CH;
        int nt = mhsa__threads(ws->max_threads, 2.0 * (double)n *
                               (double)kdim, chunks);
#pragma omp parallel num_threads(nt) if (nt > 1)
        {
            mhsa_fpstate fp = mhsa__fp_enter_team();
#pragma omp for schedule(static)
            for (size_t c = 0; c < chunks; c++) {
                size_t j0 = c * CH, m = n - j0 < CH ? n - j0 : CH;
                k->gemv_n(m, kdim, w + j0 * kdim, kdim, x, y + j0,
                          b ? 1.0f : 0.0f);
            }
            mhsa__fp_leave_team(fp);
        }
        return;
    }
    mhsa_sgemm(k, &ws->gemm, 0, 1, rows, n, kdim, 1.0f, x, kdim, w, kdim,
               w_packed, b ? 1.0f : 0.0f, y, n);
}
