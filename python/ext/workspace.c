// workspace.c — _mhsa.Workspace: an mhsa_workspace with forward, backward
// and the cached forward. It holds the forward's input buffers until the
// next forward (the library's backward reads them again).
#include "ext.h"

#include <string.h>


static void forget_forward(MhsaPyWorkspace *self)
{
    for (int i = 0; i < 3; i++)
        mhsa_py_release(&self->saved[i]);
    self->recorded = 0;
}

static int ws_init(MhsaPyWorkspace *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"block", "max_batch", "max_t", NULL};
    MhsaPyBlock *block;
    int max_batch, max_t = 0;
    if (self->block) {
        PyErr_SetString(PyExc_RuntimeError, "Workspace is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!i|i", names,
                                     &MhsaPyBlock_Type, &block, &max_batch,
                                     &max_t))
        return -1;
    if (!block->blk) {
        PyErr_SetString(PyExc_RuntimeError, "Block is not initialised");
        return -1;
    }
    // max_t 0: the block's max_seq_len (mhsa_workspace_create's size).
    if (max_t == 0)
        max_t = block->cfg.max_seq_len;
    mhsa_status s;
    MHSA_PY_LOCKED(block, s, mhsa_workspace_create_sized(block->blk,
                                                          max_batch, max_t,
                                                          &self->ws));
    if (s != MHSA_OK) {
        self->ws = NULL;
        mhsa_py_raise(s);
        return -1;
    }
    Py_INCREF(block);
    self->block = block;
    self->max_batch = max_batch;
    self->max_t = max_t;
    return 0;
}

