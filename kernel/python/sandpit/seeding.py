"""Layer 2, seeding: --seed, the same random numbers every time the same
cells run.

With `sandpit kernel --seed N` (or `sandpit start` and `sandpit mcp` with
it), each new worker (the first, and every one after a restart) seeds
Python's `random` with N before any cell runs, and numpy's global generator
(`numpy.random.seed(N)`) as soon as numpy.random is imported: when it was
preloaded, at once; otherwise through sandpit.import_hooks, when a cell first
imports numpy, so that a kernel whose cells never use numpy does not pay for
importing it. Generators a cell makes itself (`numpy.random.default_rng()`,
`random.Random()`) are the cell's to seed.
"""

import sys

from . import options


def seed():
    """The kernel's seed (an int), or None without --seed."""
    return options.SEED


def seed_numpy(module):
    """Seeds numpy's global generator (module is numpy.random)."""
    n = seed()
    if n is not None:
        module.seed(n)


def install(user_ns):
    n = seed()
    if n is None:
        return
    import random  # only with --seed: a kernel without it does not load random
    random.seed(n)
    np_random = sys.modules.get("numpy.random")
    if np_random is not None:
        seed_numpy(np_random)
