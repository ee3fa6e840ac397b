"""Layer 5, handlers: what the worker does for each kind of request.

HANDLERS maps a msg_type to a function that takes the request (a
sandpit.request Request, current in the calling thread) and returns the
content of its reply; the request loop (sandpit.runtime) sends it. An
exception in the user's code becomes an error reply here; anything else that
goes wrong is the loop's to report.

execute() is the path of a cell: its input kept in In and _i, the IPython
syntax translated (sandpit.inputs), the code run (sandpit.execution), its
error shown (sandpit.tracebacks) with the reason the supervisor gave for an
interrupt (the user, or the time limit), the figures left open shown
(sandpit.figures), IPython's pre- and post-cell events triggered
(sandpit.shell), user_expressions evaluated, the payloads and the count of
dropped output added to the reply.
"""

import sys

from . import display
from . import execution
from . import link
from . import shell
# Loaded at start-up, not at the first error: an error may be a MemoryError,
# and reporting it must not need memory for loading a module (tracebacks lays
# one out without the modules it imports at the first traceback).
from . import tracebacks

user_ns = execution.user_ns


# --- execute -----------------------------------------------------------------------


def execute(req):
    content = req.content
    code = content.get("code", "")
    if not isinstance(code, str):
        code = ""
    count = req.execution_count
    silent = req.silent
    store_history = req.store_history
    link.output_begin(req.msg_id, req.max_output)  # the output pump's cap, for this cell
    if store_history:
        execution.record_input(count, code)
    filename = execution.cell_filename(count)
    execution.register_source(filename, code)
    reply = {"status": "ok", "execution_count": count, "user_expressions": {}, "payload": []}
    events = _events()
    info = _ExecutionInfo(code, store_history, silent, req.metadata.get("cellId"))
    if events is not None:
        events.trigger("pre_execute")
        if not silent:
            events.trigger("pre_run_cell", info)
    error = None
    try:
        from . import inputs
        source = inputs.transform_cell(code)
        if source.strip():
            execution.run_code(source, filename, count, silent, store_history)
    except BaseException as e:
        exc = e
        if isinstance(e, (KeyboardInterrupt, TimeoutError)):
            # The supervisor's note says which it is: it comes before the signal.
            note = req.note(wait=0.2 if isinstance(e, KeyboardInterrupt) else 0)
            if note is not None and note["reason"] == "timeout":
                limit = note.get("limit") or req.timeout
                # The supervisor's words when it must restart the worker
                # (kernel/supervisor/limits.c) begin with the same ones.
                exc = TimeoutError("cell exceeded its time limit of %g s" % limit)
                exc.__traceback__ = e.__traceback__
            elif note is not None and type(e) is TimeoutError:
                exc = KeyboardInterrupt()
                exc.__traceback__ = e.__traceback__
        error = exc
        err = tracebacks.error_content(exc)
        if not silent:
            shell.report_error(exc, err)  # as the shell's hooks show it
        reply.update(status="error", **err)
        if isinstance(e, SystemExit):
            link.log("info", "the cell raised SystemExit; the worker carries on")
    # Only pyplot keeps open figures: without it there is nothing to show, and
    # sandpit.figures (with weakref) is not loaded for nothing.
    if "matplotlib.pyplot" in sys.modules:
        try:
            from . import figures
            figures.show_open_figures()
        except (Exception, KeyboardInterrupt) as e:
            link.log("warning", "could not show the cell's figures: %r" % (e,))
    # Looked up again: a callback the cell registered (%load_ext autoreload) sees
    # the end of that very cell, as in IPython, and notes what the cell imported.
    events = _events()
    if events is not None:
        try:
            events.trigger("post_execute")
            if not silent:
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
    # The one flush of a cell that publishes nothing: what it wrote is sent (each
    # display, result or error sent the output before it), then the reply.
    dropped = link.output_end(req.msg_id)  # what the pump dropped past the cap
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
    events = getattr(shell.get_ipython(), "events", None)
    if events is None or not any(events.callbacks.values()):
        return None
    return events


def user_expressions(exprs):
    results = {}
    for name, expr in (exprs.items() if isinstance(exprs, dict) else ()):
        try:
            value = eval(compile(str(expr), "<user_expression>", "eval"), user_ns)
            data, metadata = display.format_object(value)
            results[name] = {"status": "ok", "data": data, "metadata": metadata}
        except BaseException as e:
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
        return inspection.inspect(code, cursor, detail, user_ns, shell.find_magic)
    except Exception as e:
        link.log("warning", "inspection failed: %r" % (e,))
        return {"status": "ok", "found": False, "data": {}, "metadata": {}}


def _comm(req):
    from . import comms  # loaded with the first comm message, not at start
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
