"""Layer 4, shell: get_ipython(), the part of IPython's shell that notebooks use.

Exported notebooks call get_ipython().run_line_magic('matplotlib', 'inline');
cells with %magics are translated to such calls by inputs.transform_cell();
libraries look at get_ipython().user_ns, .display_pub.publish(...),
.kernel, .history_manager or .config. The one SandpitShell made by install()
answers them, without IPython.

install(user_ns) also sets up what IPython puts in a fresh namespace (In,
Out, _ih, _oh, _dh, _, __, ___, _i, _ii, _iii, get_ipython), replaces help()
with one that answers in the client's pager, and remembers these names so
that %who lists only the user's own variables.
"""

import builtins
import linecache
import os
import pathlib
import sys

from . import execution
from . import request

_shell = None


def get_ipython():
    """The running shell, as IPython's get_ipython() returns it."""
    return _shell


def find_magic(name, cell=False):
    """The function of a line (or cell) magic, or None. sandpit.magics is
    loaded on first use: a session that uses no magic does not pay for it."""
    from . import magics
    return magics.find(name, cell)


class DisplayPublisher:
    """get_ipython().display_pub: publishes MIME bundles."""

    def publish(self, data, metadata=None, source=None, *, transient=None, update=False):
        request.publish("update_display_data" if update else "display_data",
                        {"data": data, "metadata": metadata or {},
                         "transient": transient or {}})

    def clear_output(self, wait=False):
        request.publish("clear_output", {"wait": bool(wait)})


class HistoryManager:
    """get_ipython().history_manager: this session's inputs and outputs
    (from In and Out). Session number 0 means the current session."""

    session_number = 0

    def __init__(self, shell):
        self._shell = shell

    @property
    def input_hist_raw(self):
        ins = self._shell.user_ns.get("In")
        return ins if isinstance(ins, list) else [""]

    input_hist_parsed = input_hist_raw

    @property
    def output_hist(self):
        out = self._shell.user_ns.get("Out")
        return out if isinstance(out, dict) else {}

    def get_range(self, session=0, start=1, stop=None, raw=True, output=False):
        ins = self.input_hist_raw
        stop = len(ins) if stop is None else min(stop, len(ins))
        for n in range(max(start, 1), stop):
            if output:
                yield (0, n, (ins[n], self.output_hist.get(n)))
            else:
                yield (0, n, ins[n])

    def get_tail(self, n=10, raw=True, output=False, include_latest=False):
        last = len(self.input_hist_raw)
        if not include_latest:
            last -= 1
        return list(self.get_range(0, max(1, last - n), last, raw, output))


class EventManager:
    """get_ipython().events: callbacks around each cell, as IPython's
    (pre_execute, pre_run_cell, post_execute, post_run_cell). matplotlib's
    pyplot and ipywidgets register and trigger them."""

    names = ("pre_execute", "pre_run_cell", "post_execute", "post_run_cell",
             "shell_initialized")

    def __init__(self):
        self.callbacks = {name: [] for name in self.names}

    def register(self, event, function):
        if event not in self.callbacks:
            raise KeyError("unknown event %s" % event)
        if not callable(function):
            raise TypeError("need a callable, got %r" % (function,))
        if function not in self.callbacks[event]:
            self.callbacks[event].append(function)

    def unregister(self, event, function):
        if function in self.callbacks.get(event, ()):
            self.callbacks[event].remove(function)
        else:
            raise ValueError("function %r is not registered as a %s callback"
                             % (function, event))

    def trigger(self, event, *args, **kwargs):
        for function in list(self.callbacks.get(event, ())):
            try:
                function(*args, **kwargs)
            except Exception:
                import traceback
                sys.stderr.write("Error in callback %r (for %s):\n%s"
                                 % (function, event, traceback.format_exc()))


class Kernel:
    """get_ipython().kernel: what can be known of the kernel from inside, and
    its comm_manager (ipywidgets 6 registers its targets there)."""

    implementation = "sandpit"

    @property
    def comm_manager(self):
        from . import comms
        return comms.manager

    def __init__(self, shell):
        self.shell = shell
        from . import __version__
        self.implementation_version = __version__
        self.language_info = {"name": "python", "version": sys.version.split()[0],
                              "mimetype": "text/x-python", "file_extension": ".py"}

    def do_shutdown(self, restart):
        raise NotImplementedError(
            "sandpit cannot shut down or restart itself from a cell: use your client's "
            "Restart command")


