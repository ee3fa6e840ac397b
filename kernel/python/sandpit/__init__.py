"""sandpit: the Python side of the sandpit kernel's worker.

This package is compiled into the worker (kernel/embed.py) and
imported by the worker before any cell runs: kernel/worker/pyrt.c imports
sandpit.runtime and calls its prepare_lock() and serve(). User code may
import it for the display helpers:

    from sandpit.display import display, HTML, Markdown

The package is built in layers. A module imports (at its top or inside a
function) only modules of lower layers, and of its own layer those listed
before it: never one above it, so that each can be read and tested with what
is below it alone. Where a lower layer must call a higher one, it takes a
callback that the higher one gives it. The first line of each module's
docstring names its layer; tests/runtime/test_layers.py checks the code
against this table.

    layer                 module        its job
    1 link and streams    options       the kernel's options (SANDPIT_*), read once
                          link          the frames to and from the supervisor
                          request       one request's state, in its thread's context
                          streams       sys.stdout, sys.stderr, input(), getpass()
    2 execution           guard         what the sandbox refuses, in clear words
                          execution     compile and run a cell, its result, await
                          tracebacks    an exception as the client shows it
                          debugger      pdb on an error, over the client's stdin
                          seeding       --seed: random and numpy.random seeded
    3 display             pretty        IPython's text/plain of an object
                          display       MIME bundles, display(), display objects
                          figures       matplotlib figures as display_data
                          mpl_backend   the matplotlib backend of the worker
    4 IPython surface     inputs        IPython's syntax in cells; is_complete
                          comms         the comms of widgets and extensions
                          inspection    inspect_request, obj?, help()
                          autoreload    changed modules of the workspace reloaded
                          storage       %store and %save: kept in the workspace
                          magics        %time, %%capture and the other magics
                          history       %history, on the supervisor's history
                          shell         get_ipython()
                          completion    complete_request
                          import_hooks  comm, IPython, pandas, platform... adjusted
    5 the worker's main   handlers      what each kind of request does
                          runtime       the request loop, the shells, start-up

The callbacks by which a layer reaches up, given at start-up by
runtime.prepare_lock() or by the caller:

    execution.on_result(fn)             a cell's value is shown by display
    display.register_formatters(...)    a matplotlib Figure is drawn by figures
    inspection's find_magic argument    magics are found by shell.find_magic

State that belongs to one request (its parent, its stdin permission, its
time limit and output cap, its payloads) lives in its request.Request, held
in the context of the thread that handles it; state of a shell (its event
loop for top-level await) lives in that shell's thread. Neither lives in a
module global that another request or shell could overwrite.
"""

__version__ = "0.1.0"
