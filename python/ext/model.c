// model.c — _mhsa.Model, _mhsa.Seq and _mhsa.Sampler: an mhsa_model
// (include/mhsa_model.h), a sequence of it and a sampler, as thin as the
// calls they wrap. The generation loop, stop strings and streaming are the
// Python layer's (python/mhsa/_model.py); each of its steps is one call
// here that releases the GIL.
//
// Lifetime. The C contract says mhsa_model_free must not run while another
// call uses the model or one of its sequences, and that the sequences go
// first. So a Model counts its users (calls in flight with the GIL released,
// and live Seq objects, which also hold a reference to it); close() marks it
// closed, refusing new calls, and the C model is freed when the count falls
// to 0. The count changes only with the GIL held.
//
// Threads. The C model is shared by any number of threads (its evaluations
// take turns on a lock inside it); a sequence and a sampler are used by one
// thread at a time, which a busy flag here enforces (RuntimeError) rather
// than trusting the caller.
#include "ext.h"

#include <string.h>

#include "mhsa_model.h"

typedef struct {
    PyObject_HEAD
    mhsa_model *m;
    int users;    // calls in flight + live Seq objects
    int closed;   // close() was called: no new call
    int n_vocab;
} MhsaPyModel;

typedef struct {
    PyObject_HEAD
    MhsaPyModel *model;
    mhsa_seq *seq;
    int busy;     // an eval is running (with the GIL released)
} MhsaPySeq;

typedef struct {
    PyObject_HEAD
    mhsa_sampler *smp;
    int n_vocab;
    int busy;
} MhsaPySampler;

// ---- Model -----------------------------------------------------------------

static void model_release(MhsaPyModel *self)
{
    if (--self->users == 0 && self->closed) {
        mhsa_model_free(self->m);
        self->m = NULL;
    }
}

// 0 and a user counted (model_release when done), or -1 with ValueError.
static int model_acquire(MhsaPyModel *self)
{
    if (!self->m || self->closed) {
        PyErr_SetString(PyExc_ValueError, "the model is closed");
        return -1;
    }
    self->users++;
    return 0;
}

static int model_init(MhsaPyModel *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"path", "context", "weights", "vocab_only", NULL};
    PyObject *path = NULL;
    mhsa_model_params p = {0};
    if (self->m || self->closed) {
        PyErr_SetString(PyExc_RuntimeError, "Model is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&iii", names,
                                     PyUnicode_FSConverter, &path, &p.context,
                                     &p.weights, &p.vocab_only))
        return -1;
    mhsa_status s;
    mhsa_model *m = NULL;
    const char *cpath = PyBytes_AS_STRING(path);
    Py_BEGIN_ALLOW_THREADS
    s = mhsa_model_load(cpath, &p, &m);
    Py_END_ALLOW_THREADS
    Py_DECREF(path);
    if (s != MHSA_OK) {
        mhsa_py_raise(s);
        return -1;
    }
    self->m = m;
    self->n_vocab = mhsa_model_n_vocab(m);
    return 0;
}

