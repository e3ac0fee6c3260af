// safetensors_none.c — the safetensors entry points of a build without
// jansson (meson -Dsafetensors=disabled): they exist, so programs link the
// same way against every build, and fail with MHSA_ERR_UNSUPPORTED.
#include "core/status.h"
#include "safetensors.h"

static mhsa_status unsupported(const char *what)
{
    return mhsa__fail(MHSA_ERR_UNSUPPORTED, "%s: mhsa was built without "
                      "safetensors support (meson -Dsafetensors=enabled "
                      "needs jansson)", what);
}

mhsa_status mhsa__st_open(const char *path, mhsa_st_file **out)
{
    (void)path;
    (void)out;
    return unsupported("mhsa__st_open");
}

void mhsa__st_close(mhsa_st_file *f) { (void)f; }

size_t mhsa__st_count(const mhsa_st_file *f)
{
    (void)f;
    return 0;
}

const char *mhsa__st_name(const mhsa_st_file *f, size_t i)
{
    (void)f;
    (void)i;
    return NULL;
}

int mhsa__st_shape(const mhsa_st_file *f, const char *name, int *ndim,
                   size_t dims[MHSA_ST_MAX_DIMS])
{
    (void)f;
    (void)name;
    (void)ndim;
    (void)dims;
    return 0;
}

mhsa_status mhsa__st_read_f32(const mhsa_st_file *f, const char *name,
                              int ndim, const size_t *dims, float *dst)
{
    (void)f;
    (void)name;
    (void)ndim;
    (void)dims;
    (void)dst;
    return unsupported("mhsa__st_read_f32");
}

const char *mhsa__st_meta(const mhsa_st_file *f, const char *key)
{
    (void)f;
    (void)key;
    return NULL;
}

mhsa_status mhsa__st_write(const char *path, const mhsa_st_tensor *t,
                           size_t n, const mhsa_st_meta *meta, size_t n_meta)
{
    (void)path;
    (void)t;
    (void)n;
    (void)meta;
    (void)n_meta;
    return unsupported("mhsa__st_write");
}

mhsa_status mhsa__st_write_f32(const char *path, const mhsa_st_tensor *t,
                               size_t n)
{
    (void)path;
    (void)t;
    (void)n;
    return unsupported("mhsa__st_write_f32");
}

mhsa_status mhsa_block_load_safetensors(mhsa_block *blk, const char *path,
                                        const char *prefix)
{
    (void)blk;
    (void)path;
    (void)prefix;
    return unsupported("mhsa_block_load_safetensors");
}

mhsa_status mhsa_block_save_safetensors(const mhsa_block *blk,
                                        const char *path, const char *prefix)
{
    (void)blk;
    (void)path;
    (void)prefix;
    return unsupported("mhsa_block_save_safetensors");
}

mhsa_status mhsa_block_save_safetensors_ex(const mhsa_block *blk,
                                           const char *path,
                                           const char *prefix,
                                           mhsa_names names)
{
    (void)blk;
    (void)path;
    (void)prefix;
    (void)names;
    return unsupported("mhsa_block_save_safetensors_ex");
}
