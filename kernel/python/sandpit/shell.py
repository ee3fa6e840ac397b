"""Layer 4, shell: get_ipython(), the part of IPython's shell that notebooks use.

Exported notebooks call get_ipython().run_line_magic('matplotlib', 'inline');
cells with %magics are translated to such calls by inputs.transform_cell();
libraries look at get_ipython().user_ns, .display_pub.publish(...),
.kernel, .history_manager or .config. The one SandpitShell made by install()
answers them, without IPython.

install(user_ns) also sets up what IPython puts in a fresh namespace (In,
Out, _ih, _oh, _dh, _, __, ___, _i, _ii, _iii, get_ipython, exit, quit),
replaces help() with one that prints Python's help, and remembers these names
so that %who lists only the user's own variables (and %reset what to keep).

A cell's error is shown by report_error(), through the shell's
showtraceback(), as IPython shows it: an extension that overrides
showtraceback or _showtraceback on the shell (rich's), or code that installs
sys.excepthook, decides how the error looks; with neither, it goes out as an
error message. Code written for ipykernel reaches get_ipython().kernel for
its session (session.send(kernel.iopub_socket, ...) publishes through the
link, parented to the request it names) and get_parent().
"""

import builtins
import importlib.util
import os
import sys
import threading
import types


class _LazyModule(types.ModuleType):
    """A module in sys.modules whose code has not run yet: it runs, in the
    module's own namespace, when an attribute that the module does not hold yet
    is first asked for, and the module is a plain module from then on. What
    the import system reads (__spec__, __name__, __file__) is there from the
    start, so `import name` does not run it: importlib.util.LazyLoader does in
    this Python, and its module is not guarded against two threads at once."""

    def __getattr__(self, attr):
        with _lazy_lock:
            if type(self) is _LazyModule and self.__name__ not in _lazy_running:
                _lazy_running.add(self.__name__)
                try:
                    self.__spec__.loader.exec_module(self)
                    self.__class__ = types.ModuleType
                finally:
                    _lazy_running.discard(self.__name__)
        return types.ModuleType.__getattribute__(self, attr)


_lazy_lock = threading.RLock()
_lazy_running = set()


def _import_lazily(name):
    """Puts the module name in sys.modules as a _LazyModule. A module already
    imported, or not found, is left as it is."""
    if name in sys.modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or not hasattr(spec.loader, "exec_module"):
        return
    module = importlib.util.module_from_spec(spec)
    module.__class__ = _LazyModule
    sys.modules[name] = module


# _dh holds a pathlib.Path, as under IPython. pathlib imports urllib.parse,
# which imports ipaddress at its top for bracketed hosts alone: 0.45 MB of the
# worker's memory that a session may never use, loaded when one does.
_import_lazily("ipaddress")
import pathlib  # noqa: E402 (after ipaddress is made lazy)

from . import display
from . import execution
from . import link
from . import request
from . import tracebacks

_shell = None


def get_ipython():
    """The running shell, as IPython's get_ipython() returns it."""
    return _shell


_history_registered = False


def load_magics():
    """sandpit.magics, loaded on first use (a session that uses no magic does
    not pay for it), with %history registered: it lives in sandpit.history,
    above the magics, which cannot ask for it."""
    global _history_registered
    from . import magics
    if not _history_registered:
        _history_registered = True
        try:  # as at start-up: one magic failing to set up leaves the others
            from . import history
            history.install()
        except Exception as e:
            link.log("error", "cannot set up sandpit.history: %r" % (e,))
    return magics


def find_magic(name, cell=False):
    """The function of a line (or cell) magic, or None."""
    return load_magics().find(name, cell)


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


def _parent_msg_id(parent):
    """The msg_id of a parent given as a message or as a header, or None."""
    if not isinstance(parent, dict):
        return None
    header = parent.get("header") if isinstance(parent.get("header"), dict) else parent
    msg_id = header.get("msg_id")
    return msg_id if isinstance(msg_id, str) and msg_id else None


