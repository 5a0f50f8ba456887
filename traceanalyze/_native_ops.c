/* The op helpers of the compiled module `_native` (its scanner and module definition are in
 * `_native.c`): sorted int64 arrays in, int64 arrays out, no Python object per row.
 *
 * nest(thread_start: bytes, start: bytes, end: bytes) -> (parent: bytes, depth: bytes)
 *   Ops sorted by thread, start and end descending (int64 arrays; thread_start[i] the position
 *   of the first op of op i's thread) → each op's parent position (int64, -1 for none) and
 *   depth (int32): the stack walk `nesting.with_nesting` defines.
 *
 * merge(group_start: bytes, start: bytes, end: bytes) -> (first: bytes, start: bytes, end: bytes)
 *   Intervals sorted by group, then start (int64 arrays; group_start[i] the position of the first
 *   interval of i's group) → the union per group: for each merged interval, the position of its
 *   first interval and its start and end. Overlapping or touching intervals merge
 *   (`intervals.union_intervals`).
 *
 * enclose(candidate: bytes, time: bytes, end: bytes, parent: bytes, ok: bytes) -> bytes
 *   For each point, the first op on the chain from its candidate op (int64 position, -1 for
 *   none) up through `parent` (int64 positions, -1 at a root) that is `ok` and ends after the
 *   point's time; its position, or -1 (`cpu_context.enclosing_op`). `ok` (uint8): 1 accepted,
 *   0 not, 2 unknown, plus 4 where the op's end is unknown; an unknown answer ends the walk.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "_native.h"

/* Three int64 arrays of one length, from the arguments (`format`: "y*y*y*:name"); 0, or -1 with
 * an exception set. Release them with `release_views`. */
static int int64_arrays(PyObject *args, const char *format, Py_buffer views[3], Py_ssize_t *n) {
    if (!PyArg_ParseTuple(args, format, &views[0], &views[1], &views[2])) return -1;
    if (views[1].len != views[0].len || views[2].len != views[0].len || views[0].len % (Py_ssize_t)sizeof(int64_t)) {
        for (int k = 0; k < 3; k++) PyBuffer_Release(&views[k]);
        PyErr_SetString(PyExc_ValueError, "arrays of different lengths");
        return -1;
    }
    *n = views[0].len / (Py_ssize_t)sizeof(int64_t);
    return 0;
}

static void release_views(Py_buffer views[3]) {
    for (int k = 0; k < 3; k++) PyBuffer_Release(&views[k]);
}

/* A tuple of the bytes objects (references stolen; NULL entries: NULL returned). */
static PyObject *steal_tuple(PyObject **items, int count) {
    PyObject *out = NULL;
    int complete = 1;
    for (int k = 0; k < count; k++) complete &= items[k] != NULL;
    if (complete) out = PyTuple_Pack(count, items[0], items[1], count > 2 ? items[2] : NULL);
    for (int k = 0; k < count; k++) Py_XDECREF(items[k]);
    return out;
}

PyObject *native_nest(PyObject *self, PyObject *args) {
    Py_buffer views[3];
    Py_ssize_t n;
    if (int64_arrays(args, "y*y*y*:nest", views, &n)) return NULL;
    PyObject *items[2] = {PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t)),
                          PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int32_t))};
    int64_t *stack = PyMem_Malloc((n ? n : 1) * sizeof(int64_t));
    if (items[0] && items[1] && stack) {
        const int64_t *thread = views[0].buf, *start = views[1].buf, *end = views[2].buf;
        int64_t *parent = (int64_t *)PyBytes_AS_STRING(items[0]);
        int32_t *depth = (int32_t *)PyBytes_AS_STRING(items[1]);
        Py_ssize_t top = 0; /* stack size */
        Py_BEGIN_ALLOW_THREADS /* arrays only: the loader's other threads run meanwhile */
        for (Py_ssize_t i = 0; i < n; i++) {
            if (thread[i] == i) top = 0; /* a new thread */
            /* the op's threshold: an enclosing op ends at or after its end, and after its start */
            int64_t threshold = end[i] > start[i] + 1 ? end[i] : start[i] + 1;
            while (top && end[stack[top - 1]] < threshold) top--;
            parent[i] = top ? stack[top - 1] : -1;
            depth[i] = top ? depth[stack[top - 1]] + 1 : 0;
            stack[top++] = i;
        }
        Py_END_ALLOW_THREADS
    } else if (!stack) {
        Py_CLEAR(items[0]);
        PyErr_NoMemory();
    }
    PyMem_Free(stack);
    release_views(views);
    return steal_tuple(items, 2);
}

