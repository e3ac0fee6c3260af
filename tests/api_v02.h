// api_v02.h — the entry points that 0.2 adds to the library, referenced
// weakly by the 0.2 contract tests while the library grows into them.
//
// A test executable then links against whatever the library has so far;
// a test of a function that is not there yet fails with a message saying
// so, instead of the whole build failing to link. (The test executables
// link the core library whole, so a weak reference finds a function in any
// of its objects.) Once every function below exists this header can go.
#ifndef MHSA_TEST_API_V02_H
#define MHSA_TEST_API_V02_H

#include <check.h>

#include "mhsa.h"

#pragma weak mhsa_forward_ex
#pragma weak mhsa_forward_cached_ex
#pragma weak mhsa_kv_cache_seq_len
#pragma weak mhsa_kv_cache_reset_seq
#pragma weak mhsa_kv_cache_create_ex
#pragma weak mhsa_block_save_safetensors_ex

// Fails the running test when `fn` is not in this build of the library.
#define REQUIRE_API(fn)                                                     \
    ck_assert_msg((fn) != NULL,                                             \
                  #fn " is not in this build of the library (0.2 feature "  \
                  "not implemented yet)")

#endif