class IOPubSocket:
    """get_ipython().kernel.iopub_socket: what session.send() takes to publish
    on iopub. The worker has no socket: its messages go through the link."""

    def __repr__(self):
        return "<sandpit iopub: published through the kernel's supervisor>"


class Session:
    """get_ipython().kernel.session: jupyter_client's Session.send() for code
    written for ipykernel (nbclient's update-display-id notebook, extensions
    that publish their own messages). Only iopub can be sent on, with the
    message types a cell may publish."""

    def __init__(self, kernel):
        self._kernel = kernel
        self._id = None
        self.username = "sandpit"

    @property
    def session(self):
        """This session's id (uuid is imported when it is first asked for)."""
        if self._id is None:
            import uuid
            self._id = str(uuid.uuid4())
        return self._id

    def msg(self, msg_type, content=None, parent=None, header=None, metadata=None):
        """A message as jupyter_client builds it (a dict)."""
        import uuid
        header = dict(header or {})
        header.setdefault("msg_id", str(uuid.uuid4()))
        header.setdefault("msg_type", msg_type)
        header.setdefault("session", self.session)
        header.setdefault("username", self.username)
        header.setdefault("version", "5.3")
        parent_header = parent.get("header", parent) if isinstance(parent, dict) else {}
        return {"header": header, "msg_id": header["msg_id"], "msg_type": msg_type,
                "parent_header": parent_header or {}, "content": content or {},
                "metadata": metadata or {}}

    def send(self, stream, msg_or_type, content=None, parent=None, ident=None,
             buffers=None, track=False, header=None, metadata=None):
        """Publishes msg_or_type (a msg_type with content, or a message from
        msg()) on iopub, parented to parent (a message or a header; None: the
        running request). Returns the message."""
        if stream is not self._kernel.iopub_socket:
            raise ValueError("sandpit's kernel.session sends only on kernel.iopub_socket: "
                             "replies and input requests are the kernel's own")
        if isinstance(msg_or_type, dict):
            msg = msg_or_type
            parent = parent if parent is not None else msg.get("parent_header")
        else:
            msg = self.msg(msg_or_type, content, parent, header, metadata)
        msg_type = msg.get("msg_type") or msg.get("header", {}).get("msg_type")
        if msg_type not in link.IOPUB_TYPES:
            raise ValueError("a cell may publish %s on iopub, not %r"
                             % (", ".join(link.IOPUB_TYPES), msg_type))
        request.publish(msg_type, msg.get("content") or {}, msg.get("metadata") or None,
                        buffers or (), parent=_parent_msg_id(parent))
        return msg


class Kernel:
    """get_ipython().kernel: what can be known of the kernel from inside, its
    comm_manager (ipywidgets 6 registers its targets there), and the session,
    iopub_socket and get_parent() of ipykernel's Kernel."""

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
        self.iopub_socket = IOPubSocket()
        self.session = Session(self)

    def get_parent(self, channel="shell"):
        """The request being handled, as a message (ipykernel's get_parent())."""
        req = request.current()
        if req is None:
            return {}
        return {"header": dict(req.header), "msg_id": req.msg_id, "msg_type": req.msg_type,
                "parent_header": {}, "content": req.content, "metadata": req.metadata,
                "buffers": list(req.buffers)}

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


class PlainTextFormatter:
    """display_formatter.formatters["text/plain"]: sandpit.pretty, with
    IPython's for_type() and for_type_by_name() to add printers."""

    def __call__(self, obj):
        from . import pretty
        return pretty.pretty(obj)

    def for_type(self, typ, func=None):
        from . import pretty
        return pretty.for_type(typ, func)

    def for_type_by_name(self, type_module, type_name, func=None):
        from . import pretty
        return pretty.for_type_by_name(type_module, type_name, func)


