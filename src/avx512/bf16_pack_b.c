// bf16_pack_b.c — packs op(B) (stored as F32, F16 or BF16) into the bf16
// B panels both tile sets read: 32 columns, depth in pairs (kernels.h,
// mhsa_bf16_tiles). The AVX512-BF16 set pads the depth to a pair, AMX to
// 32 (a whole tile of 16 pair rows).
//
// Where op(B)'s rows are contiguous (not transposed) two depth rows are
// loaded, rounded and interleaved into pairs (vcvtne2ps2bf16, vpermw).
// Where its columns are (transposed: B^T as a weight matrix), 32 depths of
// one column round to 16 pairs in order, and 16 columns of those are
// transposed as 32-bit lanes. Columns past n and depths past k are zero
// registers, never loaded.
#define MHSA_BF16_INTRINSICS 1
#include "avx512/bf16.h"

enum { NR = 32 };

static size_t round_up(size_t x, size_t to) { return (x + to - 1) / to * to; }

MHSA_AVX512_INLINE void pack_b(size_t k, size_t n, const void *b,
                               mhsa_dtype dt, size_t ldb, int trans,
                               uint16_t *bp, size_t kgran)
{
    size_t nn = n < NR ? n : NR, kpad = round_up(k, kgran);
    size_t es = mhsa_dtype_size(dt);
    const char *b0 = (const char *)b;
    if (!trans) {
        for (size_t q = 0; q < kpad / 2; q++) {
            size_t d0 = 2 * q, d1 = 2 * q + 1;
            for (size_t h = 0; h < NR; h += 16) {
                size_t cnt = nn > h ? nn - h : 0;
                __m512 lo = d0 < k && cnt
                          ? mhsa_bf16_load16(b0 + (d0 * ldb + h) * es, dt, cnt)
                          : _mm512_setzero_ps();
                __m512 hi = d1 < k && cnt
                          ? mhsa_bf16_load16(b0 + (d1 * ldb + h) * es, dt, cnt)
                          : _mm512_setzero_ps();
                _mm512_storeu_si512(bp + (q * NR + h) * 2,
                                    mhsa_bf16_pairs(lo, hi));
            }
        }
        return;
    }
    for (size_t kk = 0; kk < kpad; kk += 32) {
        size_t kn0 = k > kk ? k - kk : 0, kn1 = k > kk + 16 ? k - kk - 16 : 0;
        kn0 = kn0 < 16 ? kn0 : 16;
        kn1 = kn1 < 16 ? kn1 : 16;
        size_t pairs = (kpad - kk) / 2 < 16 ? (kpad - kk) / 2 : 16;
        for (size_t h = 0; h < NR; h += 16) {
            __m512 r[16];
            for (size_t j = 0; j < 16; j++) {
                const char *col = b0 + ((h + j) * ldb + kk) * es;
                __m512 lo = h + j < nn && kn0 ? mhsa_bf16_load16(col, dt, kn0)
                                              : _mm512_setzero_ps();
                __m512 hi = h + j < nn && kn1
                          ? mhsa_bf16_load16(col + 16 * es, dt, kn1)
                          : _mm512_setzero_ps();
                r[j] = _mm512_castsi512_ps(mhsa_bf16_round32(lo, hi));
            }
            mhsa_transpose16__avx512(r);
            for (size_t q = 0; q < pairs; q++)
                _mm512_storeu_ps((float *)(bp + ((kk / 2 + q) * NR + h) * 2),
                                 r[q]);
        }
    }
}

void mhsa_bf16_pack_b_nr32__avx512bf16(size_t k, size_t n, const void *b,
                                       mhsa_dtype dt, size_t ldb, int trans,
                                       uint16_t *bp)
{
    pack_b(k, n, b, dt, ldb, trans, bp, 2);
}

void mhsa_bf16_pack_b_nr32__amx(size_t k, size_t n, const void *b,
                                mhsa_dtype dt, size_t ldb, int trans,
                                uint16_t *bp)
{
    pack_b(k, n, b, dt, ldb, trans, bp, 32);
}
