/* pyrt: CPython inside the worker, and the _sandpit module it sees.
 *
 * What is hard here:
 * - Signals. The interpreter is initialised with install_signal_handlers, so
 *   that SIGINT becomes KeyboardInterrupt in the cell (a C handler installed
 *   first would keep Python from installing its own and SIGINT would kill the
 *   worker), and SIGPIPE/SIGXFSZ are ignored so a write past a limit is an
 *   OSError rather than a dead process.
 * - The GIL. Every call of _sandpit that may wait (the link, the output pump)
 *   releases it, so threads started by a cell keep running and printing while
 *   the main thread waits for the next request.
 * - Finding the runtime. kernel/python/sandpit/ is compiled into the binary
 *   (embedded.h); a small importer serves it, so the worker needs no files of
 *   its own on disk and a sandboxed worker cannot be fed a different one.
 * - Finding the interpreter. The binary is not python3, so the program name
 *   is set to Debian's /usr/bin/python3: sys.prefix is then /usr and the
 *   interpreter sees the same dist-packages as the system's python3. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kernel/worker/pyrt.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kernel/util/base64.h"
#include "kernel/embedded.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/worker/arenas.h"
#include "kernel/worker/blocks.h"
#include "kernel/worker/pump.h"
#include "kernel/worker/uplink.h"

#define PY_PREFIX "kernel/python/"

static char py_version[32];

const char *pyrt_version(void)
{
    return py_version;
}

/* --- the _sandpit module ------------------------------------------------------- */

/* send(json: bytes | str, buffers: sequence of bytes-like or str = ()) -> None.
 * A str buffer goes as its UTF-8, without a copy when it is ASCII (a chart's
 * base64): the raw text of an iopub frame (frames.h). */
