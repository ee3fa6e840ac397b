"""Layer 3, the worker's matplotlib backend: module://sandpit.mpl_backend.

The worker sets MPLBACKEND to this module, so pyplot loads it when the first
figure is made (never before: a cell that does not plot does not import
matplotlib). It draws with Agg, into memory: there is no display server and
no window in the sandbox. Showing a figure means publishing it as
display_data (sandpit.figures does the rendering and the bookkeeping):

- plt.show() publishes the open figures and closes them, as ipykernel's
  inline backend does; a figure made and shown in a loop gives one image per
  show;
- fig.show() publishes that figure;
- the figures still open when the cell ends are published then, by
  figures.show_open_figures(), which the runtime calls after every cell;
- draw_idle(), which pyplot calls after every change in interactive mode,
  does nothing: the figure is drawn once, when it is shown.

savefig() is matplotlib's own and writes files as usual.
"""

import matplotlib
from matplotlib.backend_bases import FigureManagerBase
from matplotlib.backends.backend_agg import FigureCanvasAgg

from . import figures

backend_version = "sandpit"


class FigureManager(FigureManagerBase):
    """Manages one pyplot figure; showing it publishes it."""

    def show(self):
        figures.publish(self.canvas.figure)


class FigureCanvas(FigureCanvasAgg):
    """Agg, drawn only when the figure is shown or saved."""

    manager_class = FigureManager

    def draw_idle(self, *args, **kwargs):
        pass


def show(*args, block=None, **kwargs):
    """plt.show(): publishes each open figure not already published as it
    is, then closes them all."""
    figures.show_all(only_changed=True)


figures.apply_rc(matplotlib, loading_backend=True)
