"""Layer 4, completion: what may be typed at the cursor, for complete_request.

complete(code, cursor_pos, user_ns) decides first what is being typed, from
the cell up to the cursor (inputs.Lexer follows its strings and brackets):

- a magic name ("%ti"), or a magic's argument: folders for %cd, files for
  %%writefile and %run, backends for %matplotlib, Python for %time;
- inside a string: the keys of the dictionary being indexed (d["al"), or
  else file paths relative to the working folder (open("data/tr");
- a module's name after import or from: the dotted name whole
  ("import json.deco" gives "json.decoder"), as IPython completes it;
- Python: jedi when it can be imported (jedi.Interpreter on the live
  namespace: it runs no process), otherwise the standard library's means:
  names of the namespace and builtins, attributes of a dotted name (looked up,
  never called), module names after import/from, dictionary keys after d[,
  keyword arguments of the function whose parentheses the cursor is in.

Every match replaces the same span, [cursor_start, cursor_end), as the
protocol requires; metadata._jupyter_types_experimental gives each match's
type and, for functions, signature, as ipykernel does. jedi is imported on
the first request (never for execute_request); if it is missing or fails,
completion falls back quietly. Computing jedi's types is given a time budget
like IPython's (0.4 s); matches beyond it are typed "<unknown>".

jedi infers what a call returns without making it (df.groupby("x").ag gives
agg and aggregate, from pandas' source), and is told never to run a property
either (its Interpreter would by default). Reading a large library's source
the first time takes seconds, though, so jedi runs in a thread of its own and
is waited for a while only (JEDI_BUDGET, and up to JEDI_PATIENCE where the
plain way has nothing to offer, as after a call): past that the plain way
answers, and jedi goes on to fill its cache, so that a later Tab gets its
answer at once. One jedi runs at a time.
"""

import builtins
import keyword
import os
import re
import sys
import threading
import time

from . import inputs
from . import link

TYPES_KEY = "_jupyter_types_experimental"
TYPE_BUDGET = 0.4
MAX_PATHS = 1000
JEDI_BUDGET = 0.5    # seconds a request waits for jedi before trying the plain way
JEDI_PATIENCE = 4.0  # in all, when the plain way has nothing (within the 5 s limit)
_jedi_busy = threading.Lock()  # held while a jedi thread runs: jedi is not thread-safe

_jedi = None  # the jedi module once imported; False when it cannot be used


def _get_jedi():
    global _jedi
    if _jedi is None:
        _jedi = False
        try:
            import jedi
            _configure_jedi(jedi)
            _jedi = jedi
        except Exception as e:  # not installed, or broken: complete without it
            link.log("info", "completion without jedi: %r" % (e,))
    return _jedi


def _configure_jedi(jedi):
    """jedi and parso cache what they parse: under TMPDIR, the one writable
    place outside the workspace."""
    import pathlib
    import tempfile
    base = tempfile.gettempdir()
    jedi.settings.cache_directory = os.path.join(base, "jedi")
    jedi.settings.case_insensitive_completion = False
    # Its Interpreter would run properties to see what they give: user code.
    jedi.Interpreter._allow_descriptor_getattr_default = False
    try:
        import parso.cache
        parso.cache._default_cache_path = pathlib.Path(base, "parso")
    except Exception:
        pass


def use_jedi():
    """False when %config Completer.use_jedi = False said so."""
    try:
        from . import shell
        config = shell.get_ipython().config
    except Exception:
        return True
    for cls in ("IPCompleter", "Completer"):
        if config.get(cls, {}).get("use_jedi") is False:
            return False
    return True


class Match:
    __slots__ = ("text", "type", "signature")

    def __init__(self, text, type_="<unknown>", signature=""):
        self.text, self.type, self.signature = text, type_, signature


