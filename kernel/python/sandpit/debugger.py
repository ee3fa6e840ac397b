"""Layer 2, debugger: pdb on an error, over the client's stdin (%debug, %pdb).

Python's pdb asks for each command with input(), which in the worker is
sandpit's (sandpit.streams): every "(Pdb) " prompt is an input_request to
the client that sent the cell, and what it types comes back as the
command. When the client's own input ends, jupyter_client answers "\\x04",
input() raises EOFError, and pdb quits, as it does at the end of a file.

post_mortem() shows the frames of a traceback as pdb's post-mortem does
(%debug: the last error); set_automatic() makes every error of a cell start
it (%pdb on). It needs a client that takes input (allow_stdin): without
one it says so and returns. pdb is imported when it is first needed.
"""

import sys

_automatic = False


def automatic():
    """%pdb: whether the debugger starts on each error of a cell."""
    return _automatic


def set_automatic(on):
    global _automatic
    _automatic = bool(on)


def _can_ask():
    from . import request
    req = request.current()
    return req is not None and req.allow_stdin


def post_mortem(tb, automatic=False):
    """pdb's post-mortem on the frames of tb (None: says there is nothing to debug)."""
    if tb is None:
        print("No traceback has been produced, nothing to debug.", file=sys.stderr)
        return
    if not _can_ask():
        print("%s: the debugger needs a client that takes input, and the one that "
              "sent this cell does not (allow_stdin is false)"
              % ("%pdb" if automatic else "%debug"), file=sys.stderr)
        return
    import pdb
    # nosigint: an interrupt stays a KeyboardInterrupt, as the kernel's own.
    debugger = pdb.Pdb(nosigint=True, readrc=False)
    debugger.reset()
    while tb.tb_next is not None and tb.tb_frame.f_code.co_filename.startswith("<sandpit>/"):
        tb = tb.tb_next
    debugger.interaction(None, tb)
