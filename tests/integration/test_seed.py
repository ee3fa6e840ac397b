"""--seed N: each new worker seeds random, and numpy.random when a cell
imports numpy, so that running the same cells again gives the same numbers:
in a second kernel, and after a restart."""

import random
import subprocess

import numpy

from sandpit_testing import SANDPIT

DRAW = "import random\nimport numpy as np\nprint(repr(random.random()), repr(np.random.rand()))"


def expected(seed):
    return "%r %r\n" % (random.Random(seed).random(), numpy.random.RandomState(seed).rand())


def test_same_seed_same_numbers_in_new_kernels_and_after_restart(kernel_with):
    k = kernel_with("--seed", "42")
    assert k.run(DRAW) == expected(42)
    k2 = kernel_with("--seed", "42")
    assert k2.run(DRAW) == expected(42)
    k.km.restart_kernel(now=False)
    k.kc.wait_for_ready(timeout=60)
    k.drain_iopub()
    assert k.run(DRAW) == expected(42), "a restarted kernel starts from the seed again"


def test_numpy_imported_before_the_first_cell_is_seeded_too(kernel_with):
    k = kernel_with("--seed", "7", "--preload", "numpy")
    assert k.run("import sys\nprint('numpy.random' in sys.modules)") == "True\n"
    assert k.run(DRAW) == expected(7)


def test_without_a_seed_numbers_differ(kernel_with):
    a, b = kernel_with(), kernel_with()
    assert a.run(DRAW) != b.run(DRAW)


def test_a_seed_is_a_whole_number(jupyter_dir):
    for bad in ("-1", "abc", "4294967296", ""):
        p = subprocess.run([SANDPIT, "install", "--prefix", str(jupyter_dir), "--name",
                            "bad-seed", "--seed", bad], capture_output=True, text=True)
        assert p.returncode != 0 and "--seed" in p.stderr, (bad, p.stderr)
