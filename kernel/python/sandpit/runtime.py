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

import ast
import builtins
import ctypes
import json
import linecache
import os
import queue
import signal
import sys
import threading
import traceback
import warnings

from . import _kernel
from . import streams

try:
    import _sandpit
except ImportError:
    _sandpit = None

main_module = sys.modules["__main__"]
user_ns = main_module.__dict__

_loop = None  # the event loop for top-level await, made on first use
_previous_input = ""  # the last stored cell's input, for _i
_cell_serial = 0
_serial_lock = threading.Lock()

# Routing, filled by the reader thread and read by the handling threads.
_main_inbox = queue.Queue()   # frames for the main shell; None when the link closes
_subshells = {}               # subshell id -> _Subshell
_waiting = {}                 # msg_id of a request waiting for input -> queue.Queue
_notes = {}                   # msg_id -> the supervisor's interrupt note for it
_notes_arrived = {}           # msg_id -> threading.Event, set when its note arrives
_routing_lock = threading.Lock()


# --- the loop --------------------------------------------------------------------


def serve(hello):
    """Says hello, then answers the main shell's requests until the supervisor
    closes the link."""
    _sandpit.send(hello.encode())
    threading.Thread(target=_read_link, name="sandpit-link", daemon=True).start()
    while True:
        try:
            frame = _main_inbox.get()
        except KeyboardInterrupt:
            continue  # an interrupt that arrived between cells
        if frame is None:
            return 0
        _serve_one(frame)


def _serve_one(frame):
    try:
        handle(frame)
    except KeyboardInterrupt:
        _kernel.log("warning", "an interrupt arrived after the request had finished")
    except BaseException as e:  # this runtime's own failure
        _kernel.log("error", "runtime failure: " + "".join(
            traceback.format_exception(type(e), e, e.__traceback__)))
        if _kernel.current is not None:
            _reply({"status": "error", "ename": type(e).__name__, "evalue": str(e),
                    "traceback": []})
        _kernel.end_request()