def _reply(matches, start, end):
    seen, out = set(), []
    for m in matches:
        if m.text not in seen:
            seen.add(m.text)
            out.append(m)
    return {"status": "ok", "matches": [m.text for m in out], "cursor_start": start,
            "cursor_end": end,
            "metadata": {TYPES_KEY: [{"start": start, "end": end, "text": m.text,
                                      "type": m.type, "signature": m.signature}
                                     for m in out]}}


def complete(code, cursor_pos, user_ns):
    """The content of a complete_reply for code with the cursor at cursor_pos."""
    cursor = max(0, min(int(cursor_pos), len(code)))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        matches, start = _complete(code, cursor, user_ns)
    if not matches:
        return _reply([], cursor, cursor)
    return _reply(matches, start, cursor)


# --- where the cursor is ---------------------------------------------------------------


class Context:
    """What the lexer knows at the cursor."""

    def __init__(self, code, cursor):
        self.code, self.cursor = code, cursor
        before = code[:cursor]
        lines = before.split("\n")
        lexer = inputs.Lexer()
        self.statement_lines = []  # (offset, text) of lines that start a statement
        offset = 0
        self.line_start = 0
        self.at_statement_start = True
        self.in_comment = False
        for i, line in enumerate(lines):
            last = i == len(lines) - 1
            text = line.rstrip("\r")
            start = lexer.at_statement_start
            if last:
                self.line_start = offset
                self.at_statement_start = start
            if start:
                self.statement_lines.append((offset, text))
            comment = lexer.feed(text, partial=last)
            if last and comment < len(text):
                self.in_comment = True
            offset += len(line) + 1
            lexer.base = offset
        self.quote = lexer.quote
        self.string_start = lexer.string_start
        self.brackets = list(lexer.brackets)
        self.line = code[self.line_start:cursor]
        # a cell magic's name, and where its line ends
        self.cell_magic, self.first_line_end = None, -1
        m = re.match(r"(?:[ \t]*\n)*%%(\w+)[^\n]*", code)
        if m:
            self.cell_magic, self.first_line_end = m.group(1), m.end()


def _complete(code, cursor, user_ns):
    ctx = Context(code, cursor)
    if ctx.in_comment:
        return [], cursor
    # the body of a cell magic that is not Python
    if ctx.cell_magic and cursor > ctx.first_line_end >= 0 \
            and ctx.cell_magic not in ("time", "timeit", "capture", "prun"):
        return [], cursor
    if ctx.quote is not None:
        return _in_string(ctx, user_ns)
    stripped = ctx.line.lstrip()
    if ctx.at_statement_start and stripped.startswith(("%", "!")):
        return _magic_line(ctx, stripped, user_ns)
    return _python(ctx, user_ns)


# --- magics -------------------------------------------------------------------------------


def _magic_line(ctx, stripped, user_ns):
    from . import shell
    magics = shell.load_magics()
    cursor = ctx.cursor
    if stripped.startswith("!"):
        return [], cursor
    m = re.match(r"^(%%?)(\w*)$", stripped)
    if m:
        escape, prefix = m.groups()
        first_line = ctx.code[:ctx.line_start].strip() == ""
        names = []
        if escape == "%":
            names += ["%" + n for n in magics.LINE if n.startswith(prefix)]
        if first_line:
            names += ["%%" + n for n in magics.CELL if n.startswith(prefix)]
        names.sort(key=lambda n: (n.lstrip("%").lower(), len(n)))
        return [Match(n, "magic") for n in names], cursor - len(stripped)
    m = re.match(r"^(%%?)(\w+)\s+(.*)$", stripped)
    if not m:
        return [], cursor
    escape, name, args = m.groups()
    if name in ("time", "timeit", "prun"):
        return _python(ctx, user_ns, blank=len(ctx.line) - len(args))
    if name == "cd":
        return _paths(args.strip().strip("'\""), cursor, dirs_only=True)
    if name in ("writefile", "file", "run", "load"):
        word = args.split(" ")[-1]
        return _paths(word.strip("'\""), cursor,
                      suffixes=(".py", ".ipy") if name == "run" else None)
    if name == "matplotlib":
        word = args.split(" ")[-1]
        return [Match(b, "backend") for b in magics._BACKENDS
                if b.startswith(word)], cursor - len(word)
    if name in ("load_ext", "reload_ext", "unload_ext"):
        word = args.strip()
        found = sorted(set(magics.ACCEPTED_EXTENSIONS) | set(_modules([], word)))
        return [Match(n, "module") for n in found if n.startswith(word)], cursor - len(word)
    return [], cursor


