"""The worker's request loop: one request in, events and one reply out.

A reader thread takes every frame from the supervisor and routes it: requests
of the main shell to the main thread (which runs cells, so that SIGINT raises
KeyboardInterrupt in them), requests of a subshell to that subshell's thread,
input replies to the thread waiting for one, interrupt notes to the request
they name. Each handling thread answers each request with exactly one
"reply" frame, whatever happens in between: an exception in the user's code
becomes an error reply, an exception in this runtime becomes an error reply
that says so (and a line in the kernel log), a KeyboardInterrupt that
arrives between requests is dropped.

A cell runs in the one __main__ namespace, kept for the worker's life and
shared by the subshells. It is parsed once; every statement but a trailing
expression is executed as a module, and the trailing expression is compiled
in "single" mode so that its value goes through sys.displayhook, which
publishes execute_result. Top-level await works as in IPython.
"""

import builtins
import os
import queue
import signal
import sys
import threading
import traceback

from . import display
from . import execution
from . import link
from . import request
from . import streams

user_ns = execution.user_ns

# Routing, filled by the reader thread and read by the handling threads.
_main_inbox = queue.Queue()   # the main shell's requests; None when the link closes
_subshells = {}               # subshell id -> _Subshell


# --- the loop --------------------------------------------------------------------


def serve(hello):
    """Says hello, then answers the main shell's requests until the supervisor
    closes the link."""
    link.send_hello(hello)
    threading.Thread(target=_read_link, name="sandpit-link", daemon=True).start()
    while True:
        try:
            req = _main_inbox.get()
        except KeyboardInterrupt:
            continue  # an interrupt that arrived between cells
        if req is None:
            return 0
        _serve_one(req)


def _serve_one(req):
    try:
        handle(req)
    except KeyboardInterrupt:
        link.log("warning", "an interrupt arrived after the request had finished")
    except BaseException as e:  # this runtime's own failure
        link.log("error", "runtime failure: " + "".join(
            traceback.format_exception(type(e), e, e.__traceback__)))