static void model_dealloc(MhsaPyModel *self)
{
    // Every Seq holds a reference, and calls in flight hold the caller's:
    // no user is left here.
    mhsa_model_free(self->m);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *model_close(MhsaPyModel *self, PyObject *unused)
{
    (void)unused;
    if (self->m && !self->closed) {
        self->closed = 1;
        if (self->users == 0) {
            mhsa_model_free(self->m);
            self->m = NULL;
        }
    }
    self->closed = 1;
    Py_RETURN_NONE;
}

// The UTF-8 bytes of a str or bytes-like object, in *view (released by the
// caller with PyBuffer_Release) or, for a str, in *data/*len from the
// str's own cache (no release).
static int text_bytes(PyObject *text, Py_buffer *view, const char **data,
                      Py_ssize_t *len)
{
    memset(view, 0, sizeof *view);
    if (PyUnicode_Check(text)) {
        *data = PyUnicode_AsUTF8AndSize(text, len);
        return *data ? 0 : -1;
    }
    if (PyObject_GetBuffer(text, view, PyBUF_SIMPLE) != 0) {
        PyErr_Format(PyExc_TypeError, "text: expected str or bytes, got %s",
                     Py_TYPE(text)->tp_name);
        return -1;
    }
    *data = view->buf;
    *len = view->len;
    return 0;
}

static PyObject *model_tokenize(MhsaPyModel *self, PyObject *args)
{
    PyObject *text;
    unsigned flags;
    if (!PyArg_ParseTuple(args, "OI", &text, &flags))
        return NULL;
    Py_buffer view;
    const char *data;
    Py_ssize_t len;
    if (text_bytes(text, &view, &data, &len) != 0)
        return NULL;
    if (model_acquire(self) != 0) {
        PyBuffer_Release(&view);
        return NULL;
    }
    // A byte gives at most one token in the file tokenizers mhsa reads,
    // and ADD_SPECIAL two more; should a vocabulary give more, the size
    // the call reports is used for a second try.
    size_t cap = (size_t)len + 4, n = 0;
    int32_t *ids = NULL;
    mhsa_status s = MHSA_OK;
    int oom = 0;
    const mhsa_model *m = self->m;
    Py_BEGIN_ALLOW_THREADS
    for (int tries = 0; tries < 2; tries++) {
        ids = PyMem_RawMalloc(cap * sizeof(int32_t));
        if (!ids) {
            oom = 1;
            break;
        }
        s = mhsa_tokenize(m, data, (size_t)len, flags, ids, cap, &n);
        if (s != MHSA_ERR_SHAPE)
            break;
        PyMem_RawFree(ids);
        ids = NULL;
        cap = n;
    }
    Py_END_ALLOW_THREADS
    model_release(self);
    PyBuffer_Release(&view);
    if (oom)
        return PyErr_NoMemory();
    if (s != MHSA_OK) {
        PyMem_RawFree(ids);
        return mhsa_py_raise(s);
    }
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list && i < n; i++) {
        PyObject *v = PyLong_FromLong(ids[i]);
        if (!v) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    PyMem_RawFree(ids);
    return list;
}

// detokenize(ids, flags) -> bytes; ids a C-contiguous int32 buffer.
static PyObject *model_detokenize(MhsaPyModel *self, PyObject *args)
{
    PyObject *obj;
    unsigned flags;
    if (!PyArg_ParseTuple(args, "OI", &obj, &flags))
        return NULL;
    Py_buffer ids;
    if (mhsa_py_i32(obj, &ids, -1, 0, "ids") != 0)
        return NULL;
    if (model_acquire(self) != 0) {
        mhsa_py_release(&ids);
        return NULL;
    }
    size_t n = (size_t)ids.len / 4, len = 0, cap = 64 + 16 * n;
    char *buf = NULL;
    mhsa_status s = MHSA_OK;
    int oom = 0;
    const mhsa_model *m = self->m;
    Py_BEGIN_ALLOW_THREADS
    for (int tries = 0; tries < 2; tries++) {
        buf = PyMem_RawMalloc(cap);
        if (!buf) {
            oom = 1;
            break;
        }
        s = mhsa_detokenize(m, ids.buf, n, flags, buf, cap, &len);
        if (s != MHSA_ERR_SHAPE)
            break;
        PyMem_RawFree(buf);
        buf = NULL;
        cap = len + 1;
    }
    Py_END_ALLOW_THREADS
    model_release(self);
    mhsa_py_release(&ids);
    PyObject *out = NULL;
    if (oom)
        PyErr_NoMemory();
    else if (s == MHSA_OK)
        out = PyBytes_FromStringAndSize(buf, (Py_ssize_t)len);
    else
        mhsa_py_raise(s);
    PyMem_RawFree(buf);
    return out;
}

// piece(id, flags) -> bytes: one token's bytes, the per-token call of a
// generation loop (no buffer to convert, the GIL kept: it copies a few
// bytes).
static PyObject *model_piece(MhsaPyModel *self, PyObject *args)
{
    int id;
    unsigned flags;
    if (!PyArg_ParseTuple(args, "iI", &id, &flags))
        return NULL;
    // Also after close() while the model lives on for a Seq: this is the
    // call of an unfinished generation loop (as is is_eog).
    if (!self->m) {
        PyErr_SetString(PyExc_ValueError, "the model is closed");
        return NULL;
    }
    int32_t tok = id;
    char small[256];
    size_t len = 0;
    mhsa_status s = mhsa_detokenize(self->m, &tok, 1, flags, small,
                                    sizeof small, &len);
    if (s == MHSA_OK)
        return PyBytes_FromStringAndSize(small, (Py_ssize_t)len);
    if (s != MHSA_ERR_SHAPE)
        return mhsa_py_raise(s);
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)len);
    if (!out)
        return NULL;
    s = mhsa_detokenize(self->m, &tok, 1, flags, PyBytes_AS_STRING(out),
                        len + 1, &len);
    if (s != MHSA_OK) {
        Py_DECREF(out);
        return mhsa_py_raise(s);
    }
    return out;
}

