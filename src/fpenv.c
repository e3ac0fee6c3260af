// fpenv.c — the one variable of fpenv.h: the last calling thread's state,
// which pool threads born inside a library call get back (fpenv.h).
#include "fpenv.h"

_Atomic mhsa_fpword mhsa__fp_caller_word = MHSA_DEFAULT_FPWORD;
