"""Layer 4, import hooks: a few libraries adjusted as they are imported.

IPython's display functions and get_ipython(), comm's and ipykernel's Comm,
pandas' notebook defaults, matplotlib's interactive mode, multiprocessing's
refusals, getpass's prompt, platform's processor.

sandpit imports none of these libraries itself (a cell that does not use
them does not pay for them), yet each needs a word as soon as it is loaded:

- IPython. IPython.display.display() and its kin publish through the
  InteractiveShell instance; without one (sandpit has none) display() just
  prints the objects and clear_output() prints escape codes. Libraries call
  them (ipywidgets, tqdm.notebook, IPython.display.ProgressBar, users' `from
  IPython.display import display, HTML`), so they must publish what they
  publish under ipykernel. When IPython.core.display_functions
  (IPython.core.display in IPython 7) has just been executed, and before
  anything can copy names out of it, its display, publish_display_data,
  clear_output, update_display and DisplayHandle are replaced by
  sandpit.display's; IPython.display and every later `from IPython.display
  import display` then get sandpit's. No InteractiveShell is created: that
  would cost a fifth of a second, want to write history files and compete
  with sandpit's get_ipython().
- pandas decides at import whether it runs in a terminal, by looking for
  get_ipython().kernel; when it finds none it sets display.max_columns to 0
  (fit an 80-column screen), and a DataFrame's HTML table would then differ
  from ipykernel's, which shows 20 columns. If the option is still 0 after
  the import, it is set to 20.
- matplotlib gets interactive mode and the kernel's dpi option as soon as it
  is imported with sandpit's backend (see sandpit.figures.apply_rc), so that
  a plt.ioff() written before the first figure is respected.
- numpy.random is seeded when the kernel has --seed (see sandpit.seeding),
  as soon as a cell imports numpy: numpy is not imported to seed it.
- multiprocessing's locks, which its pools and queues make first, say that
  new processes are disabled when the sandbox refuses them (sandpit.guard).
- comm (the package through which libraries reach a kernel's comms) makes
  sandpit's comms (sandpit.comms.adapt): sandpit.comms, the comm package and
  traitlets are loaded only when a cell uses them.
- getpass.getpass() asks the client for the password, as input() asks it
  for a line (sandpit.streams); getpass, and termios with it, is not
  imported at start-up for that.
- linecache gets the cells' sources (sandpit.execution keeps them until
  then), so that tracebacks, inspect and the debugger show a cell's lines:
  it is imported at the first traceback rather than at start-up.
- bdb (under pdb.set_trace() and breakpoint()) leaves this runtime's
  frames out of what the debugger shows and steps into (sandpit.debugger).
- platform.processor() runs `uname -p` the first time it is asked (Debian's
  pandas asks at import, through platform.uname()[4]). In the sandbox no
  program runs: it answers at once what Python answers when the program
  cannot run, "". No process is started at start-up to ask it beforehand.

The mechanism is one finder, first on sys.meta_path, that finds nothing
itself: for these few module names it asks the finders after it and wraps
the loader of what they find, so that the adjustment runs right after the
module's own code. Every other import passes through with one dict look-up.
Modules already imported when install() runs (by --preload) are adjusted in
place.
"""

import os
import sys

_DISPLAY_NAMES = ("display", "publish_display_data", "clear_output", "update_display",
                  "DisplayHandle")

# (IPython's object, sandpit's), to replace copies taken before install().
_replaced = []


def patch_ipython_display(module):
    """Replaces the display functions that IPython defines in module by sandpit's,
    and its base64 encoder (Image's, Video's) by the worker's, which gives the
    same bytes three times as fast."""
    from . import display
    from . import link
    b2a = module.__dict__.get("b2a_base64")
    fast = link.b2a_base64_in_c
    if fast is not None and b2a is getattr(sys.modules.get("binascii"), "b2a_base64", 0):
        module.__dict__["b2a_base64"] = fast
    for name in _DISPLAY_NAMES:
        original = module.__dict__.get(name)
        replacement = getattr(display, name)
        if original is None or original is replacement:
            continue
        if getattr(original, "__module__", "").startswith("IPython."):
            module.__dict__[name] = replacement
            _replaced.append((original, replacement))