def _signals_to_main_thread():
    """SIGINT is for the main thread (Python runs handlers there, and a cell
    sleeping there must wake): threads of the runtime block it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGALRM})


def _read_link():
    """The reader thread: routes each frame from the supervisor."""
    _signals_to_main_thread()
    while True:
        try:
            raw, buffers = _sandpit.recv(True)
            obj = json.loads(raw)
        except EOFError:
            break
        except Exception as e:
            _kernel.log("error", "unreadable frame from the supervisor: %r" % (e,))
            continue
        try:
            _route(obj, buffers)
        except Exception as e:
            _kernel.log("error", "could not route a frame: %r" % (e,))
    _main_inbox.put(None)
    for sub in list(_subshells.values()):
        sub.inbox.put(None)


def _route(obj, buffers):
    kind = obj.get("type")
    if kind == "request":
        shell = obj.get("shell") or ""
        if not shell:
            _main_inbox.put((obj, buffers))
        else:
            sub = _subshells.get(shell)
            if sub is None:  # the supervisor knows it; the worker must too
                sub = _Subshell(shell)
            sub.inbox.put((obj, buffers))
    elif kind == "input_reply":
        with _routing_lock:
            q = _waiting.get(obj.get("parent"))
        if q is not None:
            q.put(obj)
    elif kind == "interrupt":
        _take_note(obj)
    elif kind == "subshell":
        if obj.get("op") == "create":
            _Subshell(obj.get("id"))
        elif obj.get("op") == "delete":
            sub = _subshells.pop(obj.get("id"), None)
            if sub is not None:
                sub.stop()
    else:
        _kernel.log("warning", "unexpected frame from the supervisor: %r" % (kind,))


def _take_note(note):
    """An interrupt (or the time limit) for the request it names. The main
    shell's request also gets SIGINT from the supervisor; a subshell's gets the
    exception raised in its thread from here."""
    parent = note.get("parent")
    with _routing_lock:
        _notes[parent] = note
        event = _notes_arrived.get(parent)
    if event is not None:
        event.set()
    shell = note.get("shell") or ""
    if shell:
        sub = _subshells.get(shell)
        if sub is not None and sub.running == parent and sub.ident is not None:
            exc = TimeoutError if note.get("reason") == "timeout" else KeyboardInterrupt
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(sub.ident),
                                                        ctypes.py_object(exc))


def interrupt_reason(req, wait=0.2):
    """After a KeyboardInterrupt or TimeoutError in req: the supervisor's note
    for it (it sends one before the signal), or None if none comes."""
    parent = (req.get("header") or {}).get("msg_id")
    with _routing_lock:
        note = _notes.get(parent)
        event = _notes_arrived.get(parent)
    if note is None and event is not None:
        event.wait(wait)
        with _routing_lock:
            note = _notes.get(parent)
    return note


class _Subshell:
    """A subshell's thread: runs its requests one at a time, in the shared
    namespace, concurrently with the main shell."""

    def __init__(self, sid):
        self.id = sid
        self.inbox = queue.Queue()
        self.running = None  # msg_id of the request it runs
        self.ident = None
        _subshells[sid] = self
        self.thread = threading.Thread(target=self._run, name="sandpit-subshell-" + sid[:8],
                                       daemon=True)
        self.thread._sandpit_internal = True
        self.thread.start()

    def _run(self):
        _signals_to_main_thread()
        self.ident = threading.get_ident()
        while True:
            frame = self.inbox.get()
            if frame is None:
                return
            self.running = (frame[0].get("header") or {}).get("msg_id")
            try:
                _serve_one(frame)
            except BaseException:  # an interrupt aimed at a request that had ended
                pass
            finally:
                self.running = None

    def stop(self):
        self.inbox.put(None)
        if self.running and self.ident is not None:
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self.ident),
                                                        ctypes.py_object(SystemExit))


def ask_input(req, content):
    """Sends an input_request for req and blocks until its input_reply arrives
    (registered first, so a quick answer cannot be missed). KeyboardInterrupt
    (a user interrupt) propagates to the caller."""
    parent = (req.get("header") or {}).get("msg_id")
    q = queue.Queue()
    with _routing_lock:
        _waiting[parent] = q
    try:
        _kernel.send({"type": "input_request", "parent": parent, "content": content})
        return q.get()
    finally:
        with _routing_lock:
            _waiting.pop(parent, None)


def handle(frame):
    obj, buffers = frame
    parent = (obj.get("header") or {}).get("msg_id")
    with _routing_lock:
        _notes.pop(parent, None)
        _notes_arrived[parent] = threading.Event()
    _kernel.begin_request(obj)
    main = threading.current_thread() is threading.main_thread()
    if main and _sandpit is not None:
        _sandpit.set_default_tag(parent)
    replied = False
    try:
        handler = HANDLERS.get(obj.get("msg_type"))
        if handler is None:
            content = {"status": "error", "ename": "NotImplementedError",
                       "evalue": "the worker does not handle %s" % obj.get("msg_type"),
                       "traceback": []}
        else:
            content = handler(obj, buffers)
        _reply(content, shell=obj.get("shell") or "")
        replied = True
    finally:
        if not replied:
            # Whatever went wrong in reporting (an exception whose str() raises,
            # a result too large for the link), the request gets its one reply.
            why = "%s: %s" % (sys.exc_info()[0].__name__, _safe_str(sys.exc_info()[1])) \
                if sys.exc_info()[0] else "unknown"
            try:
                _reply({"status": "error", "ename": "SandpitError",
                        "evalue": "sandpit could not report the result of this request (%s)"
                        % why[:2000], "traceback": []}, shell=obj.get("shell") or "")
            except BaseException as e:
                _kernel.log("error", "could not send a reply at all: %r" % (e,))
        _kernel.end_request()
        with _routing_lock:
            _notes.pop(parent, None)
            _notes_arrived.pop(parent, None)


def _reply(content, metadata=None, shell=None):
    _kernel.flush()
    if shell is None:
        shell = (_kernel.current or {}).get("shell") or ""
    frame = {"type": "reply", "shell": shell, "content": content}
    if metadata:
        frame["metadata"] = metadata
    _kernel.send(frame)


# --- execute -----------------------------------------------------------------------


def _cell_filename(count):
    global _cell_serial
    with _serial_lock:
        _cell_serial += 1
        return "<cell-%d-%d>" % (count, _cell_serial)


def cell_label(filename):
    """'Cell In[3]' for a cell's filename, None for any other file."""
    if filename.startswith("<cell-") and filename.endswith(">"):
        return "Cell In[%s]" % filename[6:-1].split("-")[0]
    return None


def _register_source(filename, code):
    lines = code.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(code), None, lines, filename)


def _suppressed(code):
    """A trailing semicolon hides the result, as in IPython."""
    for line in reversed(code.rstrip().splitlines()):
        stripped = line.split("#", 1)[0].rstrip() if "#" in line else line.rstrip()
        if stripped:
            return stripped.endswith(";")
    return False


