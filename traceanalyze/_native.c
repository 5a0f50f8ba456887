/* traceanalyze's compiled module `_native`: the columnar event scanner (this file) and the op
 * nesting, interval merging and enclosing-op walk (`_native_ops.c`, functions declared in
 * `_native.h`). Each has a pure-Python/polars counterpart that the tests hold it to.
 *
 * Columnar scan of a Chrome/Kineto event array: one pass over the JSON text of `[event, ...]`
 * that writes each event's top-level fields and a chosen set of `args` keys into typed columns,
 * without one Python object per event (only the distinct strings become `str`).
 *
 * It is the fast front of `decode.decode_chunk`, never the reference: whenever it meets anything
 * it does not handle exactly as the msgspec path does (invalid JSON, an integer beyond int64, a
 * raw control character or a lone surrogate in a string, a key written with escapes, a repeated
 * key, nesting deeper than 512, ...) it returns None and the caller decodes the chunk with
 * msgspec as before. So it only has to be right about what it accepts.
 *
 * scan(text: bytes, arg_keys: tuple[tuple[bytes, int], ...], passed: tuple[bytes, ...] = (),
 *      dropped: tuple[int, ...] = (), bare: bool = False) -> dict | None
 *   arg_keys: (JSON key, kind) with kind 0 = scalar, 1 = list of 3 integers, 2 = raw JSON text.
 *   passed: categories (as written, at most 8) no table reads: an event of one of them has the
 *   members after its `cat` validated and tagged, but its name is no string (a = -1) and its
 *   args' keys are not read (python_function events: half of many traces).
 *   dropped: per top-level field, then `args` (9 masks), the tags (bit 1 << tag) an event of a
 *   passed category may have: such an event whose every tag is allowed gets no row at all (the
 *   table it would have gone to is none); any other keeps its row, for the caller to judge.
 *   bare: the text holds the array's items without its brackets (`event, …`, or nothing).
 *   Returns {"n": rows, "events": events, "seq": each row's event number (int64 bytes),
 *   "strings": [distinct str], "fields": {name: (tag, a, b[, c])}} where
 *   each column is a bytes object of n values: tag uint8 (see TAG_*), then for a scalar a = int64
 *   (the integer, the string's index in `strings`, 0/1 for a bool, or for a float its exact ns
 *   when read as µs, INT64_MIN when not exact: see `decimal_ns`) and b = float64; for a
 *   list of 3 integers a, b, c = int64; for raw text a = int64 offset of the value in `text` and
 *   b = int64 length. Only the times `ts` and `dur` keep a float's exact ns: every other scalar
 *   has one value column, a, holding the float64 where the tag says FLOAT (a third less memory
 *   in flight per chunk; the tag says which of the two a row holds, and nothing else is read). Top-level fields are named as in the JSON; `args` (its tag only: absent,
 *   null, object or other) is under "args", and each args key under its own name.
 *
 * join_spans(text: bytes, offsets: bytes, lengths: bytes) -> bytes
 *   The raw texts at the given int64 offsets and lengths joined with NUL (a length of -1 or 0
 *   gives an empty text): the shape arguments of a table, split again by polars.
 *
 * uninitialized(n: int) -> bytearray
 *   n bytes whose values are not set (what is read into them sets them).
 *
 * intern_spans(text: bytes, offsets: bytes, lengths: bytes) -> (ids: bytes, firsts: bytes)
 *   Numbers the distinct raw texts at the given int64 offsets and lengths, in order of first
 *   appearance: ids holds each span's number (int64; -1 for a length of -1 or 0: no text), firsts
 *   each number's first span (int64). Texts are equal when their bytes are. A training step
 *   repeats its ops, so a chunk's thousands of shape arguments are a few hundred distinct texts:
 *   only those are copied out and decoded.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>

#include "_native.h"

enum {
    TAG_ABSENT = 0, TAG_NULL = 1, TAG_INT = 2, TAG_FLOAT = 3, TAG_STR = 4, TAG_BOOL = 5,
    TAG_LIST3 = 6, TAG_OTHER = 7, TAG_OBJECT = 8,
};
enum { KIND_SCALAR = 0, KIND_LIST3 = 1, KIND_RAW = 2 };
enum { OK = 0, DELEGATE = 1, NOMEM = 2 };

#define MAX_DEPTH 512
#define MAX_KEYS 64
#define KEY_SLOTS 128 /* open addressing over at most MAX_KEYS keys: half full at most */
#define MAX_PASSED 8 /* categories whose events' names and args are passed over */

static const char *TOP_NAMES[] = {"ph", "cat", "name", "pid", "tid", "ts", "dur", "id"};
#define N_TOP 8

typedef struct {
    const char *key;
    Py_ssize_t key_len;
    uint64_t key_head; /* its first 8 bytes, zero-padded */
    int kind;
    int shared; /* a scalar whose float is kept in `a` (b == a): every scalar but the times */
    PyObject *values[4]; /* bytes: the tags, then a, b, c */
    uint8_t *tag;
    int64_t *a;
    int64_t *b; /* a double for a scalar */
    int64_t *c;
} Column;

typedef struct {
    Py_ssize_t start; /* of the string's content in the text, after the quote */
    Py_ssize_t len;
    uint64_t hash;
    Py_ssize_t code; /* -1: empty slot */
} Slot;

typedef struct {
    Py_ssize_t start, len;
    int escaped;
} Distinct;

typedef struct {
    double *target; /* in a column's b values */
    Py_ssize_t start, len;
    int column; /* where target is, while the columns grow (`grow`) */
    Py_ssize_t row;
} Deferred;

typedef struct {
    const unsigned char *text;
    Py_ssize_t size;
    Py_ssize_t pos;
    Column columns[N_TOP + 1 + MAX_KEYS];
    int n_columns; /* N_TOP top-level, then "args", then the args keys */
    Py_ssize_t rows, capacity;
    Slot *slots;
    Py_ssize_t n_slots, n_strings;
    Distinct *distinct; /* by code: where each distinct string is */
    Py_ssize_t distinct_capacity;
    Deferred *deferred; /* floats to parse once the GIL is back */
    Py_ssize_t n_deferred, deferred_capacity;
    int16_t top_slots[KEY_SLOTS], arg_slots[KEY_SLOTS]; /* the columns by key (`index_keys`) */
    PyObject *strings; /* list, made after the scan */
    char *scratch; /* unescaped string */
    Py_ssize_t scratch_size;
    const char *passed[MAX_PASSED]; /* categories whose events' details are passed over */
    Py_ssize_t passed_len[MAX_PASSED];
    int n_passed;
    PyThreadState *released; /* while the scan runs without the GIL: taken back to grow */
    PyObject *seq_bytes; /* each row's event number (int64) */
    int64_t *seq;
    Py_ssize_t events; /* scanned so far, rows or not */
    int event_passed; /* the event just scanned is of a passed category */
    int drops; /* whether `dropped` was given */
    uint16_t dropped[N_TOP + 1]; /* the tags allowed, per top-level field and args, to drop a row */
    double discard; /* where a dropped event's deferred float goes (still parsed: validated) */
} Scanner;

