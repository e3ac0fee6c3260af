// buffers.c — getting the memory of the arrays Python passes in: exactly
// the element type and count the call needs, C-contiguous, else ValueError.
#include "ext.h"

#include <string.h>

// A format string for a 4-byte type code `code` ('f' float, 'i' int) in
// native byte order: "f", "=f", "<f" on little-endian hosts, "@f".
static int format_is(const char *fmt, char code)
{
    if (!fmt)
        return code == 'B';
    if (fmt[0] == '@' || fmt[0] == '=' ||
        (fmt[0] == '<' && PY_LITTLE_ENDIAN) || (fmt[0] == '>' && PY_BIG_ENDIAN))
        fmt++;
    if (code == 'i' && fmt[0] == 'l' && fmt[1] == '\0' && sizeof(long) == 4)
        return 1;
    return fmt[0] == code && fmt[1] == '\0';
}

static int get(PyObject *obj, Py_buffer *view, Py_ssize_t n, int writable,
               int optional, const char *what, char code, const char *tname)
{
    memset(view, 0, sizeof *view);
    if (obj == Py_None) {
        if (optional)
            return 0;
        PyErr_Format(PyExc_ValueError, "%s: an array is required", what);
        return -1;
    }
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT;
    if (writable)
        flags |= PyBUF_WRITABLE;
    if (PyObject_GetBuffer(obj, view, flags) != 0) {
        memset(view, 0, sizeof *view);
        return -1;
    }
    if (view->itemsize != 4 || !format_is(view->format, code)) {
        PyErr_Format(PyExc_ValueError, "%s: expected %s elements, got format "
                     "'%s'", what, tname, view->format ? view->format : "B");
        mhsa_py_release(view);
        return -1;
    }
    if (n >= 0 && view->len != n * 4) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd elements, got %zd",
                     what, n, view->len / 4);
        mhsa_py_release(view);
        return -1;
    }
    return 0;
}

int mhsa_py_f32(PyObject *obj, Py_buffer *view, Py_ssize_t n, int writable,
                int optional, const char *what)
{
    return get(obj, view, n, writable, optional, what, 'f', "float32");
}

int mhsa_py_i32(PyObject *obj, Py_buffer *view, Py_ssize_t n, int optional,
                const char *what)
{
    return get(obj, view, n, 0, optional, what, 'i', "int32");
}

void mhsa_py_release(Py_buffer *view)
{
    if (view->obj)
        PyBuffer_Release(view);
    memset(view, 0, sizeof *view);
}
