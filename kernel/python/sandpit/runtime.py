"""The worker's request loop: one request in, events and one reply out.

serve() reads requests from the supervisor and answers each with exactly one
"reply" frame, whatever happens in between: an exception in the user's code
becomes an error reply, an exception in this runtime becomes an error reply
that says so (and a line in the kernel log), a KeyboardInterrupt that
arrives between requests is dropped.

A cell runs in the one __main__ namespace, kept for the worker's life. It is
parsed once; every statement but a trailing expression is executed as a
module, and the trailing expression is compiled in "single" mode so that its
value goes through sys.displayhook, which publishes execute_result. Top-level
await works as in IPython.
"""

import ast
import builtins
import linecache
import os
import signal
import sys
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

# Frames received while waiting for something else (an input reply, an
# interrupt note); handled by serve() before reading the link again.
_backlog = []
# Set when the supervisor says the current cell's interrupt is its time limit.
_timeout_note = None
_loop = None  # the event loop for top-level await, made on first use
_cell_serial = 0


# --- the loop --------------------------------------------------------------------


def serve(hello):
    """Says hello, then answers requests until the supervisor closes the link."""
    _sandpit.send(hello.encode())
    while True:
        try:
            frame = _next_frame()
        except KeyboardInterrupt:
            continue  # an interrupt that arrived between cells
        except EOFError:
            return 0
        try:
            handle(frame)
        except KeyboardInterrupt:
            _kernel.log("warning", "an interrupt arrived after the cell had finished")
        except BaseException as e:  # this runtime's own failure
            _kernel.log("error", "runtime failure: " + "".join(
                traceback.format_exception(type(e), e, e.__traceback__)))
            if _kernel.current is not None:
                _reply({"status": "error", "ename": type(e).__name__, "evalue": str(e),
                        "traceback": []})


def _next_frame():
    if _backlog:
        return _backlog.pop(0)
    raw, buffers = _sandpit.recv(True)
    return _kernel_loads(raw), buffers


def _kernel_loads(raw):
    import json
    return json.loads(raw)


def poll_link():
    """Reads frames already waiting on the link, without blocking. Interrupt
    notes are taken note of; other frames wait in the backlog."""
    global _timeout_note
    if _sandpit is None:
        return
    while True:
        got = _sandpit.recv(False)
        if got is None:
            return
        obj = _kernel_loads(got[0])
        if obj.get("type") == "interrupt":
            if obj.get("reason") == "timeout":
                _timeout_note = obj
        else:
            _backlog.append((obj, got[1]))


def wait_for(kind):
    """Blocks until a frame of type kind arrives; others go to the backlog.
    KeyboardInterrupt (a user interrupt) propagates to the caller."""
    global _timeout_note
    while True:
        raw, buffers = _sandpit.recv(True)
        obj = _kernel_loads(raw)
        if obj.get("type") == kind:
            return obj, buffers
        if obj.get("type") == "interrupt":
            if obj.get("reason") == "timeout":
                _timeout_note = obj
            continue
        _backlog.append((obj, buffers))


def handle(frame):
    global _timeout_note
    obj, buffers = frame
    kind = obj.get("type")
    if kind == "interrupt":
        return  # a note for a cell that has already ended
    if kind == "input_reply":
        return  # an answer that came after its cell was interrupted
    if kind != "request":
        _kernel.log("warning", "unexpected frame from the supervisor: %r" % (kind,))
        return
    _timeout_note = None
    _kernel.current = obj
    _kernel.payloads = []
    try:
        handler = HANDLERS.get(obj.get("msg_type"))
        if handler is None:
            content = {"status": "error", "ename": "NotImplementedError",
                       "evalue": "the worker does not handle %s" % obj.get("msg_type"),
                       "traceback": []}
        else:
            content = handler(obj, buffers)
        _reply(content)
    finally:
        _kernel.current = None


def _reply(content, metadata=None):
    _kernel.flush()
    frame = {"type": "reply", "content": content}
    if metadata:
        frame["metadata"] = metadata
    _kernel.send(frame)


# --- execute -----------------------------------------------------------------------


def _cell_filename(count):
    global _cell_serial
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


def displayhook_for(count, silent, store_history):
    def hook(value):
        if value is None:
            return
        if store_history:
            user_ns["___"] = user_ns.get("__", "")
            user_ns["__"] = user_ns.get("_", "")
            user_ns["_"] = value
            user_ns["_%d" % count] = value
            out = user_ns.setdefault("Out", {})
            if isinstance(out, dict):
                out[count] = value
        else:
            user_ns["_"] = value
        if silent:
            return
        from . import display
        data, metadata = display.format_object(value)
        _kernel.publish("execute_result",
                        {"execution_count": count, "data": data, "metadata": metadata})
    return hook


def execute(req, buffers):
    global _timeout_note
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
        user_ns["_iii"] = user_ns.get("_ii", "")
        user_ns["_ii"] = user_ns.get("_i", "")
        user_ns["_i"] = code
        user_ns["_i%d" % count] = code
    filename = _cell_filename(count)
    _register_source(filename, code)
    reply = {"status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}
    try:
        from . import inputs
        source = inputs.transform_cell(code)
        if source.strip():
            run_code(source, filename, count, silent, store_history)
        _kernel.flush()
    except BaseException as e:
        exc = e
        if isinstance(e, KeyboardInterrupt):
            poll_link()
            if _timeout_note is not None:
                exc = TimeoutError(
                    "cell exceeded its time limit of %g s" % _timeout_note.get("limit", 0))
                exc.__traceback__ = e.__traceback__
        _kernel.flush()
        err = error_content(exc)
        if not silent:
            _kernel.publish("error", err)
        reply.update(status="error", **err)
        if isinstance(e, SystemExit):
            _kernel.log("info", "the cell raised SystemExit; the worker carries on")
    try:
        from . import figures
        figures.show_open_figures()
    except Exception as e:
        _kernel.log("warning", "could not show the cell's figures: %r" % (e,))
    if reply["status"] == "ok":
        reply["user_expressions"] = user_expressions(content.get("user_expressions") or {})
    reply["payload"] = list(_kernel.payloads)
    if _sandpit is not None:
        _kernel.flush()
        dropped = _sandpit.output_reset(int(req.get("max_output") or 0))
        if dropped:
            reply["sandpit_dropped"] = dropped
    return reply


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


def error_content(exc):
    """ename, evalue and an IPython-style traceback (a list of strings)."""
    ename = type(exc).__name__
    try:
        evalue = str(exc)
    except Exception:
        evalue = "<exception str() failed>"
    return {"ename": ename, "evalue": evalue, "traceback": format_traceback(exc)}


def format_traceback(exc):
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__,
                                          capture_locals=False, compact=True)
        return _format_te(te)
    except Exception:
        return traceback.format_exception(type(exc), exc, exc.__traceback__)


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
        for f in frames:
            parts.append(_format_frame(f))
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
INSTALLERS = ["display", "comms", "shell"]


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
    import importlib
    for name in INSTALLERS:
        try:
            module = importlib.import_module("sandpit." + name)
        except ModuleNotFoundError as e:
            if e.name != "sandpit." + name:
                raise
            continue
        module.install(user_ns)
    signal.signal(signal.SIGINT, signal.default_int_handler)
