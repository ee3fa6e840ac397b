"""Layer 1, streams: the worker's sys.stdout and sys.stderr, input() and getpass().

The streams hand their text to the worker's output pump
(kernel/worker/pump.c) through the link: a copy into memory, no system call.
The pump's thread sends it as stream messages within a few milliseconds,
together with what C code writes to file descriptors 1 and 2, so a print is
never stuck in a buffer when a cell ends, crashes or waits. Each write belongs to the request
of the context it is made in (sandpit.request), and a capture target there
(%%capture) takes it first. Outside the worker (tests of the runtime), the
streams write to the file descriptors themselves.

input() and getpass() ask the client, on behalf of the current request and
only if that request's client takes input (its allow_stdin): a subshell's
request that does not cannot take the permission away from the main shell's.
The answer "\x04" is the end of the client's input: EOFError.
"""

import builtins
import io
import sys

from . import link
from . import request


# What jupyter_client answers when its own input has ended (Ctrl-D, or the
# end of a file an agent reads from): input() then raises EOFError, as
# under ipykernel, so that pdb and input loops stop.
EOF = "\x04"


class StdinNotImplementedError(NotImplementedError):
    """input() was called, but the client that sent the cell does not take input."""


# What OutStream.write reads directly: the request and capture of this context,
# and the pump (link.write without its layer; None outside a worker).
_current = request._current
_capture = request._capture
_send = link.pump_write


def _write(fd, data):
    target = request.capturing()
    while target is not None:
        if target.write(fd, data):
            return len(data)
        target = target.outer
    return link.write(fd, data, request.current_tag())


# In the worker, what OutStream.write does, in C (kernel/worker/pymodule.c): each
# stream's instance holds it as its write, which print() finds before the
# method, and which hands a captured write to _write as the method does.
_writes_in_c = link.stream_setup(_capture, _current, _write)


class _BinaryWriter(io.RawIOBase):
    def __init__(self, fd):
        self._fd = fd

    def writable(self):
        return True

    def write(self, b):
        return _write(self._fd, b)

    def fileno(self):
        return self._fd


class OutStream(io.TextIOBase):
    """A text stream on fd 1 or 2 that writes through."""

    def __init__(self, fd, name):
        self._fd = fd
        self.name = name
        self.buffer = _BinaryWriter(fd)
        if fd in _writes_in_c:
            self.write = _writes_in_c[fd]

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
        # The common case in one call: nothing captures this context's output
        # (a print in a loop writes twice per line).
        if _send is not None and _capture.get() is None:
            req = _current.get()
            return _send(self._fd, s, req.msg_id if req is not None else None)
        return _write(self._fd, s)

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
    # The getpass module (and termios with it) is imported by the cells that
    # use it: sandpit.import_hooks calls adapt_getpass then.
    if "getpass" in sys.modules:
        adapt_getpass(sys.modules["getpass"])


def adapt_getpass(module):
    """getpass.getpass() asks the client, as input() does."""
    module.getpass = getpass


def _ask(prompt, password):
    req = request.current()
    if req is None:
        raise StdinNotImplementedError(
            "input() is not available here: no cell is running on whose behalf to ask "
            "the client")
    if not req.allow_stdin:
        raise StdinNotImplementedError(
            "input() is not available: the client that sent this cell does not accept "
            "input (allow_stdin is false)")
    link.flush()
    value = req.ask_input(prompt, password)
    if value == EOF:
        raise EOFError("EOF when reading a line")
    return value


def input(prompt=""):
    """Asks the client for a line of input (input_request on the stdin channel)."""
    return _ask(prompt, False)


def getpass(prompt="Password: ", stream=None):
    """Asks the client for a password: the client does not echo it."""
    return _ask(prompt, True)