class _Formatters(dict):
    """{mime: formatter}; a new text/plain formatter (rich's, say) makes every
    result's text/plain from then on."""

    def __setitem__(self, mime, formatter):
        dict.__setitem__(self, mime, formatter)
        if mime == "text/plain":
            display.set_plain_formatter(None if isinstance(formatter, PlainTextFormatter)
                                        else formatter)


class DisplayFormatter:
    """get_ipython().display_formatter: format(obj) gives (data, metadata), the
    MIME bundle a display or a result of obj carries."""

    def __init__(self):
        self.formatters = _Formatters()
        dict.__setitem__(self.formatters, "text/plain", PlainTextFormatter())

    def format(self, obj, include=None, exclude=None):
        return display.format_object(obj, include, exclude)


class ExitAutocall:
    """exit and quit: ask the client to end the session (an ask_exit payload,
    on which jupyter console quits), as under ipykernel. A line that is only
    `exit` calls it too (sandpit.inputs)."""

    def __init__(self, shell):
        self._shell = shell

    def __repr__(self):
        return "Use exit() or quit() to ask your client to end the session"

    def __call__(self, keep_kernel=False):
        self._shell.ask_exit(keep_kernel)


class SandpitShell:
    """What get_ipython() returns in sandpit."""

    def __init__(self, user_ns):
        self.user_ns = user_ns
        self.user_ns_hidden = {}
        self.workspace = os.path.realpath(os.getcwd())
        self.display_pub = DisplayPublisher()
        self.display_formatter = DisplayFormatter()
        self.history_manager = HistoryManager(self)
        self.kernel = Kernel(self)
        # IPython's configuration, as far as %config sets it; notebooks test
        # "'IPKernelApp' in get_ipython().config" to know they run in a kernel.
        self.config = {"IPKernelApp": {}}
        self.events = EventManager()
        self.exiter = ExitAutocall(self)
        self._synthetic = 0
        self._reporting = None  # (etype, value, tb) of the error being shown
        self._reporting_content = None  # (value, its error_content)

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

    @property
    def parent_header(self):
        """The request being handled, as a message (ipykernel's shell.parent_header)."""
        return self.kernel.get_parent()

    # --- errors -----------------------------------------------------------------------

    def _get_exc_info(self, exc_tuple=None):
        """(type, value, traceback) of the error being shown, else of the
        exception being handled, else of the last error (IPython's)."""
        if exc_tuple is not None:
            return exc_tuple
        if self._reporting is not None:
            return self._reporting
        etype, value, tb = sys.exc_info()
        if value is None:
            value = getattr(sys, "last_value", None)
            if value is None:
                raise ValueError("No exception to find")
            etype, tb = type(value), getattr(sys, "last_traceback", None)
        return etype, value, tb

    def showtraceback(self, exc_tuple=None, filename=None, tb_offset=None,
                      exception_only=False, running_compiled_code=False):
        """Shows the exception being handled (or exc_tuple) as a cell's error:
        through sys.excepthook when code has installed one, else as an error
        message (through _showtraceback, which extensions may override). A
        UsageError is one line on stderr, as in IPython. With %pdb on, the
        debugger follows."""
        try:
            etype, value, tb = self._get_exc_info(exc_tuple)
        except ValueError:
            print("No traceback available to show.", file=sys.stderr)
            return
        if value is None:
            return
        if _is_usage_error(value):
            print("UsageError: %s" % tracebacks.safe_str(value), file=sys.stderr)
            return
        hook = sys.excepthook
        if hook is not sys.__excepthook__:
            try:
                hook(etype, value, tb)
            except Exception as e:
                link.log("warning", "sys.excepthook failed, the error is shown as usual: "
                         "%r" % (e,))
            else:
                return self._debug_after(value, tb)
        if tb is not None and value.__traceback__ is None:
            value = value.with_traceback(tb)
        content = self._content(value)
        self._showtraceback(etype, value, content["traceback"])
        self._debug_after(value, tb)

    def _content(self, value):
        cached = getattr(self, "_reporting_content", None)
        if cached is not None and cached[0] is value:
            return cached[1]
        return tracebacks.error_content(value)

    def _showtraceback(self, etype, evalue, stb):
        """Publishes the error (IPython's hook for subclasses and extensions)."""
        content = self._content(evalue)
        request.publish("error", {"ename": content["ename"], "evalue": content["evalue"],
                                  "traceback": list(stb)})

    def showsyntaxerror(self, filename=None, running_compiled_code=False):
        self.showtraceback()

    def _debug_after(self, value, tb):
        from . import debugger
        if debugger.automatic() and not isinstance(value, (KeyboardInterrupt, SyntaxError)):
            debugger.post_mortem(tb, automatic=True)

    @property
    def call_pdb(self):
        """%pdb: the debugger starts on every error."""
        from . import debugger
        return debugger.automatic()

    @call_pdb.setter
    def call_pdb(self, on):
        from . import debugger
        debugger.set_automatic(on)

    def debugger(self, force=False):
        """The debugger on the last error (%debug)."""
        from . import debugger
        debugger.post_mortem(getattr(sys, "last_traceback", None))

    # --- the session ------------------------------------------------------------------

    def ask_exit(self, keep_kernel=False):
        """Asks the client to end the session (exit(), quit())."""
        request.add_payload({"source": "ask_exit", "keepkernel": bool(keep_kernel)})

    def autocall(self, name):
        """A line that is only `exit` or `quit`: called when it names the
        shell's exiter (IPython calls it), else its value, as Python would."""
        if name in self.user_ns:
            value = self.user_ns[name]
        elif hasattr(builtins, name):
            value = getattr(builtins, name)
        else:
            raise NameError("name %r is not defined" % name)
        if isinstance(value, ExitAutocall):
            return value()
        return value

    def reset(self, new_session=False, aggressive=False):
        """%reset: every name the user defined is gone; In stays, Out is emptied,
        and the namespace holds again what a fresh one holds."""
        ns = self.user_ns
        out = ns.get("Out")
        ins = ns.get("In")
        keep = ("__builtins__", "__name__")
        for name in [n for n in ns if n not in keep]:
            del ns[name]
        if isinstance(out, dict):
            out.clear()
        for name, value in self.user_ns_hidden.items():
            if name not in keep:
                ns[name] = value
        if isinstance(ins, list):
            ns["In"] = ns["_ih"] = ins
        if isinstance(out, dict):
            ns["Out"] = ns["_oh"] = out
        ns["_dh"] = [pathlib.Path(os.getcwd())]
        self.user_ns_hidden["_dh"] = ns["_dh"]
        execution.install(ns)

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
            import linecache
            text = linecache.getline(filename, lineno).lstrip()
            if escape == "%%" and text.startswith("%%" + name):
                return filename, lineno + 1
            if escape == "%" and ("%" + name) in text:
                return filename, lineno
        self._synthetic += 1
        filename = "<magic-%s-%d>" % (name, self._synthetic)
        execution.register_source(filename, source or "")
        return filename, 1

    def run_line_magic(self, magic_name, line, _stack_depth=1):
        """Runs %magic_name line; returns what the magic returns."""
        magics = load_magics()
        where = self._where("%", magic_name, line)
        return magics.run_line(self, magic_name, line, where)

    def run_cell_magic(self, magic_name, line, cell):
        """Runs a %%magic_name line cell; returns what the magic returns."""
        magics = load_magics()
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
        magics = load_magics()
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

    # --- shell commands: refused (said on stderr; getoutput raises) ----------------

    def system(self, cmd):
        load_magics().say_command_refused(self, cmd)

    def getoutput(self, cmd, split=True, depth=0):
        load_magics().refuse_shell("`!%s`" % cmd)

    system_raw = system_piped = system

    # --- code -----------------------------------------------------------------------

    def run_cell(self, raw_cell, store_history=False, silent=False, shell_futures=True,
                 cell_id=None):
        """Runs code as a cell would run (its last expression's value is shown);
        an exception is shown and returned in the result, as IPython does."""
        from . import inputs
        self._synthetic += 1
        filename = "<run_cell-%d>" % self._synthetic
        execution.register_source(filename, raw_cell)
        try:
            source = inputs.transform_cell(raw_cell)
            if source.strip():
                execution.run_code(source, filename, self.execution_count, silent, False,
                                   self.user_ns)
        except Exception as e:
            if not silent:
                report_error(e)
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
        """Asks the client to put text in the next cell (a set_next_input
        payload; called again in the same cell, the last text wins)."""
        request.add_payload({"source": "set_next_input", "text": text,
                             "replace": bool(replace)}, single=True)

    def object_inspect(self, oname, detail_level=0):
        """What IPython's object_inspect gives: a dict of what oname is (found,
        name, type_name, docstring, definition, source, ...)."""
        from . import inspection
        found = inspection.find_object(oname, self.user_ns, find_magic)
        info = dict.fromkeys(_INFO_FIELDS)
        info.update(name=oname, found=bool(found.get("found")), isalias=False,
                    ismagic=bool(found.get("ismagic")))
        if found.get("found"):
            info["namespace"] = found["namespace"]
            info.update(inspection.info(found["obj"], oname, detail_level, found["namespace"],
                                        found["ismagic"]))
        return info

    def object_inspect_mime(self, oname, detail_level=0):
        """What inspect_request answers for oname: {mime: text}; KeyError if
        oname is not found."""
        return {"text/plain": self.object_inspect_text(oname, detail_level)}

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


