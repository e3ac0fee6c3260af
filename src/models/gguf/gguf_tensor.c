// gguf_tensor.c — a GGUF file's tensors: lookup by name and
// mhsa__gguf_read_f32, which reads a tensor's bytes through a 64 KiB
// buffer and dequantizes them (gguf_dequant.c) straight into the caller's
// fp32 array. The data are row-major with ne[0] contiguous, so the blocks
// in file order are the elements in row-major order of dims (gguf.h).
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "io/file_read.h"
#include "gguf_dequant.h"
#include "gguf_impl.h"
#include "core/status.h"
#include "core/alloc.h"

#define GGUF_READ_CHUNK ((size_t)1 << 16)

size_t mhsa__gguf_tensor_count(const mhsa_gguf_file *f)
{
    return f->n_tensors;
}

const mhsa_gguf_tensor *mhsa__gguf_tensor_at(const mhsa_gguf_file *f,
                                             size_t i)
{
    return i < f->n_tensors ? &f->t[i] : NULL;
}

const mhsa_gguf_tensor *mhsa__gguf_tensor(const mhsa_gguf_file *f,
                                          const char *name)
{
    if (!f || !name || !f->n_tensors)   // (bsearch must not see NULL)
        return NULL;
    mhsa_gguf_tensor probe = {.name = name};
    const mhsa_gguf_tensor *pp = &probe;
    const mhsa_gguf_tensor *const *hit =
        bsearch(&pp, f->t_sorted, f->n_tensors, sizeof *f->t_sorted,
                mhsa__gguf_cmp_tensor_name);
    return hit ? *hit : NULL;
}

uint64_t mhsa__gguf_data_offset(const mhsa_gguf_file *f)
{
    return f->data_offset;
}

mhsa_status mhsa__gguf_map(const mhsa_gguf_file *f, const char *path,
                           mhsa_file_map *m)
{
    return mhsa__map_file(f->fd, f->file_size, path, m);
}

const void *mhsa__gguf_tensor_bytes(const mhsa_gguf_file *f,
                                    const mhsa_file_map *m,
                                    const mhsa_gguf_tensor *t)
{
    return (const char *)m->base + f->data_offset + t->offset;
}

mhsa_status mhsa__gguf_check_f32(const mhsa_gguf_file *f, const char *name,
                                 int n_dims, const size_t *dims)
{
    if (!f || !name || n_dims < 1 || n_dims > MHSA_GGUF_MAX_DIMS || !dims)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa__gguf_check_f32: bad argument");
    char q[96];
    mhsa__esc(q, sizeof q, name, strlen(name));
    const mhsa_gguf_tensor *t = mhsa__gguf_tensor(f, name);
    if (!t)
        return mhsa__fail(MHSA_ERR_FORMAT, "tensor '%s' not found", q);
    mhsa_status s = mhsa__check_shape(q, n_dims, dims, t->n_dims, t->dims);
    if (s != MHSA_OK)
        return s;
    const mhsa_ggml_type_info *info = mhsa__ggml_type(t->type);
    if (!info->dequant)
        return mhsa__fail(MHSA_ERR_FORMAT, "tensor '%s': type %s (%u) cannot "
                          "be read as fp32 (f32, f16, bf16, q4_0, q4_1, "
                          "q5_0, q5_1, q8_0, q2_K to q6_K, iq4_nl and iq4_xs "
                          "only)", q, info->name, t->type);
    return MHSA_OK;
}

mhsa_status mhsa__gguf_read_f32(const mhsa_gguf_file *f, const char *name,
                                int n_dims, const size_t *dims,
                                float *dst)
{
    if (!dst)
        return mhsa__fail(MHSA_ERR_INVALID_ARG,
                          "mhsa__gguf_read_f32: bad argument");
    mhsa_status s = mhsa__gguf_check_f32(f, name, n_dims, dims);
    if (s != MHSA_OK)
        return s;
    const mhsa_gguf_tensor *t = mhsa__gguf_tensor(f, name);
    const mhsa_ggml_type_info *info = mhsa__ggml_type(t->type);
    char q[96];   // the name for messages
    mhsa__esc(q, sizeof q, name, strlen(name));
    unsigned char *buf = mhsa__alloc(GGUF_READ_CHUNK);
    if (!buf)
        return mhsa__fail(MHSA_ERR_NO_MEMORY, "tensor '%s': no memory", q);
    // Validated at open: bytes = blocks * info->bytes, inside the file.
    size_t blocks = (size_t)(t->numel / info->block);
    size_t per = GGUF_READ_CHUNK / info->bytes;
    uint64_t off = f->data_offset + t->offset;
    for (size_t done = 0; done < blocks;) {
        size_t k = blocks - done < per ? blocks - done : per;
        s = mhsa__pread_tensor(f->fd, buf, k * info->bytes,
                               off + (uint64_t)done * info->bytes, q);
        if (s != MHSA_OK)
            break;
        mhsa__ggml_dequant(t->type, buf, k, dst + done * info->block);
        done += k;
    }
    mhsa__free(buf);
    return s;
}
