/*
 * select-update's PostgreSQL round trips without the interpreter: pgbench's layout.
 *
 * _pg_event_loop.PostgresFlow._wire_steps in C, over all the connections of one thread:
 * for each statement one write of the bytes libpq would send (prebuilt in Python by
 * _pg_wire), for each answer one read compared with the bytes a success is, poll()
 * between. Python draws the keys (a chunk per connection, in the Python loop's order)
 * and keeps everything else: an answer that is not the success expected stops that
 * connection where its transaction is and goes back to Python, whose _pg_wire reads it,
 * rolls back, retries or gives up exactly as the Python loop; Python then tells the loop
 * how to go on (proceed, retry, skip). Between its returns the loop holds no GIL, so one
 * process's threads each run their connections on a core, as pgbench -j's threads do.
 *
 * Why: at 4 clients on two cores the Python loops reached 0.84-0.92 x pgbench (-M
 * prepared) however their processes and threads were laid out (docs/performance.md);
 * the target is 0.9 at every client count.
 *
 * Optional: agents/setup.py builds it where a C compiler and Python's headers are
 * found; without it the Python loop runs the same transactions.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CHUNK 64           /* keys a connection is given at most at once */
#define READ_SIZE 400      /* _pg_wire.READ_SIZE */
#define MAX_HEAD 256       /* a SELECT's BindComplete and RowDescription */
#define MAX_VALUE 104      /* a value as Bind carries it: 4 bytes of length, < 100 bytes */
#define MAX_CONNECTIONS 4096

/* Why a connection waits for Python (a report's reason), or which answer it awaits. */
enum { DONE, TIME_UP, BEGIN, SELECT, UPDATE, COMMIT };
enum { READY, WAITING, HELD };  /* what a connection is doing */

typedef struct {
    int fd, state, next, retry, reported, reason;
    int keys[CHUNK];
    Py_ssize_t at, end, committed;
    long long micros[CHUNK];  /* committed since the last report; -1 outside the window */
    double began;
    char head[MAX_HEAD], value[MAX_VALUE], answer[READ_SIZE];
    Py_ssize_t head_length, value_length, answer_length;
    int error;  /* errno of a failed write or read (then no answer) */
} connection;

typedef struct {
    const char *data;
    Py_ssize_t length;
} text;

typedef struct {
    PyObject_HEAD
    Py_ssize_t count, key_count, head_count;
    connection *connections;
    struct pollfd *polls;
    int *polled;
    PyObject *statements;  /* keeps every text below alive */
    text begin, commit, began, updated, committed, tail;
    text *selects, *keyed, *update_heads;
    Py_ssize_t *key_lengths;
    double deadline, window_start;  /* CLOCK_MONOTONIC seconds */
} Loop;

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int text_of(PyObject *object, text *into, const char *name)
{
    if (!PyBytes_Check(object)) {
        PyErr_Format(PyExc_TypeError, "statements: %s is not bytes", name);
        return 0;
    }
    into->data = PyBytes_AS_STRING(object);
    into->length = PyBytes_GET_SIZE(object);
    if (into->length == 0 || into->length > READ_SIZE) {
        PyErr_Format(PyExc_ValueError, "statements: %s has %zd bytes", name, into->length);
        return 0;
    }
    return 1;
}

static text *texts_of(PyObject *tuple, Py_ssize_t count, const char *name)
{
    if (!PyTuple_Check(tuple) || PyTuple_GET_SIZE(tuple) != count) {
        PyErr_Format(PyExc_ValueError, "statements: %s is not a tuple of %zd", name, count);
        return NULL;
    }
    text *found = PyMem_Calloc((size_t)count, sizeof(text));
    if (found == NULL)
        return (text *)PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < count; i++)
        if (!text_of(PyTuple_GET_ITEM(tuple, i), &found[i], name)) {
            PyMem_Free(found);
            return NULL;
        }
    return found;
}

