"""Layer 5, runtime: the worker's main, from its first frame to its last.

kernel/worker/pyrt.c imports this module and calls prepare_lock(), before
the sandbox is locked, then serve(), which returns when the supervisor closes
the link. The path of one request, as a reader would follow it:

    serve()            says hello, starts the reader thread, and reads the
                       link itself between the main shell's cells
    _next_main_request()  link.recv_raw(), link.parse(): one frame from the
                       supervisor
    _route()           a request becomes a request.Request, queued for its
                       shell: the main thread for the main shell (it runs
                       cells, so that SIGINT raises KeyboardInterrupt in them),
                       a thread of its own for each subshell; input replies
                       and interrupt notes go to the Request they name, a
                       history reply to the link.history() that waits for it
    handle()           gives the reader thread (_read_link) the link while a
                       main-shell request runs, so that its interrupt notes
                       and input replies, and the subshells' requests, are
                       routed meanwhile (_serve_main takes it back after);
                       makes the Request current in its thread, calls
                       handlers.HANDLERS[msg_type] and sends its one reply
                       (link.reply), whatever happens in between

Between cells the main thread waits on the link itself, so that a request
wakes the thread that runs it, with no hand-over from the reader thread.
A runtime failure becomes an error reply that says so, and a line in the
kernel's log; a KeyboardInterrupt that arrives between requests is dropped.

prepare_lock() sets up the user's world (streams, display(), get_ipython(),
the import hooks, the audit hook) and wires the callbacks by which a
lower layer calls a higher one: execution's results go to display, display
formats matplotlib's figures with sandpit.figures. See the package's
docstring for the layers.
"""

import _thread
import builtins
import collections
import os
import queue
import signal
import sys
import threading

from . import display
from . import execution
from . import guard
from . import handlers
from . import import_hooks
from . import link
from . import request
from . import seeding
from . import shell
from . import streams
from . import tracebacks

user_ns = execution.user_ns

# Routing: filled by whichever thread reads the link, read by the handling threads.
_main_inbox = collections.deque()  # the main shell's requests; None when the link fails
_subshells = {}                    # subshell id -> _Subshell
_SIGINT = {signal.SIGINT}


# --- the loop --------------------------------------------------------------------


def serve(hello):
    """Says hello, then answers the main shell's requests until the supervisor
    closes the link."""
    link.send_hello(hello)
    # Started without waiting for it to run, as threading.Thread.start() would
    # (some 2.5 ms of its first page faults, before the first cell): it only
    # waits for its turn, which comes with the first cell.
    _thread.start_new_thread(_read_link, ())
    while True:
        try:
            req = _next_main_request()
            if req is None:
                return 0
            _serve_main(req)
        except KeyboardInterrupt:
            continue  # an interrupt that arrived between cells


def _next_main_request():
    """The main shell's next request: one the reader thread routed while the
    last one ran, else the next from the link, routing what comes before it
    (for the subshells) on the way; None when the link has failed."""
    while not _main_inbox:
        try:
            raw, buffers = link.recv_raw()
        except EOFError:
            return None
        except OSError as e:
            link.log("error", "the link to the supervisor failed: %s" % (e,))
            return None
        # A late interrupt (for the request that has just ended) must not cut
        # parsing or routing short and lose the frame: it is held back until
        # the frame is where it belongs, and then dropped by serve().
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGINT)
        try:
            _route(*link.parse(raw, buffers))
        except link.FrameError as e:
            link.log("error", "unreadable frame from the supervisor: %r" % (e,))
        except Exception as e:
            link.log("error", "could not route a frame: %r" % (e,))
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGINT)
    return _main_inbox.popleft()


def _serve_main(req):
    """Runs a main-shell request; handle() gives the reader thread the link
    for its length, and the link comes back here, whatever happens."""
    try:
        _serve_one(req)
    finally:
        link.reader_turn(False)


def _serve_one(req):
    try:
        handle(req)
    except KeyboardInterrupt:
        link.log("warning", "an interrupt arrived after the request had finished")
    except BaseException as e:  # this runtime's own failure
        import traceback
        link.log("error", "runtime failure: " + "".join(
            traceback.format_exception(type(e), e, e.__traceback__)))


