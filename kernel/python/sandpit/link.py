"""Layer 1, link: the frames between the worker and the supervisor.

A frame is one JSON object whose "type" names its kind, plus binary buffers
(kernel/link/link.c frames them on the socketpair). The kinds are those of
the C side (kernel/link/frames.h; tests/runtime/test_link_schema.py compares
each with it), and this module is the one place in the runtime that names
them:

    supervisor to worker                  worker to supervisor
    request      a request to handle      hello          the worker is ready
    interrupt    an interrupt or a time   iopub          a message for iopub
                 limit, for one request   reply          a request's one reply
    subshell     a subshell created or    input_request  input() asks the client
                 deleted                  history        a query of the history
    input_reply  the client's answer                     (the supervisor keeps it)
    history_reply  the answer to a        log            a line for the log
                   history                               (the worker's C sends it)

parse() checks what comes in and raises FrameError for anything else; a
builder per kind makes what goes out. history() asks the supervisor for the
history and waits for its answer, which the reader thread hands over with
history_reply_received().

This module is the only one of the runtime that imports _sandpit, the C
module the worker's embedding gives Python (kernel/worker/pymodule.c: frames, the
output pump, the log, base64), or reaches it in any other way: the others use
what this one gives, its functions and, for the two that must be the C
functions themselves, pump_write (the streams' common case, sandpit.streams)
and b2a_base64_in_c (IPython's images, sandpit.import_hooks), with
stream_setup() for the streams' writes in C. tests/runtime/test_link.py
fails if another module names _sandpit. Outside a worker (the runtime's unit
tests) there is no _sandpit: set_sink() then captures what would be sent,
and output goes to file descriptors 1 and 2 themselves.
"""

import itertools
import json
import math
import os
import queue
import threading

try:
    import _sandpit
except ImportError:  # not inside a worker
    _sandpit = None

# The C functions themselves, for the hot paths of other modules (None outside
# a worker): the pump's write(fd, text, tag), and binascii.b2a_base64's equal
# (the same bytes, three times as fast).
pump_write = getattr(_sandpit, "write", None)
b2a_base64_in_c = getattr(_sandpit, "b2a_base64", None)


def stream_setup(capture, current, fallback):
    """Gives the worker's stream writes in C (kernel/worker/pymodule.c) what they
    look at: the context variables of the capture target and of the current
    request, and the write for what they leave to Python. Returns {fd: that
    write in C} for fds 1 and 2; {} outside a worker."""
    if _sandpit is None:
        return {}
    _sandpit.stream_setup(capture, current, fallback)
    return {1: _sandpit.stdout_write, 2: _sandpit.stderr_write}


def b64encode(data):
    """The base64 of a bytes-like object, as str without newlines (a chart's
    value in a display). The worker's is made at once as an ASCII str."""
    if _sandpit is not None:
        return _sandpit.b64encode(data)
    import binascii
    return binascii.b2a_base64(data, newline=False).decode("ascii")


# supervisor to worker
REQUEST = "request"
INTERRUPT = "interrupt"
SUBSHELL = "subshell"
INPUT_REPLY = "input_reply"
HISTORY_REPLY = "history_reply"
# worker to supervisor
HELLO = "hello"
IOPUB = "iopub"
REPLY = "reply"
INPUT_REQUEST = "input_request"
HISTORY = "history"

# The worker's C code sends one more kind itself: its log lines once cells run
# (kernel/worker/worker.c); this runtime logs through _sandpit.log, which sends them.
LOG = "log"

INCOMING = (REQUEST, INTERRUPT, SUBSHELL, INPUT_REPLY, HISTORY_REPLY)
OUTGOING = (HELLO, IOPUB, REPLY, INPUT_REQUEST, HISTORY)
SENT_BY_C = (LOG,)
# What the supervisor lets a worker publish on iopub (kernel/link/frames.c).
IOPUB_TYPES = ("stream", "display_data", "update_display_data", "execute_result", "error",
               "clear_output", "comm_open", "comm_msg", "comm_close")

# What parse() requires of each kind of frame from the supervisor: field -> type.
_REQUIRED = {
    REQUEST: {"shell": str, "msg_type": str, "header": dict},
    INTERRUPT: {"shell": str, "parent": str, "reason": str},
    SUBSHELL: {"op": str, "id": str},
    INPUT_REPLY: {"parent": str, "content": dict},
    HISTORY_REPLY: {"id": int},
}
SUBSHELL_OPS = ("create", "delete")
INTERRUPT_REASONS = ("interrupt", "timeout")

_sink = None


class FrameError(ValueError):
    """A frame from the supervisor that is not one of the kinds it sends."""


# --- parsing -------------------------------------------------------------------------