static void Loop_dealloc(Loop *self)
{
    PyMem_Free(self->connections);
    PyMem_Free(self->polls);
    PyMem_Free(self->polled);
    PyMem_Free(self->selects);
    PyMem_Free(self->keyed);
    PyMem_Free(self->update_heads);
    PyMem_Free(self->key_lengths);
    Py_XDECREF(self->statements);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

PyDoc_STRVAR(Loop_doc,
"Loop(fds, statements, until, window_from)\n\n"
"The connections on the sockets `fds` (a tuple of ints; libpq opened them, prepared the\n"
"statements, and leaves them idle), each waiting for its first chunk of keys.\n"
"statements: (begin, commit, began, updated, committed, tail, selects, keyed,\n"
"key_lengths, update_heads), the bytes _pg_compiled.statements() makes: the statements\n"
"without parameters, the success answers of BEGIN, UPDATE and COMMIT, a SELECT's tail,\n"
"the SELECT of each key, the UPDATE's Bind in parts (tuples, key_lengths of ints).\n"
"Transactions start while fewer than `until` seconds have passed since the call; one\n"
"committed between window_from and until seconds from it has its latency counted.");

static int Loop_init(Loop *self, PyObject *args, PyObject *kwargs)
{
    PyObject *fds, *statements;
    double until, window_from;
    static char *names[] = {"fds", "statements", "until", "window_from", NULL};

    if (self->statements != NULL) {
        PyErr_SetString(PyExc_TypeError, "Loop: already made");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!dd", names, &PyTuple_Type, &fds,
                                     &PyTuple_Type, &statements, &until, &window_from))
        return -1;
    Py_ssize_t count = PyTuple_GET_SIZE(fds);
    if (count < 1 || count > MAX_CONNECTIONS) {
        PyErr_Format(PyExc_ValueError, "fds: %zd sockets, not 1 to %d", count, MAX_CONNECTIONS);
        return -1;
    }
    if (PyTuple_GET_SIZE(statements) != 10) {
        PyErr_SetString(PyExc_ValueError, "statements: not a tuple of 10");
        return -1;
    }
    static const char *single[] = {"begin", "commit", "began", "updated", "committed", "tail"};
    text *fixed[] = {&self->begin, &self->commit, &self->began, &self->updated,
                     &self->committed, &self->tail};
    for (int i = 0; i < 6; i++)
        if (!text_of(PyTuple_GET_ITEM(statements, i), fixed[i], single[i]))
            return -1;
    PyObject *selects = PyTuple_GET_ITEM(statements, 6);
    PyObject *lengths = PyTuple_GET_ITEM(statements, 8);
    PyObject *heads = PyTuple_GET_ITEM(statements, 9);
    if (!PyTuple_Check(selects) || PyTuple_GET_SIZE(selects) < 1 || !PyTuple_Check(heads)) {
        PyErr_SetString(PyExc_ValueError, "statements: selects or update_heads not a tuple");
        return -1;
    }
    self->key_count = PyTuple_GET_SIZE(selects);
    self->head_count = PyTuple_GET_SIZE(heads);
    if ((self->selects = texts_of(selects, self->key_count, "selects")) == NULL
        || (self->keyed = texts_of(PyTuple_GET_ITEM(statements, 7), self->key_count, "keyed"))
               == NULL
        || (self->update_heads = texts_of(heads, self->head_count, "update_heads")) == NULL)
        return -1;
    if (!PyTuple_Check(lengths) || PyTuple_GET_SIZE(lengths) != self->key_count) {
        PyErr_SetString(PyExc_ValueError, "statements: key_lengths not one per key");
        return -1;
    }
    self->key_lengths = PyMem_Calloc((size_t)self->key_count, sizeof(Py_ssize_t));
    if (self->key_lengths == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < self->key_count; i++) {
        Py_ssize_t length = PyLong_AsSsize_t(PyTuple_GET_ITEM(lengths, i));
        if (length == -1 && PyErr_Occurred())
            return -1;
        /* Every UPDATE has a head: the key's length and the longest value. */
        if (length < 0 || length > self->keyed[i].length
            || length + MAX_VALUE >= self->head_count) {
            PyErr_Format(PyExc_ValueError, "statements: key_lengths[%zd] is %zd", i, length);
            return -1;
        }
        self->key_lengths[i] = length;
    }
    self->connections = PyMem_Calloc((size_t)count, sizeof(connection));
    self->polls = PyMem_Calloc((size_t)count, sizeof(struct pollfd));
    self->polled = PyMem_Calloc((size_t)count, sizeof(int));
    if (self->connections == NULL || self->polls == NULL || self->polled == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        long fd = PyLong_AsLong(PyTuple_GET_ITEM(fds, i));
        if (fd == -1 && PyErr_Occurred())
            return -1;
        if (fd < 0 || fd > 0x7fffffff) {
            PyErr_Format(PyExc_ValueError, "fds: item %zd is %ld", i, fd);
            return -1;
        }
        connection *c = &self->connections[i];
        c->fd = (int)fd;
        c->state = HELD;
        c->reason = DONE;
        c->reported = 1;  /* its first chunk is given without a report */
    }
    self->count = count;
    double called = now();
    self->deadline = called + until;
    self->window_start = called + window_from;
    Py_INCREF(statements);
    self->statements = statements;
    return 0;
}

