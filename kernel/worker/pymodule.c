/* pymodule: the built-in module _sandpit (pymodule.h).
 *
 * What is hard here:
 * - The GIL. Every call of _sandpit that may wait (the link, the output pump)
 *   releases it, so threads started by a cell keep running and printing while
 *   the main thread waits for the next request.
 * - Printing. sys.stdout.write and sys.stderr.write are C (stream_write): a
 *   method of Python's would be most of the cost of printing, and a string of
 *   a gigabyte is encoded a slice at a time, never whole. */
#include "kernel/worker/pymodule.h"

#include <errno.h>
#include <stdbool.h>

#include "kernel/util/base64.h"
#include "kernel/util/log.h"
#include "kernel/worker/pump.h"
#include "kernel/worker/pyimport.h"
#include "kernel/worker/uplink.h"

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
    {"sources", pyimport_sources, METH_NOARGS, "The embedded runtime's sources."},
    {"release_sources", pyimport_release_sources, METH_NOARGS,
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

PyObject *pymodule_create(void)
{
    return PyModule_Create(&sp_module);
}
