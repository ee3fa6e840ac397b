"""Layer 2, execution: compiling and running a cell's Python, and its result.

A cell runs in the one __main__ namespace, kept for the worker's life and
shared by the subshells. It is parsed once; every statement but a trailing
expression is executed as a module, and the trailing expression is compiled
in "single" mode, so that its value goes through sys.displayhook, unless a
semicolon ends the cell. Top-level await works as in IPython: code that
awaits is a coroutine, run to its end on an event loop that belongs to the
thread running it (the main shell's, or a subshell's), so that two shells can
await at the same time.

sys.displayhook is set once, to displayhook(), which reads what the running
cell is (its count, silent, store_history) from its context: a subshell's
cell and the main shell's never take each other's. It keeps _, __, ___, _N
and Out as IPython does, then hands the value to the callback registered
with on_result() (the display layer formats and publishes it).

Cells are compiled under the filename "<cell-N-S>" (execution count N, serial
S), their source kept for linecache: cell_label() turns it into "Cell In[N]"
for tracebacks and inspection. linecache (with tokenize) is imported at the
first traceback, not at start-up: the sources wait in `sources` until then
(import_hooks.patch_linecache puts them in).
"""

# The syntax tree's classes and flags, from the C module that the ast module
# re-exports: that module's own helpers (visitors, unparsing, literal_eval)
# are not needed here, and importing it cost some 2 ms and 300 kB of every
# worker's start. A cell that imports ast gets it as usual.
import _ast as ast
import contextvars
import sys
import threading
import warnings

FLAGS = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
CO_COROUTINE = 0x80

user_ns = sys.modules["__main__"].__dict__

_serial = 0
_serial_lock = threading.Lock()
_loops = threading.local()    # .loop: this thread's event loop for top-level await
_target = contextvars.ContextVar("sandpit_cell", default=None)  # the running cell's _Cell
_on_result = None             # fn(value, count): shows a cell's result
_unders = {}                  # the values the hook last gave _, __ and ___
_previous_input = ""          # the last stored cell's input, for _i


# --- names and sources -----------------------------------------------------------------


def cell_filename(count):
    """A filename of its own for the code of cell count."""
    global _serial
    with _serial_lock:
        _serial += 1
        return "<cell-%d-%d>" % (count, _serial)


def cell_label(filename):
    """'Cell In[3]' for a cell's filename, None for any other file."""
    if filename.startswith("<cell-") and filename.endswith(">"):
        return "Cell In[%s]" % filename[6:-1].split("-")[0]
    return None


# filename -> linecache's entry for it, for the sources registered here.
sources = {}


def register_source(filename, code):
    """Keeps code for linecache under filename, for tracebacks and inspection."""
    lines = code.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    entry = sources[filename] = (len(code), None, lines, filename)
    # While another shell's thread imports linecache, the module is in
    # sys.modules without its cache: import_hooks.patch_linecache puts this
    # entry in once the module is whole.
    cache = getattr(sys.modules.get("linecache"), "cache", None)
    if cache is not None:
        cache[filename] = entry


# --- compiling and running ----------------------------------------------------------------


def parse(source, filename, first_line=1):
    """The AST of source, as a cell's: top-level await allowed, line numbers
    counted from first_line."""
    padded = "\n" * (first_line - 1) + source
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        return compile(padded, filename, "exec", ast.PyCF_ONLY_AST | FLAGS,
                       dont_inherit=True)


def suppressed(source):
    """A trailing semicolon hides the result, as in IPython."""
    for line in reversed(source.rstrip().splitlines()):
        code = line.split("#", 1)[0].rstrip()
        if code:
            return code.endswith(";")
    return False


def split_last(tree, source):
    """(statements, last expression statement or None): the last expression
    of a body is its value, unless a semicolon hides it."""
    body = list(tree.body)
    if body and isinstance(body[-1], ast.Expr) and not suppressed(source):
        return body[:-1], body[-1]
    return body, None


def compile_statements(statements, filename):
    return compile(ast.Module(body=statements, type_ignores=[]), filename, "exec", FLAGS,
                   dont_inherit=True)


