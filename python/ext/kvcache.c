// kvcache.c — _mhsa.KVCache: an mhsa_kv_cache of one block.
#include "ext.h"

static int kv_init(MhsaPyKVCache *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"block", "max_batch", "capacity", "dtype", NULL};
    MhsaPyBlock *block;
    mhsa_kv_config c = {0};
    int dtype = 0;
    if (self->block) {
        PyErr_SetString(PyExc_RuntimeError, "KVCache is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!iii", names,
                                     &MhsaPyBlock_Type, &block, &c.max_batch,
                                     &c.capacity, &dtype))
        return -1;
    if (!block->blk) {
        PyErr_SetString(PyExc_RuntimeError, "Block is not initialised");
        return -1;
    }
    c.dtype = (mhsa_dtype)dtype;
    mhsa_status s;
    MHSA_PY_LOCKED(block, s, mhsa_kv_cache_create_ex(block->blk, &c,
                                                     &self->cache));
    if (s != MHSA_OK) {
        self->cache = NULL;
        mhsa_py_raise(s);
        return -1;
    }
    Py_INCREF(block);
    self->block = block;
    self->max_batch = c.max_batch;
    self->capacity = c.capacity;
    return 0;
}

static void kv_dealloc(MhsaPyKVCache *self)
{
    mhsa_kv_cache_destroy(self->cache);
    Py_XDECREF(self->block);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(MhsaPyKVCache *self)
{
    if (self->cache)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "KVCache is not initialised");
    return 0;
}

// The cache's lengths change only under the block's lock (forward_cached),
// so reads take it too.
static Py_ssize_t kv_len(MhsaPyKVCache *self)
{
    if (!ready(self))
        return -1;
    int n;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->block->lock, WAIT_LOCK);
    n = mhsa_kv_cache_len(self->cache);
    PyThread_release_lock(self->block->lock);
    Py_END_ALLOW_THREADS
    return n;
}

static PyObject *kv_seq_len(MhsaPyKVCache *self, PyObject *args)
{
    int b, n;
    if (!ready(self) || !PyArg_ParseTuple(args, "i", &b))
        return NULL;
    if (b < 0 || b >= self->max_batch) {
        PyErr_Format(PyExc_IndexError, "seq_len: b = %d is outside 0..%d", b,
                     self->max_batch - 1);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->block->lock, WAIT_LOCK);
    n = mhsa_kv_cache_seq_len(self->cache, b);
    PyThread_release_lock(self->block->lock);
    Py_END_ALLOW_THREADS
    return PyLong_FromLong(n);
}

static PyObject *kv_reset(MhsaPyKVCache *self, PyObject *unused)
{
    (void)unused;
    if (!ready(self))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    PyThread_acquire_lock(self->block->lock, WAIT_LOCK);
    mhsa_kv_cache_reset(self->cache);
    PyThread_release_lock(self->block->lock);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

static PyObject *kv_reset_seq(MhsaPyKVCache *self, PyObject *args)
{
    int b;
    if (!ready(self) || !PyArg_ParseTuple(args, "i", &b))
        return NULL;
    mhsa_status s;
    MHSA_PY_LOCKED(self->block, s, mhsa_kv_cache_reset_seq(self->cache, b));
    if (s != MHSA_OK)
        return mhsa_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *kv_nbytes(MhsaPyKVCache *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(mhsa_kv_cache_bytes(self->cache));
}

static PyObject *kv_block(MhsaPyKVCache *self, void *closure)
{
    (void)closure;
    PyObject *b = self->block ? (PyObject *)self->block : Py_None;
    Py_INCREF(b);
    return b;
}

static PyMethodDef kv_methods[] = {
    {"seq_len", (PyCFunction)kv_seq_len, METH_VARARGS,
     "seq_len(b): the cached length of sequence b"},
    {"reset", (PyCFunction)kv_reset, METH_NOARGS, "empties every sequence"},
    {"reset_seq", (PyCFunction)kv_reset_seq, METH_VARARGS,
     "reset_seq(b): empties sequence b only"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef kv_getset[] = {
    {"nbytes", (getter)kv_nbytes, NULL, "mhsa_kv_cache_bytes", NULL},
    {"block", (getter)kv_block, NULL, "the _mhsa.Block it belongs to", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PySequenceMethods kv_sequence = {
    .sq_length = (lenfunc)kv_len,
};

PyTypeObject MhsaPyKVCache_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mhsa._mhsa.KVCache",
    .tp_basicsize = sizeof(MhsaPyKVCache),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An mhsa_kv_cache of one block",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)kv_init,
    .tp_dealloc = (destructor)kv_dealloc,
    .tp_methods = kv_methods,
    .tp_getset = kv_getset,
    .tp_as_sequence = &kv_sequence,
};