def _signals_to_main_thread():
    """SIGINT is for the main thread (Python runs handlers there, and a cell
    sleeping there must wake): threads of the runtime block it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGALRM})


def _read_link():
    """The reader thread: routes each frame from the supervisor while a
    main-shell request runs (the main thread reads between them)."""
    _signals_to_main_thread()
    while True:
        try:
            kind, frame, buffers = link.recv_in_turn()
        except EOFError:
            break
        except OSError as e:
            link.log("error", "the link to the supervisor failed: %s" % (e,))
            break
        except Exception as e:  # a FrameError, or no memory to read it: the next one
            link.log("error", "unreadable frame from the supervisor: %r" % (e,))
            continue
        try:
            _route(kind, frame, buffers)
        except Exception as e:
            link.log("error", "could not route a frame: %r" % (e,))
    _main_inbox.append(None)
    for sub in list(_subshells.values()):
        sub.inbox.put(None)


def _route(kind, frame, buffers):
    if kind == link.REQUEST:
        req = request.Request(frame, buffers)
        request.register(req)  # from now on, its interrupt note finds it
        if not req.shell:
            _main_inbox.append(req)
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
    elif kind == link.HISTORY_REPLY:
        link.history_reply_received(frame)
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
            link.reader_turn(True)  # the reader thread routes while it runs
            link.set_default_tag(req.msg_id)
        handler = handlers.HANDLERS.get(req.msg_type)
        if handler is None:
            content = {"status": "error", "ename": "NotImplementedError",
                       "evalue": "the worker does not handle %s" % req.msg_type,
                       "traceback": []}
        else:
            content = handler(req)
        # execute() has just sent the cell's output (link.output_end).
        _reply(req, content, flushed=req.msg_type == "execute_request")
        replied = True
    finally:
        if not replied:
            # Whatever went wrong in reporting (an exception whose str() raises,
            # a result too large for the link), the request gets its one reply.
            why = "unknown"
            if sys.exc_info()[0] is not None:
                why = "%s: %s" % (sys.exc_info()[0].__name__,
                                  tracebacks.safe_str(sys.exc_info()[1]))
            try:
                _reply(req, {"status": "error", "ename": "SandpitError",
                             "evalue": "sandpit could not report the result of this request "
                             "(%s)" % why[:2000], "traceback": []})
            except BaseException as e:
                link.log("error", "could not send a reply at all: %r" % (e,))
        request.end(req, token)


def _reply(req, content, flushed=False):
    if not flushed:
        link.flush()
    link.send(link.reply(req.shell, req.msg_id, content))


# --- start-up ----------------------------------------------------------------------


# What sets up the user's world before the first cell, in this order: display(),
# get_ipython(), the hooks that adapt comm, IPython, ipykernel, pandas and
# matplotlib as they are imported, the audit hook that explains the sandbox, and
# the seed of random numbers (--seed). The magics, %history among them, are
# loaded by the first cell that uses one (shell.load_magics).
INSTALLERS = [display.install, shell.install, import_hooks.install, guard.install,
              seeding.install]


def _figure_formatters(fig):
    from . import figures
    return figures.formatters(fig)


def add_path(pythonpath):
    """Puts PYTHONPATH's entries at the front of sys.path, as Python does at
    start: the interpreter started without them (the template it comes from
    imports only from the system's folders). Relative entries are the
    workspace's, as they would be from the worker's folder."""
    entries = [os.path.abspath(p) for p in pythonpath.split(os.pathsep) if p]
    # Called again once the sandbox is locked, with the entries that lie in the
    # workspace (worker.c): they go in PYTHONPATH's order, after the "" that
    # stands for the workspace.
    rest = [p for p in sys.path if p not in entries]
    at = 1 if rest[:1] == [""] else 0
    sys.path[:] = rest[:at] + entries + rest[at:]
    os.environ["PYTHONPATH"] = pythonpath


def add_site_dir(path):
    """Puts a site-packages folder (--venv's) and what its .pth files name on
    sys.path, before the system's packages, as a virtual environment's own
    Python has them. Called by the worker before the preloads."""
    import site
    before = list(sys.path)
    site.addsitedir(path)
    added = [p for p in sys.path if p not in before]
    first_site = next((i for i, p in enumerate(before)
                       if p.endswith(("site-packages", "dist-packages"))), len(before))
    sys.path[:] = before[:first_site] + added + before[first_site:]


def prepare_lock():
    """Runs before the seccomp filter: the user's namespace, and whatever
    needs a new file once."""
    user_ns.setdefault("__builtins__", builtins)
    user_ns["__name__"] = "__main__"
    user_ns.pop("__file__", None)
    streams.install()
    request.inherit_into_threads()
    execution.on_result(display.publish_result)
    display.register_formatters("matplotlib.figure", "Figure", _figure_formatters)
    for install in INSTALLERS:
        # One part failing to set up must not take the others with it.
        try:
            install(user_ns)
        except Exception as e:
            import traceback
            link.log("error", "cannot set up %s: %s" % (install.__module__, "".join(
                traceback.format_exception(type(e), e, e.__traceback__))))
    # What the installers left in _, __ and ___ is ours, not the user's.
    execution.install(user_ns)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    # The workspace goes on the path last: an import above (random, with --seed)
    # would otherwise find a module the cell left there and run it before the
    # filter.
    if "" not in sys.path and os.getcwd() not in sys.path:
        sys.path.insert(0, "")


def warm():
    """What a worker forked from the template runs before its hello: the path
    of a first cell (the cell's transforms, compiling, running, a result
    formatted, a reply encoded) on a scratch namespace, sending nothing. Each
    page that path writes is one the worker still shares with the template and
    must copy; copied now, while the worker waits to be needed, they are not
    copied in the user's first cell."""
    from . import inputs
    ns = {"__builtins__": builtins}
    source = inputs.transform_cell("x = 1\nx")
    execution.run_code(source, execution.cell_filename(0), 0, silent=True,
                       store_history=False, ns=ns)
    data, metadata = display.format_result(ns["x"])
    link.dumps(link.iopub("execute_result", {"execution_count": 0, "data": data,
                                             "metadata": metadata}, parent="warm"))
    link.dumps(link.reply("", "warm", {"status": "ok", "execution_count": 0}))