# --- strings: dictionary keys and paths ----------------------------------------------------


def _in_string(ctx, user_ns):
    cursor = ctx.cursor
    start = ctx.string_start
    content = ctx.code[start:cursor]
    if "\n" in content:
        return [], cursor
    quote = ctx.quote
    # the opening quote, its prefix letters, and what comes before them
    head = ctx.code[:start - len(quote)]
    prefix_letters = re.search(r"[A-Za-z]*$", head).group(0)
    head = head[:len(head) - len(prefix_letters)].rstrip()
    if head.endswith("[") and "f" not in prefix_letters.lower():
        obj = _lookup(_dotted_before(head[:-1]), user_ns)
        if obj is not _MISSING:
            keys = _keys(obj)
            if keys is not None:
                out = []
                want_bytes = "b" in prefix_letters.lower()
                for k in keys:
                    if isinstance(k, bytes) != want_bytes or not isinstance(k, (str, bytes)):
                        continue
                    text = k.decode("latin-1") if isinstance(k, bytes) else k
                    if text.startswith(content):
                        out.append(Match(_escape(text, quote[0]), "dict key"))
                return out, start
    return _paths(content, cursor)


def _escape(text, quote):
    return text.replace("\\", "\\\\").replace(quote, "\\" + quote)


def _keys(obj):
    """The keys of a mapping (or a pandas object's columns), or None."""
    try:
        if isinstance(obj, dict):
            return list(obj.keys())
        if type(obj).__module__.startswith("pandas") and hasattr(obj, "columns"):
            return list(obj.columns)
        keys = getattr(obj, "keys", None)
        if callable(keys) and hasattr(obj, "__getitem__"):
            return list(keys())
    except Exception:
        return None
    return None


def _paths(content, cursor, dirs_only=False, suffixes=None):
    """Files and folders that complete content, a path typed so far."""
    if content.startswith("~"):
        return [], cursor
    folder, _, base = content.rpartition("/")
    if content.startswith("/") and not folder:
        folder = "/"
    head = content[:len(content) - len(base)]
    try:
        entries = os.listdir(folder or ".")
    except OSError:
        return [], cursor
    out = []
    for name in sorted(entries, key=str.lower):
        if not name.startswith(base) or (name.startswith(".") and not base.startswith(".")):
            continue
        full = os.path.join(folder or ".", name)
        is_dir = os.path.isdir(full)
        if dirs_only and not is_dir:
            continue
        if suffixes and not is_dir and not name.endswith(suffixes):
            continue
        out.append(Match(head + name + ("/" if is_dir else ""), "path"))
        if len(out) >= MAX_PATHS:
            break
    return out, cursor - len(content)


# --- Python ----------------------------------------------------------------------------------


_MISSING = object()


def _dotted_before(text):
    """The dotted name that text ends with ('' if none)."""
    m = re.search(r"([A-Za-z_]\w*(?:\s*\.\s*[A-Za-z_]\w*)*)\s*$", text)
    if not m:
        return ""
    start = m.start(1)
    if start > 0 and text[start - 1] == ".":
        return ""  # f().x: not a name that can be looked up without a call
    return re.sub(r"\s+", "", m.group(1))


