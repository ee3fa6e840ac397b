"""Layer 1, request: the state of one request, and what is sent on its behalf.

Each request frame from the supervisor becomes a Request: its msg_id (the
parent of everything it publishes), its shell, whether its client takes input
(allow_stdin), its time limit and output cap, the payloads of its reply, the
supervisor's interrupt note for it and the input replies it waits for. The
thread that handles it (the main thread for the main shell, a thread of its
own for each subshell) holds it in a context variable, so that a subshell's
request and the main shell's never see each other's state, and the state ends
with the request: none of it lives in a process-wide variable that the next
request, or a concurrent one, would overwrite.

A thread started by a cell runs in a copy of that cell's context, as an
asyncio task does (inherit_into_threads): its output goes to the cell that
started it, even after that cell has ended (as under ipykernel 7), and its
input() asks on that cell's behalf while the cell runs.

publish() sends an iopub message parented to the current request, after the
output written so far, so that the client sees outputs in the order the cell
made them. Inside capture() (%%capture), a capture target takes what the
streams write and what is published first.
"""

import contextvars
import queue
import threading

from . import link

_current = contextvars.ContextVar("sandpit_request", default=None)
_capture = contextvars.ContextVar("sandpit_capture", default=None)

# Requests from the moment they are routed until their reply, by msg_id: the
# reader thread finds here the request that an interrupt note or an input
# reply is for.
_running = {}
_running_lock = threading.Lock()


class Request:
    """One request from the supervisor, from its routing to its reply."""

    def __init__(self, frame, buffers=()):
        header = frame.get("header")
        content = frame.get("content")
        metadata = frame.get("metadata")
        self.buffers = list(buffers)
        self.header = header if isinstance(header, dict) else {}
        self.msg_id = str(self.header.get("msg_id") or "")
        self.msg_type = str(frame.get("msg_type") or "")
        self.shell = str(frame.get("shell") or "")  # "" for the main shell
        self.content = content if isinstance(content, dict) else {}
        self.metadata = metadata if isinstance(metadata, dict) else {}
        self.execution_count = _number(frame.get("execution_count"), int)
        self.silent = bool(frame.get("silent"))
        self.store_history = bool(frame.get("store_history"))
        self.allow_stdin = self.content.get("allow_stdin") is True
        self.timeout = _number(frame.get("timeout"), float)     # seconds, 0: none
        self.max_output = _number(frame.get("max_output"), int)  # bytes, 0: none
        self.payloads = []
        self.active = True  # until its reply is sent
        self._note = None
        # SimpleQueues, made in C: a Queue or an Event makes Conditions in
        # Python, for every request, which one in a thousand uses.
        self._noted = queue.SimpleQueue()
        self._input = queue.SimpleQueue()

    def __repr__(self):
        return "<Request %s %s>" % (self.msg_type, self.msg_id)

    # --- interrupts ---------------------------------------------------------------

    def take_note(self, note):
        """The supervisor's note that it interrupts this request (it sends one
        before the signal), with its reason: "interrupt" or "timeout"."""
        self._note = note
        self._noted.put(note)

    def note(self, wait=0.0):
        """The supervisor's interrupt note, waiting up to wait seconds for it;
        None if none came."""
        if self._note is None and wait > 0:
            try:
                self._noted.get(timeout=wait)
            except queue.Empty:
                pass
        return self._note

    # --- input ----------------------------------------------------------------------

    def ask_input(self, prompt, password):
        """Sends an input_request and waits for the client's answer (a str).
        KeyboardInterrupt (an interrupt) propagates; EOFError if the request
        ends before the answer comes."""
        if not self.active:
            raise EOFError("the cell that asked for input has finished")
        link.send(link.input_request(self.msg_id, prompt, password))
        content = self._input.get()
        if content is None:
            raise EOFError("the cell that asked for input finished before the answer came")
        value = content.get("value", "")
        return value if isinstance(value, str) else str(value)

    def give_input(self, content):
        """The client's input_reply content, for the input() waiting on it."""
        self._input.put(content)

    def end(self):
        """The reply has gone: nothing more is added to it, nothing waits for input."""
        self.active = False
        self.buffers = []
        self._input.put(None)


def _number(value, cls):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return cls(0)
    return cls(value) if value > 0 else cls(0)


# --- the request of this thread -----------------------------------------------------


def register(req):
    """Makes req findable by running() from the moment it is routed."""
    with _running_lock:
        _running[req.msg_id] = req


def running(msg_id):
    """The request with msg_id that is waiting or being handled, or None."""
    with _running_lock:
        return _running.get(msg_id)


def begin(req):
    """Makes req the current request of this thread (and of what it starts);
    returns the token that end() takes."""
    register(req)
    return _current.set(req)


def end(req, token):
    """req has been answered: it is no longer current, running, or listening."""
    req.end()
    with _running_lock:
        if _running.get(req.msg_id) is req:
            del _running[req.msg_id]
    _current.reset(token)


def current():
    """The request this thread works for (or, in a thread or task that a cell
    started, that cell's request), or None."""
    return _current.get()


def current_tag():
    """msg_id of the request that output from here belongs to, or None."""
    req = _current.get()
    return req.msg_id if req is not None else None


def add_payload(payload, single=False):
    """Adds a payload (a dict with a "source" key) to the reply of the current
    request; False when there is no request whose reply is still to come.
    single: it replaces any payload of the same source (IPython's single=True:
    a cell that calls set_next_input three times leaves one, the last)."""
    req = _current.get()
    if req is None or not req.active:
        return False
    if single:
        req.payloads[:] = [p for p in req.payloads if p.get("source") != payload.get("source")]
    req.payloads.append(payload)
    return True


def publish(msg_type, content, metadata=None, buffers=(), parent=None):
    """Publishes an iopub message parented to the current request (or to the
    request whose msg_id is parent), after the output written so far."""
    link.flush()
    frame = link.iopub(msg_type, content, parent or current_tag(), metadata)
    target = _capture.get()
    while target is not None:
        if target.take(frame, buffers):
            return
        target = target.outer
    link.send(frame, buffers)


# --- capture ------------------------------------------------------------------------


class CaptureTarget:
    """What capture() gives the streams and publish() first: write(fd, data)
    and take(frame, buffers) return True for what they keep; the rest goes to
    outer (the capture this one is inside), then to the client."""

    outer = None

    def write(self, fd, data):
        return False

    def take(self, frame, buffers):
        return False


def capturing():
    """The innermost capture target of this context, or None."""
    return _capture.get()


def begin_capture(target):
    """Makes target take this context's output; returns the token for end_capture."""
    target.outer = _capture.get()
    return _capture.set(target)


def end_capture(token):
    _capture.reset(token)


# --- threads ------------------------------------------------------------------------


def inherit_into_threads():
    """Makes every thread run in a copy of the context of the thread that
    started it, as asyncio tasks do: a thread that a cell starts belongs to
    that cell. Done once, at start-up."""
    start, bootstrap = threading.Thread.start, threading.Thread._bootstrap_inner
    if getattr(start, "_sandpit", False):
        return

    def start_in_context(self):
        self._sandpit_context = contextvars.copy_context()
        return start(self)

    def bootstrap_in_context(self):
        context = getattr(self, "_sandpit_context", None)
        if context is None:
            return bootstrap(self)
        return context.run(bootstrap, self)

    start_in_context._sandpit = True
    threading.Thread.start = start_in_context
    threading.Thread._bootstrap_inner = bootstrap_in_context
