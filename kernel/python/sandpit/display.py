"""Rich output: MIME bundles and display(). (Minimal; extended by the rich output work.)"""

import builtins

from . import _kernel


def format_object(obj):
    """Returns (data, metadata): the MIME bundle of obj."""
    try:
        text = repr(obj)
    except Exception as e:
        text = "<repr failed: %s: %s>" % (type(e).__name__, e)
    return {"text/plain": text}, {}


def display(*objs, **kwargs):
    for obj in objs:
        data, metadata = format_object(obj)
        _kernel.publish("display_data", {"data": data, "metadata": metadata, "transient": {}})


def install(user_ns):
    builtins.display = display
