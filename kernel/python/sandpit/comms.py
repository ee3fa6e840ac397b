"""Layer 4, comms: the kernel's end of the channels widgets and extensions open.

The channels are opened and used with comm_open, comm_msg and comm_close,
and listed with comm_info_request.

The `comm` package (Debian python3-comm) is how current libraries reach a
kernel that is not ipykernel: they call comm.create_comm() and
comm.get_comm_manager(), which a kernel replaces with its own. sandpit does,
with a Comm whose messages go out on iopub through the worker's link. When
the package is not installed, the same classes work on their own.

ipywidgets 6 (Debian 12's) predates that package: it imports
ipykernel.comm.Comm and reaches the manager through get_ipython().kernel.
Both are arranged: ipykernel.comm.Comm becomes sandpit's Comm as soon as
ipykernel.comm is imported (sandpit.import_hooks), and the shell's kernel
object carries comm_manager (sandpit.shell).

A message for an unknown target is answered with comm_close, never a crash;
a callback that raises is reported on stderr and the comm lives on.

This module, and with it the comm package and traitlets (a tenth of a
second's worth of imports in all), is loaded only when something needs it:
the front end's first comm message, a library's import of comm or of
ipykernel.comm (sandpit.import_hooks), get_ipython().kernel.comm_manager.
"""

import sys
import traceback
import uuid

from . import link
from . import request

try:
    from comm.base_comm import BaseComm as _Base, CommManager as _BaseManager
except Exception:  # the comm package is optional (and may be broken: comms still work)
    _Base, _BaseManager = object, object


def _report(what):
    sys.stderr.write("sandpit: %s:\n%s" % (what, traceback.format_exc()))


class CommManager(_BaseManager):
    """Targets by name and open comms by id; handles the front end's messages."""

    def __init__(self):
        self.comms = {}
        self.targets = {}

    def register_target(self, target_name, f):
        if isinstance(f, str):
            from importlib import import_module
            module, _, name = f.rpartition(".")
            f = getattr(import_module(module), name)
        self.targets[target_name] = f

    def unregister_target(self, target_name, f=None):
        return self.targets.pop(target_name, None)

    def register_comm(self, comm):
        self.comms[comm.comm_id] = comm
        return comm.comm_id

    def unregister_comm(self, comm):
        self.comms.pop(comm.comm_id, None)

    def get_comm(self, comm_id):
        return self.comms.get(comm_id)

    # the front end's messages; the signatures are those of comm.CommManager
    def comm_open(self, stream, ident, msg):
        content = msg["content"]
        comm_id, target_name = content.get("comm_id"), content.get("target_name")
        comm = Comm(comm_id=comm_id, primary=False, target_name=target_name)
        self.register_comm(comm)
        f = self.targets.get(target_name)
        if f is None and str(target_name).startswith("jupyter.widget"):
            f = self._widget_target(target_name)
        if f is not None:
            try:
                f(comm, msg)
                return
            except Exception:
                _report("the comm target %r failed to open a comm" % (target_name,))
        else:
            link.log("warning", "no comm target %r: closing the comm" % (target_name,))
        comm.close()

    def _widget_target(self, target_name):
        """A widget front end asks for its targets (jupyter.widget.version) as
        soon as it connects, before any cell has imported ipywidgets, which
        registers them: ipykernel answers with comm_close and the first widget
        warns that its JavaScript was not detected. sandpit imports ipywidgets
        then, if it is installed, and lets it answer."""
        import importlib.util
        if importlib.util.find_spec("ipywidgets") is None:
            return None
        try:
            import ipywidgets  # noqa: F401 -- its import registers the targets
        except Exception:
            _report("ipywidgets could not be imported for a widget front end")
            return None
        return self.targets.get(target_name)

    def comm_msg(self, stream, ident, msg):
        comm = self.get_comm(msg["content"].get("comm_id"))
        if comm is None:
            return
        try:
            comm.handle_msg(msg)
        except Exception:
            _report("a comm message handler failed")

    def comm_close(self, stream, ident, msg):
        comm = self.comms.pop(msg["content"].get("comm_id"), None)
        if comm is None:
            return
        comm._closed = True
        try:
            comm.handle_close(msg)
        except Exception:
            _report("a comm close handler failed")


