// status.c — status names, the thread-local last-error message, version.
#include <stdarg.h>
#include <stdio.h>

#include "core/status.h"

static _Thread_local char last_error[256];

const char *mhsa_status_str(mhsa_status s)
{
    switch (s) {
    case MHSA_OK:               return "MHSA_OK";
    case MHSA_ERR_INVALID_ARG:  return "MHSA_ERR_INVALID_ARG";
    case MHSA_ERR_SHAPE:        return "MHSA_ERR_SHAPE";
    case MHSA_ERR_NO_MEMORY:    return "MHSA_ERR_NO_MEMORY";
    case MHSA_ERR_UNSUPPORTED:  return "MHSA_ERR_UNSUPPORTED";
    case MHSA_ERR_STATE:        return "MHSA_ERR_STATE";
    case MHSA_ERR_IO:           return "MHSA_ERR_IO";
    case MHSA_ERR_FORMAT:       return "MHSA_ERR_FORMAT";
    }
    return "MHSA_ERR_UNKNOWN";
}

const char *mhsa_last_error(void) { return last_error; }

const char *mhsa_version(void) { return MHSA_VERSION_STRING; }

mhsa_status mhsa__fail(mhsa_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return s;
}