static inline uint64_t load8(const unsigned char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

/* Up to 8 bytes as an integer, zero-padded. */
static inline uint64_t load_head(const unsigned char *p, Py_ssize_t len);

/* The same from inside a text that ends at `end`: one 8-byte load where the text allows it (a
 * variable-length copy followed by a load stalls on store forwarding). */
static inline uint64_t load_head_in(const unsigned char *p, Py_ssize_t len, const unsigned char *end) {
    if (p + 8 > end) return load_head(p, len);
    uint64_t v = load8(p);
    return len >= 8 ? v : v & ((1ULL << (8 * len)) - 1);
}

static inline uint64_t load_head(const unsigned char *p, Py_ssize_t len) {
    uint64_t v = 0;
    memcpy(&v, p, len < 8 ? (size_t)len : 8);
    return v;
}

/* ---------------------------------------------------------------------------------------------
 * Memory */

static int column_arrays(const Column *col, int is_args) {
    return is_args ? 0 : (col->kind == KIND_LIST3 ? 3 : col->shared ? 1 : 2);
}

/* Room for `capacity` rows in every column, allocated once: bytes objects, shrunk to the rows
 * scanned at the end (a shrink does not copy). */
static int allocate(Scanner *s, Py_ssize_t capacity) {
    for (int i = 0; i < s->n_columns; i++) {
        Column *col = &s->columns[i];
        int count = column_arrays(col, i == N_TOP);
        for (int k = 0; k <= count; k++) {
            col->values[k] = PyBytes_FromStringAndSize(NULL, k ? capacity * (Py_ssize_t)sizeof(int64_t) : capacity);
            if (!col->values[k]) return NOMEM;
        }
        col->tag = (uint8_t *)PyBytes_AS_STRING(col->values[0]);
        col->a = count > 0 ? (int64_t *)PyBytes_AS_STRING(col->values[1]) : NULL;
        col->b = col->shared ? col->a : count > 1 ? (int64_t *)PyBytes_AS_STRING(col->values[2]) : NULL;
        col->c = count > 2 ? (int64_t *)PyBytes_AS_STRING(col->values[3]) : NULL;
    }
    s->seq_bytes = PyBytes_FromStringAndSize(NULL, capacity * (Py_ssize_t)sizeof(int64_t));
    if (!s->seq_bytes) return NOMEM;
    s->seq = (int64_t *)PyBytes_AS_STRING(s->seq_bytes);
    s->capacity = capacity;
    return OK;
}

static void release(Scanner *s) {
    for (int i = 0; i < s->n_columns; i++)
        for (int k = 0; k < 4; k++) Py_CLEAR(s->columns[i].values[k]);
    Py_CLEAR(s->seq_bytes);
    free(s->slots);
    free(s->distinct);
    free(s->deferred);
    PyMem_Free(s->scratch);
    Py_XDECREF(s->strings);
}

/* How many '{' in t[from:to] open an item of an array (the last other than whitespace before it,
 * in the whole text `t`, is '[' or ',' or the text's start): every event does, nested "args"
 * objects (after ':') do not. Linear: each run of whitespace is walked back once, by the brace
 * that ends it. */
static Py_ssize_t count_item_braces(const unsigned char *t, Py_ssize_t from, Py_ssize_t to) {
    Py_ssize_t count = 0;
    const unsigned char *p = t + from, *end = t + to;
    while (p < end && (p = memchr(p, '{', (size_t)(end - p))) != NULL) {
        const unsigned char *q = p;
        while (q > t && (q[-1] == ' ' || q[-1] == '\n' || q[-1] == '\r' || q[-1] == '\t')) q--;
        if (q == t || q[-1] == '[' || q[-1] == ',') count++;
        p++;
    }
    return count;
}

#define CAPACITY_SAMPLES 16
#define CAPACITY_SAMPLE (16 << 10)

/* Rows to start with: the events of 16 windows of 16 kB spread over the text, scaled to the whole
 * and a tenth more (a whole count took 10-15 % of the scan; a fixed guess per byte either wasted
 * memory on traces of short events, which the allocator then kept, or grew on those of long
 * ones). The columns grow when a chunk holds more (`grow`), and are shrunk to their rows at the
 * end. */
static Py_ssize_t first_capacity(const unsigned char *t, Py_ssize_t size) {
    if (size <= CAPACITY_SAMPLES * CAPACITY_SAMPLE) return count_item_braces(t, 0, size) + 1;
    Py_ssize_t counted = 0, stride = size / CAPACITY_SAMPLES;
    for (int k = 0; k < CAPACITY_SAMPLES; k++)
        counted += count_item_braces(t, k * stride, k * stride + CAPACITY_SAMPLE);
    double per_byte = (double)counted / ((double)CAPACITY_SAMPLES * CAPACITY_SAMPLE);
    return (Py_ssize_t)(per_byte * (double)size * 1.1) + 256;
}

/* Every column half as long again, its new rows' tags absent. Called during the scan, without the
 * GIL: takes it back to resize the bytes objects (a resize of a large one moves no data: the
 * allocator remaps it), and points the floats deferred so far into the moved columns. */
static int grow(Scanner *s) {
    Py_ssize_t old = s->capacity, capacity = old + old / 2 + 256;
    int status = OK;
    PyEval_RestoreThread(s->released);
    for (Py_ssize_t i = 0; i < s->n_deferred; i++) { /* each deferred float's column and row */
        Deferred *d = &s->deferred[i];
        d->column = -1; /* a dropped event's: `discard` */
        for (int c = 0; c < s->n_columns; c++) {
            Column *col = &s->columns[c];
            if (col->b && (int64_t *)d->target >= col->b && (int64_t *)d->target < col->b + old) {
                d->column = c;
                d->row = (int64_t *)d->target - col->b;
                break;
            }
        }
    }
    for (int i = 0; i < s->n_columns && status == OK; i++) {
        Column *col = &s->columns[i];
        int count = column_arrays(col, i == N_TOP);
        for (int k = 0; k <= count; k++) {
            if (_PyBytes_Resize(&col->values[k], k ? capacity * (Py_ssize_t)sizeof(int64_t) : capacity)) {
                status = NOMEM;
                break;
            }
        }
        if (status != OK) break;
        col->tag = (uint8_t *)PyBytes_AS_STRING(col->values[0]);
        col->a = count > 0 ? (int64_t *)PyBytes_AS_STRING(col->values[1]) : NULL;
        col->b = col->shared ? col->a : count > 1 ? (int64_t *)PyBytes_AS_STRING(col->values[2]) : NULL;
        col->c = count > 2 ? (int64_t *)PyBytes_AS_STRING(col->values[3]) : NULL;
        memset(col->tag + old, TAG_ABSENT, (size_t)(capacity - old));
    }
    if (status == OK && _PyBytes_Resize(&s->seq_bytes, capacity * (Py_ssize_t)sizeof(int64_t))) status = NOMEM;
    if (status == OK) {
        s->seq = (int64_t *)PyBytes_AS_STRING(s->seq_bytes);
        for (Py_ssize_t i = 0; i < s->n_deferred; i++) {
            Deferred *d = &s->deferred[i];
            if (d->column >= 0) d->target = (double *)&s->columns[d->column].b[d->row];
        }
        s->capacity = capacity;
    }
    s->released = PyEval_SaveThread();
    return status;
}


/* ---------------------------------------------------------------------------------------------
 * Lexing */

/* Whether the first byte of an 8-byte load is its lowest (little-endian), and the compiler has
 * __builtin_ctzll to find a flagged byte; else the scans go a byte at a time after a flag. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define LITTLE_ENDIAN_BITS 1
#else
#define LITTLE_ENDIAN_BITS 0
#endif

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
#define HAS_ZERO(v) (((v) - ONES) & ~(v) & HIGHS)

static inline int is_space(unsigned char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* Pretty-printed traces (Kineto indents every line) are a third whitespace or more: 8 bytes at a
 * time, each load skipping its leading spaces at once (the first byte that is no space, found from
 * the lowest set bit on a little-endian machine). */
static inline void skip_space(Scanner *s) {
    const unsigned char *t = s->text;
    Py_ssize_t p = s->pos, n = s->size;
    /* none, or one (compact JSON's ", " and ": "), without a wide load */
    if (p >= n || !is_space(t[p])) return;
    if (++p >= n || !is_space(t[p])) { s->pos = p; return; }
#if LITTLE_ENDIAN_BITS
    while (p + 8 <= n) {
        uint64_t other = load8(t + p) ^ (ONES * ' ');
        if (!other) { p += 8; continue; }
        p += __builtin_ctzll(other) >> 3;
        if (!is_space(t[p])) { s->pos = p; return; }
        p++;
    }
#endif
    while (p < n && is_space(t[p])) p++;
    s->pos = p;
}

static inline int hex_value(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Length of a valid UTF-8 sequence starting at t[p] (a byte >= 0x80), or 0. */
static Py_ssize_t utf8_sequence(const unsigned char *t, Py_ssize_t p, Py_ssize_t n) {
    unsigned char c = t[p];
    Py_ssize_t len;
    uint32_t min, cp;
    if (c >= 0xC2 && c <= 0xDF) { len = 2; cp = c & 0x1F; min = 0x80; }
    else if (c >= 0xE0 && c <= 0xEF) { len = 3; cp = c & 0x0F; min = 0x800; }
    else if (c >= 0xF0 && c <= 0xF4) { len = 4; cp = c & 0x07; min = 0x10000; }
    else return 0;
    if (p + len > n) return 0;
    for (Py_ssize_t k = 1; k < len; k++) {
        if ((t[p + k] & 0xC0) != 0x80) return 0;
        cp = (cp << 6) | (t[p + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return len;
}

/* The high bit of each of 8 bytes that is a quote, a backslash, a control character or not
 * ASCII; 0 when none is. Bytes above the first such byte may be flagged wrongly (a borrow), the
 * lowest flag is always right. */
static inline uint64_t special_bytes(uint64_t v) {
    return HAS_ZERO(v ^ (ONES * '"')) | HAS_ZERO(v ^ (ONES * '\\')) | ((v - ONES * 0x20) & ~v & HIGHS) | (v & HIGHS);
}

/* A string at s->pos (on its opening quote): validated, s->pos after the closing quote.
 * start and len: its content; *escaped: whether it holds a backslash. */
static int scan_string(Scanner *s, Py_ssize_t *start, Py_ssize_t *len, int *escaped) {
    const unsigned char *t = s->text;
    Py_ssize_t p = s->pos + 1, n = s->size;
    int esc = 0;
    *start = p;
    for (;;) {
        /* the common case: plain ASCII, 8 bytes at a time, up to the first byte that is not */
#if LITTLE_ENDIAN_BITS
        for (;;) {
            if (p + 8 > n) {
                while (p < n && t[p] != '"' && t[p] != '\\' && t[p] >= 0x20 && t[p] < 0x80) p++;
                break;
            }
            uint64_t special = special_bytes(load8(t + p));
            if (special) { p += __builtin_ctzll(special) >> 3; break; }
            p += 8;
        }
#else
        while (p + 8 <= n && !special_bytes(load8(t + p))) p += 8;
        while (p < n && t[p] != '"' && t[p] != '\\' && t[p] >= 0x20 && t[p] < 0x80) p++;
#endif
        if (p >= n) return DELEGATE;
        unsigned char c = t[p];
        if (c == '"') break;
        if (c < 0x20) return DELEGATE;
        if (c >= 0x80) {
            Py_ssize_t k = utf8_sequence(t, p, n);
            if (!k) return DELEGATE;
            p += k;
            continue;
        }
        /* backslash */
        esc = 1;
        if (p + 1 >= n) return DELEGATE;
        c = t[p + 1];
        if (c == 'u') {
            if (p + 6 > n) return DELEGATE;
            int unit = 0;
            for (int k = 2; k < 6; k++) {
                int h = hex_value(t[p + k]);
                if (h < 0) return DELEGATE;
                unit = unit * 16 + h;
            }
            p += 6;
            if (unit >= 0xD800 && unit <= 0xDFFF) {
                /* a surrogate: only a high one followed by an escaped low one is valid (msgspec
                 * refuses the rest, also inside values that no column reads) */
                if (unit >= 0xDC00 || p + 6 > n || t[p] != '\\' || t[p + 1] != 'u') return DELEGATE;
                int low = 0;
                for (int k = 2; k < 6; k++) {
                    int h = hex_value(t[p + k]);
                    if (h < 0) return DELEGATE;
                    low = low * 16 + h;
                }
                if (low < 0xDC00 || low > 0xDFFF) return DELEGATE;
                p += 6;
            }
        } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' || c == 'n' || c == 'r' || c == 't') {
            p += 2;
        } else {
            return DELEGATE;
        }
    }
    *len = p - *start;
    *escaped = esc;
    s->pos = p + 1;
    return OK;
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number at s->pos: *is_int, and its value in *ival or *target. An integer beyond int64, a float
 * beyond double's range: DELEGATE (msgspec turns them into a Python int / an error). */
static int defer(Scanner *s, double *target, Py_ssize_t start, Py_ssize_t len) {
    if (s->n_deferred == s->deferred_capacity) {
        Py_ssize_t capacity = s->deferred_capacity ? 2 * s->deferred_capacity : 1024;
        Deferred *grown = realloc(s->deferred, capacity * sizeof(Deferred));
        if (!grown) return NOMEM;
        s->deferred = grown;
        s->deferred_capacity = capacity;
    }
    s->deferred[s->n_deferred++] = (Deferred){target, start, len, 0, 0};
    return OK;
}

/* The decimal text t[p:end] of a float number of µs → ns, exactly, rounded half to even beyond
 * three decimals (what `load/times.py`'s `decimal_ns` gives); INT64_MIN for a text with an
 * exponent or beyond int64 ns. A double has lost the nanoseconds of a time beyond 2^53 ns; its
 * digits have not. */
static int64_t decimal_ns(const unsigned char *t, Py_ssize_t p, Py_ssize_t end) {
    int negative = 0, whole_digits = 0, fraction_digits = 0, next = -1, sticky = 0;
    uint64_t whole = 0, fraction = 0;
    if (p < end && t[p] == '-') { negative = 1; p++; }
    while (p < end && t[p] >= '0' && t[p] <= '9') {
        if (++whole_digits > 19) return INT64_MIN;
        whole = whole * 10 + (uint64_t)(t[p] - '0');
        p++;
    }
    if (p < end && t[p] == '.') {
        p++;
        while (p < end && t[p] >= '0' && t[p] <= '9') {
            int digit = t[p] - '0';
            if (fraction_digits < 3) { fraction = fraction * 10 + (uint64_t)digit; fraction_digits++; }
            else if (next < 0) next = digit;
            else if (digit) sticky = 1;
            p++;
        }
    }
    if (p != end) return INT64_MIN; /* an exponent: the Python paths decide */
    for (; fraction_digits < 3; fraction_digits++) fraction *= 10;
    if (whole > (uint64_t)INT64_MAX / 1000) return INT64_MIN;
    uint64_t ns = whole * 1000 + fraction;
    if (next > 5 || (next == 5 && (sticky || (ns & 1)))) ns++;
    if (ns > (uint64_t)INT64_MAX) return INT64_MIN;
    return negative ? -(int64_t)ns : (int64_t)ns;
}

/* `target`: where a float goes (NULL: only validate); a float that needs more than Clinger's
 * fast path is parsed after the scan, when the GIL is held again (`parse_deferred`). A float's
 * exact ns (`decimal_ns`) go to *ival. */
static int scan_number(Scanner *s, int *is_int, int64_t *ival, double *target) {
    const unsigned char *t = s->text;
    Py_ssize_t p = s->pos, n = s->size, begin = p;
    int negative = 0, digits = 0, exact = 1;
    uint64_t mantissa = 0;
    int exponent = 0;
    if (p < n && t[p] == '-') { negative = 1; p++; }
    if (p >= n) return DELEGATE;
    if (t[p] == '0') {
        p++;
    } else if (t[p] >= '1' && t[p] <= '9') {
        while (p < n && t[p] >= '0' && t[p] <= '9') {
            if (digits < 19) mantissa = mantissa * 10 + (t[p] - '0');
            else exact = 0;
            digits++;
            p++;
        }
    } else {
        return DELEGATE;
    }
    int integer = 1;
    if (p < n && t[p] == '.') {
        integer = 0;
        p++;
        if (p >= n || t[p] < '0' || t[p] > '9') return DELEGATE;
        while (p < n && t[p] >= '0' && t[p] <= '9') {
            if (mantissa == 0 && t[p] == '0') {
                exponent--; /* leading zeros of a fraction */
            } else if (digits < 19) {
                mantissa = mantissa * 10 + (t[p] - '0');
                exponent--;
                digits++;
            } else {
                exact = 0;
            }
            p++;
        }
    }
    if (p < n && (t[p] == 'e' || t[p] == 'E')) {
        integer = 0;
        p++;
        int sign = 1, value = 0;
        if (p < n && (t[p] == '+' || t[p] == '-')) { sign = t[p] == '-' ? -1 : 1; p++; }
        if (p >= n || t[p] < '0' || t[p] > '9') return DELEGATE;
        while (p < n && t[p] >= '0' && t[p] <= '9') {
            if (value < 100000) value = value * 10 + (t[p] - '0');
            p++;
        }
        exponent += sign * value;
    }
    s->pos = p;
    if (integer) {
        if (!exact) return DELEGATE; /* more than 19 digits */
        if (negative) {
            if (mantissa > (uint64_t)INT64_MAX + 1) return DELEGATE;
            *ival = mantissa == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mantissa;
        } else {
            if (mantissa > (uint64_t)INT64_MAX) return DELEGATE;
            *ival = (int64_t)mantissa;
        }
        *is_int = 1;
        return OK;
    }
    *is_int = 0;
    if (!target) return OK;
    *ival = decimal_ns(t, begin, p);
    /* Clinger's fast path: an exact mantissa and an exact power of ten give a correctly rounded
     * quotient or product */
    if (exact && mantissa <= (1ULL << 53) && exponent >= -22 && exponent <= 22) {
        double value = (double)mantissa;
        value = exponent < 0 ? value / POW10[-exponent] : value * POW10[exponent];
        *target = negative ? -value : value;
        return OK;
    }
    return defer(s, target, begin, p - begin);
}

/* The deferred floats, correctly rounded by Python's own parser (GIL held). */
static int parse_deferred(Scanner *s) {
    char buffer[128];
    for (Py_ssize_t i = 0; i < s->n_deferred; i++) {
        Deferred *d = &s->deferred[i];
        if (d->len >= (Py_ssize_t)sizeof(buffer)) return DELEGATE;
        memcpy(buffer, s->text + d->start, d->len);
        buffer[d->len] = 0;
        double value = PyOS_string_to_double(buffer, NULL, NULL);
        if (value == -1.0 && PyErr_Occurred()) {
            if (PyErr_ExceptionMatches(PyExc_MemoryError)) return NOMEM;
            PyErr_Clear();
            return DELEGATE;
        }
        if (!isfinite(value)) return DELEGATE; /* 1e999: msgspec refuses it */
        *d->target = value;
    }
    return OK;
}

static int literal(Scanner *s, const char *word, Py_ssize_t len) {
    if (s->pos + len > s->size || memcmp(s->text + s->pos, word, len) != 0) return DELEGATE;
    s->pos += len;
    return OK;
}

/* After a member of an object or an item of an array: `,` (*more = 1: another follows) or the
 * closing `close` (*more = 0). */
static int item_end(Scanner *s, unsigned char close, int *more) {
    skip_space(s);
    if (s->pos >= s->size) return DELEGATE;
    if (s->text[s->pos] == ',') { s->pos++; *more = 1; return OK; }
    if (s->text[s->pos] == close) { s->pos++; *more = 0; return OK; }
    return DELEGATE;
}

/* Any value at s->pos, validated and passed over. */
static int skip_value(Scanner *s, int depth) {
    if (depth > MAX_DEPTH) return DELEGATE;
    skip_space(s);
    if (s->pos >= s->size) return DELEGATE;
    unsigned char c = s->text[s->pos];
    Py_ssize_t start, len;
    int escaped, is_int, more = 1;
    int64_t ival;
    switch (c) {
    case '"':
        return scan_string(s, &start, &len, &escaped);
    case '{':
        s->pos++;
        skip_space(s);
        if (s->pos < s->size && s->text[s->pos] == '}') { s->pos++; return OK; }
        for (;;) {
            skip_space(s);
            if (s->pos >= s->size || s->text[s->pos] != '"') return DELEGATE;
            if (scan_string(s, &start, &len, &escaped)) return DELEGATE;
            skip_space(s);
            if (s->pos >= s->size || s->text[s->pos] != ':') return DELEGATE;
            s->pos++;
            if (skip_value(s, depth + 1) || item_end(s, '}', &more)) return DELEGATE;
            if (!more) return OK;
        }
    case '[':
        s->pos++;
        skip_space(s);
        if (s->pos < s->size && s->text[s->pos] == ']') { s->pos++; return OK; }
        while (more)
            if (skip_value(s, depth + 1) || item_end(s, ']', &more)) return DELEGATE;
        return OK;
    case 't':
        return literal(s, "true", 4);
    case 'f':
        return literal(s, "false", 5);
    case 'n':
        return literal(s, "null", 4);
    default:
        return scan_number(s, &is_int, &ival, NULL);
    }
}

/* ---------------------------------------------------------------------------------------------
 * Strings: one Python str per distinct text, by an open-addressing table over the raw content */

static uint64_t hash_bytes(const unsigned char *p, Py_ssize_t len, const unsigned char *end) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ (uint64_t)len;
    Py_ssize_t i = 0;
    for (; i + 8 <= len; i += 8) {
        h = (h ^ load8(p + i)) * 0xFF51AFD7ED558CCDULL;
        h ^= h >> 32;
    }
    if (i < len) {
        h = (h ^ load_head_in(p + i, len - i, end)) * 0xC4CEB9FE1A85EC53ULL;
        h ^= h >> 29;
    }
    return h;
}

static PyObject *unescaped(Scanner *s, Py_ssize_t start, Py_ssize_t len) {
    if (s->scratch_size < len) {
        char *grown = PyMem_Realloc(s->scratch, len ? len : 1);
        if (!grown) return PyErr_NoMemory();
        s->scratch = grown;
        s->scratch_size = len;
    }
    const unsigned char *t = s->text + start;
    char *out = s->scratch;
    Py_ssize_t o = 0;
    for (Py_ssize_t i = 0; i < len;) {
        if (t[i] != '\\') { out[o++] = t[i++]; continue; }
        unsigned char e = t[i + 1];
        i += 2;
        switch (e) {
        case 'b': out[o++] = '\b'; break;
        case 'f': out[o++] = '\f'; break;
        case 'n': out[o++] = '\n'; break;
        case 'r': out[o++] = '\r'; break;
        case 't': out[o++] = '\t'; break;
        case 'u': {
            uint32_t cp = 0;
            for (int k = 0; k < 4; k++) cp = (cp << 4) | hex_value(t[i + k]);
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) { /* a high surrogate: its low one must follow */
                if (i + 6 > len || t[i] != '\\' || t[i + 1] != 'u') return NULL;
                uint32_t low = 0;
                for (int k = 0; k < 4; k++) low = (low << 4) | hex_value(t[i + 2 + k]);
                if (low < 0xDC00 || low > 0xDFFF) return NULL;
                i += 6;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
                return NULL;
            }
            /* UTF-8: never longer than the six escape bytes it replaces */
            if (cp < 0x80) out[o++] = (char)cp;
            else if (cp < 0x800) { out[o++] = 0xC0 | (cp >> 6); out[o++] = 0x80 | (cp & 0x3F); }
            else if (cp < 0x10000) {
                out[o++] = 0xE0 | (cp >> 12); out[o++] = 0x80 | ((cp >> 6) & 0x3F); out[o++] = 0x80 | (cp & 0x3F);
            } else {
                out[o++] = 0xF0 | (cp >> 18); out[o++] = 0x80 | ((cp >> 12) & 0x3F);
                out[o++] = 0x80 | ((cp >> 6) & 0x3F); out[o++] = 0x80 | (cp & 0x3F);
            }
            break;
        }
        default: out[o++] = e; /* " \ / */
        }
    }
    return PyUnicode_DecodeUTF8(out, o, "strict");
}

/* The code of the string with this content (a new one for a text not seen before); -1: no memory. */
static Py_ssize_t intern(Scanner *s, Py_ssize_t start, Py_ssize_t len, int escaped) {
    uint64_t h = hash_bytes(s->text + start, len, s->text + s->size);
    Py_ssize_t mask = s->n_slots - 1, i = (Py_ssize_t)(h & mask);
    for (;;) {
        Slot *slot = &s->slots[i];
        if (slot->code < 0) break;
        if (slot->hash == h && slot->len == len && memcmp(s->text + slot->start, s->text + start, len) == 0)
            return slot->code;
        i = (i + 1) & mask;
    }
    if (s->n_strings == s->distinct_capacity) {
        Py_ssize_t capacity = s->distinct_capacity ? 2 * s->distinct_capacity : 256;
        Distinct *grown = realloc(s->distinct, capacity * sizeof(Distinct));
        if (!grown) return -1;
        s->distinct = grown;
        s->distinct_capacity = capacity;
    }
    s->distinct[s->n_strings] = (Distinct){start, len, escaped};
    Slot *slot = &s->slots[i];
    slot->start = start;
    slot->len = len;
    slot->hash = h;
    slot->code = s->n_strings++;
    if (s->n_strings * 2 > s->n_slots) { /* rehash into twice the slots */
        Py_ssize_t n = s->n_slots * 2;
        Slot *slots = malloc(n * sizeof(Slot));
        if (!slots) return -1;
        for (Py_ssize_t k = 0; k < n; k++) slots[k].code = -1;
        for (Py_ssize_t k = 0; k < s->n_slots; k++) {
            if (s->slots[k].code < 0) continue;
            Py_ssize_t j = (Py_ssize_t)(s->slots[k].hash & (n - 1));
            while (slots[j].code >= 0) j = (j + 1) & (n - 1);
            slots[j] = s->slots[k];
        }
        free(s->slots);
        s->slots = slots;
        s->n_slots = n;
    }
    return s->n_strings - 1;
}

/* The distinct strings as Python str, by code (GIL held). */
static int make_strings(Scanner *s) {
    s->strings = PyList_New(s->n_strings);
    if (!s->strings) return NOMEM;
    for (Py_ssize_t code = 0; code < s->n_strings; code++) {
        Distinct *d = &s->distinct[code];
        PyObject *value = d->escaped ? unescaped(s, d->start, d->len)
                                     : PyUnicode_DecodeUTF8((const char *)s->text + d->start, d->len, "strict");
        if (!value) {
            if (!PyErr_Occurred() || !PyErr_ExceptionMatches(PyExc_MemoryError)) {
                PyErr_Clear();
                return DELEGATE; /* a lone surrogate */
            }
            return NOMEM;
        }
        PyList_SET_ITEM(s->strings, code, value);
    }
    return OK;
}

/* ---------------------------------------------------------------------------------------------
 * Values into columns */

static int scan_scalar(Scanner *s, Column *col, Py_ssize_t row) {
    skip_space(s);
    if (s->pos >= s->size) return DELEGATE;
    unsigned char c = s->text[s->pos];
    if (c == '"') {
        Py_ssize_t start, len;
        int escaped;
        if (scan_string(s, &start, &len, &escaped)) return DELEGATE;
        Py_ssize_t code = intern(s, start, len, escaped);
        if (code < 0) return NOMEM;
        col->tag[row] = TAG_STR;
        col->a[row] = code;
    } else if (c == '-' || (c >= '0' && c <= '9')) {
        int is_int, status;
        int64_t ival = 0;
        if ((status = scan_number(s, &is_int, &ival, (double *)&col->b[row]))) return status;
        if (is_int || !col->shared) col->a[row] = ival; /* a float: its exact ns (`decimal_ns`) */
        col->tag[row] = is_int ? TAG_INT : TAG_FLOAT;
    } else if (c == 'n') {
        if (literal(s, "null", 4)) return DELEGATE;
        col->tag[row] = TAG_NULL;
    } else if (c == 't' || c == 'f') {
        if (c == 't' ? literal(s, "true", 4) : literal(s, "false", 5)) return DELEGATE;
        col->tag[row] = TAG_BOOL;
        col->a[row] = c == 't';
    } else {
        if (skip_value(s, 1)) return DELEGATE;
        col->tag[row] = TAG_OTHER;
    }
    return OK;
}

static int scan_list3(Scanner *s, Column *col, Py_ssize_t row) {
    skip_space(s);
    if (s->pos >= s->size) return DELEGATE;
    Py_ssize_t begin = s->pos;
    unsigned char c = s->text[s->pos];
    if (c == 'n') {
        if (literal(s, "null", 4)) return DELEGATE;
        col->tag[row] = TAG_NULL;
        return OK;
    }
    if (c == '[') {
        int64_t values[3];
        int count = 0;
        s->pos++;
        skip_space(s);
        while (count < 3 && s->pos < s->size) {
            unsigned char d = s->text[s->pos];
            if (!(d == '-' || (d >= '0' && d <= '9'))) break;
            int is_int;
            if (scan_number(s, &is_int, &values[count], NULL)) return DELEGATE;
            if (!is_int) break;
            count++;
            skip_space(s);
            if (s->pos < s->size && s->text[s->pos] == ',' && count < 3) { s->pos++; skip_space(s); continue; }
            break;
        }
        if (count == 3 && s->pos < s->size && s->text[s->pos] == ']') {
            s->pos++;
            col->tag[row] = TAG_LIST3;
            col->a[row] = values[0];
            col->b[row] = values[1];
            col->c[row] = values[2];
            return OK;
        }
    }
    s->pos = begin; /* anything else: some other value */
    if (skip_value(s, 1)) return DELEGATE;
    col->tag[row] = TAG_OTHER;
    return OK;
}

static int scan_raw(Scanner *s, Column *col, Py_ssize_t row) {
    skip_space(s);
    Py_ssize_t begin = s->pos;
    if (skip_value(s, 1)) return DELEGATE;
    col->tag[row] = TAG_OTHER;
    col->a[row] = begin;
    col->b[row] = s->pos - begin;
    return OK;
}

static int scan_into(Scanner *s, Column *col, Py_ssize_t row) {
    if (col->tag[row] != TAG_ABSENT) return DELEGATE; /* a repeated key */
    switch (col->kind) {
    case KIND_LIST3: return scan_list3(s, col, row);
    case KIND_RAW: return scan_raw(s, col, row);
    default: return scan_scalar(s, col, row);
    }
}

/* The key at s->pos, then its colon: start and len of its content. Keys written with escapes are
 * left to msgspec (it compares them unescaped). */
static int scan_key(Scanner *s, Py_ssize_t *start, Py_ssize_t *len) {
    skip_space(s);
    if (s->pos >= s->size || s->text[s->pos] != '"') return DELEGATE;
    int escaped;
    if (scan_string(s, start, len, &escaped) || escaped) return DELEGATE;
    skip_space(s);
    if (s->pos >= s->size || s->text[s->pos] != ':') return DELEGATE;
    s->pos++;
    return OK;
}

static inline int key_slot(uint64_t head, Py_ssize_t len) {
    return (int)(((head ^ (uint64_t)len) * 0x9E3779B97F4A7C15ULL) >> 57); /* 7 bits: KEY_SLOTS */
}

/* slots[]: the columns [first, last) by their key's slot (-1: empty), in column order, so that
 * of two columns with one key the first is found (as a walk over the columns finds it). */
static void index_keys(Scanner *s, int16_t *slots, int first, int last) {
    for (int k = 0; k < KEY_SLOTS; k++) slots[k] = -1;
    for (int i = first; i < last; i++) {
        int k = key_slot(s->columns[i].key_head, s->columns[i].key_len);
        while (slots[k] >= 0) k = (k + 1) & (KEY_SLOTS - 1);
        slots[k] = (int16_t)i;
    }
}

static Column *find_column(Scanner *s, const int16_t *slots, Py_ssize_t start, Py_ssize_t len) {
    uint64_t head = load_head_in(s->text + start, len, s->text + s->size);
    for (int k = key_slot(head, len); slots[k] >= 0; k = (k + 1) & (KEY_SLOTS - 1)) {
        Column *col = &s->columns[slots[k]];
        if (col->key_len == len && col->key_head == head
            && (len <= 8 || memcmp(col->key + 8, s->text + start + 8, len - 8) == 0))
            return col;
    }
    return NULL;
}

static int scan_args(Scanner *s, Py_ssize_t row, int passed);

/* Whether a string of `strings` (by code) is one of the categories passed over: as written,
 * without escapes. */
static int is_passed(const Scanner *s, Py_ssize_t code) {
    const Distinct *d = &s->distinct[code];
    if (d->escaped) return 0;
    for (int k = 0; k < s->n_passed; k++)
        if (d->len == s->passed_len[k] && memcmp(s->text + d->start, s->passed[k], d->len) == 0) return 1;
    return 0;
}

/* An event's name once its category is passed over: validated and tagged, not made a string
 * (no table reads the name of an event of such a category). */
static int scan_passed_name(Scanner *s, Column *col, Py_ssize_t row) {
    if (col->tag[row] != TAG_ABSENT) return DELEGATE; /* a repeated key */
    skip_space(s);
    if (s->pos >= s->size || s->text[s->pos] != '"') return scan_scalar(s, col, row);
    Py_ssize_t start, len;
    int escaped;
    if (scan_string(s, &start, &len, &escaped)) return DELEGATE;
    col->tag[row] = TAG_STR;
    col->a[row] = -1; /* no string: `columnar` reads it as none */
    return OK;
}

/* The members of the object at s->pos (on its `{`): a key of a column in `slots` goes into its
 * column, `args` (at the top level) into the args columns, any other key is passed over. An
 * event whose category is passed over (`passed`): its name and args after the category are
 * validated and tagged only. */
static int scan_members(Scanner *s, Py_ssize_t row, const int16_t *slots, int top_level) {
    s->pos++;
    skip_space(s);
    if (s->pos < s->size && s->text[s->pos] == '}') { s->pos++; return OK; }
    int more = 1, status, passed = 0;
    Column *category = &s->columns[1], *name = &s->columns[2]; /* TOP_NAMES */
    while (more) {
        Py_ssize_t start, len;
        if (scan_key(s, &start, &len)) return DELEGATE;
        if (top_level && len == 4 && memcmp(s->text + start, "args", 4) == 0) {
            status = scan_args(s, row, passed);
        } else {
            Column *col = find_column(s, slots, start, len);
            if (!col) {
                status = skip_value(s, top_level ? 1 : 2);
            } else if (passed && col == name) {
                status = scan_passed_name(s, col, row);
            } else {
                status = scan_into(s, col, row);
                if (!status && top_level && col == category && s->n_passed && col->tag[row] == TAG_STR)
                    passed = is_passed(s, col->a[row]);
            }
        }
        if (status) return status;
        if (item_end(s, '}', &more)) return DELEGATE;
    }
    if (top_level) s->event_passed = passed;
    return OK;
}

static int scan_args(Scanner *s, Py_ssize_t row, int passed) {
    Column *args = &s->columns[N_TOP];
    if (args->tag[row] != TAG_ABSENT) return DELEGATE;
    skip_space(s);
    if (s->pos >= s->size) return DELEGATE;
    unsigned char c = s->text[s->pos];
    if (c == 'n') {
        if (literal(s, "null", 4)) return DELEGATE;
        args->tag[row] = TAG_NULL;
        return OK;
    }
    if (c != '{') {
        if (skip_value(s, 1)) return DELEGATE;
        args->tag[row] = TAG_OTHER;
        return OK;
    }
    args->tag[row] = TAG_OBJECT;
    /* passed over: validated as any value (its members at the depth they have when read) */
    return passed ? skip_value(s, 1) : scan_members(s, row, s->arg_slots, 0);
}

static int scan_event(Scanner *s, Py_ssize_t row) {
    s->event_passed = 0;
    skip_space(s);
    if (s->pos >= s->size || s->text[s->pos] != '{') return DELEGATE; /* not an object */
    return scan_members(s, row, s->top_slots, 1);
}

/* Whether an event of a passed category may go without a row: each top-level field's tag and
 * its args' among those `dropped` allows (its args' keys were not read). */
static int droppable(const Scanner *s, Py_ssize_t row) {
    if (!s->drops) return 0;
    for (int i = 0; i <= N_TOP; i++)
        if (!(s->dropped[i] >> s->columns[i].tag[row] & 1)) return 0;
    return 1;
}

/* One event of the array into the next row (none for an event `droppable`). */
static int scan_item(Scanner *s) {
    int status;
    if (s->rows == s->capacity && (status = grow(s))) return status;
    Py_ssize_t row = s->rows, deferred = s->n_deferred;
    if ((status = scan_event(s, row))) return status;
    if (s->event_passed && droppable(s, row)) {
        for (int i = 0; i < s->n_columns; i++) s->columns[i].tag[row] = TAG_ABSENT; /* the row is free again */
        for (Py_ssize_t i = deferred; i < s->n_deferred; i++) s->deferred[i].target = &s->discard;
    } else {
        s->seq[row] = s->events;
        s->rows++;
    }
    s->events++;
    return OK;
}

static int scan_array(Scanner *s, int bare) {
    /* every field absent until an event gives it: one pass over each tag column, not a store
     * into every column per event (`grow` does the same for the rows it adds) */
    for (int i = 0; i < s->n_columns; i++) memset(s->columns[i].tag, TAG_ABSENT, (size_t)s->capacity);
    skip_space(s);
    int status, more = 1;
    if (bare) { /* the items without the brackets: events apart by commas, up to the end */
        if (s->pos >= s->size) return OK;
        for (;;) {
            if ((status = scan_item(s))) return status;
            skip_space(s);
            if (s->pos >= s->size) return OK;
            if (s->text[s->pos] != ',') return DELEGATE;
            s->pos++;
        }
    }
    if (s->pos >= s->size || s->text[s->pos] != '[') return DELEGATE;
    s->pos++;
    skip_space(s);
    if (s->pos < s->size && s->text[s->pos] == ']') {
        s->pos++;
    } else {
        while (more) {
            if ((status = scan_item(s))) return status;
            if (item_end(s, ']', &more)) return DELEGATE;
        }
    }
    skip_space(s);
    return s->pos == s->size ? OK : DELEGATE;
}

/* ---------------------------------------------------------------------------------------------
 * Python */

static PyObject *column_tuple(Column *col, Py_ssize_t rows, int is_args) {
    int count = column_arrays(col, is_args);
    PyObject *items = PyTuple_New(1 + count);
    if (!items) return NULL;
    for (int k = 0; k <= count; k++) {
        if (_PyBytes_Resize(&col->values[k], k ? rows * (Py_ssize_t)sizeof(int64_t) : rows)) {
            Py_DECREF(items);
            return NULL;
        }
        PyTuple_SET_ITEM(items, k, col->values[k]);
        col->values[k] = NULL; /* the tuple owns it */
    }
    return items;
}

static PyObject *result(Scanner *s) {
    PyObject *fields = PyDict_New(), *out = NULL;
    if (!fields) return NULL;
    for (int i = 0; i < s->n_columns; i++) {
        Column *col = &s->columns[i];
        PyObject *columns = column_tuple(col, s->rows, i == N_TOP);
        if (!columns) goto done;
        int failed = PyDict_SetItemString(fields, col->key, columns);
        Py_DECREF(columns);
        if (failed) goto done;
    }
    if (_PyBytes_Resize(&s->seq_bytes, s->rows * (Py_ssize_t)sizeof(int64_t))) goto done;
    out = Py_BuildValue("{s:n,s:n,s:O,s:O,s:O}", "n", s->rows, "events", s->events, "seq", s->seq_bytes,
                        "strings", s->strings, "fields", fields);
done:
    Py_DECREF(fields);
    return out;
}

static PyObject *scan(PyObject *self, PyObject *args) {
    Py_buffer text;
    PyObject *keys, *passed = NULL, *dropped = NULL;
    int bare = 0;
    if (!PyArg_ParseTuple(args, "y*O!|O!O!p:scan", &text, &PyTuple_Type, &keys, &PyTuple_Type, &passed,
                          &PyTuple_Type, &dropped, &bare)) return NULL;
    Scanner s;
    memset(&s, 0, sizeof s);
    s.text = text.buf;
    s.size = text.len;
    PyObject *out = NULL;
    Py_ssize_t n_keys = PyTuple_GET_SIZE(keys);
    if (n_keys > MAX_KEYS) {
        PyErr_SetString(PyExc_ValueError, "too many args keys");
        goto done;
    }
    if (passed && PyTuple_GET_SIZE(passed) > MAX_PASSED) {
        PyErr_SetString(PyExc_ValueError, "too many categories passed over");
        goto done;
    }
    if (dropped && PyTuple_GET_SIZE(dropped)) {
        if (PyTuple_GET_SIZE(dropped) != N_TOP + 1) {
            PyErr_SetString(PyExc_ValueError, "dropped: one mask per top-level field and args");
            goto done;
        }
        for (int i = 0; i <= N_TOP; i++) {
            long mask = PyLong_AsLong(PyTuple_GET_ITEM(dropped, i));
            if (mask == -1 && PyErr_Occurred()) goto done;
            s.dropped[i] = (uint16_t)(mask & 0x1FF);
        }
        s.drops = 1;
    }
    for (Py_ssize_t i = 0; passed && i < PyTuple_GET_SIZE(passed); i++) {
        PyObject *item = PyTuple_GET_ITEM(passed, i);
        if (!PyBytes_Check(item)) {
            PyErr_SetString(PyExc_TypeError, "categories passed over are bytes");
            goto done;
        }
        s.passed[s.n_passed] = PyBytes_AS_STRING(item); /* the tuple keeps it alive */
        s.passed_len[s.n_passed++] = PyBytes_GET_SIZE(item);
    }
    for (int i = 0; i < N_TOP; i++) {
        s.columns[i].key = TOP_NAMES[i];
        s.columns[i].key_len = (Py_ssize_t)strlen(TOP_NAMES[i]);
        s.columns[i].kind = KIND_SCALAR;
        s.columns[i].shared = strcmp(TOP_NAMES[i], "ts") != 0 && strcmp(TOP_NAMES[i], "dur") != 0;
        s.columns[i].key_head = load_head((const unsigned char *)TOP_NAMES[i], s.columns[i].key_len);
    }
    s.columns[N_TOP].key = "args";
    s.columns[N_TOP].key_len = 4;
    s.n_columns = N_TOP + 1;
    for (Py_ssize_t i = 0; i < n_keys; i++) {
        const char *key;
        Py_ssize_t key_len;
        int kind;
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(keys, i), "y#i:scan", &key, &key_len, &kind)) goto done;
        if (kind < KIND_SCALAR || kind > KIND_RAW) {
            PyErr_SetString(PyExc_ValueError, "unknown column kind");
            goto done;
        }
        Column *col = &s.columns[s.n_columns++];
        col->key = key; /* the tuple keeps it alive */
        col->key_len = key_len;
        col->key_head = load_head((const unsigned char *)key, key_len);
        col->kind = kind;
        col->shared = kind == KIND_SCALAR;
    }
    index_keys(&s, s.top_slots, 0, N_TOP);
    index_keys(&s, s.arg_slots, N_TOP + 1, s.n_columns);
    s.n_slots = 1024;
    s.slots = malloc(s.n_slots * sizeof(Slot));
    if (!s.slots) { PyErr_NoMemory(); goto done; }
    for (Py_ssize_t k = 0; k < s.n_slots; k++) s.slots[k].code = -1;
    int status = allocate(&s, first_capacity(s.text, s.size));
    if (status == OK) {
        /* the scan touches no Python object (but to grow the columns): other threads decode
         * other chunks meanwhile */
        s.released = PyEval_SaveThread();
        status = scan_array(&s, bare);
        PyEval_RestoreThread(s.released);
    }
    if (status == OK) status = make_strings(&s);
    if (status == OK) status = parse_deferred(&s);
    if (status == NOMEM) { if (!PyErr_Occurred()) PyErr_NoMemory(); goto done; }
    if (status == DELEGATE) { out = Py_None; Py_INCREF(out); goto done; }
    out = result(&s);
done:
    release(&s);
    PyBuffer_Release(&text);
    return out;
}

static PyObject *join_spans(PyObject *self, PyObject *args) {
    Py_buffer text, offsets, lengths;
    if (!PyArg_ParseTuple(args, "y*y*y*:join_spans", &text, &offsets, &lengths)) return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = offsets.len / (Py_ssize_t)sizeof(int64_t), total = 0;
    const int64_t *offset = offsets.buf, *length = lengths.buf;
    if (lengths.len != offsets.len) { PyErr_SetString(PyExc_ValueError, "offsets and lengths differ"); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (length[i] > 0) {
            if (offset[i] < 0 || offset[i] + length[i] > text.len) {
                PyErr_SetString(PyExc_ValueError, "span outside the text");
                goto done;
            }
            total += length[i];
        }
    }
    out = PyBytes_FromStringAndSize(NULL, total + (n ? n - 1 : 0));
    if (!out) goto done;
    char *p = PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i) *p++ = 0;
        if (length[i] > 0) {
            memcpy(p, (const char *)text.buf + offset[i], length[i]);
            p += length[i];
        }
    }
