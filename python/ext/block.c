// block.c — _mhsa.Block: an mhsa_block, its weights and weight files.
#include "ext.h"

#include <structmember.h>

static int block_init(MhsaPyBlock *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"d_model", "n_heads", "max_seq_len", "causal",
        "bias", "n_kv_heads", "rope_dim", "rope_theta", "rope_interleaved",
        "window", "weight_dtype", "compute_dtype", NULL};
    mhsa_config c = {0};
    int weight_dtype = 0, compute_dtype = 0;
    if (self->blk) {
        PyErr_SetString(PyExc_RuntimeError, "Block is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "iiiiiiifiiii", names,
            &c.d_model, &c.n_heads, &c.max_seq_len, &c.causal, &c.bias,
            &c.n_kv_heads, &c.rope_dim, &c.rope_theta, &c.rope_interleaved,
            &c.window, &weight_dtype, &compute_dtype))
        return -1;
    // Without the field in this build's mhsa.h only F32 exists; the Python
    // layer has already refused other names (_mhsa.weight_dtypes).
#ifdef MHSA_PY_HAVE_WEIGHT_DTYPE
    c.weight_dtype = weight_dtype;
#else
    if (weight_dtype != 0) {
        PyErr_SetString(PyExc_ValueError, "weight_dtype: this build of the "
                        "mhsa library has F32 weights only");
        return -1;
    }
#endif
#ifdef MHSA_PY_HAVE_COMPUTE_DTYPE
    c.compute_dtype = compute_dtype;
#else
    if (compute_dtype != 0) {
        PyErr_SetString(PyExc_ValueError, "compute_dtype: this build of the "
                        "mhsa library computes in F32 only");
        return -1;
    }
#endif
    self->lock = PyThread_allocate_lock();
    if (!self->lock) {
        PyErr_NoMemory();
        return -1;
    }
    mhsa_status s = mhsa_block_create(&c, &self->blk);
    if (s != MHSA_OK) {
        self->blk = NULL;
        mhsa_py_raise(s);
        return -1;
    }
    self->cfg = *mhsa_block_config(self->blk);
    int hkv = self->cfg.n_kv_heads ? self->cfg.n_kv_heads : self->cfg.n_heads;
    self->qkv_rows = (self->cfg.n_heads + 2 * hkv) *
                     (self->cfg.d_model / self->cfg.n_heads);
    return 0;
}

static void block_dealloc(MhsaPyBlock *self)
{
    mhsa_block_destroy(self->blk);
    if (self->lock)
        PyThread_free_lock(self->lock);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(MhsaPyBlock *self)
{
    if (self->blk)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "Block is not initialised");
    return 0;
}

// The four weight buffers with the block's shapes (biases optional when
// the block has none: NULL pointers).
static int weight_views(MhsaPyBlock *self, PyObject *o[4], Py_buffer v[4],
                        int writable)
{
    Py_ssize_t D = self->cfg.d_model, R = self->qkv_rows;
    const Py_ssize_t n[4] = {R * D, R, D * D, D};
    static const char *what[4] = {"w_qkv", "b_qkv", "w_out", "b_out"};
    for (int i = 0; i < 4; i++) {
        int is_bias = i == 1 || i == 3;
        PyObject *obj = is_bias && !self->cfg.bias ? Py_None : o[i];
        if (mhsa_py_f32(obj, &v[i], n[i], writable, is_bias, what[i]) != 0) {
            while (i-- > 0)
                mhsa_py_release(&v[i]);
            return -1;
        }
    }
    return 0;
}