def _signals_to_main_thread():
    """SIGINT is for the main thread (Python runs handlers there, and a cell
    sleeping there must wake): threads of the runtime block it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGALRM})


def _read_link():
    """The reader thread: routes each frame from the supervisor."""
    _signals_to_main_thread()
    while True:
        try:
            kind, frame, buffers = link.recv()
        except EOFError:
            break
        except link.FrameError as e:
            link.log("error", "unreadable frame from the supervisor: %s" % (e,))
            continue
        except OSError as e:
            link.log("error", "the link to the supervisor failed: %s" % (e,))
            break
        try:
            _route(kind, frame, buffers)
        except Exception as e:
            link.log("error", "could not route a frame: %r" % (e,))
    _main_inbox.put(None)
    for sub in list(_subshells.values()):
        sub.inbox.put(None)


def _route(kind, frame, buffers):
    if kind == link.REQUEST:
        req = request.Request(frame, buffers)
        request.register(req)  # from now on, its interrupt note finds it
        if not req.shell:
            _main_inbox.put(req)
        else:
            sub = _subshells.get(req.shell)
            if sub is None:  # the supervisor knows it; the worker must too
                sub = _Subshell(req.shell)
            sub.inbox.put(req)
    elif kind == link.INPUT_REPLY:
        req = request.running(frame["parent"])
        if req is None:
            link.log("warning", "an input reply for a request that is not running")
        else:
            req.give_input(frame["content"])
    elif kind == link.INTERRUPT:
        _interrupt(frame)
    elif kind == link.SUBSHELL:
        if frame["op"] == "create":
            if frame["id"] not in _subshells:
                _Subshell(frame["id"])
        else:
            sub = _subshells.pop(frame["id"], None)
            if sub is not None:
                sub.stop()


def _raise_in_thread(ident, exc):
    import ctypes
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(exc))


def _interrupt(note):
    """An interrupt (or the time limit) for the request it names. The main
    shell's request also gets SIGINT from the supervisor; a subshell's gets the
    exception raised in its thread from here."""
    req = request.running(note["parent"])
    if req is None:
        return  # it has just been answered
    req.take_note(note)
    sub = _subshells.get(req.shell) if req.shell else None
    if sub is not None and sub.running is req and sub.ident is not None:
        _raise_in_thread(sub.ident, TimeoutError if note["reason"] == "timeout"
                         else KeyboardInterrupt)


class _Subshell:
    """A subshell's thread: runs its requests one at a time, in the shared
    namespace, concurrently with the main shell."""

    def __init__(self, sid):
        self.id = sid
        self.inbox = queue.Queue()
        self.running = None  # the request it runs
        self.ident = None
        _subshells[sid] = self
        self.thread = threading.Thread(target=self._run, name="sandpit-subshell-" + sid[:8],
                                       daemon=True)
        self.thread.start()

    def _run(self):
        _signals_to_main_thread()
        self.ident = threading.get_ident()
        while True:
            try:
                req = self.inbox.get()
            except BaseException:  # an interrupt aimed at a request that had ended
                continue
            if req is None:
                return
            self.running = req
            try:
                _serve_one(req)
            except BaseException:  # an interrupt aimed at a request that had ended
                pass
            finally:
                self.running = None

    def stop(self):
        self.inbox.put(None)
        if self.running is not None and self.ident is not None:
            _raise_in_thread(self.ident, SystemExit)


def handle(req):
    """Handles one request and sends its one reply, whatever happens."""
    token = request.begin(req)
    replied = False
    try:
        if threading.current_thread() is threading.main_thread():
            link.set_default_tag(req.msg_id)
        handler = HANDLERS.get(req.msg_type)
        if handler is None:
            content = {"status": "error", "ename": "NotImplementedError",
                       "evalue": "the worker does not handle %s" % req.msg_type,
                       "traceback": []}
        else:
            content = handler(req)
        _reply(req, content)
        replied = True
    finally:
        if not replied:
            # Whatever went wrong in reporting (an exception whose str() raises,
            # a result too large for the link), the request gets its one reply.
            why = "unknown"
            if sys.exc_info()[0] is not None:
                from . import tracebacks
                why = "%s: %s" % (sys.exc_info()[0].__name__,
                                  tracebacks.safe_str(sys.exc_info()[1]))
            try:
                _reply(req, {"status": "error", "ename": "SandpitError",
                             "evalue": "sandpit could not report the result of this request "
                             "(%s)" % why[:2000], "traceback": []})
            except BaseException as e:
                link.log("error", "could not send a reply at all: %r" % (e,))
        request.end(req, token)


def _reply(req, content, metadata=None):
    link.flush()
    link.send(link.reply(req.shell, content, metadata))


# --- execute -----------------------------------------------------------------------


def execute(req):
    content = req.content
    code = content.get("code", "")
    if not isinstance(code, str):
        code = ""
    count = req.execution_count
    silent = req.silent
    store_history = req.store_history
    link.output_begin(req.max_output)
    if store_history:
        execution.record_input(count, code)
    filename = execution.cell_filename(count)
    execution.register_source(filename, code)
    reply = {"status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}
    events = _events()
    info = None
    if events is not None:
        info = _ExecutionInfo(code, store_history, silent, req.metadata.get("cellId"))
        events.trigger("pre_execute")
        if not silent:
            events.trigger("pre_run_cell", info)
    error = None
    try:
        from . import inputs
        source = inputs.transform_cell(code)
        if source.strip():
            execution.run_code(source, filename, count, silent, store_history)
        link.flush()
    except BaseException as e:
        exc = e
        if isinstance(e, (KeyboardInterrupt, TimeoutError)):
            # The supervisor's note says which it is: it comes before the signal.
            note = req.note(wait=0.2 if isinstance(e, KeyboardInterrupt) else 0)
            if note is not None and note["reason"] == "timeout":
                limit = note.get("limit") or req.timeout
                exc = TimeoutError("cell exceeded its time limit of %g s" % limit)
                exc.__traceback__ = e.__traceback__
            elif note is not None and type(e) is TimeoutError:
                exc = KeyboardInterrupt()
                exc.__traceback__ = e.__traceback__
        link.flush()
        error = exc
        from . import tracebacks
        err = tracebacks.error_content(exc)
        if not silent:
            request.publish("error", err)
        reply.update(status="error", **err)
        if isinstance(e, SystemExit):
            link.log("info", "the cell raised SystemExit; the worker carries on")
    try:
        from . import figures
        figures.show_open_figures()
    except (Exception, KeyboardInterrupt) as e:
        link.log("warning", "could not show the cell's figures: %r" % (e,))
    if events is not None:
        try:
            events.trigger("post_execute")
            if not silent:
                from . import shell
                result = shell.ExecutionResult(error=error)
                result.info = info
                events.trigger("post_run_cell", result)
        except (Exception, KeyboardInterrupt) as e:
            link.log("warning", "a post-cell callback failed: %r" % (e,))
    if reply["status"] == "ok":
        reply["user_expressions"] = user_expressions(content.get("user_expressions") or {})
    reply["payload"] = list(req.payloads)
    # The exception holds the cell's frames (and whatever they hold, maybe the
    # list that ran out of memory): drop it now, not at some later collection.
    exc = error = e = None  # noqa: F841
    dropped = link.output_end(req.max_output)
    if dropped:
        reply["sandpit_dropped"] = dropped
    return reply


class _ExecutionInfo:
    """What IPython passes to pre_run_cell callbacks."""

    def __init__(self, raw_cell, store_history, silent, cell_id):
        self.raw_cell = raw_cell
        self.store_history = store_history
        self.silent = silent
        self.shell_futures = True
        self.cell_id = cell_id


def _events():
    """The shell's event manager, when some callback is registered."""
    shell = sys.modules.get("sandpit.shell")
    sh = shell.get_ipython() if shell is not None else None
    events = getattr(sh, "events", None)
    if events is None or not any(events.callbacks.values()):
        return None
    return events


