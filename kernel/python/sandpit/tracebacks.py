"""Layer 2, tracebacks: an exception as the client shows it, as IPython lays it out.

error_content(exc) is the ename, evalue and traceback of an error message or
reply: the class name (ZeroDivisionError, never str(type(exc))), the message,
and a list of strings in IPython's layout and colours, the frames of this
runtime left out, a cell's frames labelled "Cell In[n], line m" with the
lines around, a recursion shown three times then counted. What the sandbox
refused gets a note that says so (sandpit.guard). Every part is bounded in
size and nothing here can raise, whatever the exception holds: an evalue
whose __str__ fails is described instead.

The layout follows %xmode, as IPython's does: "Context" (the default: each
frame with two lines around the failing one), "Plain" (one line a frame, as
Python prints), "Verbose" (Context, with the values of the names on each
failing line) and "Minimal" (the exception alone). The code lines are
coloured with Pygments when it is installed, as IPython colours them; it is
imported at the first traceback, never for a MemoryError. An exception with
a _render_traceback_() method gives its own traceback, as under IPython.

traceback and linecache (with tokenize and textwrap, some 4 ms and 250 kB
of every worker's start) are imported at the first traceback. This module is
loaded at start-up all the same (sandpit.handlers): an error may be a
MemoryError, with no memory left to import them, and its traceback is then
laid out from the frames alone (bare_traceback: each frame's file, line and
function, no source lines), which needs nothing more.
"""

from . import execution
from . import guard

RED, GREEN, CYAN, BOLD, RESET = "\033[0;31m", "\033[0;32m", "\033[0;36m", "\033[1m", "\033[0m"


MODES = ("Plain", "Context", "Verbose", "Minimal")
_mode = "Context"
_highlight = None  # fn(lines) -> coloured lines; False once Pygments is found missing


def _own_frame(filename):
    return filename.startswith("<sandpit>/")


def mode():
    """The layout of tracebacks: one of MODES."""
    return _mode


def set_mode(name):
    """Sets the layout (%xmode), whatever the case of name; ValueError if unknown."""
    global _mode
    for m in MODES:
        if m.lower() == str(name).strip().lower():
            _mode = m
            return m
    raise ValueError("Valid modes: %s" % ", ".join(MODES))


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
    tb = _own_rendering(exc)
    if tb is None:
        tb = format_traceback(exc)
    total = 0
    for i, part in enumerate(tb):
        total += len(part)
        if total > MAX_TRACEBACK:
            tb = tb[:i] + ["[... %d more parts of the traceback were left out]"
                           % (len(tb) - i), tb[-1][:MAX_EVALUE]]
            break
    return {"ename": ename, "evalue": evalue, "traceback": tb}


def _own_rendering(exc):
    """What exc's _render_traceback_() gives (IPython's protocol), or None."""
    render = getattr(type(exc), "_render_traceback_", None)
    if not callable(render):
        return None
    try:
        tb = render(exc)
        return [safe_str(part) for part in tb] if isinstance(tb, (list, tuple)) else None
    except BaseException:
        return None


def format_traceback(exc):
    try:
        import linecache  # noqa: F401 (for the frames' lines, below)
        import traceback
    except BaseException:  # no memory for them: a MemoryError's traceback
        return bare_traceback(exc)
    try:
        te = traceback.TracebackException(type(exc), exc, exc.__traceback__,
                                          capture_locals=False, compact=True)
        colour = not isinstance(exc, MemoryError)
        return _format_te(te, exc, None, colour)
    except BaseException:
        try:
            return [safe_str(line) for line in
                    traceback.format_exception(type(exc), exc, exc.__traceback__)]
        except BaseException:
            return bare_traceback(exc)


def bare_traceback(exc):
    """exc's traceback from its frames alone, as Python lays it out without
    the source lines (this runtime's frames left out): what needs no module
    and next to no memory."""
    try:
        out = ["Traceback (most recent call last):\n"]
        tb = exc.__traceback__
        while tb is not None and len(out) < 200:
            code = tb.tb_frame.f_code
            if not _own_frame(code.co_filename):
                label = execution.cell_label(code.co_filename)
                where = ("%s, line %d" % (label, tb.tb_lineno) if label else
                         'File "%s", line %d, in %s' % (code.co_filename, tb.tb_lineno,
                                                       code.co_name))
                out.append("  %s\n" % where)
            tb = tb.tb_next
        text = safe_str(exc)
        out.append("%s: %s\n" % (type(exc).__name__, text) if text else
                   "%s\n" % type(exc).__name__)
        return out
    except BaseException:
        return ["%s (its traceback could not be formatted)" % type(exc).__name__]


def _repeated(n):
    return "[... the frame above repeated %d more times]\n" % n


def _frames(exc):
    """The frames of exc's traceback (with their line numbers), in the order
    of TracebackException.stack."""
    out, tb = [], getattr(exc, "__traceback__", None)
    while tb is not None and len(out) < 100000:
        out.append(tb.tb_frame)
        tb = tb.tb_next
    return out


