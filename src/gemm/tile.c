// tile.c — the single-threaded tile products of tile.h: whole blocks
// packed by the table's packers (rounded to bf16 for a bf16 compute
// dtype, as the driver's panels) and multiplied panel by panel by its
// micro-kernels.
#include "tile.h"

#include "round_bf16.h"

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

size_t mhsa_tile_a_floats(const mhsa_kernels *k, size_t m, size_t kdim)
{
    return round_up(m, (size_t)k->mr) * kdim;
}

size_t mhsa_tile_b_floats(const mhsa_kernels *k, size_t kdim, size_t n)
{
    return round_up(n, (size_t)k->nr) * kdim;
}

void mhsa_tile_pack_a(const mhsa_kernels *k, size_t m, size_t kdim,
                      const float *a, size_t lda, int trans, float alpha,
                      mhsa_dtype cdt, float *ap)
{
    size_t mr = (size_t)k->mr;
    for (size_t i = 0; i < m; i += mr) {
        size_t h = m - i < mr ? m - i : mr;
        k->pack_a(h, kdim, trans ? a + i : a + i * lda, lda, trans, alpha,
                  ap + i * kdim);
    }
    if (cdt == MHSA_BF16)
        mhsa__round_bf16(ap, mhsa_tile_a_floats(k, m, kdim));
}

void mhsa_tile_pack_b(const mhsa_kernels *k, size_t kdim, size_t n,
                      const float *b, size_t ldb, int trans, mhsa_dtype cdt,
                      float *bp)
{
    size_t nr = (size_t)k->nr;
    for (size_t j = 0; j < n; j += nr) {
        size_t w = n - j < nr ? n - j : nr;
        k->pack_b(kdim, w, trans ? b + j * ldb : b + j, ldb, trans,
                  bp + j * kdim);
    }
    if (cdt == MHSA_BF16)
        mhsa__round_bf16(bp, mhsa_tile_b_floats(k, kdim, n));
}

void mhsa_tile_gemm(const mhsa_kernels *k, size_t m, size_t n, size_t kdim,
                    const float *ap, const float *bp, float *c, size_t ldc,
                    float beta)
{
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    for (size_t j = 0; j < n; j += nr) {
        size_t w = n - j < nr ? n - j : nr;
        for (size_t i = 0; i < m; i += mr) {
            size_t h = m - i < mr ? m - i : mr;
            k->sgemm_ukr(kdim, ap + i * kdim, bp + j * kdim,
                         c + i * ldc + j, ldc, h, w, beta, NULL);
        }
    }
}

int mhsa_tile_has_ra(const mhsa_kernels *k) { return k->sgemm_ukr_ra != NULL; }

void mhsa_tile_gemm_ra(const mhsa_kernels *k, size_t m, size_t n,
                       size_t kdim, const float *a, size_t lda, float alpha,
                       const float *bp, float *c, size_t ldc, float beta)
{
    size_t mr = (size_t)k->mr, nr = (size_t)k->nr;
    for (size_t j = 0; j < n; j += nr) {
        size_t w = n - j < nr ? n - j : nr;
        for (size_t i = 0; i < m; i += mr) {
            size_t h = m - i < mr ? m - i : mr;
            k->sgemm_ukr_ra(kdim, a + i * lda, lda, alpha, bp + j * kdim,
                            c + i * ldc + j, ldc, h, w, beta, NULL);
        }
    }
}