def user_expressions(exprs):
    from . import display
    results = {}
    for name, expr in exprs.items():
        try:
            value = eval(compile(str(expr), "<user_expression>", "eval"), user_ns)
            data, metadata = display.format_object(value)
            results[name] = {"status": "ok", "data": data, "metadata": metadata}
        except BaseException as e:
            from . import tracebacks
            results[name] = {"status": "error", **tracebacks.error_content(e)}
    return results


# --- other requests ---------------------------------------------------------------


def _code_and_cursor(req):
    code, cursor = req.content.get("code", ""), req.content.get("cursor_pos")
    if not isinstance(code, str):
        code = ""
    if not isinstance(cursor, int) or isinstance(cursor, bool):
        cursor = len(code)
    return code, cursor


def is_complete(req):
    from . import inputs
    status, indent = inputs.check_complete(_code_and_cursor(req)[0])
    content = {"status": status}
    if status == "incomplete":
        content["indent"] = indent
    return content


def complete(req):
    code, cursor = _code_and_cursor(req)
    try:
        from . import completion
        return completion.complete(code, cursor, user_ns)
    except Exception as e:
        link.log("warning", "completion failed: %r" % (e,))
        return {"status": "ok", "matches": [], "cursor_start": cursor, "cursor_end": cursor,
                "metadata": {}}


def inspect(req):
    code, cursor = _code_and_cursor(req)
    detail = req.content.get("detail_level", 0)
    detail = int(detail) if isinstance(detail, (int, float)) else 0
    try:
        from . import inspection
        return inspection.inspect(code, cursor, detail, user_ns)
    except Exception as e:
        link.log("warning", "inspection failed: %r" % (e,))
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}


def _comm(req):
    from . import comms
    if req.msg_type == "comm_info_request":
        return comms.comm_info(req)
    return comms.handle(req)


HANDLERS = {
    "execute_request": execute,
    "is_complete_request": is_complete,
    "complete_request": complete,
    "inspect_request": inspect,
    "comm_info_request": _comm,
    "comm_open": _comm,
    "comm_msg": _comm,
    "comm_close": _comm,
}


# --- start-up ----------------------------------------------------------------------


# Modules of this package with an install(user_ns) that sets up the user's
# world before the first cell (display(), get_ipython(), ...), in this order.
INSTALLERS = ["display", "comms", "shell", "guard"]


def prepare_lock():
    """Runs before the seccomp filter: whatever needs a process or a new
    file once, and the user's namespace."""
    import platform
    try:
        platform.uname()  # cached; pandas asks for it (uname -p) at import
        platform.processor()
    except Exception:
        pass
    user_ns.setdefault("__builtins__", builtins)
    user_ns["__name__"] = "__main__"
    user_ns.pop("__file__", None)
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, "")
    streams.install()
    request.inherit_into_threads()
    import importlib
    for name in INSTALLERS:
        # One part failing to set up must not take the others with it.
        try:
            importlib.import_module("sandpit." + name).install(user_ns)
        except ModuleNotFoundError as e:
            if e.name != "sandpit." + name:
                link.log("error", "cannot set up sandpit.%s: %r" % (name, e))
        except Exception as e:
            link.log("error", "cannot set up sandpit.%s: %s" % (name, "".join(
                traceback.format_exception(type(e), e, e.__traceback__))))
    # What the installers left in _, __ and ___ is ours, not the user's.
    execution.install(user_ns)
    execution.on_result(display.publish_result)
    signal.signal(signal.SIGINT, signal.default_int_handler)