def _lookup(dotted, user_ns):
    """The object a dotted name refers to, read without calling anything
    (properties are not run); _MISSING if it cannot be found that way."""
    if not dotted:
        return _MISSING
    head, *rest = dotted.split(".")
    if head in user_ns:
        obj = user_ns[head]
    elif hasattr(builtins, head):
        obj = getattr(builtins, head)
    else:
        return _MISSING
    import inspect
    for part in rest:
        try:
            static = inspect.getattr_static(obj, part)
        except AttributeError:
            static = _MISSING
        if isinstance(static, property) or type(static).__name__ == "cached_property":
            return _MISSING
        try:
            obj = getattr(obj, part)
        except Exception:
            return _MISSING
    return obj


def _python_view(ctx, blank=0):
    """The cell up to the cursor with IPython syntax blanked out (same length,
    so positions hold) for jedi; blank: the first columns of the cursor's
    line to blank (a %time prefix)."""
    code = ctx.code[:ctx.cursor]
    chars = list(code)
    for offset, text in ctx.statement_lines:
        stripped = text.lstrip()
        if offset == ctx.line_start:
            continue
        if stripped.startswith(("%", "!", "?")):
            for i in range(offset, offset + len(text)):
                chars[i] = " "
        elif text.rstrip().endswith("?"):
            end = offset + len(text.rstrip())
            while end > offset and chars[end - 1] == "?":
                chars[end - 1] = " "
                end -= 1
        else:
            m = re.search(r"=\s*[%!]", text)
            if m and inputs._ASSIGN.match(stripped):
                for i in range(offset + m.start() + 1, offset + len(text)):
                    chars[i] = " "
    for i in range(ctx.line_start, ctx.line_start + blank):
        chars[i] = " "
    return "".join(chars)


# The module name being typed after "import" (also in "import a, b") or
# "from": IPython completes it whole, "json.deco" to "json.decoder".
_MODULE_NAME = re.compile(r"^\s*(?:import\s+(?:[\w.]+\s*,\s*)*|from\s+)([\w.]*)$")


def _python(ctx, user_ns, blank=0):
    m = _MODULE_NAME.match(ctx.line[blank:])
    if m and ctx.at_statement_start:
        word = m.group(1)
        parts = word.split(".")
        head = ".".join(parts[:-1]) + "." if len(parts) > 1 else ""
        return ([Match(head + n, "module") for n in _modules(parts[:-1], parts[-1])],
                ctx.cursor - len(word))
    jedi = _get_jedi() if use_jedi() else False
    if not jedi:
        return _plain_matches(ctx, user_ns, blank)
    started = time.monotonic()
    pending = _JediThread(jedi, ctx, user_ns, blank)
    try:
        found = pending.wait(JEDI_BUDGET)
        if found is not None and found[0]:
            return found
        plain = _plain_matches(ctx, user_ns, blank)
        if found is not None or plain[0]:
            return plain
        # Nothing the plain way (a call: f().x; a name a statement of this cell
        # imports): jedi is given longer.
        found = pending.wait(JEDI_PATIENCE - (time.monotonic() - started))
        return found if found is not None and found[0] else plain
    except BaseException:
        # The request's limit (a __dir__ that loops): jedi is stopped too, or it
        # would spin on in its thread.
        pending.stop()
        raise


class _JediThread:
    """jedi's matches, computed in a thread of its own. A jedi that is late goes
    on alone (filling its cache); a request that comes meanwhile waits for it
    as long as it would wait for its own."""

    def __init__(self, jedi, ctx, user_ns, blank):
        self.args = (jedi, ctx, user_ns, blank)
        self.result = None
        self.started = False
        self.thread = None
        self.done = threading.Event()

    def _run(self, jedi, ctx, user_ns, blank):
        try:
            self.result = _jedi_matches(jedi, ctx, user_ns, blank)
        except BaseException as e:
            self.result = ([], ctx.cursor)
            link.log("warning", "jedi could not complete: %r" % (e,))
        finally:
            _jedi_busy.release()
            self.done.set()

    def stop(self):
        """Raises KeyboardInterrupt in the thread, at its next line of Python."""
        if self.thread is None or self.done.is_set() or self.thread.ident is None:
            return
        try:
            import ctypes
            ctypes.pythonapi.PyThreadState_SetAsyncExc(
                ctypes.c_ulong(self.thread.ident), ctypes.py_object(KeyboardInterrupt))
        except Exception as e:
            link.log("warning", "could not stop jedi's thread: %r" % (e,))

    def wait(self, seconds):
        """(matches, start) once jedi has answered ([] if it could not), or None
        while it has not (or an earlier request's jedi is still at work)."""
        deadline = time.monotonic() + max(0.0, seconds)
        if not self.started:
            if not _jedi_busy.acquire(timeout=max(0.0, seconds)):
                return None
            self.started = True
            try:
                self.thread = threading.Thread(target=self._run, args=self.args,
                                               name="sandpit-completion", daemon=True)
                self.thread.start()
            except RuntimeError:  # no thread to be had (the pids limit)
                _jedi_busy.release()
                self.result = ([], self.args[1].cursor)
                self.done.set()
        if not self.done.wait(max(0.0, deadline - time.monotonic())):
            return None
        return self.result


