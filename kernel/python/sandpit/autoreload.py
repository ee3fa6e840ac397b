"""Layer 4, autoreload: %autoreload and %aimport, modules of the workspace
reloaded before each cell, as IPython's autoreload extension does.

With %autoreload 2, a module whose source file in the workspace has changed
since it was loaded is reloaded before the next cell runs; its old functions
and classes take the new code, so that names imported from it earlier
(`from helpers import f`) and existing instances see the change too.
%autoreload 1 reloads only the modules named with %aimport, %autoreload 0
stops, and %autoreload alone reloads what has changed now.

Only modules whose source is in the workspace are watched: the sandbox makes
everything else read-only, so installed packages cannot change under a
running kernel, and %aimport says so when it is given one of them.

It hooks in through get_ipython().events, as IPython's does: "pre_run_cell"
checks and reloads, "post_execute" notes the modules a cell imported. A
module is compared with what was on disk when it was loaded (modification
time, size and inode, so a file replaced by an editor counts).
"""

import importlib
import os
import sys
import threading
import traceback
import types
import weakref

MODES = {"0": 0, "off": 0, "1": 1, "explicit": 1, "2": 2, "all": 2, "3": 2, "complete": 2}

_lock = threading.RLock()  # cells of subshells run in threads of their own
_mode = 0
_verbose = False
_explicit = set()  # %aimport name: reloaded under mode 1
_excluded = set()  # %aimport -name: never reloaded
_stamps = {}       # module name -> what its source was like when it was loaded
_sources = {}      # module name -> (module, its source in the workspace, or None)
_versions = {}     # (module name, name) -> weak references to each function or
                   # class it has been bound to, so that every version gets new code
_hooked = None     # the shell whose events call us


def _workspace():
    from . import options
    return os.path.realpath(options.workspace())


def _source(name, module):
    """The module's .py file if it is in the workspace, else None (cached per
    module object: realpath costs system calls, and a cell runs this for every
    module that is loaded)."""
    known = _sources.get(name)
    if known is not None and known[0] is module:
        return known[1]
    path = getattr(module, "__file__", None)
    found = None
    if isinstance(path, str) and path.endswith(".py"):
        path = os.path.realpath(path)
        if path.startswith(_workspace() + os.sep):
            found = path
    _sources[name] = (module, found)
    return found


def _stamp(path):
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size, st.st_ino


def _watched():
    """[(name, module, source)] of the loaded modules of the workspace."""
    out = []
    for name, module in list(sys.modules.items()):
        if isinstance(module, types.ModuleType):
            path = _source(name, module)
            if path is not None:
                out.append((name, module, path))
    return out


def _remember(name, module):
    """Notes the module's functions and classes as versions of their names."""
    for key, obj in list(module.__dict__.items()):
        if isinstance(obj, (types.FunctionType, type)) and \
                getattr(obj, "__module__", None) == name:
            refs = [r for r in _versions.get((name, key), ()) if r() is not None]
            if not any(r() is obj for r in refs):
                refs.append(weakref.ref(obj))
            _versions[(name, key)] = refs


def note_loaded():
    """Records the source of every module of the workspace not seen yet, as it
    is now: the reference a later change is measured against."""
    with _lock:
        for name, module, path in _watched():
            if name not in _stamps:
                _stamps[name] = _stamp(path)
                _remember(name, module)


def check(every=False):
    """Reloads the modules of the workspace whose source changed: those the
    mode selects, or all of them (but the excluded) when every is true."""
    with _lock:
        for name, module, path in _watched():
            if name in _excluded or not (every or _mode == 2 or name in _explicit):
                continue
            stamp = _stamp(path)
            if name not in _stamps:
                _stamps[name] = stamp
                _remember(name, module)
                continue
            if stamp is None or stamp == _stamps[name]:
                continue
            _stamps[name] = stamp
            if _verbose:
                print("Reloading '%s'." % name)
            _reload(name, module)


def _reload(name, module):
    old = dict(module.__dict__)
    # Names the new source no longer defines must go, as they would in a
    # fresh import; the module's own attributes (__name__, __spec__) stay.
    for key in list(module.__dict__):
        if not (key.startswith("__") and key.endswith("__")):
            del module.__dict__[key]
    try:
        importlib.reload(module)
    except Exception:
        module.__dict__.update(old)  # the old version goes on working
        etype, value = sys.exc_info()[:2]
        print("[autoreload of %s failed: %s]" % (
            name, "".join(traceback.format_exception_only(etype, value)).rstrip()),
            file=sys.stderr)
        return
    for key, new_obj in list(module.__dict__.items()):
        for ref in _versions.get((name, key), ()):
            old_obj = ref()
            if old_obj is not None and old_obj is not new_obj:
                _update(old_obj, new_obj)
    _remember(name, module)