static PyObject *model_is_eog(MhsaPyModel *self, PyObject *arg)
{
    long id = PyLong_AsLong(arg);
    if (id == -1 && PyErr_Occurred())
        return NULL;
    if (!self->m) {
        PyErr_SetString(PyExc_ValueError, "the model is closed");
        return NULL;
    }
    if (id < INT32_MIN || id > INT32_MAX)
        Py_RETURN_FALSE;
    return PyBool_FromLong(mhsa_model_is_eog(self->m, (int32_t)id));
}

// chat_apply(format or None, [(role, content), ...], add_assistant) -> str
static PyObject *model_chat_apply(MhsaPyModel *self, PyObject *args)
{
    const char *format;
    PyObject *msgs;
    int add_assistant;
    if (!PyArg_ParseTuple(args, "zOp", &format, &msgs, &add_assistant))
        return NULL;
    PyObject *seq = PySequence_Fast(msgs, "messages: expected a list");
    if (!seq)
        return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    mhsa_chat_message *cm = PyMem_Malloc((size_t)(n ? n : 1) * sizeof *cm);
    if (!cm) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        // The strings live as long as the tuples, which `seq` holds.
        if (!PyTuple_Check(item) ||
            !PyArg_ParseTuple(item, "ss", &cm[i].role, &cm[i].content)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "messages: expected "
                                "(role, content) tuples");
            PyMem_Free(cm);
            Py_DECREF(seq);
            return NULL;
        }
    }
    PyObject *out = NULL;
    if (model_acquire(self) != 0)
        goto done;
    size_t len = 0;
    mhsa_status s = mhsa_chat_apply(self->m, format, cm, (size_t)n,
                                    add_assistant, NULL, 0, &len);
    if (s == MHSA_ERR_SHAPE) {
        char *buf = PyMem_Malloc(len + 1);
        if (!buf) {
            PyErr_NoMemory();
        } else {
            s = mhsa_chat_apply(self->m, format, cm, (size_t)n,
                                add_assistant, buf, len + 1, &len);
            if (s == MHSA_OK)
                out = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace");
            else
                mhsa_py_raise(s);
            PyMem_Free(buf);
        }
    } else if (s == MHSA_OK) {
        out = PyUnicode_FromString("");
    } else {
        mhsa_py_raise(s);
    }
    model_release(self);
done:
    PyMem_Free(cm);
    Py_DECREF(seq);
    return out;
}

static PyObject *str_or_none(const char *s)
{
    if (s)
        return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
    Py_RETURN_NONE;
}

// The getters answer for a closed model too, where they can: the C model
// is gone, so they raise like the calls.
static int open_or_raise(MhsaPyModel *self)
{
    if (self->m && !self->closed)
        return 1;
    PyErr_SetString(PyExc_ValueError, "the model is closed");
    return 0;
}

#define INT_GETTER(name, expr)                                         \
    static PyObject *get_##name(MhsaPyModel *self, void *closure)      \
    {                                                                  \
        (void)closure;                                                 \
        if (!open_or_raise(self))                                      \
            return NULL;                                               \
        return PyLong_FromLongLong((long long)(expr));                 \
    }
