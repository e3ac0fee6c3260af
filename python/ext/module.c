// module.c — the module mhsa._mhsa: mhsa.Error, the version, ISA selection,
// and the types of block.c, workspace.c, kvcache.c and model.c.
#include "ext.h"

#include <string.h>

PyObject *MhsaPy_Error;

// The contract's short names: "INVALID_ARG" for MHSA_ERR_INVALID_ARG.
static const char *status_name(mhsa_status s)
{
    const char *full = mhsa_status_str(s);
    const char *pre = "MHSA_ERR_";
    return strncmp(full, pre, strlen(pre)) == 0 ? full + strlen(pre) : full;
}

PyObject *mhsa_py_raise(mhsa_status s)
{
    const char *msg = mhsa_last_error();
    PyObject *err = PyObject_CallFunction(MhsaPy_Error, "s",
                                          msg[0] ? msg : mhsa_status_str(s));
    if (!err)
        return NULL;
    PyObject *name = PyUnicode_FromString(status_name(s));
    if (!name || PyObject_SetAttrString(err, "status", name) != 0) {
        Py_XDECREF(name);
        Py_DECREF(err);
        return NULL;
    }
    Py_DECREF(name);
    PyErr_SetObject(MhsaPy_Error, err);
    Py_DECREF(err);
    return NULL;
}

static PyObject *py_version(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyUnicode_FromString(mhsa_version());
}

static PyObject *py_active_isa(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    return PyUnicode_FromString(mhsa_isa_name(mhsa_active_isa()));
}

static PyObject *py_describe(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
    size_t n = mhsa_describe(NULL, 0);
    char *text = PyMem_Malloc(n + 1);
    if (!text)
        return PyErr_NoMemory();
    mhsa_describe(text, n + 1);
    PyObject *s = PyUnicode_DecodeUTF8(text, (Py_ssize_t)strlen(text),
                                       "replace");
    PyMem_Free(text);
    return s;
}

static const mhsa_isa all_isas[] = {
    MHSA_ISA_AUTO, MHSA_ISA_SCALAR, MHSA_ISA_AVX2, MHSA_ISA_NEON,
    MHSA_ISA_AVX512,
};

static PyObject *py_select_isa(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name))
        return NULL;
    for (size_t i = 0; i < sizeof all_isas / sizeof all_isas[0]; i++) {
        if (strcmp(name, mhsa_isa_name(all_isas[i])) != 0)
            continue;
        mhsa_status s = mhsa_select_isa(all_isas[i]);
        if (s != MHSA_OK)
            return mhsa_py_raise(s);
        Py_RETURN_NONE;
    }
    PyErr_Format(PyExc_ValueError, "select_isa: unknown ISA '%s' (expected "
                 "auto, scalar, avx2, avx512 or neon)", name);
    return NULL;
}

// The dtype names Block accepts for weight_dtype and compute_dtype: those
// whose mhsa_config field this build's mhsa.h has (python/meson.build).
static PyObject *dtype_names(int have)
{
    return have ? Py_BuildValue("(sss)", "f32", "f16", "bf16")
                : Py_BuildValue("(s)", "f32");
}

static PyMethodDef methods[] = {
    {"version", py_version, METH_NOARGS, "mhsa_version()"},
    {"active_isa", py_active_isa, METH_NOARGS, "the ISA dispatch uses"},
    {"describe", py_describe, METH_NOARGS, "mhsa_describe()"},
    {"select_isa", py_select_isa, METH_VARARGS,
     "select_isa(name): process-wide; mhsa.Error if unavailable"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "mhsa._mhsa",
    "The mhsa C library's objects; use the package mhsa, not this module.",
    -1, methods, NULL, NULL, NULL, NULL,
};

static int add_type(PyObject *m, PyTypeObject *t, const char *name)
{
    if (PyType_Ready(t) != 0)
        return -1;
    Py_INCREF(t);
    if (PyModule_AddObject(m, name, (PyObject *)t) != 0) {
        Py_DECREF(t);
        return -1;
    }
    return 0;
}

PyMODINIT_FUNC PyInit__mhsa(void)
{
    PyObject *m = PyModule_Create(&module);
    if (!m)
        return NULL;
    MhsaPy_Error = PyErr_NewExceptionWithDoc("mhsa.Error",
        "An error the mhsa C library reported: str() is its message "
        "(mhsa_last_error), .status its status name (\"INVALID_ARG\", "
        "\"SHAPE\", ...).", NULL, NULL);
    if (!MhsaPy_Error || PyModule_AddObject(m, "Error", MhsaPy_Error) != 0)
        goto fail;
    Py_INCREF(MhsaPy_Error);   // the module's reference; keep ours
#ifdef MHSA_PY_HAVE_WEIGHT_DTYPE
    const int have_wd = 1;
#else
    const int have_wd = 0;
#endif
#ifdef MHSA_PY_HAVE_COMPUTE_DTYPE
    const int have_cd = 1;
#else
    const int have_cd = 0;
#endif
    if (PyModule_AddObject(m, "weight_dtypes", dtype_names(have_wd)) != 0 ||
        PyModule_AddObject(m, "compute_dtypes",
                           have_cd ? Py_BuildValue("(ss)", "f32", "bf16")
                                   : Py_BuildValue("(s)", "f32")) != 0)
        goto fail;
    if (add_type(m, &MhsaPyBlock_Type, "Block") != 0 ||
        add_type(m, &MhsaPyWorkspace_Type, "Workspace") != 0 ||
        add_type(m, &MhsaPyKVCache_Type, "KVCache") != 0 ||
        add_type(m, &MhsaPyModel_Type, "Model") != 0 ||
        add_type(m, &MhsaPySeq_Type, "Seq") != 0 ||
        add_type(m, &MhsaPySampler_Type, "Sampler") != 0)
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}
