"""sys.stdout and sys.stderr of the worker, and input() and getpass().

The streams hand their text to the worker's output pump (kernel/pump.c)
through _sandpit.write: a copy into memory, no system call. The pump's thread
sends it as stream messages within a few milliseconds, together with what C
code writes to file descriptors 1 and 2, so a print is never stuck in a
buffer when a cell ends, crashes or waits. Outside the worker (tests of the
runtime), the streams write to the file descriptors themselves.
"""

import builtins
import getpass as _getpass
import io
import os
import sys

from . import _kernel
from ._kernel import _tls

_allow_stdin = False


class StdinNotImplementedError(NotImplementedError):
    """input() was called, but the client that sent the cell does not take input."""


try:
    from _sandpit import write as _write
except ImportError:  # outside the worker
    def _write(fd, data, tag=None):
        view = memoryview(data.encode("utf-8", "replace") if isinstance(data, str)
                          else data).cast("B")
        while view:
            view = view[os.write(fd, view):]
        return len(data)


class _BinaryWriter(io.RawIOBase):
    def __init__(self, fd):
        self._fd = fd

    def writable(self):
        return True

    def write(self, b):
        return _write(self._fd, b, getattr(_tls, "tag", None))

    def fileno(self):
        return self._fd


class OutStream(io.TextIOBase):
    """A text stream on fd 1 or 2 that writes through."""

    def __init__(self, fd, name):
        self._fd = fd
        self.name = name
        self.buffer = _BinaryWriter(fd)

    encoding = "utf-8"
    errors = "replace"

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._fd

    def write(self, s):
        if s.__class__ is not str and not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        return _write(self._fd, s, getattr(_tls, "tag", None))

    def writelines(self, lines):
        for line in lines:
            self.write(line)

    def flush(self):
        pass


def install():
    sys.stdout = OutStream(1, "<stdout>")
    sys.stderr = OutStream(2, "<stderr>")
    sys.stdin = io.StringIO("")  # nothing to read: input() asks the client instead
    builtins.input = input
    _getpass.getpass = getpass


def begin_cell(allow_stdin):
    global _allow_stdin
    _allow_stdin = bool(allow_stdin)


def _ask(prompt, password):
    if not _allow_stdin:
        raise StdinNotImplementedError(
            "input() is not available: the client that sent this cell does not accept "
            "input (allow_stdin is false)")
    from . import runtime
    _kernel.flush()
    reply = runtime.ask_input(_kernel.current or {},
                              {"prompt": str(prompt), "password": bool(password)})
    content = reply.get("content", {})
    value = content.get("value", "")
    if not isinstance(value, str):
        value = str(value)
    return value


def input(prompt=""):
    """Asks the client for a line of input (input_request on the stdin channel)."""
    return _ask(prompt, False)


def getpass(prompt="Password: ", stream=None):
    """Asks the client for a password: the client does not echo it."""
    return _ask(prompt, True)
