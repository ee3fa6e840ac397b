"""The worker's side of the link, as the rest of the runtime uses it.

Everything that goes to the client passes through publish() (iopub messages)
or the request's reply. publish() flushes fds 1 and 2 first, so that output
reaches the client in the order the cell produced it: print, then a chart,
then print gives stream, display_data, stream.

Outside the kernel (tests of the runtime run under a plain python3), the
module `_sandpit` does not exist; set_sink() then captures what would be sent.
"""

import json
import math
import threading

try:
    import _sandpit
except ImportError:  # not inside a worker
    _sandpit = None

_sink = None

# Per thread: the request being handled (main shell and each subshell run in
# threads of their own) and the tag of the request that output belongs to.
#   _tls.request   the request dict (msg_type, header, content, metadata,
#                  execution_count...), None between requests
#   _tls.payloads  payloads for that request's execute_reply
#   _tls.tag       msg_id of the request this thread's output belongs to: the
#                  one it handles, or for a thread that a cell started, that cell
_tls = threading.local()


def __getattr__(name):
    # _kernel.current and _kernel.payloads read this thread's values.
    if name == "current":
        return getattr(_tls, "request", None)
    if name == "payloads":
        if not hasattr(_tls, "payloads"):
            _tls.payloads = []
        return _tls.payloads
    raise AttributeError("module %r has no attribute %r" % (__name__, name))


def begin_request(req):
    """Makes req this thread's current request (the runtime calls it)."""
    _tls.request = req
    _tls.payloads = []
    _tls.tag = (req.get("header") or {}).get("msg_id")


def end_request():
    _tls.request = None
    _tls.payloads = []


def current_tag():
    """msg_id of the request that output from this thread belongs to, or None."""
    return getattr(_tls, "tag", None)


def set_thread_tag(tag):
    _tls.tag = tag


def set_sink(fn):
    """Sends frames to fn(obj, buffers) instead of the supervisor (for tests)."""
    global _sink
    _sink = fn


def _clean(obj):
    """JSON has no NaN or infinity: they become null, as ipykernel's json_clean does."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_clean(v) for v in obj]
    return obj


def _default(obj):
    if isinstance(obj, (bytes, bytearray, memoryview)):
        import base64
        return base64.b64encode(bytes(obj)).decode("ascii")
    if hasattr(obj, "isoformat"):
        return obj.isoformat()
    if hasattr(obj, "tolist"):  # numpy scalars and arrays
        return obj.tolist()
    if isinstance(obj, (set, frozenset)):
        return list(obj)
    return repr(obj)


def dumps(obj):
    try:
        return json.dumps(obj, allow_nan=False, default=_default, ensure_ascii=False)
    except ValueError:
        return json.dumps(_clean(obj), allow_nan=False, default=_default, ensure_ascii=False)


def send(obj, buffers=()):
    """Sends one frame (a JSON-able dict, plus binary buffers) to the supervisor."""
    if _sink is not None:
        _sink(obj, list(buffers))
        return
    _sandpit.send(dumps(obj).encode("utf-8", "surrogatepass"), list(buffers))


def flush():
    """Sends the output written so far to stdout and stderr."""
    try:
        import sys
        for s in (sys.stdout, sys.stderr):
            if s is not None and hasattr(s, "flush"):
                s.flush()
    except Exception:
        pass
    if _sandpit is not None:
        _sandpit.flush()


def publish(msg_type, content, metadata=None, buffers=()):
    """Publishes an iopub message parented to the request this thread's output
    belongs to (see current_tag)."""
    flush()
    obj = {"type": "iopub", "msg_type": msg_type, "content": content}
    tag = getattr(_tls, "tag", None)
    if tag:
        obj["parent"] = tag
    if metadata:
        obj["metadata"] = metadata
    send(obj, buffers)


def add_payload(payload):
    """Adds a payload (a dict with a "source" key) to the current execute_reply."""
    if not hasattr(_tls, "payloads"):
        _tls.payloads = []
    _tls.payloads.append(payload)


def log(level, text):
    """A line in the kernel's log: level is "error", "warning", "info" or "debug"."""
    levels = {"error": 0, "warning": 1, "info": 2, "debug": 3}
    if _sandpit is not None:
        _sandpit.log(levels.get(level, 1), str(text))