def _jedi_matches(jedi, ctx, user_ns, blank):
    view = _python_view(ctx, blank)
    lines = view.split("\n")
    line, column = len(lines), len(lines[-1])
    completions = jedi.Interpreter(view, [user_ns]).complete(line, column)
    if view[-1:] == ".":
        completions = [c for c in completions if not c.name.startswith("_")]
    if not completions:
        return [], ctx.cursor
    deadline = time.monotonic() + TYPE_BUDGET
    raw = []
    for c in completions:
        text = c.name_with_symbols
        start = ctx.cursor - (len(text) - len(c.complete))
        type_, signature = "<unknown>", ""
        if time.monotonic() < deadline:
            try:
                type_ = c.type
                if type_ == "function":
                    sigs = c.get_signatures()
                    signature = ("(" + sigs[0].to_string().split("(", 1)[1]) if sigs else "(?)"
            except Exception:
                pass
        raw.append((start, text, type_, signature))
    start = min(r[0] for r in raw)
    out = []
    for s, text, type_, signature in raw:
        out.append(Match(ctx.code[start:s] + text, type_, signature))
    return out, start


def _plain_matches(ctx, user_ns, blank):
    """Completion with the standard library only."""
    line = ctx.line[blank:]
    cursor = ctx.cursor
    # import x.y / from x.y import z
    m = re.match(r"^\s*(?:from\s+([\w.]+)\s+import\s+(?:.*,\s*)?|import\s+(?:.*,\s*)?|"
                 r"from\s+)([\w.]*)$", line)
    if m and ctx.at_statement_start:
        package, word = m.group(1), m.group(2)
        if package is not None:
            return _from_import(package, word, user_ns), cursor - len(word)
        parts = word.split(".")
        found = _modules(parts[:-1], parts[-1])
        head = ".".join(parts[:-1]) + "." if len(parts) > 1 else ""
        return [Match(head + n, "module") for n in found], cursor - len(word)
    m = re.search(r"\.\s*(\w*)$", line)
    if m:  # an attribute: of a dotted name only, which can be looked up safely
        prefix = m.group(1)
        obj = _lookup(_dotted_before(line[:m.start()]), user_ns)
        if obj is _MISSING:
            return [], cursor
        out = [Match(n, *_describe(_safe_getattr(obj, n))) for n in _attributes(obj)
               if n.startswith(prefix) and (prefix.startswith("_") or not n.startswith("_"))]
        return out, cursor - len(prefix)
    m = re.search(r"(\w*)$", line)
    prefix = m.group(1) if m else ""
    if prefix[:1].isdigit():
        return [], cursor
    out = []
    out += _keyword_args(ctx, user_ns, prefix)
    out += _dict_keys_unquoted(ctx, user_ns, prefix)
    names = set(user_ns) | set(dir(builtins))
    values = []
    for n in names:
        if n.startswith(prefix):
            value = user_ns[n] if n in user_ns else getattr(builtins, n, None)
            values.append(Match(n, *_describe(value)))
    values += [Match(k, "keyword") for k in keyword.kwlist if k.startswith(prefix)
               and k not in names]
    values.sort(key=lambda m: _order(m.text))
    return out + values, cursor - len(prefix)