static void hold(connection *c, int reason)
{
    c->state = HELD;
    c->reason = reason;
    c->reported = 0;
}

/* Sends what `c` sends next (a chunk done or the time up holds it instead). */
static void advance(Loop *self, connection *c)
{
    char update[2 * READ_SIZE + MAX_VALUE]; /* a head and a keyed part, each at most READ_SIZE */
    const char *data;
    Py_ssize_t length;
    int key;

    if (c->next == BEGIN && !c->retry) {
        if (c->at == c->end) {
            hold(c, DONE);
            return;
        }
        double t = now();
        if (t >= self->deadline) { /* a retry runs, as in the Python loop */
            hold(c, TIME_UP);
            return;
        }
        c->began = t;
    }
    key = c->keys[c->at];
    switch (c->next) {
    case BEGIN:
        c->retry = 0;
        data = self->begin.data, length = self->begin.length;
        break;
    case SELECT:
        data = self->selects[key].data, length = self->selects[key].length;
        break;
    case UPDATE: {
        const text *head = &self->update_heads[c->value_length + self->key_lengths[key]];
        const text *keyed = &self->keyed[key];
        memcpy(update, head->data, (size_t)head->length);
        memcpy(update + head->length, c->value, (size_t)c->value_length);
        memcpy(update + head->length + c->value_length, keyed->data, (size_t)keyed->length);
        data = update, length = head->length + c->value_length + keyed->length;
        break;
    }
    default:
        data = self->commit.data, length = self->commit.length;
    }
    ssize_t written = write(c->fd, data, (size_t)length);
    if (written != length) { /* the send buffer is empty between statements: all or nothing */
        c->error = written < 0 ? errno : EIO;
        c->answer_length = 0;
        hold(c, c->next);
        return;
    }
    c->state = WAITING;
}

static int same(const char *data, Py_ssize_t length, const text *expected)
{
    return length == expected->length && memcmp(data, expected->data, (size_t)length) == 0;
}

/* The SELECT's answer as PostgresFlow._wire_steps takes it: the head learned from the
 * first one, one DataRow of one column (a value of 0-99 bytes), SELECT 1's tail. */
static int took_value(Loop *self, connection *c, const char *data, Py_ssize_t length)
{
    Py_ssize_t h = c->head_length, t = self->tail.length;
    if (h == 0 || length < h + 11 + t || memcmp(data, c->head, (size_t)h) != 0
        || memcmp(data + length - t, self->tail.data, (size_t)t) != 0)
        return 0;
    const unsigned char *row = (const unsigned char *)data + h;
    long size = ((long)row[1] << 24) | ((long)row[2] << 16) | ((long)row[3] << 8) | row[4];
    if (row[0] != 'D' || size < 10 || size >= 110 || row[5] != 0 || row[6] != 1
        || 11 + (size - 10) != length - h - t)
        return 0;
    c->value_length = length - h - 7 - t;
    memcpy(c->value, data + h + 7, (size_t)c->value_length);
    return 1;
}