def parse(raw, buffers=()):
    """(kind, frame, buffers) for the JSON text raw; FrameError if it is not a
    frame of a kind the supervisor sends, with the fields that kind needs."""
    try:
        frame = json.loads(raw)
    except ValueError as e:
        raise FrameError("not JSON: %s" % e) from None
    if not isinstance(frame, dict):
        raise FrameError("not a JSON object")
    kind = frame.get("type")
    required = _REQUIRED.get(kind)
    if required is None:
        raise FrameError("unknown kind of frame %r" % (kind,))
    for field, cls in required.items():
        if not isinstance(frame.get(field), cls):
            raise FrameError("a %s frame without %s (%s)" % (kind, field, cls.__name__))
    if kind == SUBSHELL and frame["op"] not in SUBSHELL_OPS:
        raise FrameError("a subshell frame with op %r" % (frame["op"],))
    if kind == INTERRUPT and frame["reason"] not in INTERRUPT_REASONS:
        raise FrameError("an interrupt frame with reason %r" % (frame["reason"],))
    if kind == HISTORY_REPLY and not (isinstance(frame.get("history"), list)
                                      != isinstance(frame.get("error"), str)):
        raise FrameError("a history_reply frame without one of history (list) or "
                         "error (str)")
    return kind, frame, list(buffers)


# --- building --------------------------------------------------------------------------


def iopub(msg_type, content, parent=None, metadata=None):
    """A message for iopub, parented to the request whose msg_id is parent
    (None: the main shell's running request)."""
    frame = {"type": IOPUB, "msg_type": msg_type, "content": content}
    if parent:
        frame["parent"] = parent
    if metadata:
        frame["metadata"] = metadata
    return frame


def reply(shell, parent, content, metadata=None):
    """The reply to the request whose msg_id is parent, running in shell (""
    for the main shell)."""
    frame = {"type": REPLY, "shell": shell, "parent": parent, "content": content}
    if metadata:
        frame["metadata"] = metadata
    return frame


def input_request(parent, prompt, password):
    """input() or getpass() in the request whose msg_id is parent."""
    return {"type": INPUT_REQUEST, "parent": parent,
            "content": {"prompt": str(prompt), "password": bool(password)}}


def history_query(query_id, query):
    """A query of the history (the fields of a history_request's content),
    numbered query_id for its answer."""
    return {"type": HISTORY, "id": query_id, "query": query}


def _clean(obj):
    """JSON has no NaN or infinity: they become null, as ipykernel's json_clean does."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _default(obj):
    if isinstance(obj, (bytes, bytearray, memoryview)):
        import base64
        return base64.b64encode(bytes(obj)).decode("ascii")
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    return repr(obj)


def dumps(obj):
    """The JSON text of a frame, whatever JSON cannot say made into what it can."""
    try:
        return json.dumps(obj, allow_nan=False, default=_default, ensure_ascii=False)
    except ValueError:
        return json.dumps(_clean(obj), allow_nan=False, default=_default, ensure_ascii=False)


# --- the transport ---------------------------------------------------------------------


def set_sink(fn):
    """Sends frames to fn(frame, buffers) instead of the supervisor (for tests);
    None sends them to the supervisor again."""
    global _sink
    _sink = fn


# Strings of an iopub frame's content this long (a stream's "text", a
# display's "data" values) go beside the JSON as raw UTF-8 (see
# kernel/link/frames.h): neither end then escapes or parses them as JSON.
RAW_MIN = 64 * 1024
RAW_MAX = 16


def _raw_text(value):
    """What a large string goes as: the str itself when it is ASCII (the C side
    takes its bytes as they are), else its UTF-8; None when it is not a large
    string, or holds a lone surrogate (it then stays in the JSON)."""
    if not isinstance(value, str) or len(value) < RAW_MIN:
        return None
    if value.isascii():
        return value
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        return None


def _take_raw(frame):
    """The frame with the large strings of its content taken out, and their
    paths and texts; the frame itself is left as it was."""
    content = frame.get("content")
    if frame.get("type") != IOPUB or not isinstance(content, dict):
        return frame, [], []
    paths, texts = [], []
    content = dict(content)
    for key, value in list(content.items()):
        if len(paths) == RAW_MAX or not isinstance(key, str):
            continue
        text = _raw_text(value)
        if text is not None:
            del content[key]
            paths.append([key])
            texts.append(text)
        elif isinstance(value, dict):
            inner = None
            for key2, value2 in value.items():
                text = _raw_text(value2) if isinstance(key2, str) else None
                if text is not None and len(paths) < RAW_MAX:
                    inner = dict(value) if inner is None else inner
                    del inner[key2]
                    paths.append([key, key2])
                    texts.append(text)
            if inner is not None:
                content[key] = inner
    if not paths:
        return frame, [], []
    frame = dict(frame, content=content, raw=paths)
    return frame, paths, texts


def send(frame, buffers=()):
    """Sends one frame (built above) and its binary buffers to the supervisor."""
    if _sink is not None:
        _sink(frame, list(buffers))
        return
    frame, _, texts = _take_raw(frame)
    _sandpit.send(dumps(frame).encode("utf-8", "surrogatepass"), list(buffers) + texts)


def send_hello(text):
    """Sends the hello the worker's C side wrote (with the sandbox's report):
    the first frame, which says the worker is ready."""
    if json.loads(text).get("type") != HELLO:
        raise FrameError("the worker's first frame must be a hello")
    _sandpit.send(text.encode())


def recv_raw():
    """The next frame from the supervisor, unparsed: (JSON bytes, buffers).
    Waits for it; EOFError when the supervisor has closed the link. The main
    thread reads with it between the main shell's cells."""
    return _sandpit.recv(True)