done:
    PyBuffer_Release(&text);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&lengths);
    return out;
}

/* The parts (a tuple of buffers) joined into one bytes object, what b"".join gives; the copies
 * (a chunk's 16 MB, and the page faults of its new memory) are made without the GIL, so that the
 * decoding thread doing them does not stop the others. */
static PyObject *concat(PyObject *self, PyObject *args) {
    PyObject *parts, *out = NULL;
    if (!PyArg_ParseTuple(args, "O!:concat", &PyTuple_Type, &parts)) return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(parts), held = 0, total = 0;
    Py_buffer *views = PyMem_Calloc(n ? (size_t)n : 1, sizeof(Py_buffer));
    if (!views) return PyErr_NoMemory();
    for (; held < n; held++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(parts, held), &views[held], PyBUF_SIMPLE) < 0) goto done;
        if (views[held].len > PY_SSIZE_T_MAX - total) {
            PyBuffer_Release(&views[held]);
            PyErr_SetString(PyExc_OverflowError, "joined parts too large");
            goto done;
        }
        total += views[held].len;
    }
    out = PyBytes_FromStringAndSize(NULL, total);
    if (!out) goto done;
    char *p = PyBytes_AS_STRING(out);
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++) {
        if (views[i].len) memcpy(p, views[i].buf, (size_t)views[i].len);
        p += views[i].len;
    }
    Py_END_ALLOW_THREADS