static PyObject *sp_send(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer json;
    PyObject *bufs = NULL;
    if (!PyArg_ParseTuple(args, "s*|O:send", &json, &bufs))
        return NULL;
    struct wire_frame frames[LINK_MAX_BUFFERS];
    Py_buffer views[LINK_MAX_BUFFERS];
    bool viewed[LINK_MAX_BUFFERS] = {0};
    Py_ssize_t n = 0;
    PyObject *seq = NULL;
    PyObject *result = NULL;
    if (bufs && bufs != Py_None) {
        seq = PySequence_Fast(bufs, "buffers must be a sequence");
        if (!seq)
            goto out;
        if (PySequence_Fast_GET_SIZE(seq) > LINK_MAX_BUFFERS) {
            PyErr_SetString(PyExc_ValueError, "too many buffers in one message");
            goto out;
        }
        for (; n < PySequence_Fast_GET_SIZE(seq); n++) {
            PyObject *item = PySequence_Fast_GET_ITEM(seq, n);
            if (PyUnicode_Check(item)) {
                Py_ssize_t len;
                const char *utf8 = PyUnicode_AsUTF8AndSize(item, &len);
                if (!utf8)
                    goto out;
                frames[n].data = (void *)utf8;
                frames[n].len = (size_t)len;
                continue;
            }
            if (PyObject_GetBuffer(item, &views[n], PyBUF_CONTIG_RO) < 0)
                goto out;
            viewed[n] = true;
            frames[n].data = views[n].buf;
            frames[n].len = (size_t)views[n].len;
        }
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
        rc = uplink_send(json.buf, (size_t)json.len, frames, (size_t)n);
    Py_END_ALLOW_THREADS
    if (rc == -EMSGSIZE) {
        size_t len = (size_t)json.len;
        for (Py_ssize_t i = 0; i < n; i++)
            len += frames[i].len;
        PyErr_Format(PyExc_ValueError,
                     "sandpit: this output is %zu bytes, more than the %zu bytes a "
                     "message from the code may have in this kernel (set by "
                     "--max-output and --max-image-output); it was not sent",
                     len, uplink_frame_limit());
        goto out;
    }
    if (rc) {
        errno = -rc;
        PyErr_SetFromErrno(PyExc_OSError);
        goto out;
    }
    result = Py_NewRef(Py_None);
out:
    for (Py_ssize_t i = 0; i < n; i++)
        if (viewed[i])
            PyBuffer_Release(&views[i]);
    Py_XDECREF(seq);
    PyBuffer_Release(&json);
    return result;
}

/* Waits for a frame with uplink_recv (in_turn false) or uplink_recv_in_turn,
 * without the GIL: (bytes, list[bytes]), or None when block is false and
 * nothing is waiting. Raises EOFError when the supervisor has gone, and
 * whatever a signal handler raises (KeyboardInterrupt) when a signal arrives
 * while waiting. */
static PyObject *recv_frame(bool in_turn, bool block)
{
    struct link_frame f;
    int rc;
    for (;;) {
        Py_BEGIN_ALLOW_THREADS
            rc = in_turn ? uplink_recv_in_turn(&f) : uplink_recv(&f, block);
        Py_END_ALLOW_THREADS
        if (rc != -EINTR)
            break;
        if (PyErr_CheckSignals() < 0)
            return NULL;
    }
    if (rc == 0)
        Py_RETURN_NONE;
    if (rc == -EPIPE) {
        PyErr_SetString(PyExc_EOFError, "the supervisor closed the link");
        return NULL;
    }
    if (rc < 0) {
        errno = -rc;
        return PyErr_SetFromErrno(PyExc_OSError);
    }
    PyObject *bufs = PyList_New((Py_ssize_t)f.nbuffers);
    for (size_t i = 0; bufs && i < f.nbuffers; i++) {
        PyObject *b =
            PyBytes_FromStringAndSize(f.buffers[i].data, (Py_ssize_t)f.buffers[i].len);
        if (!b) {
            Py_CLEAR(bufs);
            break;
        }
        PyList_SET_ITEM(bufs, (Py_ssize_t)i, b);
    }
    PyObject *r =
        bufs ? Py_BuildValue("(y#N)", f.json, (Py_ssize_t)f.json_len, bufs) : NULL;
    link_frame_release(&f);
    return r;
}

/* recv(block: bool = True) -> (bytes, list[bytes]) | None: the main thread's
 * read, between the main shell's cells. */
static PyObject *sp_recv(PyObject *self, PyObject *args)
{
    (void)self;
    int block = 1;
    if (!PyArg_ParseTuple(args, "|p:recv", &block))
        return NULL;
    return recv_frame(false, block);
}

/* recv_in_turn() -> (bytes, list[bytes]): the reader thread's read, while a
 * main-shell cell runs (it waits for its turn). */
static PyObject *sp_recv_in_turn(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    return recv_frame(true, true);
}

/* reader_turn(on: bool) -> None: on before a main-shell cell, off after it
 * (returns once the reader thread has routed what it read). */
static PyObject *sp_reader_turn(PyObject *self, PyObject *args)
{
    (void)self;
    int on;
    if (!PyArg_ParseTuple(args, "p:reader_turn", &on))
        return NULL;
    if (on) {
        uplink_give_turn();
    } else {
        Py_BEGIN_ALLOW_THREADS
            uplink_take_turn();
        Py_END_ALLOW_THREADS
    }
    Py_RETURN_NONE;
}

/* Characters of a non-ASCII string encoded at a time: its UTF-8 is made a
 * slice at a time, never whole, so that printing a string of a gigabyte needs
 * no second gigabyte (past the output cap the pump only counts the bytes). */
#define WRITE_SLICE_CHARS (64 << 10)

static int write_text(int stream, PyObject *text, const char *tag)
{
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    if (PyUnicode_IS_COMPACT_ASCII(text)) { /* its characters are its UTF-8 */
        const char *utf8 = PyUnicode_AsUTF8AndSize(text, &n);
        if (!utf8)
            return -1;
        pump_write(stream, utf8, (size_t)n, tag);
        return 0;
    }
    for (Py_ssize_t i = 0; i < n; i += WRITE_SLICE_CHARS) {
        Py_ssize_t end = n - i > WRITE_SLICE_CHARS ? i + WRITE_SLICE_CHARS : n;
        PyObject *part = PyUnicode_Substring(text, i, end);
        /* "replace": lone surrogates become '?', and the rest is written */
        PyObject *b = part ? PyUnicode_AsEncodedString(part, "utf-8", "replace") : NULL;
        Py_XDECREF(part);
        if (!b)
            return -1;
        pump_write(stream, PyBytes_AS_STRING(b), (size_t)PyBytes_GET_SIZE(b), tag);
        Py_DECREF(b);
    }
    return 0;
}

/* write(stream: int, text: str | bytes-like, tag: str | None = None) -> int:
 * output for stdout (1) or stderr (2), belonging to the request whose msg_id
 * is tag; returns the length written, as TextIOBase.write does. */
static PyObject *sp_write(PyObject *self, PyObject *args)
{
    (void)self;
    int stream;
    PyObject *obj;
    const char *tag = NULL;
    if (!PyArg_ParseTuple(args, "iO|z:write", &stream, &obj, &tag))
        return NULL;
    if (PyUnicode_Check(obj)) {
        if (write_text(stream, obj, tag) < 0)
            return NULL;
        return PyLong_FromSsize_t(PyUnicode_GET_LENGTH(obj));
    }
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_CONTIG_RO) < 0)
        return NULL;
    pump_write(stream, view.buf, (size_t)view.len, tag);
    Py_ssize_t n = view.len;
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(n);
}

