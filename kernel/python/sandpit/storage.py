"""Layer 4, storage: %store and %save, variables and code kept in the workspace.

%store keeps variables across sessions, as IPython's storemagic does, but in
the workspace (the only folder the kernel may write in): one pickle a
variable in .sandpit/store/ under it, so that a kernel started later on the
same workspace, or another one, reads them back with %store -r. %save writes
the inputs of cells (In, as ranges like 1-3 5) to a .py file, relative to
the working folder like any file the code writes.

Both are called by their magics (sandpit.magics), which parse the options;
what goes wrong with the user's words is a ValueError, which the magic
turns into a UsageError.
"""

import os
import pickle
import re

FOLDER = os.path.join(".sandpit", "store")
_NAME = re.compile(r"^[A-Za-z_]\w*$")


def folder(workspace):
    """Where %store keeps its variables for workspace."""
    return os.path.join(workspace, FOLDER)


def stored(workspace):
    """The names of the stored variables, sorted."""
    try:
        names = os.listdir(folder(workspace))
    except FileNotFoundError:
        return []
    return sorted(n for n in names if _NAME.match(n))


def _path(workspace, name):
    if not _NAME.match(name):
        raise ValueError("%r is not the name of a variable" % name)
    return os.path.join(folder(workspace), name)


def store(workspace, name, value):
    """Keeps value under name; ValueError for what cannot be kept."""
    module = getattr(value, "__module__", None) or getattr(type(value), "__module__", None)
    if module == "__main__":
        raise ValueError("%s is defined in the notebook (%r): only instances of classes "
                         "in modules on the file system can be %%store'd, because a "
                         "new session cannot import the notebook's classes"
                         % (name, type(value).__name__))
    try:
        data = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
    except Exception as e:
        raise ValueError("%s cannot be stored: %s" % (name, e)) from None
    os.makedirs(folder(workspace), exist_ok=True)
    path = _path(workspace, name)
    with open(path + ".new", "wb") as f:
        f.write(data)
    os.replace(path + ".new", path)


def load(workspace, name):
    """The stored value of name; KeyError if there is none."""
    try:
        with open(_path(workspace, name), "rb") as f:
            return pickle.load(f)
    except FileNotFoundError:
        raise KeyError(name) from None


def delete(workspace, name):
    """Forgets name; KeyError if it was not stored."""
    try:
        os.remove(_path(workspace, name))
    except FileNotFoundError:
        raise KeyError(name) from None


# --- %save ---------------------------------------------------------------------------------


def cell_numbers(spec, count):
    """The cell numbers in a %save range list ("1-3 5 7:9"), of cells 1..count-1."""
    numbers = []
    for part in spec.split():
        m = re.fullmatch(r"(\d+)(?:([-:])(\d+))?", part)
        if not m:
            raise ValueError("%r is not a range of cells (write 4, 1-3 or 1:4)" % part)
        first = int(m.group(1))
        last = first if not m.group(2) else int(m.group(3)) - (m.group(2) == ":")
        for n in range(first, last + 1):
            if not 1 <= n < count:
                raise ValueError("there is no cell %d in this session's history (In)" % n)
            numbers.append(n)
    return numbers
