// gguf_impl.h — the GGUF handle's layout, shared by the reader's files:
// gguf.c (parsing and validation), gguf_meta.c (metadata getters) and
// gguf_tensor.c (tensor lookup and reads).
//
// The whole header (metadata and tensor infos) is kept in one buffer, buf,
// read from the file as it is parsed; values point into it by offset.
// Each string is moved 8 bytes down over its own (already decoded) length
// field and NUL-terminated there, so every string the getters return is a
// C string inside buf with no copy and no allocation per string.
#ifndef MHSA_GGUF_IMPL_H
#define MHSA_GGUF_IMPL_H

#include <stddef.h>
#include <stdint.h>

#include "gguf.h"

// One string of an array of strings.
typedef struct gguf_str {
    size_t off;      // into buf, NUL-terminated
    uint64_t len;
} gguf_str;

struct mhsa_gguf_val {
    const mhsa_gguf_file *f;
    size_t key;          // offset of the owning key in buf (for messages)
    uint32_t type;       // mhsa_gguf_type
    uint32_t elem;       // arrays: the element type
    uint64_t n;          // strings: bytes; arrays: elements
    size_t off;          // scalar's bytes, string's bytes, or a fixed-size
                         // array's first element, in buf
    gguf_str *strs;      // arrays of strings: n entries, else NULL
    mhsa_gguf_val *arrs; // arrays of arrays: n entries, else NULL
};

typedef struct gguf_kv {
    const char *key;     // into buf (set once parsing is done)
    size_t key_off;
    uint64_t key_len;
    mhsa_gguf_val val;
} gguf_kv;

struct mhsa_gguf_file {
    int fd;
    uint32_t version, alignment;
    unsigned char *buf;  // the header as read so far (len bytes of cap)
    size_t len, cap;
    uint64_t file_size, data_offset;
    size_t n_kv, n_tensors;
    gguf_kv *kv;                 // file order
    const gguf_kv **kv_sorted;   // by key (memcmp, then length)
    mhsa_gguf_tensor *t;         // file order
    size_t *t_name_off;          // offsets of t[i].name in buf
    const mhsa_gguf_tensor **t_sorted;   // by name
};

// Byte sizes of the fixed-size value types (0 for string, array, unknown).
size_t mhsa__gguf_fixed_size(uint32_t type);

// The orders of kv_sorted (bytes, then length) and t_sorted (strcmp), for
// qsort at open and bsearch in the lookups; both take pointers to the
// arrays' elements (const gguf_kv ** and const mhsa_gguf_tensor **).
int mhsa__gguf_cmp_kv(const void *a, const void *b);
int mhsa__gguf_cmp_tensor_name(const void *a, const void *b);

#endif