def _format_te(te, exc, seen=None, colour=True):
    seen = seen or set()
    seen.add(id(te))
    parts = []
    cause = getattr(exc, "__cause__", None)
    context = getattr(exc, "__context__", None)
    if te.__cause__ is not None and id(te.__cause__) not in seen:
        parts += _format_te(te.__cause__, cause, seen, colour)
        parts.append("\nThe above exception was the direct cause of the following exception:\n")
    elif (te.__context__ is not None and not te.__suppress_context__
          and id(te.__context__) not in seen):
        parts += _format_te(te.__context__, context, seen, colour)
        parts.append("\nDuring handling of the above exception, another exception occurred:\n")
    stack = list(te.stack)
    live = _frames(exc) if _mode == "Verbose" else []
    if len(live) != len(stack):
        live = [None] * len(stack)
    frames = [(f, frame) for f, frame in zip(stack, live) if not _own_frame(f.filename)]
    head = te.exc_type.__qualname__ if te.exc_type else "Exception"
    if frames and _mode != "Minimal":
        if _mode == "Plain":
            parts.append("Traceback (most recent call last):")
        else:
            rule = RED + "-" * 75 + RESET
            parts.append(rule + "\n" + RED + head.ljust(42) + RESET
                         + "Traceback (most recent call last)")
        # A frame repeated over and over (a recursion) is shown three times,
        # then counted, as Python's own traceback does.
        run_key, run_len = None, 0
        for f, frame in frames:
            key = (f.filename, f.lineno, f.name)
            if key == run_key:
                run_len += 1
            else:
                if run_len > 3:
                    parts.append(_repeated(run_len - 3))
                run_key, run_len = key, 1
            if run_len <= 3:
                parts.append(_format_plain_frame(f) if _mode == "Plain"
                             else _format_frame(f, frame, colour=colour))
        if run_len > 3:
            parts.append(_repeated(run_len - 3))
    if issubclass(te.exc_type, SyntaxError) and te.filename is not None:
        parts.append(_format_syntax_error(te))
    else:
        last = "".join(te.format_exception_only()).rstrip("\n")
        name, sep, rest = last.partition(":")
        parts.append(RED + name + RESET + sep + rest if sep else RED + last + RESET)
    return parts


def _format_plain_frame(f):
    import linecache  # imported already by format_traceback
    label = execution.cell_label(f.filename)
    if label:
        place = "  %s, line %d" % (label, f.lineno) + (", in " + f.name
                                                     if f.name != "<module>" else "")
    else:
        place = '  File "%s", line %d, in %s' % (f.filename, f.lineno, f.name)
    text = (linecache.getline(f.filename, f.lineno) or "").strip()
    return place + ("\n    " + text if text else "")


def _highlighter():
    """A function colouring lines of Python for a terminal, or None without Pygments."""
    global _highlight
    if _highlight is None:
        _highlight = False
        try:
            from pygments import highlight
            from pygments.formatters import Terminal256Formatter
            from pygments.lexers import PythonLexer
            lexer, formatter = PythonLexer(stripnl=False, ensurenl=False), \
                Terminal256Formatter(style="default")

            def colour(lines):
                out = highlight("\n".join(lines), lexer, formatter).split("\n")
                return out if len(out) == len(lines) else lines
            _highlight = colour
        except Exception:  # not installed, or not working here: plain lines
            pass
    return _highlight or None


def _format_frame(f, frame=None, context=2, colour=True):
    import linecache  # imported already by format_traceback
    label = execution.cell_label(f.filename)
    where = (CYAN + label + RESET + ", line %d" % f.lineno) if label else \
        (GREEN + f.filename + RESET + ":%d, in %s" % (f.lineno, f.name))
    if label and f.name != "<module>":
        where += ", in " + f.name
    numbers, texts = [], []
    start = max(1, f.lineno - context)
    for n in range(start, f.lineno + context + 1):
        text = linecache.getline(f.filename, n)
        if not text:
            if n > f.lineno:
                break
            continue
        numbers.append(n)
        texts.append(text.rstrip("\n"))
    highlight = _highlighter() if colour and texts else None
    if highlight is not None:
        try:
            texts = highlight(texts)
        except Exception:
            pass
    width = len(str(f.lineno + context))
    lines = [where]
    for n, text in zip(numbers, texts):
        if n == f.lineno:
            lines.append(GREEN + "----> " + str(n).rjust(width) + RESET + " " + text)
        else:
            lines.append("      " + str(n).rjust(width) + " " + text)
    if frame is not None:
        lines += _values(frame, f)
    return "\n".join(lines) + "\n"


MAX_VALUE = 200  # characters of a value shown by %xmode Verbose


def _values(frame, f):
    """%xmode Verbose: "name = value" for the names the failing line uses."""
    import linecache  # imported already by format_traceback
    import re
    text = linecache.getline(f.filename, f.lineno)
    names = []
    for name in re.findall(r"(?<![\w.])[A-Za-z_]\w*", text):
        if name not in names:
            names.append(name)
    out = []
    try:
        scopes = (frame.f_locals, frame.f_globals)
    except Exception:
        return out
    for name in names:
        for scope in scopes:
            if name in scope:
                value = scope[name]
                if callable(value) or type(value).__name__ == "module":
                    break
                out.append("        %s %s= %s%s" % (name, CYAN, safe_str(
                    _repr(value), MAX_VALUE), RESET))
                break
    return out


def _repr(value):
    import reprlib
    r = reprlib.Repr()
    r.maxstring = r.maxother = MAX_VALUE
    try:
        return r.repr(value)
    except BaseException as e:
        return "<repr() failed: %s>" % type(e).__name__


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