done:
    for (Py_ssize_t i = 0; i < held; i++) PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    return out;
}

/* A bytearray of n bytes, not set (bytearray(n) writes n zeros, as much work again as reading
 * into it): a block of the file is read into it. */
static PyObject *uninitialized(PyObject *self, PyObject *args) {
    Py_ssize_t n;
    if (!PyArg_ParseTuple(args, "n:uninitialized", &n)) return NULL;
    if (n < 0) { PyErr_SetString(PyExc_ValueError, "negative size"); return NULL; }
    return PyByteArray_FromStringAndSize(NULL, n);
}

typedef struct {
    uint64_t hash;
    Py_ssize_t first; /* the span that brought this text; -1: empty slot */
    int64_t id;
} SpanSlot;

static PyObject *intern_spans(PyObject *self, PyObject *args) {
    Py_buffer text, offsets, lengths;
    if (!PyArg_ParseTuple(args, "y*y*y*:intern_spans", &text, &offsets, &lengths)) return NULL;
    PyObject *out = NULL, *ids_bytes = NULL, *firsts_bytes = NULL;
    SpanSlot *slots = NULL;
    int64_t *firsts = NULL;
    Py_ssize_t n = offsets.len / (Py_ssize_t)sizeof(int64_t), distinct = 0, n_slots = 16;
    const int64_t *offset = offsets.buf, *length = lengths.buf;
    if (lengths.len != offsets.len) { PyErr_SetString(PyExc_ValueError, "offsets and lengths differ"); goto done; }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (length[i] > 0 && (offset[i] < 0 || offset[i] > text.len - length[i])) {
            PyErr_SetString(PyExc_ValueError, "span outside the text");
            goto done;
        }
    }
    while (n_slots < 2 * n) n_slots *= 2; /* at most n distinct texts: never more than half full */
    ids_bytes = PyBytes_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(int64_t));
    slots = malloc(n_slots * sizeof(SpanSlot));
    firsts = malloc((n ? n : 1) * sizeof(int64_t));
    if (!ids_bytes || !slots || !firsts) { if (!PyErr_Occurred()) PyErr_NoMemory(); goto done; }
    int64_t *ids = (int64_t *)PyBytes_AS_STRING(ids_bytes);
    const unsigned char *base = text.buf, *end = base + text.len;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t k = 0; k < n_slots; k++) slots[k].first = -1;
    Py_ssize_t mask = n_slots - 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (length[i] <= 0) { ids[i] = -1; continue; }
        const unsigned char *p = base + offset[i];
        uint64_t h = hash_bytes(p, length[i], end);
        Py_ssize_t j = (Py_ssize_t)(h & mask);
        for (;;) {
            SpanSlot *slot = &slots[j];
            if (slot->first < 0) {
                *slot = (SpanSlot){h, i, distinct};
                firsts[distinct] = i;
                ids[i] = distinct++;
                break;
            }
            if (slot->hash == h && length[slot->first] == length[i]
                    && memcmp(base + offset[slot->first], p, length[i]) == 0) {
                ids[i] = slot->id;
                break;
            }
            j = (j + 1) & mask;
        }
    }
    Py_END_ALLOW_THREADS
    firsts_bytes = PyBytes_FromStringAndSize((const char *)firsts, distinct * (Py_ssize_t)sizeof(int64_t));
    if (!firsts_bytes) goto done;
    out = PyTuple_Pack(2, ids_bytes, firsts_bytes);