/* What sys.stdout.write and sys.stderr.write do in C (streams.py): the two
 * context variables that say which request a write belongs to and whether
 * something captures it, and the Python function that takes the write when
 * something does. Set once by stream_setup(). */
static PyObject *stream_capture, *stream_current, *stream_fallback, *stream_msg_id;

/* stream_setup(capture, current, fallback) -> None. */
static PyObject *sp_stream_setup(PyObject *self, PyObject *args)
{
    (void)self;
    PyObject *capture, *current, *fallback;
    if (!PyArg_ParseTuple(args, "O!O!O:stream_setup", &PyContextVar_Type, &capture,
                          &PyContextVar_Type, &current, &fallback))
        return NULL;
    if (!stream_msg_id && !(stream_msg_id = PyUnicode_InternFromString("msg_id")))
        return NULL;
    Py_XSETREF(stream_capture, Py_NewRef(capture));
    Py_XSETREF(stream_current, Py_NewRef(current));
    Py_XSETREF(stream_fallback, Py_NewRef(fallback));
    Py_RETURN_NONE;
}

/* A write of text to stdout (1) or stderr (2), as OutStream.write does it: to
 * the pump, for the request of this context, unless something captures this
 * context's output (then the fallback takes it). print() calls it twice per
 * line: a method of Python's would be most of the cost of printing. */
static PyObject *stream_write(int fd, PyObject *text)
{
    if (!PyUnicode_Check(text))
        return PyErr_Format(PyExc_TypeError, "write() argument must be str, not %.200s",
                            Py_TYPE(text)->tp_name);
    if (!stream_capture)
        return PyErr_Format(PyExc_RuntimeError, "the streams are not set up");
    PyObject *capture = NULL, *req = NULL;
    if (PyContextVar_Get(stream_capture, NULL, &capture) < 0)
        return NULL;
    if (capture && capture != Py_None) {
        Py_DECREF(capture);
        return PyObject_CallFunction(stream_fallback, "iO", fd, text);
    }
    Py_XDECREF(capture);
    if (PyContextVar_Get(stream_current, NULL, &req) < 0)
        return NULL;
    PyObject *id = NULL;
    const char *tag = NULL;
    if (req && req != Py_None) {
        id = PyObject_GetAttr(req, stream_msg_id);
        tag = id && PyUnicode_Check(id) ? PyUnicode_AsUTF8(id) : NULL;
        if (!tag) {
            Py_XDECREF(id);
            Py_DECREF(req);
            return NULL;
        }
    }
    int rc = write_text(fd, text, tag);
    Py_XDECREF(id);
    Py_XDECREF(req);
    return rc < 0 ? NULL : PyLong_FromSsize_t(PyUnicode_GET_LENGTH(text));
}

static PyObject *sp_stdout_write(PyObject *self, PyObject *text)
{
    (void)self;
    return stream_write(1, text);
}

static PyObject *sp_stderr_write(PyObject *self, PyObject *text)
{
    (void)self;
    return stream_write(2, text);
}

/* set_default_tag(tag: str | None) -> None: the request that output from C code
 * belongs to (the main shell's). */