/* `c`'s transaction committed: its latency, and its next key. A report between any two
 * chunks empties micros, so a chunk's commits always fit. */
static void committed(Loop *self, connection *c)
{
    double ended = now();
    if (c->committed < CHUNK)
        c->micros[c->committed++] = ended >= self->window_start && ended <= self->deadline
                                        ? (long long)((ended - c->began) * 1e6) : -1;
    c->at++;
    c->next = BEGIN;
}

/* The answer on `c`'s socket: the next statement if it is the success expected. */
static void answered(Loop *self, connection *c)
{
    char data[READ_SIZE];
    ssize_t length = read(c->fd, data, READ_SIZE);
    if (length < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return; /* not there after all: wait again */
    c->state = READY;
    if (length < 0) {
        c->error = errno;
        c->answer_length = 0;
        hold(c, c->next);
        return;
    }
    int ok = 0;
    switch (c->next) {
    case BEGIN:
        ok = same(data, length, &self->began);
        break;
    case SELECT:
        ok = took_value(self, c, data, length);
        break;
    case UPDATE:
        ok = same(data, length, &self->updated);
        break;
    default:
        ok = same(data, length, &self->committed);
    }
    if (!ok) {
        c->error = 0;
        c->answer_length = length;
        memcpy(c->answer, data, (size_t)length);
        hold(c, c->next);
        return;
    }
    if (c->next == COMMIT) {
        committed(self, c);
    } else {
        c->next++;
    }
    advance(self, c);
}

static PyObject *report(connection *c, Py_ssize_t index)
{
    PyObject *micros = PyList_New(c->committed);
    if (micros == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < c->committed; i++) {
        PyObject *value = PyLong_FromLongLong(c->micros[i]);
        if (value == NULL) {
            Py_DECREF(micros);
            return NULL;
        }
        PyList_SET_ITEM(micros, i, value);
    }
    PyObject *answer = c->reason < BEGIN ? Py_NewRef(Py_None)
                       : c->error ? PyLong_FromLong(c->error)
                       : PyBytes_FromStringAndSize(c->answer, c->answer_length);
    if (answer == NULL) {
        Py_DECREF(micros);
        return NULL;
    }
    c->committed = 0;
    c->reported = 1;
    return Py_BuildValue("(niNN)", index, c->reason, answer, micros);
}

PyDoc_STRVAR(run_doc,
"run() -> [(connection, reason, answer, micros), ...]\n\n"
"Runs every connection that has keys until each waits for Python: the connections\n"
"that began to wait since the last call, by index. reason: DONE (every key of its\n"
"chunk committed), TIME_UP (its next transaction would begin after the time), or the\n"
"statement (BEGIN, SELECT, UPDATE, COMMIT) whose answer was not the success expected:\n"
"answer, the bytes read (one read), or the errno of a failed write or read; else None.\n"
"micros: the latencies of the transactions committed since its last report, in\n"
"microseconds, -1 for one outside the window. Returns once a connection waits and no\n"
"other has an answer ready, so the server is never left idle for Python.");

static PyObject *Loop_run(Loop *self, PyObject *Py_UNUSED(ignored))
{
    Py_ssize_t i;
    int failure = 0;

    if (self->statements == NULL) {
        PyErr_SetString(PyExc_TypeError, "Loop: not made");
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    for (i = 0; i < self->count; i++)
        if (self->connections[i].state == READY)
            advance(self, &self->connections[i]);
    for (;;) {
        int waiting = 0, held = 0;
        for (i = 0; i < self->count; i++) {
            connection *c = &self->connections[i];
            if (c->state == WAITING) {
                self->polls[waiting].fd = c->fd;
                self->polls[waiting].events = POLLIN;
                self->polls[waiting].revents = 0;
                self->polled[waiting++] = (int)i;
            } else if (c->state == HELD && !c->reported) {
                held = 1;
            }
        }
        if (waiting == 0)
            break;
        int ready = poll(self->polls, (nfds_t)waiting, held ? 0 : -1);
        if (ready < 0) {
            if (errno == EINTR)
                continue;
            failure = errno;
            break;
        }
        if (ready == 0)
            break;
        for (int p = 0; p < waiting; p++)
            if (self->polls[p].revents)
                answered(self, &self->connections[self->polled[p]]);
    }
    Py_END_ALLOW_THREADS
    if (failure) {
        errno = failure;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    PyObject *reports = PyList_New(0);
    if (reports == NULL)
        return NULL;
    for (i = 0; i < self->count; i++) {
        connection *c = &self->connections[i];
        if (c->state != HELD || c->reported)
            continue;
        PyObject *one = report(c, i);
        if (one == NULL || PyList_Append(reports, one) < 0) {
            Py_XDECREF(one);
            Py_DECREF(reports);
            return NULL;
        }
        Py_DECREF(one);
    }
    return reports;
}

/* Connection `index` of `args`, if it waits for Python for one of `reasons` (a mask). */
static connection *waiting_for(Loop *self, Py_ssize_t index, int reasons, const char *what)
{
    if (self->statements == NULL) {
        PyErr_SetString(PyExc_TypeError, "Loop: not made");
        return NULL;
    }
    if (index < 0 || index >= self->count) {
        PyErr_Format(PyExc_IndexError, "connection %zd: not 0 to %zd", index, self->count - 1);
        return NULL;
    }
    connection *c = &self->connections[index];
    if (c->state != HELD || !c->reported || !(reasons & (1 << c->reason))) {
        PyErr_Format(PyExc_ValueError, "connection %zd: not waiting for %s", index, what);
        return NULL;
    }
    return c;
}

#define STATEMENTS ((1 << BEGIN) | (1 << SELECT) | (1 << UPDATE) | (1 << COMMIT))

PyDoc_STRVAR(keys_doc,
"keys(connection, keys): its next chunk, key indexes into the statements' selects\n"
"(1 to 64 of them); it must have reported DONE (or not have run yet).");

static PyObject *Loop_keys(Loop *self, PyObject *args)
{
    Py_ssize_t index;
    PyObject *keys;
    if (!PyArg_ParseTuple(args, "nO!", &index, &PyList_Type, &keys))
        return NULL;
    connection *c = waiting_for(self, index, 1 << DONE, "keys");
    if (c == NULL)
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(keys);
    if (count < 1 || count > CHUNK) {
        PyErr_Format(PyExc_ValueError, "keys: %zd, not 1 to %d", count, CHUNK);
        return NULL;
    }
    int chosen[CHUNK];
    for (Py_ssize_t i = 0; i < count; i++) {
        long key = PyLong_AsLong(PyList_GET_ITEM(keys, i));
        if (key == -1 && PyErr_Occurred())
            return NULL;
        if (key < 0 || key >= self->key_count) {
            PyErr_Format(PyExc_ValueError, "keys: item %zd is %ld, not 0 to %zd", i, key,
                         self->key_count - 1);
            return NULL;
        }
        chosen[i] = (int)key;
    }
    memcpy(c->keys, chosen, sizeof(int) * (size_t)count);
    c->at = 0;
    c->end = count;
    c->next = BEGIN;
    c->retry = 0;
    c->state = READY;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(proceed_doc,
"proceed(connection, value=b'', head=b''): the answer it reported was a success after\n"
"all (read whole by _pg_wire): it goes on with the next statement. After a SELECT, value\n"
"is the value read as Bind carries it, head the answer's head (BindComplete and\n"
"RowDescription), which its next SELECTs' answers are compared with.");

static PyObject *Loop_proceed(Loop *self, PyObject *args, PyObject *kwargs)
{
    Py_ssize_t index;
    const char *value = "", *head = "";
    Py_ssize_t value_length = 0, head_length = 0;
    static char *names[] = {"connection", "value", "head", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "n|y#y#", names, &index, &value,
                                     &value_length, &head, &head_length))
        return NULL;
    connection *c = waiting_for(self, index, STATEMENTS, "proceed");
    if (c == NULL)
        return NULL;
    if (c->error) {
        PyErr_Format(PyExc_ValueError, "connection %zd: its socket failed", index);
        return NULL;
    }
    if (c->reason == SELECT) {
        if (value_length < 4 || value_length > MAX_VALUE || head_length < 1
            || head_length > MAX_HEAD) {
            PyErr_Format(PyExc_ValueError, "value of %zd bytes or head of %zd bytes",
                         value_length, head_length);
            return NULL;
        }
        memcpy(c->value, value, (size_t)value_length);
        c->value_length = value_length;
        memcpy(c->head, head, (size_t)head_length);
        c->head_length = head_length;
    }
    c->next = c->reason;
    c->state = READY;
    if (c->reason == COMMIT) {
        committed(self, c);
    } else {
        c->next++;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(retry_doc,
"retry(connection): Python rolled its transaction back; it runs the same key again,\n"
"whatever the time, its latency counted from the first attempt.");

static PyObject *Loop_retry(Loop *self, PyObject *args)
{
    Py_ssize_t index;
    if (!PyArg_ParseTuple(args, "n", &index))
        return NULL;
    connection *c = waiting_for(self, index, STATEMENTS, "retry");
    if (c == NULL)
        return NULL;
    c->next = BEGIN;
    c->retry = 1;
    c->state = READY;
    Py_RETURN_NONE;
}

PyDoc_STRVAR(skip_doc,
"skip(connection): Python rolled its transaction back and gave its key up: it goes on\n"
"with the next key of its chunk.");

static PyObject *Loop_skip(Loop *self, PyObject *args)
{
    Py_ssize_t index;
    if (!PyArg_ParseTuple(args, "n", &index))
        return NULL;
    connection *c = waiting_for(self, index, STATEMENTS, "skip");
    if (c == NULL)
        return NULL;
    c->at++;
    c->next = BEGIN;
    c->retry = 0;
    c->state = READY;
    Py_RETURN_NONE;
}

static PyMethodDef Loop_methods[] = {
    {"run", (PyCFunction)Loop_run, METH_NOARGS, run_doc},
    {"keys", (PyCFunction)Loop_keys, METH_VARARGS, keys_doc},
    {"proceed", (PyCFunction)(void (*)(void))Loop_proceed, METH_VARARGS | METH_KEYWORDS,
     proceed_doc},
    {"retry", (PyCFunction)Loop_retry, METH_VARARGS, retry_doc},
    {"skip", (PyCFunction)Loop_skip, METH_VARARGS, skip_doc},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject LoopType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "benchhub_agent.benchmarks._pg_loop.Loop",
    .tp_basicsize = sizeof(Loop),
    .tp_dealloc = (destructor)Loop_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = Loop_doc,
    .tp_methods = Loop_methods,
    .tp_init = (initproc)Loop_init,
    .tp_new = PyType_GenericNew,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_pg_loop",
    "select-update's PostgreSQL round trips in C (see the source's opening comment).", -1,
    NULL,
};

PyMODINIT_FUNC PyInit__pg_loop(void)
{
    if (PyType_Ready(&LoopType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Loop", (PyObject *)&LoopType) < 0
        || PyModule_AddIntConstant(m, "DONE", DONE) < 0
        || PyModule_AddIntConstant(m, "TIME_UP", TIME_UP) < 0
        || PyModule_AddIntConstant(m, "BEGIN", BEGIN) < 0
        || PyModule_AddIntConstant(m, "SELECT", SELECT) < 0
        || PyModule_AddIntConstant(m, "UPDATE", UPDATE) < 0
        || PyModule_AddIntConstant(m, "COMMIT", COMMIT) < 0
        || PyModule_AddIntConstant(m, "CHUNK", CHUNK) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
