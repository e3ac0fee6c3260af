// lm_io.c — the demo model's weights in safetensors (safetensors.h): each
// parameter tensor as F32 under its name (mhsa_lm_tensor), nothing else,
// so that the file is the PyTorch state_dict of the same model.
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/status.h"
#include "io/safetensors.h"
#include "mhsa_train.h"

enum { MAX_TENSORS = 16 };   // mhsa_lm_n_tensors is 8

mhsa_status mhsa_lm_save(const mhsa_lm *lm, const char *path)
{
    if (!lm || !path)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_lm_save: %s is NULL",
                          !lm ? "lm" : "path");
    mhsa_st_tensor t[MAX_TENSORS];
    int n = mhsa_lm_n_tensors(lm);
    if (n < 1 || n > MAX_TENSORS)
        return mhsa__fail(MHSA_ERR_STATE, "mhsa_lm_save: %d tensors", n);
    for (int i = 0; i < n; i++) {
        mhsa_lm_tensor x;
        mhsa_lm_get_tensor(lm, i, &x);
        memset(&t[i], 0, sizeof t[i]);
        t[i].name = x.name;
        t[i].ndim = x.rank;
        t[i].dims[0] = (size_t)x.shape[0];
        t[i].dims[1] = (size_t)x.shape[1];
        t[i].data = x.data;
    }
    return mhsa__st_write_f32(path, t, (size_t)n);
}

mhsa_status mhsa_lm_load(mhsa_lm *lm, const char *path)
{
    if (!lm || !path)
        return mhsa__fail(MHSA_ERR_INVALID_ARG, "mhsa_lm_load: %s is NULL",
                          !lm ? "lm" : "path");
    mhsa_st_file *f = NULL;
    mhsa_status st = mhsa__st_open(path, &f);
    if (st != MHSA_OK)
        return st;
    // Read into a copy first so that a bad file leaves the model as it was.
    size_t np = mhsa_lm_n_params(lm);
    float *tmp = mhsa__alloc(np * sizeof(float));
    if (!tmp) {
        mhsa__st_close(f);
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "mhsa_lm_load: out of memory");
    }
    int n = mhsa_lm_n_tensors(lm);
    size_t off = 0;
    for (int i = 0; st == MHSA_OK && i < n; i++) {
        mhsa_lm_tensor x;
        mhsa_lm_get_tensor(lm, i, &x);
        size_t dims[2] = { (size_t)x.shape[0], (size_t)x.shape[1] };
        st = mhsa__st_read_f32(f, x.name, x.rank, dims, tmp + off);
        off += x.numel;
    }
    off = 0;
    for (int i = 0; st == MHSA_OK && i < n; i++) {
        mhsa_lm_tensor x;
        mhsa_lm_get_tensor(lm, i, &x);
        memcpy(x.data, tmp + off, x.numel * sizeof(float));
        off += x.numel;
    }
    mhsa__free(tmp);
    mhsa__st_close(f);
    return st;
}