class ExecutionResult:
    """What run_cell() returns."""

    def __init__(self, result=None, error=None):
        self.result = result
        self.error_in_exec = error
        self.error_before_exec = None
        self.success = error is None

    def raise_error(self):
        if self.error_in_exec is not None:
            raise self.error_in_exec

    def __repr__(self):
        return "<ExecutionResult success=%s result=%r>" % (self.success, self.result)


class SandpitShell:
    """What get_ipython() returns in sandpit."""

    def __init__(self, user_ns):
        self.user_ns = user_ns
        self.user_ns_hidden = {}
        self.workspace = os.path.realpath(os.getcwd())
        self.display_pub = DisplayPublisher()
        self.history_manager = HistoryManager(self)
        self.kernel = Kernel(self)
        # IPython's configuration, as far as %config sets it; notebooks test
        # "'IPKernelApp' in get_ipython().config" to know they run in a kernel.
        self.config = {"IPKernelApp": {}}
        self.events = EventManager()
        self._synthetic = 0

    def __repr__(self):
        return "<sandpit.shell.%s object>" % type(self).__name__

    @property
    def user_global_ns(self):
        return self.user_ns

    @property
    def execution_count(self):
        current = request.current()
        return current.execution_count if current is not None else 0

    def get_ipython(self):
        return self

    def showtraceback(self, exc_tuple=None, filename=None, tb_offset=None,
                      exception_only=False, running_compiled_code=False):
        """Shows the exception being handled (or exc_tuple) as a cell's error."""
        from . import tracebacks
        etype, value, tb = exc_tuple or sys.exc_info()
        if value is None:
            return
        if tb is not None and value.__traceback__ is None:
            value = value.with_traceback(tb)
        request.publish("error", tracebacks.error_content(value))

    def enable_gui(self, gui=None):
        """There is no GUI event loop in a kernel without a display: accepted."""

    def enable_matplotlib(self, gui=None):
        self.run_line_magic("matplotlib", gui or "inline")
        return ("inline", "module://sandpit.mpl_backend")

    def has_trait(self, name):
        return hasattr(self, name)

    # --- magics ---------------------------------------------------------------

    def _where(self, escape, name, source):
        """(filename, first line) to compile a magic's code with: the cell's own
        lines when the call comes from a %magic line of a cell, else a name of
        its own, registered with linecache so tracebacks can show the code."""
        frame = sys._getframe(2)
        while frame is not None and frame.f_code.co_filename.startswith("<sandpit>/"):
            frame = frame.f_back
        if frame is not None and execution.cell_label(frame.f_code.co_filename):
            filename, lineno = frame.f_code.co_filename, frame.f_lineno
            text = linecache.getline(filename, lineno).lstrip()
            if escape == "%%" and text.startswith("%%" + name):
                return filename, lineno + 1
            if escape == "%" and ("%" + name) in text:
                return filename, lineno
        self._synthetic += 1
        filename = "<magic-%s-%d>" % (name, self._synthetic)
        lines = (source or "").splitlines(True)
        linecache.cache[filename] = (len(source or ""), None, lines, filename)
        return filename, 1

    def run_line_magic(self, magic_name, line, _stack_depth=1):
        """Runs %magic_name line; returns what the magic returns."""
        from . import magics
        where = self._where("%", magic_name, line)
        return magics.run_line(self, magic_name, line, where)

    def run_cell_magic(self, magic_name, line, cell):
        """Runs a %%magic_name line cell; returns what the magic returns."""
        from . import magics
        where = self._where("%%", magic_name, cell)
        return magics.run_cell(self, magic_name, line, cell, where)

    def magic(self, arg_s):
        """The old get_ipython().magic('name args') of IPython < 8."""
        name, _, line = arg_s.lstrip("%").partition(" ")
        return self.run_line_magic(name, line)

    def find_line_magic(self, name):
        return find_magic(name)

    def find_cell_magic(self, name):
        return find_magic(name, cell=True)

    def find_magic(self, name, magic_kind="line"):
        return self.find_cell_magic(name) if magic_kind == "cell" else \
            self.find_line_magic(name)

    def register_magic_function(self, func, magic_kind="line", magic_name=None):
        """Makes func(line) (or func(line, cell) for "cell") a magic."""
        from . import magics
        name = magic_name or func.__name__
        kinds = ("line", "cell") if magic_kind == "line_cell" else (magic_kind,)
        for kind in kinds:
            if kind == "line":
                magics.LINE[name] = lambda shell, line, cell, where: func(line)
            elif kind == "cell":
                magics.CELL[name] = lambda shell, line, cell, where: func(line, cell)
            else:
                raise ValueError("magic_kind must be line, cell or line_cell, not %r"
                                 % magic_kind)

    # --- shell commands: refused ------------------------------------------------------

    def system(self, cmd):
        from . import magics
        magics.refuse_shell("`!%s`" % cmd)

    def getoutput(self, cmd, split=True, depth=0):
        from . import magics
        magics.refuse_shell("`!%s`" % cmd)

    system_raw = system_piped = system

    # --- code -----------------------------------------------------------------------

    def run_cell(self, raw_cell, store_history=False, silent=False, shell_futures=True,
                 cell_id=None):
        """Runs code as a cell would run (its last expression's value is shown);
        an exception is shown and returned in the result, as IPython does."""
        from . import inputs
        self._synthetic += 1
        filename = "<run_cell-%d>" % self._synthetic
        linecache.cache[filename] = (len(raw_cell), None, raw_cell.splitlines(True),
                                     filename)
        try:
            source = inputs.transform_cell(raw_cell)
            if source.strip():
                execution.run_code(source, filename, self.execution_count, silent, False,
                                   self.user_ns)
        except Exception as e:
            if not silent:
                from . import tracebacks
                request.publish("error", tracebacks.error_content(e))
            return ExecutionResult(error=e)
        return ExecutionResult()

    def ev(self, expr):
        """Evaluates expr in the user's namespace."""
        return eval(expr, self.user_ns)

    def ex(self, cmd):
        """Executes cmd in the user's namespace."""
        exec(cmd, self.user_ns)

    def push(self, variables, interactive=True):
        """Adds variables (a dict, or names of the caller's variables) to the namespace."""
        if isinstance(variables, (str, list, tuple)):
            names = variables.split() if isinstance(variables, str) else variables
            caller = sys._getframe(1)
            variables = {name: eval(name, caller.f_globals, caller.f_locals)
                         for name in names}
        self.user_ns.update(variables)
        if not interactive:
            self.user_ns_hidden.update(variables)

    def set_next_input(self, text, replace=False):
        """Asks the client to put text in the next cell (a set_next_input payload)."""
        request.add_payload({"source": "set_next_input", "text": text,
                             "replace": bool(replace)})

    def object_inspect_text(self, oname, detail_level=0):
        from . import inspection
        found = inspection.find_object(oname, self.user_ns, find_magic)
        if not found.get("found"):
            raise KeyError(oname)
        return inspection.info_text(found["obj"], oname, detail_level, found["namespace"],
                                    found["ismagic"])

    def show_usage(self):
        from . import inspection
        inspection.page(inspection.USAGE)


