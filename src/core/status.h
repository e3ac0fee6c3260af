// status.h — the library's error helper and version string, for every
// floor (the API objects' layout is in api/objects.h, which only the API
// and its drivers need).
#ifndef MHSA_CORE_STATUS_H
#define MHSA_CORE_STATUS_H

#include "mhsa.h"

// The same as meson.build's project version (mhsa.pc, mhsaConfigVersion.cmake).
#define MHSA_VERSION_STRING "0.3.0"

// Sets the calling thread's last error (printf-style) and returns s.
mhsa_status mhsa__fail(mhsa_status s, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
