"""Layer 3, figures: matplotlib figures as display_data.

How a figure is rendered, plt.show(), and the figures still open when a cell
ends.

The worker sets MPLBACKEND=module://sandpit.mpl_backend, so pyplot draws with
Agg into memory (no display server, no window) and this module publishes
what it draws, as ipykernel's inline backend does:

- plt.show() publishes every open figure, then closes them all; so does the
  end of a cell (handlers.execute calls show_open_figures()) when pyplot is in
  interactive mode, which sandpit turns on as IPython does (apply_rc);
- a figure is image/png (base64, bbox_inches="tight", with its width and
  height in the metadata) and text/plain; with the figure format "retina",
  a PNG at twice the dpi whose metadata asks for half its pixel size; with
  "svg", image/svg+xml; a figure with nothing on it is only text/plain;
- a figure is published once: one that was published (by plt.show(),
  display(fig), fig.show() or as a cell's result) and has not changed since
  is not published again at the end of the cell. The figure's `stale` flag,
  cleared after rendering and set again by any change to an artist, says
  whether it changed.

The format and dpi come from the kernel's options --figure-format and --dpi,
which the runtime reads from sandpit.options; configure()
changes them for the rest of the session. Nothing here imports matplotlib
unless the cell already did: show_open_figures() returns at once when the
backend has never been loaded.
"""

import sys
import weakref

from . import link
from . import options

BACKEND = "module://sandpit.mpl_backend"
FIGURE_FORMATS = ("png", "retina", "svg")

_settings = None  # {"format": ..., "dpi": ...}, from sandpit.options on first use
_published = weakref.WeakSet()  # figures published and not changed since (unless stale)
_rc_applied = False


def settings():
    """The figure format ("png", "retina" or "svg") and dpi (None: matplotlib's)."""
    global _settings
    if _settings is None:
        fmt = options.FIGURE_FORMAT
        if fmt not in FIGURE_FORMATS:
            link.log("warning", "unknown figure format %r: using %s"
                     % (fmt, options.FIGURE_FORMAT_DEFAULT))
            fmt = options.FIGURE_FORMAT_DEFAULT
        dpi = None
        raw = options.DPI
        if raw:
            try:
                dpi = float(raw)
                if not 10 <= dpi <= 1200:
                    raise ValueError(raw)
            except ValueError:
                link.log("warning", "ignoring a dpi of %r" % (raw,))
                dpi = None
        _settings = {"format": fmt, "dpi": dpi}
    return _settings


def configure(figure_format=None, dpi=None):
    """Sets the format ("png", "retina", "svg") and the dpi of the charts
    shown from now on. The dpi applies to figures created afterwards."""
    s = settings()
    if figure_format is not None:
        if figure_format not in FIGURE_FORMATS:
            raise ValueError("the figure format must be one of %s, not %r"
                             % (", ".join(FIGURE_FORMATS), figure_format))
        s["format"] = figure_format
    if dpi is not None:
        s["dpi"] = float(dpi)
        mpl = sys.modules.get("matplotlib")
        if mpl is not None and _ours_active(mpl):
            mpl.rcParams["figure.dpi"] = s["dpi"]


def apply_rc(matplotlib, loading_backend=False):
    """Interactive mode, as IPython sets it (so that the figures left open
    at the end of a cell are shown), and the dpi option as the default dpi of
    new figures. Done once, when matplotlib is imported with sandpit's backend
    (by sandpit.import_hooks), or else when pyplot loads the backend
    (loading_backend: the user switched to it, e.g. with %matplotlib inline);
    once, so that a plt.ioff() that comes after is respected."""
    global _rc_applied
    if _rc_applied or not (loading_backend or _ours_active(matplotlib)):
        return
    _rc_applied = True
    matplotlib.interactive(True)
    dpi = settings()["dpi"]
    if dpi:
        matplotlib.rcParams["figure.dpi"] = dpi


# --- rendering ------------------------------------------------------------------------------


def formatters(fig):
    """{mime: formatter} for a Figure: display.format_object calls these in
    place of _repr_png_ / _repr_svg_, which Figure does not have."""
    fmt = settings()["format"]
    mime = "image/svg+xml" if fmt == "svg" else "image/png"
    return {mime: lambda: render(fig, fmt)}


def render(fig, fmt="png"):
    """The figure as SVG text, or as (PNG bytes, {"width", "height"}); None
    for an empty figure (no axes, no lines), which IPython shows as text only."""
    if not fig.axes and not fig.lines:
        return None
    import io
    if fig.canvas is None:
        from matplotlib.backend_bases import FigureCanvasBase
        FigureCanvasBase(fig)
    buf = io.BytesIO()
    fig.canvas.print_figure(buf, format="svg" if fmt == "svg" else "png",
                            facecolor=fig.get_facecolor(), edgecolor=fig.get_edgecolor(),
                            dpi=fig.dpi * (2 if fmt == "retina" else 1), bbox_inches="tight")
    # Cleared after rendering; any change to an artist of the figure sets it again.
    fig.stale = False
    _published.add(fig)
    data = buf.getvalue()
    if fmt == "svg":
        return data.decode("utf-8")
    from .display import png_size
    width, height = png_size(data)
    if fmt == "retina":
        width, height = width // 2, height // 2
    return data, {"width": width, "height": height}


def _unchanged_since_published(fig):
    return fig in _published and not fig.stale


def _background_metadata(fig):
    """{"needs_background": "light" | "dark"} for a transparent figure whose
    tick labels are all dark or all light (as matplotlib_inline reports it)."""
    from matplotlib import colors
    if colors.to_rgba(fig.get_facecolor())[3] >= 0.5:
        return {}
    light = set()
    for axes in fig.axes:
        for axis in (axes.xaxis, axes.yaxis):
            for label in axis.get_ticklabels():
                r, g, b, _ = colors.to_rgba(label.get_color())
                light.add(r * 0.299 + g * 0.587 + b * 0.114 > 0.5)
    if len(light) == 1:
        return {"needs_background": "dark" if light.pop() else "light"}
    return {}


# --- publishing ------------------------------------------------------------------------


def publish(fig):
    """Publishes one figure as display_data."""
    from . import display
    data, metadata = display.format_object(fig)
    metadata.update(_background_metadata(fig))
    display.publish_display_data(data, metadata)


def show_all(only_changed=True, report_errors=False):
    """Publishes the open pyplot figures (those not yet published unchanged,
    with only_changed), in pyplot's order, then closes them all. With
    report_errors, a figure that fails to render is reported on stderr and
    the others still go out; else the error propagates (after closing)."""
    from matplotlib._pylab_helpers import Gcf
    managers = Gcf.get_all_fig_managers()
    try:
        for manager in managers:
            fig = manager.canvas.figure
            if only_changed and _unchanged_since_published(fig):
                continue
            try:
                publish(fig)
            except Exception as e:
                if not report_errors:
                    raise
                from . import display
                display._report_failure("drawing %r" % (fig,), e)
    finally:
        if managers:
            Gcf.destroy_all()


def _ours_active(mpl):
    try:
        backend = dict.__getitem__(mpl.rcParams, "backend")
    except Exception:
        return False
    return isinstance(backend, str) and backend.lower() == BACKEND


def show_open_figures():
    """At the end of every cell: publishes the figures left open, once each,
    and closes them. Costs a dict look-up when pyplot, which keeps the open
    figures, is not in use."""
    if "matplotlib.pyplot" not in sys.modules:
        return
    mpl = sys.modules.get("matplotlib")
    if mpl is None or not _ours_active(mpl) or not mpl.is_interactive():
        return
    show_all(only_changed=True, report_errors=True)