static void ws_dealloc(MhsaPyWorkspace *self)
{
    forget_forward(self);
    mhsa_grads_destroy(self->grads);
    mhsa_workspace_destroy(self->ws);
    Py_XDECREF(self->block);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ready(MhsaPyWorkspace *self)
{
    if (self->ws)
        return 1;
    PyErr_SetString(PyExc_RuntimeError, "Workspace is not initialised");
    return 0;
}

// forward(x, B, T, mask, seq_len, y, attn): mhsa_forward_ex into y (and
// attn when not None).
static PyObject *ws_forward(MhsaPyWorkspace *self, PyObject *args)
{
    PyObject *ox, *omask, *oseq, *oy, *oattn;
    int B, T;
    if (!ready(self) || !PyArg_ParseTuple(args, "OiiOOOO", &ox, &B, &T,
                                          &omask, &oseq, &oy, &oattn))
        return NULL;
    if (B < 1 || T < 1) {
        PyErr_Format(PyExc_ValueError, "x: B and T must be >= 1 (got B=%d, "
                     "T=%d)", B, T);
        return NULL;
    }
    const mhsa_config *c = &self->block->cfg;
    Py_ssize_t nx = (Py_ssize_t)B * T * c->d_model;
    Py_ssize_t natt = (Py_ssize_t)B * c->n_heads * T * T;
    Py_buffer x, mask, seq, y, attn;
    memset(&mask, 0, sizeof mask);
    memset(&seq, 0, sizeof seq);
    memset(&y, 0, sizeof y);
    memset(&attn, 0, sizeof attn);
    if (mhsa_py_f32(ox, &x, nx, 0, 0, "x") != 0)
        return NULL;
    if (mhsa_py_f32(omask, &mask, (Py_ssize_t)T * T, 0, 1, "mask") != 0 ||
        mhsa_py_i32(oseq, &seq, B, 1, "seq_len") != 0 ||
        mhsa_py_f32(oy, &y, nx, 1, 0, "y") != 0 ||
        mhsa_py_f32(oattn, &attn, natt, 1, 1, "attn") != 0)
        goto fail;
    mhsa_forward_args a = {
        .x = x.buf, .B = B, .T = T, .mask = mask.buf, .seq_len = seq.buf,
        .y = y.buf, .attn = attn.buf,
    };
    mhsa_status s;
    MHSA_PY_LOCKED(self->block, s, mhsa_forward_ex(self->block->blk, self->ws,
                                                   &a));
    mhsa_py_release(&y);
    mhsa_py_release(&attn);
    if (s != MHSA_OK) {
        mhsa_py_release(&x);
        mhsa_py_release(&mask);
        mhsa_py_release(&seq);
        return mhsa_py_raise(s);
    }
    forget_forward(self);
    self->saved[0] = x;
    self->saved[1] = mask;
    self->saved[2] = seq;
    self->recorded = 1;
    self->B = B;
    self->T = T;
    Py_RETURN_NONE;
fail:
    mhsa_py_release(&x);
    mhsa_py_release(&mask);
    mhsa_py_release(&seq);
    mhsa_py_release(&y);
    mhsa_py_release(&attn);
    return NULL;
}

// backward(dy, dx, g_w_qkv, g_b_qkv, g_w_out, g_b_out): the gradients of
// the recorded forward, written to the four arrays (not added: the
// workspace's mhsa_grads are zeroed first); dx may be None.
static PyObject *ws_backward(MhsaPyWorkspace *self, PyObject *args)
{
    PyObject *o[6];
    if (!ready(self) || !PyArg_ParseTuple(args, "OOOOOO", &o[0], &o[1], &o[2],
                                          &o[3], &o[4], &o[5]))
        return NULL;
    const MhsaPyBlock *b = self->block;
    Py_ssize_t D = b->cfg.d_model, R = b->qkv_rows;
    Py_ssize_t nx = self->recorded ? (Py_ssize_t)self->B * self->T * D : 0;
    mhsa_status s = MHSA_OK;
    if (!self->grads) {
        MHSA_PY_LOCKED(self->block, s, mhsa_grads_create(b->blk,
                                                         &self->grads));
        if (s != MHSA_OK) {
            self->grads = NULL;
            return mhsa_py_raise(s);
        }
    }
    if (!self->recorded) {
        // No forward since the last cached call (or ever): the library
        // reports it (MHSA_ERR_STATE) without reading dy.
        float dummy = 0.0f;
        MHSA_PY_LOCKED(self->block, s, mhsa_backward(b->blk, self->ws, &dummy,
                                                     NULL, self->grads));
        if (s == MHSA_OK)   // cannot happen: the library records every forward
            s = MHSA_ERR_STATE;
        return mhsa_py_raise(s);
    }
    const Py_ssize_t n[6] = {nx, nx, R * D, R, D * D, D};
    static const char *what[6] = {"dy", "dx", "w_qkv grad", "b_qkv grad",
                                  "w_out grad", "b_out grad"};
    Py_buffer v[6];
    for (int i = 0; i < 6; i++) {
        int opt = i == 1 || ((i == 3 || i == 5) && !b->cfg.bias);
        PyObject *obj = (i == 3 || i == 5) && !b->cfg.bias ? Py_None : o[i];
        if (mhsa_py_f32(obj, &v[i], n[i], i > 0, opt, what[i]) != 0) {
            while (i-- > 0)
                mhsa_py_release(&v[i]);
            return NULL;
        }
    }
    {
        mhsa_grads *g = self->grads;
        Py_BEGIN_ALLOW_THREADS
        PyThread_acquire_lock(b->lock, WAIT_LOCK);
        mhsa_grads_zero(g);
        s = mhsa_backward(b->blk, self->ws, v[0].buf, v[1].buf, g);
        if (s == MHSA_OK) {
            memcpy(v[2].buf, g->w_qkv, (size_t)v[2].len);
            memcpy(v[4].buf, g->w_out, (size_t)v[4].len);
            if (b->cfg.bias) {
                memcpy(v[3].buf, g->b_qkv, (size_t)v[3].len);
                memcpy(v[5].buf, g->b_out, (size_t)v[5].len);
            }
        }
        PyThread_release_lock(b->lock);
        Py_END_ALLOW_THREADS
    }
    for (int i = 0; i < 6; i++)
        mhsa_py_release(&v[i]);
    if (s != MHSA_OK)
        return mhsa_py_raise(s);
    Py_RETURN_NONE;
}

// forward_cached(cache, x_new, B, t_new, n_new, y): mhsa_forward_cached_ex.
static PyObject *ws_forward_cached(MhsaPyWorkspace *self, PyObject *args)
{
    MhsaPyKVCache *cache;
    PyObject *ox, *on, *oy;
    int B, t_new;
    if (!ready(self) || !PyArg_ParseTuple(args, "O!OiiOO", &MhsaPyKVCache_Type,
                                          &cache, &ox, &B, &t_new, &on, &oy))
        return NULL;
    if (B < 1 || t_new < 1) {
        PyErr_Format(PyExc_ValueError, "x_new: B and t_new must be >= 1 (got "
                     "B=%d, t_new=%d)", B, t_new);
        return NULL;
    }
    // The workspace's views hold max_t rows a sequence: what the library
    // checks against max_seq_len only (mhsa_workspace_create_sized).
    if (t_new > self->max_t || cache->capacity > self->max_t) {
        PyErr_Format(PyExc_ValueError, "forward_cached: t_new = %d or the "
                     "cache's capacity is beyond the workspace's max_t = %d",
                     t_new, self->max_t);
        return NULL;
    }
    Py_ssize_t nx = (Py_ssize_t)B * t_new * self->block->cfg.d_model;
    Py_buffer x, nn, y;
    if (mhsa_py_f32(ox, &x, nx, 0, 0, "x_new") != 0)
        return NULL;
    if (mhsa_py_i32(on, &nn, B, 1, "n_new") != 0) {
        mhsa_py_release(&x);
        return NULL;
    }
    if (mhsa_py_f32(oy, &y, nx, 1, 0, "y") != 0) {
        mhsa_py_release(&x);
        mhsa_py_release(&nn);
        return NULL;
    }
    mhsa_cached_args a = {
        .x_new = x.buf, .B = B, .t_new = t_new, .n_new = nn.buf, .y = y.buf,
    };
    mhsa_status s;
    MHSA_PY_LOCKED(self->block, s,
                   mhsa_forward_cached_ex(self->block->blk, self->ws,
                                          cache->cache, &a));
    mhsa_py_release(&x);
    mhsa_py_release(&nn);
    mhsa_py_release(&y);
    if (s != MHSA_OK)
        return mhsa_py_raise(s);
    forget_forward(self);   // the library discarded the recorded forward
    Py_RETURN_NONE;
}

static PyObject *ws_nbytes(MhsaPyWorkspace *self, void *closure)
{
    (void)closure;
    return PyLong_FromSize_t(mhsa_workspace_bytes(self->ws));
}

static PyObject *ws_max_batch(MhsaPyWorkspace *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->max_batch);
}

