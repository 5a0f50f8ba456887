/* What `_native.c` (the module) needs from `_native_ops.c` (the op helpers). */
#ifndef TRACEANALYZE_NATIVE_H
#define TRACEANALYZE_NATIVE_H

#include <Python.h>

PyObject *native_nest(PyObject *self, PyObject *args);
PyObject *native_merge(PyObject *self, PyObject *args);
PyObject *native_enclose(PyObject *self, PyObject *args);

#endif
