/*
 * select-update's transactions on Firebird, one after another, without the interpreter.
 *
 * Each transaction is the four calls of libfbclient's ISC API that the Python loop of
 * _select_update_clients.FirebirdClient makes (start, the SELECT ... WITH LOCK as a
 * singleton execute, the UPDATE, commit), on the statements and descriptors that
 * firebird_isc prepared: this module receives their addresses, and the functions' own,
 * so it needs neither ibase.h nor linking with the library. Python drew the keys and
 * keeps everything else: retries, errors, counting, stopping. Between its calls the
 * loop holds no GIL.
 *
 * Why: at the client count where Firebird's throughput peaks, the agent's CPU for this
 * load was 0.26-0.30 of the server's through ctypes, against 0.20-0.23 for the same
 * calls in C (benchmarks/firebird_floor.c); the target is 0.25 (docs/performance.md).
 *
 * Optional: agents/setup.py builds it where a C compiler and Python's headers are
 * found; without it the Python loop runs the same transactions.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <time.h>

typedef intptr_t isc_status;    /* ISC_STATUS since Firebird 3 */
typedef unsigned int isc_handle; /* FB_API_HANDLE */
typedef isc_status (*start_multiple_fn)(isc_status *, isc_handle *, short, void *);
typedef isc_status (*execute2_fn)(isc_status *, isc_handle *, isc_handle *, unsigned short,
                                  void *, void *);
typedef isc_status (*commit_fn)(isc_status *, isc_handle *);

enum { KEY, READ, WRITTEN };  /* slots of the values array (FirebirdClient's) */
#define DIALECT 3
#define ADDRESSES 12 /* what FirebirdClient.loop_addresses() gives, in order */

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* An array of `format` items (array.array's typecode), at least `end` of them. */
static int buffer_of(PyObject *object, Py_buffer *buffer, int flags, const char *format,
                     Py_ssize_t itemsize, Py_ssize_t end, const char *name)
{
    if (PyObject_GetBuffer(object, buffer, flags | PyBUF_FORMAT | PyBUF_C_CONTIGUOUS) < 0)
        return 0;
    if (buffer->itemsize != itemsize || buffer->format == NULL
        || strcmp(buffer->format, format) != 0) {
        PyErr_Format(PyExc_TypeError, "%s: not an array of '%s' items", name, format);
    } else if (buffer->len / itemsize < end) {
        PyErr_Format(PyExc_ValueError, "%s: %zd items, fewer than %zd", name,
                     buffer->len / itemsize, end);
    } else {
        return 1;
    }
    PyBuffer_Release(buffer);
    return 0;
}

PyDoc_STRVAR(run_doc,
"run(addresses, keys, micros, at, end, began_ago, until, window_from) -> (ran, failed)\n\n"
"Runs keys[at:end] (array 'i'), a transaction each, while fewer than `until` seconds\n"
"have passed. addresses: the 12 integers FirebirdClient.loop_addresses() gives.\n"
"micros[i] (array 'q'): the latency in microseconds of key i's committed transaction\n"
"if it ended between window_from and until seconds from the call, else -1; the first\n"
"key's transaction began began_ago seconds before the call (a retry's first attempt).\n"
"ran: the index of the first key not committed; failed: whether its transaction failed\n"
"(the library's error in the status vector, the transaction open), else the time was up\n"
"or every key ran; micros[ran] of a failed one: when it began, in microseconds from the\n"
"call's start (negative for a retry). The time is not checked before a retry (at's key,\n"
"began_ago > 0). Latencies are timed around the library's calls alone, without the\n"
"waits for the interpreter's lock that a Python loop's include.");

static PyObject *run(PyObject *Py_UNUSED(self), PyObject *args)
{
    PyObject *addresses, *keys_object, *micros_object;
    Py_buffer keys = {0}, micros = {0};
    Py_ssize_t at, end, i;
    double began_ago, until, window_from;
    void *address[ADDRESSES];
    PyObject *result = NULL;

    if (!PyArg_ParseTuple(args, "O!OOnnddd", &PyTuple_Type, &addresses, &keys_object, &micros_object,
                          &at, &end, &began_ago, &until, &window_from))
        return NULL;
    if (PyTuple_GET_SIZE(addresses) != ADDRESSES) {
        PyErr_Format(PyExc_ValueError, "addresses: %d integers", ADDRESSES);
        goto done;
    }
    for (i = 0; i < ADDRESSES; i++) {
        address[i] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(addresses, i));
        if (PyErr_Occurred())
            goto done;
        if (address[i] == NULL) {
            PyErr_Format(PyExc_ValueError, "addresses: item %zd is 0", i);
            goto done;
        }
    }
    if (at < 0 || at > end) {
        PyErr_Format(PyExc_ValueError, "at %zd, end %zd: not 0 <= at <= end", at, end);
        goto done;
    }
    if (!buffer_of(keys_object, &keys, PyBUF_SIMPLE, "i", 4, end, "keys")
        || !buffer_of(micros_object, &micros, PyBUF_WRITABLE, "q", 8, end, "micros"))
        goto done;

    start_multiple_fn begin = (start_multiple_fn)address[0];
    execute2_fn execute2 = (execute2_fn)address[1];
    commit_fn commit = (commit_fn)address[2];
    isc_status *status = address[3];
    isc_handle *transaction = address[4];
    void *teb = address[5];
    isc_handle *select = address[6];
    void *select_in = address[7], *select_out = address[8];
    isc_handle *update = address[9];
    void *update_in = address[10];
    int *values = address[11];
    const int *key = keys.buf;
    long long *latency = micros.buf;
    int failed = 0;

    Py_BEGIN_ALLOW_THREADS
    double called = now();
    for (i = at; i < end; i++) {
        double began = now();
        int retried = i == at && began_ago > 0;
        if (began - called >= until && !retried) /* a retry runs, as in the Python loop */
            break;
        if (retried)
            began -= began_ago;
        values[KEY] = key[i];
        if (begin(status, transaction, 1, teb)
            || execute2(status, transaction, select, DIALECT, select_in, select_out)) {
            failed = 1;
        } else {
            values[WRITTEN] = values[READ] + 1;
            failed = execute2(status, transaction, update, DIALECT, update_in, NULL)
                     || commit(status, transaction);
        }
        double ended = now();
        if (failed) { /* when it began, from this call's start: a retry's latency counts from it */
            latency[i] = (long long)((began - called) * 1e6);
            break;
        }
        double since = ended - called;
        latency[i] = since >= window_from && since <= until
                         ? (long long)((ended - began) * 1e6) : -1;
    }
    Py_END_ALLOW_THREADS
    result = Py_BuildValue("(nO)", i, failed ? Py_True : Py_False);
done:
    if (keys.obj != NULL)
        PyBuffer_Release(&keys);
    if (micros.obj != NULL)
        PyBuffer_Release(&micros);
    return result;
}

static PyMethodDef methods[] = {
    {"run", run, METH_VARARGS, run_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_firebird_loop",
    "select-update's Firebird transactions in C (see the source's opening comment).", -1,
    methods,
};

PyMODINIT_FUNC PyInit__firebird_loop(void)
{
    return PyModule_Create(&module);
}
