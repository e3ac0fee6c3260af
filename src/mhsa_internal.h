// mhsa_internal.h — what the library's files share: error helper, the
// block / workspace / cache / grads structs, and internal entry points.
#ifndef MHSA_INTERNAL_H
#define MHSA_INTERNAL_H

#include <stddef.h>

#include "alloc.h"
#include "kernels.h"
#include "mhsa.h"

#define MHSA_VERSION_STRING "0.1.0"

// Sets the calling thread's last error (printf-style) and returns s.
mhsa_status mhsa__fail(mhsa_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