INT_GETTER(n_vocab, mhsa_model_n_vocab(self->m))
INT_GETTER(n_ctx, mhsa_model_n_ctx(self->m))
INT_GETTER(n_ctx_train, mhsa_model_n_ctx_train(self->m))
INT_GETTER(bos, mhsa_model_bos(self->m))
INT_GETTER(eos, mhsa_model_eos(self->m))
INT_GETTER(adds_bos, mhsa_model_adds_bos(self->m))
INT_GETTER(weight_bytes, mhsa_model_weight_bytes(self->m))

#define STR_GETTER(name, expr)                                         \
    static PyObject *get_##name(MhsaPyModel *self, void *closure)      \
    {                                                                  \
        (void)closure;                                                 \
        if (!open_or_raise(self))                                      \
            return NULL;                                               \
        return str_or_none(expr);                                      \
    }
STR_GETTER(arch, mhsa_model_arch(self->m))
STR_GETTER(chat_template, mhsa_model_chat_template(self->m))
STR_GETTER(chat_format, mhsa_model_chat_format(self->m))
STR_GETTER(weight_types, mhsa_model_weight_types(self->m))

static PyObject *get_closed(MhsaPyModel *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->closed || !self->m);
}

static PyMethodDef model_methods[] = {
    {"close", (PyCFunction)model_close, METH_NOARGS,
     "close(): no new calls; the C model is freed when the last call in "
     "flight and the last Seq are done"},
    {"tokenize", (PyCFunction)model_tokenize, METH_VARARGS,
     "tokenize(text: str | bytes, flags) -> list[int]"},
    {"detokenize", (PyCFunction)model_detokenize, METH_VARARGS,
     "detokenize(ids: int32 buffer, flags) -> bytes"},
    {"piece", (PyCFunction)model_piece, METH_VARARGS,
     "piece(id, flags) -> bytes: one token's bytes"},
    {"is_eog", (PyCFunction)model_is_eog, METH_O,
     "is_eog(id) -> bool: mhsa_model_is_eog"},
    {"chat_apply", (PyCFunction)model_chat_apply, METH_VARARGS,
     "chat_apply(format, [(role, content)], add_assistant) -> str"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef model_getset[] = {
    {"n_vocab", (getter)get_n_vocab, NULL, "mhsa_model_n_vocab", NULL},
    {"n_ctx", (getter)get_n_ctx, NULL, "mhsa_model_n_ctx", NULL},
    {"n_ctx_train", (getter)get_n_ctx_train, NULL, "mhsa_model_n_ctx_train",
     NULL},
    {"bos", (getter)get_bos, NULL, "mhsa_model_bos (-1: none)", NULL},
    {"eos", (getter)get_eos, NULL, "mhsa_model_eos (-1: none)", NULL},
    {"adds_bos", (getter)get_adds_bos, NULL, "mhsa_model_adds_bos", NULL},
    {"weight_bytes", (getter)get_weight_bytes, NULL,
     "mhsa_model_weight_bytes", NULL},
    {"arch", (getter)get_arch, NULL, "mhsa_model_arch", NULL},
    {"chat_template", (getter)get_chat_template, NULL,
     "mhsa_model_chat_template (None: none)", NULL},
    {"chat_format", (getter)get_chat_format, NULL,
     "mhsa_model_chat_format (None: not recognised)", NULL},
    {"weight_types", (getter)get_weight_types, NULL,
     "mhsa_model_weight_types", NULL},
    {"closed", (getter)get_closed, NULL, "close() was called", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject MhsaPyModel_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mhsa._mhsa.Model",
    .tp_basicsize = sizeof(MhsaPyModel),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An mhsa_model (use mhsa.Model)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)model_init,
    .tp_dealloc = (destructor)model_dealloc,
    .tp_methods = model_methods,
    .tp_getset = model_getset,
};

// ---- Seq -------------------------------------------------------------------

static int seq_init(MhsaPySeq *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"model", "kv_dtype", NULL};
    MhsaPyModel *model;
    int kv_dtype = 0;
    if (self->model) {
        PyErr_SetString(PyExc_RuntimeError, "Seq is already initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!i", names,
                                     &MhsaPyModel_Type, &model, &kv_dtype))
        return -1;
    if (model_acquire(model) != 0)
        return -1;
    mhsa_status s;
    mhsa_seq *seq = NULL;
    mhsa_model *m = model->m;
    Py_BEGIN_ALLOW_THREADS
    s = mhsa_seq_create(m, (mhsa_dtype)kv_dtype, &seq);
    Py_END_ALLOW_THREADS
    if (s != MHSA_OK) {
        model_release(model);
        mhsa_py_raise(s);
        return -1;
    }
    Py_INCREF(model);   // the user counted above stays until dealloc
    self->model = model;
    self->seq = seq;
    return 0;
}

static void seq_dealloc(MhsaPySeq *self)
{
    mhsa_seq_destroy(self->seq);
    if (self->model) {
        model_release(self->model);
        Py_DECREF(self->model);
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int seq_ready(MhsaPySeq *self)
{
    if (!self->seq) {
        PyErr_SetString(PyExc_RuntimeError, "Seq is not initialised");
        return 0;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the sequence is in use by "
                        "another thread");
        return 0;
    }
    return 1;
}

// eval(tokens, logits, all): tokens an int32 buffer or one int; logits a
// writable float32 buffer with room for the rows asked (all: one row per
// token, else the last only). The library checks the ids and the room.
static PyObject *seq_eval(MhsaPySeq *self, PyObject *args)
{
    PyObject *tok_obj, *out_obj;
    int all;
    if (!seq_ready(self) ||
        !PyArg_ParseTuple(args, "OOp", &tok_obj, &out_obj, &all))
        return NULL;
    int32_t one;
    const int32_t *tokens = &one;
    size_t n = 1;
    Py_buffer tv, lv;
    memset(&tv, 0, sizeof tv);
    if (PyLong_Check(tok_obj)) {
        long v = PyLong_AsLong(tok_obj);
        if (v == -1 && PyErr_Occurred())
            return NULL;
        one = v < INT32_MIN || v > INT32_MAX ? -1 : (int32_t)v;
    } else {
        if (mhsa_py_i32(tok_obj, &tv, -1, 0, "tokens") != 0)
            return NULL;
        tokens = tv.buf;
        n = (size_t)tv.len / 4;
    }
    // Exactly the rows asked: the Python layer makes the array.
    Py_ssize_t rows = all ? (Py_ssize_t)n : 1;
    if (mhsa_py_f32(out_obj, &lv, rows * self->model->n_vocab, 1, 0,
                    "logits") != 0) {
        mhsa_py_release(&tv);
        return NULL;
    }
    mhsa_status s;
    self->busy = 1;
    mhsa_seq *seq = self->seq;
    float *logits = lv.buf;
    size_t cap = (size_t)lv.len / 4;
    Py_BEGIN_ALLOW_THREADS
    s = mhsa_seq_eval(seq, tokens, n, all ? MHSA_LOGITS_ALL
                                          : MHSA_LOGITS_LAST, logits, cap);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    mhsa_py_release(&lv);
    mhsa_py_release(&tv);
    if (s != MHSA_OK)
        return mhsa_py_raise(s);
    Py_RETURN_NONE;
}

static PyObject *seq_reset(MhsaPySeq *self, PyObject *unused)
{
    (void)unused;
    if (!seq_ready(self))
        return NULL;
    mhsa_seq_reset(self->seq);
    Py_RETURN_NONE;
}

static Py_ssize_t seq_len(MhsaPySeq *self)
{
    if (!self->seq) {
        PyErr_SetString(PyExc_RuntimeError, "Seq is not initialised");
        return -1;
    }
    return mhsa_seq_len(self->seq);
}

static PyMethodDef seq_methods[] = {
    {"eval", (PyCFunction)seq_eval, METH_VARARGS,
     "eval(tokens, logits, all): mhsa_seq_eval"},
    {"reset", (PyCFunction)seq_reset, METH_NOARGS, "mhsa_seq_reset"},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods seq_sequence = {
    .sq_length = (lenfunc)seq_len,
};

PyTypeObject MhsaPySeq_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mhsa._mhsa.Seq",
    .tp_basicsize = sizeof(MhsaPySeq),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An mhsa_seq of one Model",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)seq_init,
    .tp_dealloc = (destructor)seq_dealloc,
    .tp_methods = seq_methods,
    .tp_as_sequence = &seq_sequence,
};

// ---- Sampler ---------------------------------------------------------------

static int sampler_init(MhsaPySampler *self, PyObject *args, PyObject *kw)
{
    static char *names[] = {"n_vocab", "temperature", "top_k", "top_p",
                            "min_p", "repeat_penalty", "repeat_last_n",
                            "seed", NULL};
    mhsa_sampler_params p = {0};
    int n_vocab;
    unsigned long long seed;
    if (self->smp) {
        PyErr_SetString(PyExc_RuntimeError, "Sampler is already "
                        "initialised");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kw, "ififffiK", names, &n_vocab,
                                     &p.temperature, &p.top_k, &p.top_p,
                                     &p.min_p, &p.repeat_penalty,
                                     &p.repeat_last_n, &seed))
        return -1;
    p.seed = (uint64_t)seed;
    mhsa_status s = mhsa_sampler_create(&p, n_vocab, &self->smp);
    if (s != MHSA_OK) {
        self->smp = NULL;
        mhsa_py_raise(s);
        return -1;
    }
    self->n_vocab = n_vocab;
    return 0;
}

static void sampler_dealloc(MhsaPySampler *self)
{
    mhsa_sampler_destroy(self->smp);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

// sample(logits, history, n_history) -> int: logits a float32 buffer of
// n_vocab, history an int32 buffer whose first n_history ids are
// penalised (the history is a buffer the caller fills as it goes, so a
// step passes no list).
static PyObject *sampler_sample(MhsaPySampler *self, PyObject *args)
{
    PyObject *lo, *ho;
    Py_ssize_t n_hist;
    if (!self->smp) {
        PyErr_SetString(PyExc_RuntimeError, "Sampler is not initialised");
        return NULL;
    }
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "the sampler is in use by "
                        "another thread");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "OOn", &lo, &ho, &n_hist))
        return NULL;
    Py_buffer lv, hv;
    if (mhsa_py_f32(lo, &lv, self->n_vocab, 0, 0, "logits") != 0)
        return NULL;
    if (mhsa_py_i32(ho, &hv, -1, 0, "history") != 0) {
        mhsa_py_release(&lv);
        return NULL;
    }
    if (n_hist < 0 || n_hist > hv.len / 4) {
        mhsa_py_release(&hv);
        mhsa_py_release(&lv);
        PyErr_Format(PyExc_ValueError, "history: %zd ids of an int32 buffer "
                     "of %zd", n_hist, hv.len / hv.itemsize);
        return NULL;
    }
    int32_t tok = -1;
    mhsa_status s;
    mhsa_sampler *smp = self->smp;
    const float *logits = lv.buf;
    const int32_t *hist = hv.buf;
    size_t V = (size_t)self->n_vocab;
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    s = mhsa_sampler_sample(smp, logits, V, n_hist ? hist : NULL,
                            (size_t)n_hist, &tok);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    mhsa_py_release(&hv);
    mhsa_py_release(&lv);
    if (s != MHSA_OK)
        return mhsa_py_raise(s);
    return PyLong_FromLong(tok);
}

static PyMethodDef sampler_methods[] = {
    {"sample", (PyCFunction)sampler_sample, METH_VARARGS,
     "sample(logits, history, n_history) -> int: mhsa_sampler_sample"},
    {NULL, NULL, 0, NULL},
};

PyTypeObject MhsaPySampler_Type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "mhsa._mhsa.Sampler",
    .tp_basicsize = sizeof(MhsaPySampler),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An mhsa_sampler",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)sampler_init,
    .tp_dealloc = (destructor)sampler_dealloc,
    .tp_methods = sampler_methods,
};