static PyObject *ws_max_t(MhsaPyWorkspace *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->max_t);
}

static PyObject *ws_recorded(MhsaPyWorkspace *self, void *closure)
{
    (void)closure;
    if (!self->recorded)
        Py_RETURN_NONE;
    return Py_BuildValue("(ii)", self->B, self->T);
}

static PyMethodDef ws_methods[] = {
    {"forward", (PyCFunction)ws_forward, METH_VARARGS,
     "forward(x, B, T, mask, seq_len, y, attn)"},
    {"backward", (PyCFunction)ws_backward, METH_VARARGS,
     "backward(dy, dx, g_w_qkv, g_b_qkv, g_w_out, g_b_out)"},
    {"forward_cached", (PyCFunction)ws_forward_cached, METH_VARARGS,
     "forward_cached(cache, x_new, B, t_new, n_new, y)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef ws_getset[] = {
    {"nbytes", (getter)ws_nbytes, NULL, "mhsa_workspace_bytes", NULL},
    {"max_batch", (getter)ws_max_batch, NULL, "largest B", NULL},
    {"max_t", (getter)ws_max_t, NULL, "largest T (and KV-cache capacity)",
     NULL},
    {"recorded", (getter)ws_recorded, NULL,
     "(B, T) of the forward backward would use, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject MhsaPyWorkspace_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mhsa._mhsa.Workspace",
    .tp_basicsize = sizeof(MhsaPyWorkspace),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An mhsa_workspace of one block",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)ws_init,
    .tp_dealloc = (destructor)ws_dealloc,
    .tp_methods = ws_methods,
    .tp_getset = ws_getset,
};
