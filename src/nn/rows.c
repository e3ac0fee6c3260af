// rows.c — how the layers of layers.h split their rows over threads.
#include <omp.h>

#include "layers.h"
#include "core/threads.h"

// Below this many floats of work a parallel region (a few microseconds to
// wake the pool) costs more than the loop it splits.
enum { MIN_PARALLEL_FLOATS = 1 << 15 };

int mhsa__layer_threads(size_t rows, size_t width)
{
    if (rows < 2 || rows * width < MIN_PARALLEL_FLOATS)
        return 1;
    int nt = omp_get_max_threads();
    if ((size_t)nt > rows)
        nt = (int)rows;
    return mhsa__pool_threads(nt);
}
