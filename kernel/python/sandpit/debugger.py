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

pdb.set_trace() and breakpoint() (bdb.Bdb.set_trace, adapted by
adapt_bdb when a cell first imports pdb) show the cell's frames and no
frame of this runtime: the debugger's outermost frame is the cell's, the
runtime's modules are skipped, and stepping off the end of the cell ends
the tracing, as stepping off the end of a script does.
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


def _own(frame):
    return frame.f_code.co_filename.startswith("<sandpit>/")


def adapt_bdb(module):
    """bdb.Bdb.set_trace with this runtime's frames left out (see above)."""
    original = module.Bdb.set_trace

    def set_trace(self, frame=None):
        if frame is None:
            frame = sys._getframe().f_back
        bottom = f = frame
        while f is not None and not _own(f):
            bottom, f = f, f.f_back
        self.skip = set(self.skip or ()) | {"sandpit", "sandpit.*"}
        dispatch_return = self.dispatch_return

        def on_return(frame, arg):
            result = dispatch_return(frame, arg)
            if frame is not self.botframe:
                return result
            # The cell is over: no stop in what runs after it.
            sys.settrace(None)
            f = frame.f_back
            while f is not None:
                f.f_trace = None
                f = f.f_back
            return None

        self.dispatch_return = on_return
        original(self, frame)
        # Tracing is on from here: assignments only, no call (a call would
        # be a step into this runtime).
        self.botframe = bottom

    module.Bdb.set_trace = set_trace
