"""matplotlib figures left open at the end of a cell. (Extended by the rich output work.)"""

import sys


def show_open_figures():
    if "matplotlib.pyplot" not in sys.modules:
        return
