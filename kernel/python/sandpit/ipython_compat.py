"""IPython's display functions, and pandas' notebook settings, inside sandpit.

IPython.display.display() and its kin publish through the InteractiveShell
instance; without one (sandpit has none) display() just prints the objects
and clear_output() prints escape codes. Libraries call them (ipywidgets,
tqdm.notebook, IPython.display.ProgressBar, users' `from IPython.display
import display, HTML`), so they must publish the messages they publish under
ipykernel.

The mechanism is the smallest that covers every way in: when the module
that defines them, IPython.core.display_functions (IPython.core.display in
IPython 7), has just been executed and before anything can copy names out of
it, its display, publish_display_data, clear_output, update_display and
DisplayHandle are replaced by sandpit.display's. IPython.display,
IPython.core.display and any later `from IPython.display import display`
then get sandpit's. This needs a finder first on sys.meta_path that wraps
the real loader of those modules only; every other import passes through
with one set look-up. No InteractiveShell is created (that would cost a
fifth of a second, write history files and fight the get_ipython() shim),
and IPython is never imported by sandpit itself. Modules already imported
(by --preload) are patched in place by install().

The same hook fixes one pandas default: pandas decides at import whether it
runs in a terminal by looking for get_ipython(); without it, it picks
display.max_columns = 0 (fit to an 80-column terminal), so a DataFrame's
HTML table would differ from ipykernel's, which uses 20. When pandas has
been imported and the option is still 0, it is set to 20.
"""

import importlib.abc
import sys

_DISPLAY_MODULES = ("IPython.core.display_functions", "IPython.core.display")
_NAMES = ("display", "publish_display_data", "clear_output", "update_display",
          "DisplayHandle")


def _ours():
    from . import display
    return {name: getattr(display, name) for name in _NAMES}


def patch_ipython_module(module):
    """Replaces IPython's display functions defined in module by sandpit's."""
    ours = _ours()
    for name, replacement in ours.items():
        original = module.__dict__.get(name)
        if original is None or original is replacement:
            continue
        if getattr(original, "__module__", "").startswith("IPython."):
            module.__dict__[name] = replacement
            _replaced.append((original, replacement))


# (IPython's object, sandpit's), to patch copies already taken elsewhere.
_replaced = []


def patch_pandas(module):
    try:
        if module.get_option("display.max_columns") == 0:
            module.set_option("display.max_columns", 20)
    except Exception:  # a pandas that is half imported or has other options
        pass


_PATCHES = dict.fromkeys(_DISPLAY_MODULES, patch_ipython_module)
_PATCHES["pandas"] = patch_pandas


class _PatchingLoader(importlib.abc.Loader):
    """Runs the real loader, then patches the module before it is used."""

    def __init__(self, loader, patch):
        self.loader = loader
        self.patch = patch

    def create_module(self, spec):
        return self.loader.create_module(spec)

    def exec_module(self, module):
        self.loader.exec_module(module)
        try:
            self.patch(module)
        except Exception as e:
            from . import _kernel
            _kernel.log("warning", "could not adapt %s: %r" % (module.__name__, e))

    def __getattr__(self, name):  # get_source, is_package, ... of the real loader
        return getattr(self.loader, name)


class _Finder(importlib.abc.MetaPathFinder):
    """Finds nothing itself: for the few modules to patch, asks the finders
    after it and wraps the loader of what they find."""

    def find_spec(self, name, path=None, target=None):
        patch = _PATCHES.get(name)
        if patch is None:
            return None
        for finder in sys.meta_path:
            if finder is self or isinstance(finder, _Finder):
                continue
            find_spec = getattr(finder, "find_spec", None)
            if find_spec is None:
                continue
            spec = find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        if spec.loader is not None and hasattr(spec.loader, "exec_module"):
            spec.loader = _PatchingLoader(spec.loader, patch)
        return spec


def install():
    """Puts the finder first on sys.meta_path (once) and patches what is
    already imported."""
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
    for name, patch in _PATCHES.items():
        module = sys.modules.get(name)
        if module is not None:
            patch(module)
    if _replaced:
        # Copies taken before we were installed (IPython.display, ...).
        for modname, module in list(sys.modules.items()):
            if not modname.startswith("IPython") or module is None:
                continue
            namespace = getattr(module, "__dict__", {})
            for original, replacement in _replaced:
                for key in _NAMES:
                    if namespace.get(key) is original:
                        namespace[key] = replacement
