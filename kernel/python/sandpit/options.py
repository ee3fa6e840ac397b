"""Layer 1, options: the kernel's options that the runtime needs, read once.

The worker's C side sets them in its environment as SANDPIT_* variables from
the options it was started with (set_environment, kernel/worker/worker.c),
before Python starts; a kernel started with SANDPIT_FIGURE_FORMAT or
SANDPIT_DPI in its own environment passes those on too. This module is the
only one of the runtime that reads them, each with its default written here
once, and it reads them when it is imported, before any cell runs: a cell
that changes os.environ changes none of them.
tests/runtime/test_options.py fails if another module reads a SANDPIT_*
variable, or if a variable the C side sets is not read here.

The environment rather than a frame of the link: the values are the
worker's own command line, known before Python starts, and the runtime needs
them while it starts (the audit hook, the seed), before any frame is read;
a worker forked from the template has the template's, which are its own.
"""

import os

_env = os.environ

# --sandbox (on when "on" or not said): what sandpit.guard explains, the patches of
# sandpit.import_hooks.
SANDBOX = _env.get("SANDPIT_SANDBOX", "on") == "on"
# --network: what the audit hook lets through (sandpit.guard).
NETWORK = _env.get("SANDPIT_NETWORK", "off") == "on"
# --workspace (None: not said; workspace() is then the current folder).
WORKSPACE = _env.get("SANDPIT_WORKSPACE") or None
# --memory and --max-file in MiB, as the kernel wrote them ("0": no limit).
MEMORY_MIB = _env.get("SANDPIT_MEMORY_MIB", "0")
MAX_FILE_MIB = _env.get("SANDPIT_MAX_FILE_MIB", "0")
# --figure-format, in lower case ("png" unless said; sandpit.figures checks it).
FIGURE_FORMAT_DEFAULT = "png"
FIGURE_FORMAT = _env.get("SANDPIT_FIGURE_FORMAT", "").strip().lower() or FIGURE_FORMAT_DEFAULT
# --dpi, as written ("": matplotlib's; sandpit.figures checks it).
DPI = _env.get("SANDPIT_DPI", "").strip()
# --seed (sandpit.seeding): an int, or None without it or when it is not one.
try:
    SEED = int(_env.get("SANDPIT_SEED") or "")
except ValueError:
    SEED = None

del _env


def workspace():
    """The workspace, the folder the kernel may write in: --workspace, or the
    current folder when the kernel did not say (outside a worker)."""
    return WORKSPACE or os.getcwd()