def run_code(code, filename, count, silent=False, store_history=True):
    """Compiles and runs code in the user's namespace; exceptions propagate."""
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST | flags, dont_inherit=True)
    body, last = tree.body, None
    if body and isinstance(body[-1], ast.Expr) and not _suppressed(code):
        body, last = body[:-1], body[-1]
    hook = displayhook_for(count, silent, store_history)
    saved_hook = sys.displayhook
    sys.displayhook = hook
    try:
        if body:
            mod = ast.Module(body=body, type_ignores=[])
            _run(compile(mod, filename, "exec", flags, dont_inherit=True))
        if last is not None:
            mod = ast.Interactive(body=[last])
            _run(compile(mod, filename, "single", flags, dont_inherit=True))
    finally:
        sys.displayhook = saved_hook


def _run(codeobj):
    global _loop
    result = eval(codeobj, user_ns)
    if codeobj.co_flags & 0x80 and result is not None:  # CO_COROUTINE: top-level await
        import asyncio
        if _loop is None or _loop.is_closed():
            _loop = asyncio.new_event_loop()
        _loop.run_until_complete(result)


_unders = {}  # the values this hook last gave _, __ and ___


def _update_unders(value):
    """_, __ and ___ follow the results, as in IPython, unless the user has
    assigned one of them: then none of them is touched again."""
    ours = all(name not in user_ns or user_ns[name] is _unders.get(name)
               for name in ("_", "__", "___"))
    _unders["___"], _unders["__"], _unders["_"] = (_unders.get("__", ""),
                                                   _unders.get("_", ""), value)
    if ours:
        user_ns.update(_unders)


def displayhook_for(count, silent, store_history):
    def hook(value):
        if value is None or silent:
            return
        _update_unders(value)
        if store_history:
            user_ns["_%d" % count] = value
            out = user_ns.setdefault("Out", {})
            if isinstance(out, dict):
                out[count] = value
        from . import display
        data, metadata = display.format_result(value)
        if not data:  # it displayed itself (_ipython_display_), as a widget does
            return
        _kernel.publish("execute_result",
                        {"execution_count": count, "data": data, "metadata": metadata})
    return hook


