// quant_pack.c — the packed form P16 of a quantized matrix
// (kernels/quant.h): the file's blocks rearranged for kernels that hold 16
// weight rows in the lanes of a vector. Plain byte moves, the same on
// every ISA; a packed matrix holds the same bytes as the rows it packs.
#include <string.h>

#include "kernels/quant.h"

enum { UNIT = 16, MAX_BLOCK_BYTES = 256 };

// The offset of the type's 2-byte scale kept as halves, or -1 for a type
// whose block is all dwords.
static long half_at(mhsa_qtype t)
{
    switch (t) {
    case MHSA_Q8_0:
    case MHSA_Q4_0:
    case MHSA_Q5_0: return 0;
    case MHSA_Q6_K: return 208;
    default:        return -1;
    }
}

// One row's block blk to (or, from 0, from) its lane in the 16-row block
// ub of P16; bytes the block's size, h half_at's offset. (Fixed-size
// copies: each is a move, not a call.)
static void lane_io(size_t bytes, long h, unsigned char *blk,
                    unsigned char *ub, size_t lane, int to_packed)
{
    for (size_t o = 0; o < bytes;) {
        size_t n = (long)o == h ? 2 : 4;
        unsigned char *p = ub + UNIT * o + n * lane, *b = blk + o;
        unsigned char *to = to_packed ? p : b;
        const unsigned char *from = to_packed ? b : p;
        if (n == 2)
            memcpy(to, from, 2);
        else
            memcpy(to, from, 4);
        o += n;
    }
}

size_t mhsa_q_pack16_bytes(size_t rows, size_t ldw)
{
    return (rows + UNIT - 1) / UNIT * UNIT * ldw;
}

void mhsa_q_pack16(mhsa_qtype t, size_t nb, const void *w, size_t ldw,
                   size_t rows, void *dst)
{
    size_t bytes = mhsa_qtype_bytes(t), row = nb * bytes;
    long h = half_at(t);
    unsigned char *out = dst;
    for (size_t r0 = 0; r0 < rows; r0 += UNIT)
        for (size_t b = 0; b < nb; b++) {
            unsigned char *ub = out + r0 * row + b * UNIT * bytes;
            for (size_t l = 0; l < UNIT; l++) {
                size_t r = r0 + l < rows ? r0 + l : rows - 1;
                lane_io(bytes, h, (unsigned char *)w + r * ldw + b * bytes,
                        ub, l, 1);
            }
        }
}

void mhsa_q_dequant16(mhsa_qtype t, size_t nb, const void *p, size_t r,
                      float *dst)
{
    size_t bytes = mhsa_qtype_bytes(t), blk = mhsa_qtype_block(t);
    const unsigned char *unit = (const unsigned char *)p + r / UNIT * UNIT *
                                                               nb * bytes;
    unsigned char one[MAX_BLOCK_BYTES];
    for (size_t b = 0; b < nb; b++) {
        lane_io(bytes, half_at(t), one,
                (unsigned char *)unit + b * UNIT * bytes, r % UNIT, 0);
        mhsa_q_dequant(t, 1, one, dst + b * blk);
    }
}