def _order(name):
    return (name.startswith("__"), name.startswith("_"), name.lower())


def _safe_getattr(obj, name):
    import inspect
    try:
        static = inspect.getattr_static(obj, name)
        if isinstance(static, property):
            return static
    except AttributeError:
        pass
    try:
        return getattr(obj, name)
    except Exception:
        return None


def _attributes(obj):
    try:
        return sorted(set(dir(obj)), key=_order)
    except Exception:
        return []


def _describe(value):
    """(type, signature) of a value, in jedi's words."""
    import inspect
    if inspect.ismodule(value):
        return "module", ""
    if inspect.isclass(value):
        return "class", ""
    if isinstance(value, property):
        return "property", ""
    if callable(value) and (inspect.isroutine(value) or hasattr(value, "__signature__")):
        try:
            return "function", str(inspect.signature(value))
        except (TypeError, ValueError):
            return "function", "(?)"
    return "instance", ""


def _keyword_args(ctx, user_ns, prefix):
    """name= for the parameters of the function whose call the cursor is in."""
    import inspect
    if not ctx.brackets or ctx.brackets[-1][0] != "(":
        return []
    callee = _dotted_before(ctx.code[:ctx.brackets[-1][1]])
    fn = _lookup(callee, user_ns)
    if fn is _MISSING or not callable(fn):
        return []
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        return []
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    return [Match(p.name + "=", "param") for p in sig.parameters.values()
            if p.kind in kinds and p.name.startswith(prefix)]


def _dict_keys_unquoted(ctx, user_ns, prefix):
    """d[ : the keys of d, written as Python literals."""
    if not ctx.brackets or ctx.brackets[-1][0] != "[":
        return []
    pos = ctx.brackets[-1][1]
    if ctx.code[pos + 1:ctx.cursor].strip() != prefix:
        return []
    obj = _lookup(_dotted_before(ctx.code[:pos]), user_ns)
    keys = _keys(obj) if obj is not _MISSING else None
    if not keys:
        return []
    out = []
    for k in keys:
        if isinstance(k, (str, bytes, int, float, bool)) or k is None:
            text = repr(k)
            if text.startswith(prefix):
                out.append(Match(text, "dict key"))
    return out


def _modules(parents, prefix):
    """Names of the modules in package parents (top-level ones when empty)
    that start with prefix, found on disk without importing anything."""
    import importlib.util
    import pkgutil
    if parents:
        # what is imported already under that name (os.path, which no folder holds)
        dotted = ".".join(parents) + "."
        names = {key[len(dotted):] for key in list(sys.modules)
                 if key.startswith(dotted) and "." not in key[len(dotted):]}
        try:
            spec = importlib.util.find_spec(parents[0])
        except (ImportError, ValueError):
            spec = None
        locations = list(getattr(spec, "submodule_search_locations", None) or [])
        for part in parents[1:]:
            locations = [os.path.join(loc, part) for loc in locations
                         if os.path.isdir(os.path.join(loc, part))]
        if locations:
            names |= {m.name for m in pkgutil.iter_modules(locations)}
    else:
        names = {m.name for m in pkgutil.iter_modules()} | set(sys.builtin_module_names)
    return sorted(n for n in names if n.startswith(prefix) and
                  (prefix.startswith("_") or not n.startswith("_")))


def _from_import(package, word, user_ns):
    """from package import word: its submodules, and its names if it is imported."""
    parts = package.split(".")
    out = [Match(n, "module") for n in _modules(parts, word)]
    module = sys.modules.get(package)
    if module is not None:
        for name in _attributes(module):
            if name.startswith(word) and (word.startswith("_") or not name.startswith("_")):
                out.append(Match(name, *_describe(getattr(module, name, None))))
    out.sort(key=lambda m: _order(m.text))
    return out