static PyObject *block_weights(MhsaPyBlock *self, PyObject *args, int set)
{
    PyObject *o[4];
    Py_buffer v[4];
    if (!ready(self) || !PyArg_ParseTuple(args, "OOOO", &o[0], &o[1], &o[2],
                                          &o[3]))
        return NULL;
    if (weight_views(self, o, v, !set) != 0)
        return NULL;
    mhsa_status s;
    if (set)
        MHSA_PY_LOCKED(self, s, mhsa_block_set_weights(self->blk, v[0].buf,
                                                       v[1].buf, v[2].buf,
                                                       v[3].buf));
    else
        MHSA_PY_LOCKED(self, s, mhsa_block_get_weights(self->blk, v[0].buf,
                                                       v[1].buf, v[2].buf,
                                                       v[3].buf));
    for (int i = 0; i < 4; i++)
        mhsa_py_release(&v[i]);
    if (s != MHSA_OK)
        return mhsa_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *block_set_weights(MhsaPyBlock *self, PyObject *args)
{
    return block_weights(self, args, 1);
}

static PyObject *block_get_weights(MhsaPyBlock *self, PyObject *args)
{
    return block_weights(self, args, 0);
}

static PyObject *block_init_random(MhsaPyBlock *self, PyObject *args)
{
    unsigned long long seed;
    if (!ready(self) || !PyArg_ParseTuple(args, "K", &seed))
        return NULL;
    mhsa_status s;
    MHSA_PY_LOCKED(self, s, mhsa_block_init_random(self->blk, seed));
    if (s != MHSA_OK)
        return mhsa_py_raise(s);
    Py_RETURN_NONE;
}

// load_safetensors(path, prefix) and save_safetensors(path, prefix, names).
static PyObject *block_file(MhsaPyBlock *self, PyObject *args, int save)
{
    PyObject *path = NULL;
    const char *prefix;
    int names = 0;
    if (!ready(self))
        return NULL;
    if (save ? !PyArg_ParseTuple(args, "O&si", PyUnicode_FSConverter, &path,
                                 &prefix, &names)
             : !PyArg_ParseTuple(args, "O&s", PyUnicode_FSConverter, &path,
                                 &prefix))
        return NULL;
    const char *p = PyBytes_AS_STRING(path);
    mhsa_status s;
    if (save)
        MHSA_PY_LOCKED(self, s, mhsa_block_save_safetensors_ex(self->blk, p,
                                    prefix, (mhsa_names)names));
    else
        MHSA_PY_LOCKED(self, s, mhsa_block_load_safetensors(self->blk, p,
                                                            prefix));
    Py_DECREF(path);
    if (s != MHSA_OK)
        return mhsa_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *block_load(MhsaPyBlock *self, PyObject *args)
{
    return block_file(self, args, 0);
}

static PyObject *block_save(MhsaPyBlock *self, PyObject *args)
{
    return block_file(self, args, 1);
}

static PyMethodDef block_methods[] = {
    {"set_weights", (PyCFunction)block_set_weights, METH_VARARGS,
     "set_weights(w_qkv, b_qkv, w_out, b_out)"},
    {"get_weights", (PyCFunction)block_get_weights, METH_VARARGS,
     "get_weights(w_qkv, b_qkv, w_out, b_out): fills the arrays"},
    {"init_random", (PyCFunction)block_init_random, METH_VARARGS,
     "init_random(seed)"},
    {"load_safetensors", (PyCFunction)block_load, METH_VARARGS,
     "load_safetensors(path, prefix)"},
    {"save_safetensors", (PyCFunction)block_save, METH_VARARGS,
     "save_safetensors(path, prefix, names)"},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef block_members[] = {
    {"qkv_rows", T_INT, offsetof(MhsaPyBlock, qkv_rows), READONLY,
     "rows of w_qkv: (n_heads + 2 * n_kv_heads) * head size"},
    {NULL, 0, 0, 0, NULL},
};

PyTypeObject MhsaPyBlock_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mhsa._mhsa.Block",
    .tp_basicsize = sizeof(MhsaPyBlock),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An mhsa_block (use mhsa.Block)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)block_init,
    .tp_dealloc = (destructor)block_dealloc,
    .tp_methods = block_methods,
    .tp_members = block_members,
};
