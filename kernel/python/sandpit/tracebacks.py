"""Layer 2, tracebacks: an exception as the client shows it, as IPython lays it out.

error_content(exc) is the ename, evalue and traceback of an error message or
reply: the class name (ZeroDivisionError, never str(type(exc))), the message,
and a list of strings in IPython's layout and colours, the frames of this
runtime left out, a cell's frames labelled "Cell In[n], line m" with the
lines around, a recursion shown three times then counted. What the sandbox
refused gets a note that says so (sandpit.guard). Every part is bounded in
size and nothing here can raise, whatever the exception holds: an evalue
whose __str__ fails is described instead.
"""

import linecache
import traceback

from . import execution
from . import guard

RED, GREEN, CYAN, BOLD, RESET = "\033[0;31m", "\033[0;32m", "\033[0;36m", "\033[1m", "\033[0m"


def _own_frame(filename):
    return filename.startswith("<sandpit>/")


MAX_EVALUE = 64 * 1024       # characters of an error's message sent
MAX_TRACEBACK = 1024 * 1024  # characters of a traceback sent


def safe_str(obj, limit=MAX_EVALUE):
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
        note = guard.explain(exc)
        if note and note not in getattr(exc, "__notes__", ()):
            exc.add_note(note)
    except BaseException:
        pass
    ename = type(exc).__name__
    evalue = safe_str(exc)
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
            return [safe_str(line) for line in
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
    label = execution.cell_label(f.filename)
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
    label = execution.cell_label(te.filename or "")
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
