"""sandpit: the Python side of the sandpit kernel's worker.

This package is compiled into the sandpit binary and imported by the worker
before any cell runs. User code may import it for the display helpers:

    from sandpit.display import display, HTML, Markdown
"""

__version__ = "0.1.0"
