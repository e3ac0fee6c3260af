// fpenv.c — the variables of fpenv.h: the last calling thread's state,
// which pool threads born inside a library call get back, and each
// thread's depth of public calls.
#include "fpenv.h"

_Atomic mhsa_fpword mhsa__fp_caller_word = MHSA_DEFAULT_FPWORD;
_Thread_local int mhsa__fp_depth;