def compile_expression(expr, filename, mode="eval"):
    """An expression statement compiled to give its value ("eval") or to show
    it through sys.displayhook ("single")."""
    if mode == "single":
        tree = ast.Interactive(body=[expr])
    else:
        tree = ast.Expression(expr.value if isinstance(expr, ast.Expr) else expr)
    return compile(tree, filename, mode, FLAGS, dont_inherit=True)


def event_loop():
    """This thread's event loop for top-level await (one per shell), made on first use."""
    loop = getattr(_loops, "loop", None)
    if loop is None or loop.is_closed():
        import asyncio
        loop = _loops.loop = asyncio.new_event_loop()
    return loop


def run(code, ns, profiler=None):
    """Runs a code object in ns; its value, awaited to the end if the code awaits.
    A profiler (cProfile.Profile, for %prun) is enabled here, around the code
    alone, and disabled after it: its table then shows the user's code and the
    event loop it awaits on, never this frame nor the loop's making."""
    awaits = code.co_flags & CO_COROUTINE
    loop = event_loop() if awaits else None
    if profiler is not None:
        profiler.enable()
    try:
        value = eval(code, ns)
        if awaits and value is not None:
            value = loop.run_until_complete(value)
    finally:
        if profiler is not None:
            profiler.disable()
    return value


class _Cell:
    __slots__ = ("count", "silent", "store_history", "ns")

    def __init__(self, count, silent, store_history, ns):
        self.count, self.silent, self.store_history, self.ns = count, silent, \
            store_history, ns


def run_code(source, filename, count, silent=False, store_history=True, ns=None):
    """Compiles and runs source (Python) as cell count in ns (the user's
    namespace by default); its last expression's value goes to
    sys.displayhook. Exceptions propagate."""
    ns = user_ns if ns is None else ns
    tree = parse(source, filename)
    statements, last = split_last(tree, source)
    token = _target.set(_Cell(count, silent, store_history, ns))
    try:
        if statements:
            run(compile_statements(statements, filename), ns)
        if last is not None:
            run(compile_expression(last, filename, "single"), ns)
    finally:
        _target.reset(token)


# --- results ---------------------------------------------------------------------------


def on_result(fn):
    """fn(value, count) shows the value of a cell's last expression (the
    display layer registers it at start-up)."""
    global _on_result
    _on_result = fn


def _update_unders(value, ns):
    """_, __ and ___ follow the results, as in IPython, unless the user has
    assigned one of them: then none of them is touched again."""
    ours = all(name not in ns or ns[name] is _unders.get(name)
               for name in ("_", "__", "___"))
    _unders["___"], _unders["__"], _unders["_"] = (_unders.get("__", ""),
                                                   _unders.get("_", ""), value)
    if ours:
        ns.update(_unders)


def displayhook(value):
    """sys.displayhook of the worker: a cell's result, for the cell running in
    this context; outside a cell, Python's own."""
    cell = _target.get()
    if cell is None:
        return sys.__displayhook__(value)
    if value is None or cell.silent:
        return None
    _update_unders(value, cell.ns)
    if cell.store_history:
        cell.ns["_%d" % cell.count] = value
        out = cell.ns.setdefault("Out", {})
        if isinstance(out, dict):
            out[cell.count] = value
    if _on_result is not None:
        _on_result(value, cell.count)
    return None


def record_input(count, code, ns=None):
    """Keeps a stored cell's input in In, _i, _ii, _iii and _iN, as IPython does:
    while cell N runs, _i is cell N-1's input, _ii N-2's, _iii N-3's."""
    global _previous_input
    ns = user_ns if ns is None else ns
    ins = ns.setdefault("In", [""])
    if isinstance(ins, list):
        del ins[count:]
        while len(ins) < count:
            ins.append("")
        ins.append(code)
    ns["_iii"] = ns.get("_ii", "")
    ns["_ii"] = ns.get("_i", "")
    ns["_i"] = _previous_input
    ns["_i%d" % count] = code
    _previous_input = code


def install(ns=None):
    """Makes displayhook() sys.displayhook, and the names _, __ and ___ that
    ns holds now the hook's own (the user's only once assigned)."""
    ns = user_ns if ns is None else ns
    sys.displayhook = displayhook
    for name in ("_", "__", "___"):
        ns.setdefault(name, "")
        _unders[name] = ns[name]