def _update_function(old, new):
    for attr in ("__code__", "__defaults__", "__kwdefaults__", "__doc__",
                 "__annotations__"):
        try:
            setattr(old, attr, getattr(new, attr))
        except (AttributeError, TypeError, ValueError):
            pass  # a closure of another size: the old function keeps its code
    old.__dict__.update(new.__dict__)


def _update_class(old, new):
    for key in list(old.__dict__):
        if key not in new.__dict__:
            try:
                delattr(old, key)
            except (AttributeError, TypeError):
                pass
    for key, value in new.__dict__.items():
        if key in ("__dict__", "__weakref__"):
            continue
        current = old.__dict__.get(key)
        if isinstance(current, types.FunctionType) and isinstance(value,
                                                                  types.FunctionType):
            _update_function(current, value)
            continue
        try:
            setattr(old, key, value)
        except (AttributeError, TypeError):
            pass


def _update(old, new):
    """Gives an object from the old version of a module the new one's code."""
    if isinstance(old, types.FunctionType) and isinstance(new, types.FunctionType):
        _update_function(old, new)
    elif isinstance(old, type) and isinstance(new, type):
        _update_class(old, new)


# --- the hooks ------------------------------------------------------------------------


def _pre_run_cell(info=None):
    if _mode:
        check()


def _post_execute():
    if _mode:
        note_loaded()


def load_ipython_extension(shell):
    """%load_ext autoreload: hooks the checks in; reloading starts with
    %autoreload 1 or 2, as in IPython."""
    global _hooked
    with _lock:
        if _hooked is shell:
            return
        shell.events.register("pre_run_cell", _pre_run_cell)
        shell.events.register("post_execute", _post_execute)
        _hooked = shell
        note_loaded()


def unload_ipython_extension(shell):
    global _hooked, _mode
    with _lock:
        for event, fn in (("pre_run_cell", _pre_run_cell), ("post_execute", _post_execute)):
            try:
                shell.events.unregister(event, fn)
            except ValueError:
                pass
        _hooked = None
        _mode = 0


# --- the magics (their usage errors are ValueError; magics.py shows them) ----------------


def magic_autoreload(shell, line):
    """%autoreload [0|1|2|off|explicit|all|now] [-p]: see this module's doc."""
    global _mode, _verbose
    words = line.split()
    flags = [w for w in words if w.startswith("-")]
    args = [w for w in words if not w.startswith("-")]
    for flag in flags:
        if flag not in ("-p", "--print"):
            raise ValueError("%%autoreload: unknown option %s (-p prints each module it "
                             "reloads)" % flag)
    if len(args) > 1 or (args and args[0] not in MODES and args[0] != "now"):
        raise ValueError("%%autoreload takes 0 (off), 1 (explicit), 2 (all) or now, not "
                         "%r" % line.strip())
    load_ipython_extension(shell)
    _verbose = bool(flags)
    if not args or args[0] == "now":
        check(every=True)
        return
    if args[0] in ("3", "complete"):
        print("sandpit's autoreload has no mode 3: changed modules are reloaded as with "
              "%autoreload 2, but names they add are not put in your namespace")
    _mode = MODES[args[0]]


def magic_aimport(shell, line):
    """%aimport [[-]module, ...]: lists, marks for reloading, or (with -) excludes."""
    names = [n.strip() for n in line.replace(",", " ").split() if n.strip()]
    load_ipython_extension(shell)
    if not names:
        print("Modules to reload:\n%s\n\nModules to skip:\n%s" % (
            "all-except-skipped" if _mode == 2 else " ".join(sorted(_explicit)),
            " ".join(sorted(_excluded))))
        return
    for name in names:
        if name.startswith("-"):
            _excluded.add(name[1:])
            _explicit.discard(name[1:])
            continue
        module = importlib.import_module(name)
        _excluded.discard(name)
        _explicit.add(name)
        top = name.split(".")[0]
        shell.user_ns[top] = sys.modules[top]
        note_loaded()
        if _source(name, module) is None:
            print("sandpit reloads only modules in the workspace: %s (%s) is not "
                  "reloaded when it changes (outside the workspace, the sandbox makes "
                  "files read-only)" % (name, getattr(module, "__file__", "built in")))