PyObject *native_merge(PyObject *self, PyObject *args) {
    Py_buffer views[3];
    Py_ssize_t n, m = 0;
    if (int64_arrays(args, "y*y*y*:merge", views, &n)) return NULL;
    PyObject *items[3];
    for (int k = 0; k < 3; k++) items[k] = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (items[0] && items[1] && items[2]) {
        const int64_t *group = views[0].buf, *start = views[1].buf, *end = views[2].buf;
        int64_t *first = (int64_t *)PyBytes_AS_STRING(items[0]);
        int64_t *low = (int64_t *)PyBytes_AS_STRING(items[1]);
        int64_t *high = (int64_t *)PyBytes_AS_STRING(items[2]);
        Py_BEGIN_ALLOW_THREADS /* arrays only: analyses in other threads run meanwhile */
        for (Py_ssize_t i = 0; i < n; i++) {
            if (m && group[i] != i && start[i] <= high[m - 1]) {
                if (end[i] > high[m - 1]) high[m - 1] = end[i];
                continue;
            }
            first[m] = i;
            low[m] = start[i];
            high[m] = end[i];
            m++;
        }
        Py_END_ALLOW_THREADS
        for (int k = 0; k < 3; k++)
            if (items[k] && _PyBytes_Resize(&items[k], m * (Py_ssize_t)sizeof(int64_t))) items[k] = NULL;
    }
    release_views(views);
    return steal_tuple(items, 3);
}

PyObject *native_enclose(PyObject *self, PyObject *args) {
    Py_buffer candidates, times, ends, parents, oks;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*:enclose", &candidates, &times, &ends, &parents, &oks)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = candidates.len / (Py_ssize_t)sizeof(int64_t), m = ends.len / (Py_ssize_t)sizeof(int64_t);
    if (times.len != candidates.len || parents.len != ends.len || oks.len != m) {
        PyErr_SetString(PyExc_ValueError, "arrays of different lengths");
        goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    if (!out) goto done;
    const int64_t *candidate = candidates.buf, *time = times.buf, *end = ends.buf, *parent = parents.buf;
    const uint8_t *ok = oks.buf;
    int64_t *found = (int64_t *)PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS /* arrays only: analyses in other threads run meanwhile */
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t op = candidate[i];
        Py_ssize_t steps = 0; /* a parent cycle (never in a nesting) cannot loop forever */
        while (op >= 0 && op < m) {
            if (steps++ > m) { op = -1; break; }
            /* accepted and ending after the point, in three-valued logic: false goes on up the
             * chain, true is the op, unknown ends the walk (as a polars filter drops a null) */
            int accepted = ok[op] & 3, ends_after = ok[op] & 4 ? 2 : end[op] > time[i];
            if (accepted == 0 || ends_after == 0) { op = parent[op]; continue; }
            if (accepted == 2 || ends_after == 2) op = -1;
            break;
        }
        found[i] = op >= 0 && op < m ? op : -1;
    }
    Py_END_ALLOW_THREADS
done:
    PyBuffer_Release(&candidates);
    PyBuffer_Release(&times);
    PyBuffer_Release(&ends);
    PyBuffer_Release(&parents);
    PyBuffer_Release(&oks);
    return out;
}