done:
    Py_XDECREF(ids_bytes);
    Py_XDECREF(firsts_bytes);
    free(slots);
    free(firsts);
    PyBuffer_Release(&text);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&lengths);
    return out;
}

static PyMethodDef methods[] = {
    {"scan", scan, METH_VARARGS, "Columnar scan of a JSON array of trace events (None: use msgspec)."},
    {"join_spans", join_spans, METH_VARARGS, "Raw texts at (offset, length) joined with NUL."},
    {"concat", concat, METH_VARARGS, "The buffers of a tuple joined into one bytes (b''.join, copied without the GIL)."},
    {"uninitialized", uninitialized, METH_VARARGS, "A bytearray of n bytes whose values are not set."},
    {"intern_spans", intern_spans, METH_VARARGS, "Numbers of the distinct raw texts at (offset, length), and each one's first span."},
    {"enclose", native_enclose, METH_VARARGS, "The first op up each point's chain that is ok and ends after it."},
    {"merge", native_merge, METH_VARARGS, "Union of intervals sorted by group and start."},
    {"nest", native_nest, METH_VARARGS, "Parent positions and depths of ops sorted by thread, start and end descending."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_native", NULL, -1, methods};

PyMODINIT_FUNC PyInit__native(void) {
    PyObject *m = PyModule_Create(&module);
    /* a float's `a` holds its exact ns (`decimal_ns`): what columnar.py checks before reading it */
    if (m && PyModule_AddIntConstant(m, "EXACT_FLOAT_NS", 1) < 0) { Py_DECREF(m); return NULL; }
    if (m && PyModule_AddIntConstant(m, "PASSES_CATEGORIES", 1) < 0) { Py_DECREF(m); return NULL; }
    if (m && PyModule_AddIntConstant(m, "DROPS_PASSED", 1) < 0) { Py_DECREF(m); return NULL; }
    if (m && PyModule_AddIntConstant(m, "SCANS_BARE", 1) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