class Help:
    """help(obj): Python's help on obj, shown in the client's pager."""

    def __repr__(self):
        return "Type help() for interactive help, or help(object) for help about object."

    def __call__(self, *args, **kwargs):
        from . import inspection
        return inspection.Helper()(*args, **kwargs)


class ZMQInteractiveShell(SandpitShell):
    """The class of the shell get_ipython() returns, under the name of
    ipykernel's: libraries (tqdm, plotly, pandas) test
    get_ipython().__class__.__name__ == "ZMQInteractiveShell" to know that
    they run in a notebook kernel and may send rich output."""


def install(user_ns):
    """Sets up the user's namespace as IPython does, with get_ipython() and help()."""
    global _shell
    _shell = ZMQInteractiveShell(user_ns)
    ins = user_ns.setdefault("In", [""])
    out = user_ns.setdefault("Out", {})
    user_ns.setdefault("_ih", ins)
    user_ns.setdefault("_oh", out)
    user_ns.setdefault("_dh", [pathlib.Path(_shell.workspace)])
    for name in ("_", "__", "___", "_i", "_ii", "_iii"):
        user_ns.setdefault(name, "")
    user_ns["get_ipython"] = get_ipython
    builtins.get_ipython = get_ipython
    builtins.help = Help()
    _shell.user_ns_hidden = dict(user_ns)