# The fields of IPython's object_inspect(), all present (None when unknown).
_INFO_FIELDS = ("name", "found", "isalias", "ismagic", "namespace", "type_name",
                "string_form", "base_class", "length", "file", "definition", "docstring",
                "source", "init_definition", "class_docstring", "init_docstring", "call_def",
                "call_docstring", "subclasses", "isclass", "argspec")


def _is_usage_error(value):
    """A magic's UsageError (sandpit.magics is loaded when one can exist)."""
    magics = sys.modules.get(__name__.rpartition(".")[0] + ".magics")
    return magics is not None and isinstance(value, magics.UsageError)


def _user_frames(tb):
    """tb without the runtime's own frames at its head: what the user ran."""
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith("<sandpit>/"):
        tb = tb.tb_next
    return tb


def report_error(exc, content=None):
    """Shows exc, the error of a cell, through the shell's showtraceback (see
    the module's docstring); content is its error_content when known. Keeps
    it in sys.last_value and sys.last_traceback for %debug, as Python's REPL
    does (not a MemoryError, whose frames may hold what ran out of memory)."""
    sh = _shell
    tb = _user_frames(exc.__traceback__)
    if not isinstance(exc, MemoryError):
        sys.last_type, sys.last_value, sys.last_traceback = type(exc), exc, tb
    bdb = sys.modules.get("bdb")
    if bdb is not None and isinstance(exc, bdb.BdbQuit):
        return  # the user quit the debugger: nothing to show (IPython's way)
    if sh is None:
        request.publish("error", content or tracebacks.error_content(exc))
        return
    sh._reporting = (type(exc), exc, tb)
    sh._reporting_content = (exc, content) if content is not None else None
    try:
        sh.showtraceback(sh._reporting, tb_offset=0)
    except Exception as e:
        link.log("warning", "the shell's showtraceback failed: %r" % (e,))
        request.publish("error", content or tracebacks.error_content(exc))
    finally:
        sh._reporting = sh._reporting_content = None


class Help:
    """help(obj): Python's help on obj, printed, as under ipykernel."""

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
    user_ns["exit"] = user_ns["quit"] = _shell.exiter
    builtins.get_ipython = get_ipython
    builtins.help = Help()
    _shell.user_ns_hidden = dict(user_ns)