def recv_in_turn():
    """recv() for the reader thread: waits until a main-shell cell runs (its
    turn), then for the next frame."""
    raw, buffers = _sandpit.recv_in_turn()
    return parse(raw, buffers)


def reader_turn(on):
    """Gives the reader thread its turn to read (on, before a main-shell cell)
    or takes it back (after it: returns once the reader has routed what it
    read, so that frames are routed in the order they came)."""
    if _sandpit is not None:
        _sandpit.reader_turn(on)


def write(fd, data, tag=None):
    """Output for fd 1 or 2, belonging to the request whose msg_id is tag:
    handed to the output pump (a copy into memory). Returns len(data)."""
    if _sandpit is not None:
        return _sandpit.write(fd, data, tag)
    view = memoryview(data.encode("utf-8", "replace") if isinstance(data, str)
                      else data).cast("B")
    while view:
        view = view[os.write(fd, view):]
    return len(data)


def _flush_streams():
    """Flushes Python's sys.stdout and sys.stderr (a cell may have replaced
    them with streams of its own that buffer) into the pump."""
    try:
        import sys
        for s in (sys.stdout, sys.stderr):
            if s is not None and hasattr(s, "flush"):
                s.flush()
    except Exception:
        pass


def flush():
    """Sends the output written so far to stdout and stderr (Python's streams,
    then what the pump holds), before anything else goes out."""
    _flush_streams()
    if _sandpit is not None:
        _sandpit.flush()


def set_default_tag(tag):
    """The request that output written by C code to fds 1 and 2 belongs to."""
    if _sandpit is not None:
        _sandpit.set_default_tag(tag)


# The output pump's cap and count of dropped bytes (kernel/worker/pump.c), kept
# per request: execute_request calls these two around a cell.
def output_begin(msg_id, max_bytes):
    """Sets the stream cap of the request msg_id, about to run (0: none)."""
    if _sandpit is not None:
        _sandpit.output_begin(msg_id, int(max_bytes or 0))


def output_end(msg_id):
    """Sends what the request wrote; returns how many bytes it dropped past its cap."""
    if _sandpit is None:
        return 0
    _flush_streams()
    return _sandpit.output_end(msg_id)  # sends what the pump holds (pump_end)


# --- the history, which the supervisor keeps ---------------------------------------

HISTORY_WAIT = 30  # seconds to wait for the supervisor's answer

_history_ids = itertools.count(1)
_history_waiting = {}  # query id -> queue.Queue for its history_reply
_history_lock = threading.Lock()
# One query at a time, whatever the threads: the supervisor answers one and
# refuses the next until this worker has taken the answer.
_history_one = threading.Lock()


class HistoryError(RuntimeError):
    """The supervisor refused a history query (its sentence says why), or did
    not answer it."""


def history(query):
    """Asks the supervisor for the history and waits for the answer: a list of
    (session, line, input) or, with "output" in the query, (session, line,
    (input, output)). query has the fields of a history_request's content
    (hist_access_type, session, start, stop, n, pattern, unique, raw, output).
    Any thread may call it; HistoryError when the supervisor refuses the
    query or does not answer within HISTORY_WAIT seconds."""
    with _history_one:
        return _history_ask(query)


def _history_ask(query):
    box = queue.Queue(1)
    with _history_lock:
        query_id = next(_history_ids)
        _history_waiting[query_id] = box
    try:
        send(history_query(query_id, query))
        try:
            frame = box.get(timeout=HISTORY_WAIT)
        except queue.Empty:
            raise HistoryError("the kernel did not answer the history query within "
                               "%d s" % HISTORY_WAIT) from None
    finally:
        with _history_lock:
            _history_waiting.pop(query_id, None)
    if "error" in frame:
        raise HistoryError(frame["error"])
    found = History(tuple(tuple(x) if isinstance(x, list) else x for x in entry)
                    for entry in frame["history"])
    found.session = frame.get("session")
    return found


class History(list):
    """What history() found: a list of entries, and in .session the number of
    the kernel's current session (None if the supervisor did not say)."""

    session = None


def history_reply_received(frame):
    """A history_reply from the supervisor (the reader thread calls this):
    handed to the history() that waits for it, by its id."""
    with _history_lock:
        box = _history_waiting.get(frame["id"])
    if box is None:
        log("warning", "a history reply that nothing waits for (%d)" % frame["id"])
        return
    try:
        box.put_nowait(frame)
    except queue.Full:
        log("warning", "a second history reply for the same query (%d)" % frame["id"])


_LEVELS = {"error": 0, "warning": 1, "info": 2, "debug": 3}


def log(level, text):
    """A line in the kernel's log: level is "error", "warning", "info" or "debug"."""
    if _sandpit is not None:
        _sandpit.log(_LEVELS.get(level, 1), str(text))
