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

try:
    import _sandpit
except ImportError:  # not inside a worker
    _sandpit = None

_sink = None

# The request being handled: a dict with msg_type, header, content, metadata,
# execution_count (for execute_request). None between requests.
current = None
# Payloads for the current execute_reply (help pages, set_next_input, ...).
payloads = []


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
    """Publishes an iopub message parented to the current request."""
    flush()
    obj = {"type": "iopub", "msg_type": msg_type, "content": content}
    if metadata:
        obj["metadata"] = metadata
    send(obj, buffers)


def add_payload(payload):
    """Adds a payload (a dict with a "source" key) to the current execute_reply."""
    payloads.append(payload)


def log(level, text):
    """A line in the kernel's log: level is "error", "warning", "info" or "debug"."""
    levels = {"error": 0, "warning": 1, "info": 2, "debug": 3}
    if _sandpit is not None:
        _sandpit.log(levels.get(level, 1), str(text))