def execute(req, buffers):
    content = req.get("content", {})
    code = content.get("code", "")
    count = req.get("execution_count", 0)
    silent = bool(req.get("silent"))
    store_history = bool(req.get("store_history"))
    streams.begin_cell(content.get("allow_stdin", False))
    if _sandpit is not None:
        _sandpit.output_reset(int(req.get("max_output") or 0))
    if store_history:
        ins = user_ns.setdefault("In", [""])
        if isinstance(ins, list):
            del ins[count:]
            while len(ins) < count:
                ins.append("")
            ins.append(code)
        # As in IPython: while cell N runs, _i is cell N-1's input, _ii N-2's,
        # _iii N-3's, and _iN is cell N's own.
        global _previous_input
        user_ns["_iii"] = user_ns.get("_ii", "")
        user_ns["_ii"] = user_ns.get("_i", "")
        user_ns["_i"] = _previous_input
        user_ns["_i%d" % count] = code
        _previous_input = code
    filename = _cell_filename(count)
    _register_source(filename, code)
    reply = {"status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}
    events = _events()
    info = None
    if events is not None:
        info = _ExecutionInfo(code, store_history, silent, (req.get("metadata") or {})
                              .get("cellId"))
        events.trigger("pre_execute")
        if not silent:
            events.trigger("pre_run_cell", info)
    error = None
    try:
        from . import inputs
        source = inputs.transform_cell(code)
        if source.strip():
            run_code(source, filename, count, silent, store_history)
        _kernel.flush()
    except BaseException as e:
        exc = e
        if isinstance(e, (KeyboardInterrupt, TimeoutError)):
            note = interrupt_reason(req, wait=0.2 if isinstance(e, KeyboardInterrupt) else 0)
            if note is not None and note.get("reason") == "timeout":
                exc = TimeoutError(
                    "cell exceeded its time limit of %g s" % note.get("limit", 0))
                exc.__traceback__ = e.__traceback__
            elif note is not None and type(e) is TimeoutError:
                exc = KeyboardInterrupt()
                exc.__traceback__ = e.__traceback__
        _kernel.flush()
        error = exc
        err = error_content(exc)
        if not silent:
            _kernel.publish("error", err)
        reply.update(status="error", **err)
        if isinstance(e, SystemExit):
            _kernel.log("info", "the cell raised SystemExit; the worker carries on")
    try:
        from . import figures
        figures.show_open_figures()
    except (Exception, KeyboardInterrupt) as e:
        _kernel.log("warning", "could not show the cell's figures: %r" % (e,))
    if events is not None:
        try:
            events.trigger("post_execute")
            if not silent:
                from . import shell
                result = shell.ExecutionResult(error=error)
                result.info = info
                events.trigger("post_run_cell", result)
        except (Exception, KeyboardInterrupt) as e:
            _kernel.log("warning", "a post-cell callback failed: %r" % (e,))
    if reply["status"] == "ok":
        reply["user_expressions"] = user_expressions(content.get("user_expressions") or {})
    reply["payload"] = list(_kernel.payloads)
    # The exception holds the cell's frames (and whatever they hold, maybe the
    # list that ran out of memory): drop it now, not at some later collection.
    exc = error = e = None  # noqa: F841
    if _sandpit is not None:
        _kernel.flush()
        dropped = _sandpit.output_reset(int(req.get("max_output") or 0))
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
            err = error_content(e)
            results[name] = {"status": "error", **err}
    return results


# --- errors ----------------------------------------------------------------------

RED, GREEN, CYAN, BOLD, RESET = "\033[0;31m", "\033[0;32m", "\033[0;36m", "\033[1m", "\033[0m"


def _own_frame(filename):
    return filename.startswith("<sandpit>/")


MAX_EVALUE = 64 * 1024       # characters of an error's message sent
MAX_TRACEBACK = 1024 * 1024  # characters of a traceback sent


def _safe_str(obj, limit=MAX_EVALUE):
    """str(obj), whatever its __str__ does, cut to limit characters."""
    try:
        text = str(obj)
    except BaseException as e:
        try:
            return "<str() of this %s failed with %s>" % (type(obj).__name__,
                                                          type(e).__name__)
        except BaseException:
            return "<str() failed>"
    if len(text) > limit:
        text = text[:limit] + " [... %d more characters]" % (len(text) - limit)
    return text


def error_content(exc):
    """ename, evalue and an IPython-style traceback (a list of strings),
    bounded in size whatever the exception holds."""
    try:
        if "sandpit.guard" in sys.modules:
            note = sys.modules["sandpit.guard"].explain(exc)
            if note and note not in getattr(exc, "__notes__", ()):
                exc.add_note(note)
    except BaseException:
        pass
    ename = type(exc).__name__
    evalue = _safe_str(exc)
    tb = format_traceback(exc)
    total = 0
    for i, part in enumerate(tb):
        total += len(part)
        if total > MAX_TRACEBACK:
            tb = tb[:i] + ["[... %d more parts of the traceback were left out]"
                           % (len(tb) - i), tb[-1][:MAX_EVALUE]]
            break
    return {"ename": ename, "evalue": evalue, "traceback": tb}


def format_traceback(exc):
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__,
                                          capture_locals=False, compact=True)
        return _format_te(te)
    except BaseException:
        try:
            return [_safe_str(line) for line in
                    traceback.format_exception(type(exc), exc, exc.__traceback__)]
        except BaseException:
            return ["%s (its traceback could not be formatted)" % type(exc).__name__]


def _repeated(n):
    return "[... the frame above repeated %d more times]\n" % n


def _format_te(te, seen=None):
    seen = seen or set()
    seen.add(id(te))
    parts = []
    if te.__cause__ is not None and id(te.__cause__) not in seen:
        parts += _format_te(te.__cause__, seen)
        parts.append("\nThe above exception was the direct cause of the following exception:\n")
    elif (te.__context__ is not None and not te.__suppress_context__
          and id(te.__context__) not in seen):
        parts += _format_te(te.__context__, seen)
        parts.append("\nDuring handling of the above exception, another exception occurred:\n")
    frames = [f for f in te.stack if not _own_frame(f.filename)]
    head = te.exc_type.__qualname__ if te.exc_type else "Exception"
    if frames:
        rule = RED + "-" * 75 + RESET
        parts.append(rule + "\n" + RED + head.ljust(42) + RESET
                     + "Traceback (most recent call last)")
        # A frame repeated over and over (a recursion) is shown three times,
        # then counted, as Python's own traceback does.
        run_key, run_len = None, 0
        for f in frames:
            key = (f.filename, f.lineno, f.name)
            if key == run_key:
                run_len += 1
            else:
                if run_len > 3:
                    parts.append(_repeated(run_len - 3))
                run_key, run_len = key, 1
            if run_len <= 3:
                parts.append(_format_frame(f))
        if run_len > 3:
            parts.append(_repeated(run_len - 3))
    if issubclass(te.exc_type, SyntaxError) and te.filename is not None:
        parts.append(_format_syntax_error(te))
    else:
        last = "".join(te.format_exception_only()).rstrip("\n")
        name, sep, rest = last.partition(":")
        parts.append(RED + name + RESET + sep + rest if sep else RED + last + RESET)
    return parts