manager = CommManager()


class Comm(_Base):
    """A comm whose messages go to the front end on iopub.

    Takes the arguments of comm.base_comm.BaseComm and of ipykernel's Comm
    (target_name, data, metadata, buffers, comm_id, primary, target_module)."""

    kernel = True  # ipywidgets 6 checks `comm.kernel is not None` before sending

    def __init__(self, target_name="comm", data=None, metadata=None, buffers=None,
                 comm_id=None, primary=True, target_module=None, topic=None, **kwargs):
        self.comm_id = comm_id or uuid.uuid4().hex
        self.primary = primary
        self.target_name = target_name
        self.target_module = target_module
        self.topic = topic or ("comm-%s" % self.comm_id).encode("ascii")
        self._msg_callback = None
        self._close_callback = None
        self._closed = True
        if primary:
            self.open(data=data, metadata=metadata, buffers=buffers)
        else:
            self._closed = False

    def publish_msg(self, msg_type, data=None, metadata=None, buffers=None, **keys):
        content = dict(data={} if data is None else data, comm_id=self.comm_id, **keys)
        request.publish(msg_type, content, metadata or {}, [bytes(memoryview(b))
                                                             for b in buffers or ()])

    def open(self, data=None, metadata=None, buffers=None):
        manager.register_comm(self)
        try:
            self.publish_msg("comm_open", data=data, metadata=metadata, buffers=buffers,
                             target_name=self.target_name, target_module=self.target_module)
            self._closed = False
        except Exception:
            manager.unregister_comm(self)
            raise

    def close(self, data=None, metadata=None, buffers=None, deleting=False):
        if self._closed:
            return
        self._closed = True
        self.publish_msg("comm_close", data=data, metadata=metadata, buffers=buffers)
        if not deleting:
            manager.unregister_comm(self)

    def __del__(self):
        try:
            self.close(deleting=True)
        except Exception:
            pass

    def send(self, data=None, metadata=None, buffers=None):
        self.publish_msg("comm_msg", data=data, metadata=metadata, buffers=buffers)

    def on_msg(self, callback):
        self._msg_callback = callback

    def on_close(self, callback):
        self._close_callback = callback

    def handle_msg(self, msg):
        if self._msg_callback:
            self._msg_callback(msg)

    def handle_close(self, msg):
        if self._close_callback:
            self._close_callback(msg)


# --- requests from the client (sandpit.handlers) -----------------------------------


def _as_msg(req):
    return {"header": req.header, "parent_header": {}, "metadata": req.metadata,
            "content": req.content, "msg_type": req.msg_type, "msg_id": req.msg_id,
            "buffers": [memoryview(b) for b in req.buffers]}


def handle(req):
    """comm_open, comm_msg and comm_close from the front end (a sandpit.request
    Request; no reply goes to the client)."""
    handler = getattr(manager, req.msg_type)
    handler(None, None, _as_msg(req))
    return {"status": "ok"}


def comm_info(req):
    target = req.content.get("target_name")
    comms = {cid: {"target_name": c.target_name} for cid, c in manager.comms.items()
             if not target or c.target_name == target}
    return {"status": "ok", "comms": comms}


# --- set-up -----------------------------------------------------------------------


def adapt(comm_pkg):
    """The comm package makes its comms with sandpit's Comm and manager (called
    by sandpit.import_hooks as soon as the package is imported)."""
    comm_pkg.create_comm = lambda *args, **kwargs: Comm(*args, **kwargs)
    comm_pkg.get_comm_manager = lambda: manager
    # ipykernel.comm.Comm becomes this module's Comm: see sandpit.import_hooks.