def patch_getipython(module):
    """IPython.get_ipython() returns sandpit's shell, as it returns ipykernel's
    under ipykernel: ipywidgets registers its comm targets through it at
    import, matplotlib's pyplot its callbacks."""
    from . import shell
    module.get_ipython = shell.get_ipython
    ipython = sys.modules.get("IPython")
    if ipython is not None and getattr(ipython, "get_ipython", None) is not None:
        ipython.get_ipython = shell.get_ipython


def patch_ipykernel_comm(module):
    """ipywidgets 6 makes its comms with ipykernel.comm.Comm, which would look
    for ipykernel's running kernel: it becomes sandpit's Comm."""
    from . import comms
    module.Comm = comms.Comm


def patch_pandas(module):
    if module.get_option("display.max_columns") == 0:
        module.set_option("display.max_columns", 20)


def patch_matplotlib(module):
    from . import figures
    figures.apply_rc(module)


def patch_numpy_random(module):
    from . import seeding
    seeding.seed_numpy(module)


def patch_multiprocessing(module):
    from . import guard
    guard.guard_semaphores(module)


def patch_comm(module):
    from . import comms
    comms.adapt(module)


def patch_getpass(module):
    from . import streams
    streams.adapt_getpass(module)


def patch_linecache(module):
    """The cells' sources, kept by sandpit.execution until linecache is first
    imported (at the first traceback, or by a cell's inspect or traceback)."""
    from . import execution
    for filename, entry in list(execution.sources.items()):
        module.cache.setdefault(filename, entry)


def patch_bdb(module):
    from . import debugger
    debugger.adapt_bdb(module)


def _no_processor():
    return ""


def patch_platform(module):
    processor = getattr(module, "_Processor", None)
    from . import options
    if processor is not None and options.SANDBOX:
        setattr(processor, "get_" + sys.platform, _no_processor)


_PATCHES = {
    "IPython.core.getipython": patch_getipython,
    "ipykernel.comm.comm": patch_ipykernel_comm,
    "IPython.core.display_functions": patch_ipython_display,
    "IPython.core.display": patch_ipython_display,
    "pandas": patch_pandas,
    "matplotlib": patch_matplotlib,
    "numpy.random": patch_numpy_random,
    "multiprocessing.synchronize": patch_multiprocessing,
    "comm": patch_comm,
    "platform": patch_platform,
    "getpass": patch_getpass,
    "linecache": patch_linecache,
    "bdb": patch_bdb,
}


def _patch(patch, module):
    try:
        patch(module)
    except Exception as e:  # a library version we do not know: leave it as it is
        from . import link
        link.log("warning", "could not adapt %s: %r" % (module.__name__, e))


class _PatchingLoader:
    """Runs the real loader, then the patch, before the module is used.
    (Neither class derives from importlib.abc: importing it costs a tenth of
    the worker's start, and the import system needs only these methods.)"""

    def __init__(self, loader, patch):
        self.loader = loader
        self.patch = patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        _patch(self.patch, module)

    # What readers of a module's source look up on the loader's class, not on the
    # loader (jedi, to complete a call's result: df.groupby("x").ag).
    def get_source(self, name):
        return self.loader.get_source(name)

    def get_filename(self, name):
        return self.loader.get_filename(name)

    def is_package(self, name):
        return self.loader.is_package(name)

    def __getattr__(self, name):  # get_code, get_data, ... of the real loader
        return getattr(self.loader, name)


class _Finder:
    """Wraps the loader of the modules to patch; finds nothing itself."""

    def find_spec(self, name, path=None, target=None):
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if isinstance(finder, _Finder):
                continue
            find_spec = getattr(finder, "find_spec", None)
            spec = find_spec(name, path, target) if find_spec is not None else None
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


def install(user_ns=None):
    """Puts the finder first on sys.meta_path (once) and adjusts the modules
    that are already imported."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    for name, patch in _PATCHES.items():
        module = sys.modules.get(name)
        if module is not None:
            _patch(patch, module)
    if _replaced:
        # Copies taken before install() ran: IPython.display's, for one.
        for modname, module in list(sys.modules.items()):
            if module is None or not modname.startswith("IPython"):
                continue
            namespace = getattr(module, "__dict__", {})
            for original, replacement in _replaced:
                for name in _DISPLAY_NAMES:
                    if namespace.get(name) is original:
                        namespace[name] = replacement