def _format_frame(f, context=2):
    label = cell_label(f.filename)
    where = (CYAN + label + RESET + ", line %d" % f.lineno) if label else \
        (GREEN + f.filename + RESET + ":%d, in %s" % (f.lineno, f.name))
    if label and f.name != "<module>":
        where += ", in " + f.name
    lines = [where]
    start = max(1, f.lineno - context)
    for n in range(start, f.lineno + context + 1):
        text = linecache.getline(f.filename, n)
        if not text:
            if n > f.lineno:
                break
            continue
        text = text.rstrip("\n")
        if n == f.lineno:
            lines.append(GREEN + "----> " + str(n).rjust(len(str(f.lineno + context))) + RESET
                         + " " + text)
        else:
            lines.append("      " + str(n).rjust(len(str(f.lineno + context))) + " " + text)
    return "\n".join(lines) + "\n"


def _format_syntax_error(te):
    label = cell_label(te.filename or "")
    where = (CYAN + label + RESET) if label else (GREEN + str(te.filename) + RESET)
    out = ["  " + where + ", line %s" % te.lineno]
    if te.text is not None:
        text = te.text.rstrip("\n")
        stripped = text.lstrip()
        out.append("    " + stripped)
        if te.offset is not None:
            offset = te.offset - (len(text) - len(stripped))
            end = te.end_offset - (len(text) - len(stripped)) if te.end_offset else offset + 1
            width = max(1, end - offset) if te.end_lineno == te.lineno else 1
            out.append("    " + " " * max(0, offset - 1) + "^" * width)
    msg = te.msg or ""
    out.append(RED + (te.exc_type.__qualname__) + RESET + ": " + msg)
    return "\n".join(out)


# --- other requests ---------------------------------------------------------------


def is_complete(req, buffers):
    from . import inputs
    status, indent = inputs.check_complete(req.get("content", {}).get("code", ""))
    content = {"status": status}
    if status == "incomplete":
        content["indent"] = indent
    return content


def complete(req, buffers):
    c = req.get("content", {})
    code, cursor = c.get("code", ""), c.get("cursor_pos")
    if cursor is None:
        cursor = len(code)
    try:
        from . import completion
        return completion.complete(code, cursor, user_ns)
    except Exception as e:
        _kernel.log("warning", "completion failed: %r" % (e,))
        return {"status": "ok", "matches": [], "cursor_start": cursor, "cursor_end": cursor,
                "metadata": {}}


def inspect(req, buffers):
    c = req.get("content", {})
    code, cursor = c.get("code", ""), c.get("cursor_pos")
    if cursor is None:
        cursor = len(code)
    try:
        from . import inspection
        return inspection.inspect(code, cursor, int(c.get("detail_level", 0) or 0), user_ns)
    except Exception as e:
        _kernel.log("warning", "inspection failed: %r" % (e,))
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}


def _comm(req, buffers):
    from . import comms
    if req.get("msg_type") == "comm_info_request":
        return comms.comm_info(req, buffers)
    return comms.handle(req, buffers)


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
INSTALLERS = ["display", "comms", "shell", "guard", "seeding"]


def _inherit_output_parent():
    """A thread started by a cell writes its output to that cell, even after
    the cell has ended (as ipykernel 7 does): it takes the output tag of the
    thread that started it."""
    start, bootstrap = threading.Thread.start, threading.Thread._bootstrap_inner

    def tagged_start(self):
        self._sandpit_tag = _kernel.current_tag()
        return start(self)

    def tagged_bootstrap_inner(self):
        _kernel.set_thread_tag(getattr(self, "_sandpit_tag", None))
        return bootstrap(self)

    threading.Thread.start = tagged_start
    threading.Thread._bootstrap_inner = tagged_bootstrap_inner


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
    _inherit_output_parent()
    import importlib
    for name in INSTALLERS:
        # One part failing to set up must not take the others with it.
        try:
            importlib.import_module("sandpit." + name).install(user_ns)
        except ModuleNotFoundError as e:
            if e.name != "sandpit." + name:
                _kernel.log("error", "cannot set up sandpit.%s: %r" % (name, e))
        except Exception as e:
            _kernel.log("error", "cannot set up sandpit.%s: %s" % (name, "".join(
                traceback.format_exception(type(e), e, e.__traceback__))))
    for name in ("_", "__", "___"):  # what the installers left is ours, not the user's
        user_ns.setdefault(name, "")
        _unders[name] = user_ns[name]
    signal.signal(signal.SIGINT, signal.default_int_handler)
