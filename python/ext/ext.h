// ext.h — the C extension module mhsa._mhsa: thin Python types over the
// library's objects (block, workspace, KV cache). Shapes and dtypes are the
// pure-Python layer's job (python/mhsa/); this layer still checks every
// buffer's format and size, so no Python call can make the library read or
// write past an array.
#ifndef MHSA_PY_EXT_H
#define MHSA_PY_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <pythread.h>

#include "mhsa.h"

// A block and the lock that serialises the calls made on it (and on its
// workspaces and caches): taken with the GIL released, so two threads with
// two blocks compute at once, and two threads sharing one block take turns.
typedef struct {
    PyObject_HEAD
    mhsa_block *blk;
    PyThread_type_lock lock;
    mhsa_config cfg;
    int qkv_rows;   // (H + 2*Hkv) * dh: rows of w_qkv
} MhsaPyBlock;

// A workspace of one block. It keeps the buffers of the forward it recorded
// (x, mask, seq_len) so mhsa_backward can read them later, and owns the
// mhsa_grads that backward adds into before they are copied out.
typedef struct {
    PyObject_HEAD
    MhsaPyBlock *block;
    mhsa_workspace *ws;
    mhsa_grads *grads;
    int max_batch;
    int max_t;           // rows a sequence (<= the block's max_seq_len)
    int recorded;        // a forward is recorded (backward may follow)
    int B, T;            // its shape
    Py_buffer saved[3];  // x, mask, seq_len of that forward
    int saved_used[3];
} MhsaPyWorkspace;

typedef struct {
    PyObject_HEAD
    MhsaPyBlock *block;
    mhsa_kv_cache *cache;
    int max_batch;
    int capacity;   // positions per sequence, as created
} MhsaPyKVCache;

extern PyTypeObject MhsaPyBlock_Type;
extern PyTypeObject MhsaPyWorkspace_Type;
extern PyTypeObject MhsaPyKVCache_Type;
// model.c: an mhsa_model, a sequence of it, a sampler.
extern PyTypeObject MhsaPyModel_Type;
extern PyTypeObject MhsaPySeq_Type;
extern PyTypeObject MhsaPySampler_Type;

// mhsa.Error, created by the module; raised with the C message and .status.
extern PyObject *MhsaPy_Error;
// Raises mhsa.Error for status s with mhsa_last_error(); returns NULL.
PyObject *mhsa_py_raise(mhsa_status s);

// Runs `call` (an expression giving an mhsa_status) holding block b's lock
// with the GIL released; the status goes to `st`.
#define MHSA_PY_LOCKED(b, st, call)                    \
    do {                                               \
        Py_BEGIN_ALLOW_THREADS                         \
        PyThread_acquire_lock((b)->lock, WAIT_LOCK);   \
        (st) = (call);                                 \
        PyThread_release_lock((b)->lock);              \
        Py_END_ALLOW_THREADS                           \
    } while (0)

// buffers.c: a C-contiguous float32 (or int32) buffer of exactly n
// elements (any number when n < 0), writable if asked; else ValueError
// naming `what`. obj may be
// None when optional: view->obj is then NULL and the pointer NULL.
int mhsa_py_f32(PyObject *obj, Py_buffer *view, Py_ssize_t n, int writable,
                int optional, const char *what);
int mhsa_py_i32(PyObject *obj, Py_buffer *view, Py_ssize_t n, int optional,
                const char *what);
void mhsa_py_release(Py_buffer *view);   // no-op for an unset view

#endif
