// train_internal.h — what the files of src/train share.
#ifndef MHSA_TRAIN_INTERNAL_H
#define MHSA_TRAIN_INTERNAL_H

#include "mhsa_train.h"

// Validates an optimiser config; fn names the public caller in the error.
mhsa_status mhsa__optim_check(const mhsa_optim_config *c, const char *fn);

#endif
