// round_bf16.c — the array form of mhsa__bf16_round (round_bf16.h).
#include "round_bf16.h"

void mhsa__round_bf16(float *x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        x[i] = mhsa__bf16_round(x[i]);
}