static PyObject *sp_set_default_tag(PyObject *self, PyObject *args)
{
    (void)self;
    const char *tag = NULL;
    if (!PyArg_ParseTuple(args, "z:set_default_tag", &tag))
        return NULL;
    pump_set_default_tag(tag);
    Py_RETURN_NONE;
}

/* flush() -> None: sends what fds 1 and 2 hold, before anything else goes out. */
static PyObject *sp_flush(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    Py_BEGIN_ALLOW_THREADS
        pump_flush();
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* output_begin(tag: str | None, max_bytes: int) -> None: from now, the output of
 * the request whose msg_id is tag counts against a cap of max_bytes (0: none). */
static PyObject *sp_output_begin(PyObject *self, PyObject *args)
{
    (void)self;
    const char *tag = NULL;
    unsigned long max = 0;
    if (!PyArg_ParseTuple(args, "zk:output_begin", &tag, &max))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
        pump_begin(tag, max);
    Py_END_ALLOW_THREADS
    Py_RETURN_NONE;
}

/* output_end(tag: str | None) -> int: sends the request's pending output and
 * returns how many bytes of it were dropped past its cap. */
static PyObject *sp_output_end(PyObject *self, PyObject *args)
{
    (void)self;
    const char *tag = NULL;
    if (!PyArg_ParseTuple(args, "z:output_end", &tag))
        return NULL;
    unsigned long dropped;
    Py_BEGIN_ALLOW_THREADS
        dropped = pump_end(tag);
    Py_END_ALLOW_THREADS
    return PyLong_FromUnsignedLong(dropped);
}

/* log(level: int, text: str) -> None: a line in the kernel's log (0 error .. 3 debug). */
static PyObject *sp_log(PyObject *self, PyObject *args)
{
    (void)self;
    int level;
    const char *text;
    if (!PyArg_ParseTuple(args, "is:log", &level, &text))
        return NULL;
    if (level < LOG_ERROR)
        level = LOG_ERROR;
    if (level > LOG_DEBUG)
        level = LOG_DEBUG;
    log_msg((enum log_level)level, "%s", text);
    Py_RETURN_NONE;
}

bool pyrt_bytecode_fits(const unsigned char *data, size_t len)
{
    long magic = PyImport_GetMagicNumber(); /* little-endian, as in a .pyc */
    if (len < 4 || magic == -1) {
        PyErr_Clear();
        return false;
    }
    for (int i = 0; i < 4; i++)
        if (data[i] != (unsigned char)((unsigned long)magic >> (8 * i)))
            return false;
    return true;
}

/* A read-only view of static data that lives as long as the process: the
 * runtime's sources and bytecode stay in the binary's pages, shared by every
 * worker, rather than being copied into each. New reference. */
static PyObject *static_view(const unsigned char *data, size_t len)
{
    return PyMemoryView_FromMemory((char *)data, (Py_ssize_t)len, PyBUF_READ);
}

/* sources() -> dict[str, tuple[memoryview, bool, memoryview | None]]: the
 * embedded runtime by module name: its source (UTF-8), whether it is a package,
 * and its bytecode (marshalled) when it was compiled for this interpreter. */
static PyObject *sp_sources(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    PyObject *d = PyDict_New();
    size_t plen = strlen(PY_PREFIX);
    for (const struct embedded_file *f = embedded_runtime; d && f->path; f++) {
        size_t n = strlen(f->path);
        if (strncmp(f->path, PY_PREFIX, plen) != 0 || n < plen + 3 ||
            strcmp(f->path + n - 3, ".py") != 0)
            continue;
        char name[256], pyc_path[512];
        snprintf(name, sizeof name, "%.*s", (int)(n - plen - 3), f->path + plen);
        for (char *p = name; *p; p++)
            if (*p == '/')
                *p = '.';
        int is_pkg = 0;
        size_t nl = strlen(name);
        if (nl > 9 && strcmp(name + nl - 9, ".__init__") == 0) {
            name[nl - 9] = 0;
            is_pkg = 1;
        }
        snprintf(pyc_path, sizeof pyc_path, "%sc", f->path);
        const struct embedded_file *pyc = embedded_runtime_find(pyc_path);
        PyObject *code = pyc && pyrt_bytecode_fits(pyc->data, pyc->len)
                             ? static_view(pyc->data + 4, pyc->len - 4)
                             : Py_NewRef(Py_None);
        PyObject *source = static_view(f->data, f->len);
        PyObject *v = code && source ? Py_BuildValue("(OOO)", source,
                                                     is_pkg ? Py_True : Py_False, code)
                                     : NULL;
        if (!v || PyDict_SetItemString(d, name, v) < 0)
            Py_CLEAR(d);
        Py_XDECREF(v);
        Py_XDECREF(code);
        Py_XDECREF(source);
    }
    return d;
}

/* b64encode(data: bytes-like) -> str. The base64 of data, without newlines,
 * written straight into an ASCII str: binascii makes bytes, which must then
 * be decoded into a second copy, and it encodes a third as fast. */
static PyObject *sp_b64encode(PyObject *self, PyObject *arg)
{
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    PyObject *text = NULL;
    if ((size_t)view.len > (size_t)PY_SSIZE_T_MAX / 4 * 3 - 3)
        PyErr_NoMemory();
    else if ((text =
                  PyUnicode_New((Py_ssize_t)base64_encoded_len((size_t)view.len), 127)))
        base64_encode_into(view.buf, (size_t)view.len,
                           (char *)PyUnicode_1BYTE_DATA(text));
    PyBuffer_Release(&view);
    return text;
}

/* The embedded runtime's files, once a module of it is imported, are not the
 * worker's to hold: their pages (some 250 kB of bytecode read by the import at
 * start, of 850 kB with the sources, and the neighbours that each page fault
 * maps with the page read) go back after each import from them, at start and
 * when a cell first needs a module imported lazily, and what a later import
 * needs of them is read again, from the page cache. They are never written,
 * so nothing they hold can be lost, and a thread reading them meanwhile reads
 * the same bytes again. */
static void drop_embedded_pages(void)
{
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (const struct embedded_file *f = embedded_runtime; f->path; f++) {
        if ((uintptr_t)f->data < lo)
            lo = (uintptr_t)f->data;
        if ((uintptr_t)f->data + f->len + 1 > hi)
            hi = (uintptr_t)f->data + f->len + 1;
    }
    uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    lo = (lo + page - 1) & ~(page - 1);
    hi &= ~(page - 1);
    if (hi > lo)
        madvise((void *)lo, hi - lo, MADV_DONTNEED);
}

/* release_sources(): the embedded runtime's pages go back (above); the
 * importer calls it when an import from them has ended. */
static PyObject *sp_release_sources(PyObject *self, PyObject *args)
{
    (void)self;
    (void)args;
    drop_embedded_pages();
    Py_RETURN_NONE;
}

/* b2a_base64(data: bytes-like, *, newline=True) -> bytes: binascii.b2a_base64
 * with this encoder, three times as fast. IPython's Image encodes with it
 * (sandpit.import_hooks gives it IPython.core.display). */
static PyObject *sp_b2a_base64(PyObject *self, PyObject *args, PyObject *kwargs)
{
    (void)self;
    static char *keywords[] = {"", "newline", NULL};
    Py_buffer view;
    int newline = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "y*|$p:b2a_base64", keywords, &view,
                                     &newline))
        return NULL;
    PyObject *out = NULL;
    if ((size_t)view.len > (size_t)PY_SSIZE_T_MAX / 4 * 3 - 4)
        PyErr_NoMemory();
    else {
        size_t n = base64_encoded_len((size_t)view.len);
        if ((out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n + (newline ? 1 : 0)))) {
            base64_encode_into(view.buf, (size_t)view.len, PyBytes_AS_STRING(out));
            if (newline)
                PyBytes_AS_STRING(out)[n] = '\n';
        }
    }
    PyBuffer_Release(&view);
    return out;
}

