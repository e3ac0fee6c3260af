// rows_finite.c — NEON test that a block of rows holds no inf or NaN
// (kernels.h: rows_finite): the scalar kernel's bit test on 4 floats a
// step, then a scalar tail that stops at a row's cols. Integer operations
// only: the answer is scalar's for every input.
#include <arm_neon.h>
#include <stdint.h>
#include <string.h>

#include "kernels/kernels.h"
#include "neon/neon.h"

int mhsa_rows_finite__neon(size_t rows, size_t cols, const float *x,
                           size_t ld)
{
    if (ld == cols) {   // contiguous rows are one long row
        cols *= rows;
        rows = 1;
    }
    // (u & exponent) + its lowest bit reaches bit 31 only when the
    // exponent is all ones (inf or NaN).
    const uint32x4_t expo = vdupq_n_u32(0x7f800000u);
    const uint32x4_t low = vdupq_n_u32(0x00800000u);
    uint32x4_t badv = vdupq_n_u32(0);
    uint32_t bad = 0;
    for (size_t r = 0; r < rows; r++) {
        const float *row = x + r * ld;
        size_t c = 0;
        for (; c + 4 <= cols; c += 4) {
            uint32x4_t u = vreinterpretq_u32_f32(vld1q_f32(row + c));
            badv = vorrq_u32(badv, vaddq_u32(vandq_u32(u, expo), low));
        }
        for (; c < cols; c++) {
            uint32_t u;
            memcpy(&u, row + c, sizeof u);
            bad |= (u & 0x7f800000u) + 0x00800000u;
        }
    }
    bad |= vmaxvq_u32(badv);   // bit 31 of any lane makes the max's
    return !(bad & 0x80000000u);
}
