// refcase.h — reading the PyTorch reference cases in tests/data/refs/
// (format: tests/data/refs/FORMAT.md).
#ifndef MHSA_TEST_REFCASE_H
#define MHSA_TEST_REFCASE_H

#include <stddef.h>

enum { REF_MAX_TENSORS = 24 };

typedef struct refcase {
    char name[64];
    char kind[16];
    int B, T, D, H, causal, bias;
    double tol;
    int n_masked_rows, masked_rows[64];
    int n_tensors;
    char tensor_name[REF_MAX_TENSORS][16];
    size_t tensor_count[REF_MAX_TENSORS];
    float *tensor[REF_MAX_TENSORS];
} refcase;

// Loads refs/<name>/; returns 0 on success (every tensor read and sized).
int refcase_load(const char *name, refcase *rc);
// The tensor called `name`, or NULL when the case has none.
const float *refcase_get(const refcase *rc, const char *name);
void refcase_free(refcase *rc);

#endif