static PyMethodDef sp_methods[] = {
    {"b64encode", sp_b64encode, METH_O, "The base64 of a bytes-like object, as str."},
    {"b2a_base64", (PyCFunction)(void (*)(void))sp_b2a_base64,
     METH_VARARGS | METH_KEYWORDS, "binascii.b2a_base64, faster."},
    {"send", sp_send, METH_VARARGS, "Send one frame to the supervisor."},
    {"recv", sp_recv, METH_VARARGS, "Receive the next frame from the supervisor."},
    {"recv_in_turn", sp_recv_in_turn, METH_NOARGS, "The reader thread's receive."},
    {"reader_turn", sp_reader_turn, METH_VARARGS, "Give or take the reader's turn."},
    {"write", sp_write, METH_VARARGS, "Write output to stdout (1) or stderr (2)."},
    {"set_default_tag", sp_set_default_tag, METH_VARARGS, "The request C output is for."},
    {"stream_setup", sp_stream_setup, METH_VARARGS, "What the streams' writes look at."},
    {"stdout_write", sp_stdout_write, METH_O, "sys.stdout.write, in C."},
    {"stderr_write", sp_stderr_write, METH_O, "sys.stderr.write, in C."},
    {"flush", sp_flush, METH_NOARGS, "Send the output written to fds 1 and 2 so far."},
    {"output_begin", sp_output_begin, METH_VARARGS, "Count a request's output."},
    {"output_end", sp_output_end, METH_VARARGS, "Bytes a request dropped past its cap."},
    {"log", sp_log, METH_VARARGS, "Write a line to the kernel's log."},
    {"sources", sp_sources, METH_NOARGS, "The embedded runtime's sources."},
    {"release_sources", sp_release_sources, METH_NOARGS,
     "Give back the pages of the embedded runtime read so far."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef sp_module = {
    PyModuleDef_HEAD_INIT,
    "_sandpit",
    "The worker's link to the sandpit supervisor.",
    -1,
    sp_methods,
    NULL,
    NULL,
    NULL,
    NULL,
};

static PyObject *sp_init(void)
{
    return PyModule_Create(&sp_module);
}

/* --- start-up ------------------------------------------------------------------- */

/* The importer of the embedded runtime, first on sys.meta_path: a finder
 * that makes a plain ModuleSpec and a loader with create_module and
 * exec_module, and nothing of importlib.abc (whose import pulls in
 * importlib.resources, pathlib and tempfile: a third of the worker's start).
 * A module runs from the bytecode compiled at build time when it suits this
 * interpreter, else from its source compiled here. Its filename is
 * "<sandpit>/name.py", so tracebacks say where it is, and get_source gives
 * linecache and inspect its lines. */
static const char bootstrap[] =
    "import sys, marshal, _sandpit\n"
    "from importlib.machinery import ModuleSpec\n"
    "class _EmbeddedImporter:\n"
    "    modules = _sandpit.sources()\n"
    "    depth = 0\n"
    "    def origin(self, name):\n"
    "        return '<sandpit>/' + name.replace('.', '/') + '.py'\n"
    "    def find_spec(self, name, path=None, target=None):\n"
    "        entry = self.modules.get(name)\n"
    "        if entry is None: return None\n"
    "        return ModuleSpec(name, self, origin=self.origin(name), "
    "is_package=entry[1])\n"
    "    def create_module(self, spec): return None\n"
    "    def exec_module(self, module):\n"
    "        module.__file__ = module.__spec__.origin\n"
    "        self.depth += 1\n"
    "        try: exec(self.get_code(module.__name__), module.__dict__)\n"
    "        finally:\n"
    "            self.depth -= 1\n"
    "            if not self.depth: _sandpit.release_sources()\n"
    "    def get_code(self, name):\n"
    "        source, is_package, code = self.modules[name]\n"
    "        if code is not None: return marshal.loads(code)\n"
    "        return compile(bytes(source), self.origin(name), 'exec', "
    "dont_inherit=True)\n"
    "    def get_source(self, name): return bytes(self.modules[name][0]).decode()\n"
    "    def is_package(self, name): return self.modules[name][1]\n"
    "sys.meta_path.insert(0, _EmbeddedImporter())\n";

static void fmt_exception(char *err, size_t errlen, const char *what)
{
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    PyErr_NormalizeException(&type, &value, &tb);
    PyObject *s = value ? PyObject_Str(value) : NULL;
    const char *text = s ? PyUnicode_AsUTF8(s) : NULL;
    snprintf(err, errlen, "%s: %s: %s", what,
             type ? ((PyTypeObject *)type)->tp_name : "?", text ? text : "?");
    Py_XDECREF(s);
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(tb);
    PyErr_Clear();
}

/* --- large blocks ------------------------------------------------------------- */

/* Python's allocator for the blocks it does not pool (over 512 bytes),
 * wrapped: a new block of BLOCKS_FROM bytes or more is one of blocks.h's
 * (mapped at once, kept for reuse when freed), and an allocation that fails
 * is tried again once the blocks kept have been given back. Zeroed blocks
 * stay glibc's (blocks.h says why), and so does a block glibc made, however
 * it is resized. */
static PyMemAllocatorEx raw_allocator;

static void *raw_malloc(void *ctx, size_t size)
{
    (void)ctx;
    void *p = size >= BLOCKS_FROM ? blocks_alloc(size) : NULL;
    if (!p)
        p = raw_allocator.malloc(raw_allocator.ctx, size);
    if (!p && blocks_release())
        p = raw_allocator.malloc(raw_allocator.ctx, size);
    return p;
}

static void *raw_calloc(void *ctx, size_t nelem, size_t elsize)
{
    (void)ctx;
    void *p = raw_allocator.calloc(raw_allocator.ctx, nelem, elsize);
    if (!p && blocks_release())
        p = raw_allocator.calloc(raw_allocator.ctx, nelem, elsize);
    return p;
}

static void *raw_realloc(void *ctx, void *ptr, size_t size)
{
    if (!ptr)
        return raw_malloc(ctx, size);
    if (blocks_owns(ptr)) {
        if (size >= BLOCKS_FROM)
            return blocks_realloc(ptr, size);
        /* Shrunk below the size of a block: into one of glibc's. */
        void *p = raw_malloc(ctx, size ? size : 1);
        if (p) {
            memcpy(p, ptr, size);
            blocks_free(ptr);
        }
        return p;
    }
    void *p = raw_allocator.realloc(raw_allocator.ctx, ptr, size);
    if (!p && blocks_release())
        p = raw_allocator.realloc(raw_allocator.ctx, ptr, size);
    return p;
}

static void raw_free(void *ctx, void *ptr)
{
    (void)ctx;
    if (blocks_owns(ptr))
        blocks_free(ptr);
    else
        raw_allocator.free(raw_allocator.ctx, ptr);
}

static void release_blocks(void)
{
    blocks_release();
}

static void wrap_raw_allocator(void)
{
    PyMem_GetAllocator(PYMEM_DOMAIN_RAW, &raw_allocator);
    PyMemAllocatorEx wrapped = {NULL, raw_malloc, raw_calloc, raw_realloc, raw_free};
    PyMem_SetAllocator(PYMEM_DOMAIN_RAW, &wrapped);
    uplink_on_idle(release_blocks);
}

int pyrt_init(char *err, size_t errlen)
{
    double start = monotime_now();
    /* Arenas populated while the worker starts (arenas.h). */
    PyObjectArenaAllocator arenas = {NULL, arenas_map, arenas_unmap};
    PyObject_SetArenaAllocator(&arenas);
    if (PyImport_AppendInittab("_sandpit", sp_init) < 0) {
        snprintf(err, errlen, "cannot register _sandpit");
        return -1;
    }
    PyConfig config;
    PyConfig_InitPythonConfig(&config);
    config.install_signal_handlers = 1;
    config.parse_argv = 0;
    config.safe_path = 1;
    config.user_site_directory = 0;
    config.write_bytecode = 0;
    config.buffered_stdio = 0;
    PyStatus st = PyConfig_SetBytesString(&config, &config.program_name, SANDPIT_PYTHON);
    if (!PyStatus_Exception(st)) {
        char *argv0[] = {""};
        st = PyConfig_SetBytesArgv(&config, 1, argv0);
    }
    if (!PyStatus_Exception(st))
        st = Py_InitializeFromConfig(&config);
    PyConfig_Clear(&config);
    if (PyStatus_Exception(st)) {
        snprintf(err, errlen, "%s",
                 st.err_msg ? st.err_msg : "Py_InitializeFromConfig failed");
        return -1;
    }
    wrap_raw_allocator();
    double initialised = monotime_now();
    const char *v = Py_GetVersion();
    size_t n = strcspn(v, " ");
    snprintf(py_version, sizeof py_version, "%.*s", (int)n, v);

    /* The bootstrap runs in a namespace of its own: its names (sys, importlib,
     * the finder) are not the user's, and a cell deleting them must not break
     * the finder. */
    PyObject *globals = PyDict_New();
    if (globals)
        PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
    PyObject *r =
        globals ? PyRun_String(bootstrap, Py_file_input, globals, globals) : NULL;
    Py_XDECREF(globals);
    if (!r) {
        fmt_exception(err, errlen, "cannot install the runtime importer");
        return -1;
    }
    Py_DECREF(r);
    PyObject *rt = PyImport_ImportModule("sandpit.runtime");
    if (!rt) {
        fmt_exception(err, errlen, "cannot import sandpit.runtime");
        return -1;
    }
    Py_DECREF(rt);
    log_debug("start-up: Python initialised in %.1f ms, the runtime imported in %.1f ms",
              (initialised - start) * 1e3, (monotime_now() - initialised) * 1e3);
    return 0;
}

void pyrt_preload(const char *modules, bool quiet)
{
    char *copy = strdup(modules), *save = NULL;
    for (char *name = copy ? strtok_r(copy, ",", &save) : NULL; name;
         name = strtok_r(NULL, ",", &save)) {
        while (*name == ' ')
            name++;
        if (!*name)
            continue;
        PyObject *m = PyImport_ImportModule(name);
        if (!m) {
            char err[512];
            fmt_exception(err, sizeof err, name);
            if (quiet)
                log_debug("not preloaded before the sandbox locks: %s", err);
            else
                log_warn("cannot preload %s", err);
        }
        Py_XDECREF(m);
    }
    free(copy);
}

static int call_runtime(const char *fn, const char *arg)
{
    PyObject *rt = PyImport_ImportModule("sandpit.runtime");
    PyObject *r = rt ? PyObject_CallMethod(rt, fn, arg ? "s" : NULL, arg) : NULL;
    int rc = 0;
    if (!r) {
        char err[512];
        fmt_exception(err, sizeof err, fn);
        log_error("%s", err);
        rc = -1;
    } else if (PyLong_Check(r)) {
        rc = (int)PyLong_AsLong(r);
    }
    Py_XDECREF(r);
    Py_XDECREF(rt);
    return rc;
}

void pyrt_template_ready(void)
{
    /* What the template holds stays shared with its workers only if nothing
     * writes to it: a collection in a worker would touch every object's
     * header, and copy every page of the heap. Frozen, they are not
     * collected (they are the runtime, alive for the worker's life anyway). */
    PyObject *gc = PyImport_ImportModule("gc");
    PyObject *r = gc ? PyObject_CallMethod(gc, "collect", NULL) : NULL;
    Py_XDECREF(r);
    /* The workers it forks start from here: its arenas' unwritten pages go
     * back now, and their own arenas come as usual (arenas.h). */
    size_t back = arenas_settle();
    log_debug("the template gave back %zu kB of Python's arenas left unwritten",
              back >> 10);
    r = gc ? PyObject_CallMethod(gc, "freeze", NULL) : NULL;
    if (!r)
        PyErr_Clear();
    Py_XDECREF(r);
    Py_XDECREF(gc);
}

void pyrt_before_fork(void)
{
    PyOS_BeforeFork();
}

void pyrt_after_fork_parent(void)
{
    PyOS_AfterFork_Parent();
}

void pyrt_after_fork_child(void)
{
    PyOS_AfterFork_Child();
}

void pyrt_add_path(const char *pythonpath)
{
    call_runtime("add_path", pythonpath);
}

void pyrt_add_site_dir(const char *dir)
{
    call_runtime("add_site_dir", dir);
}

void pyrt_before_lock(void)
{
    call_runtime("prepare_lock", NULL);
}

void pyrt_warm(void)
{
    call_runtime("warm", NULL);
}

int pyrt_serve(const char *hello_json)
{
    int rc = call_runtime("serve", hello_json);
    /* The link is closed: the supervisor has gone or is replacing us. Skip
     * Python's finalisation, which may run user code (atexit, __del__). */
    fflush(NULL);
    return rc < 0 ? 1 : rc;
}
