"""The kernel's options in the runtime (kernel/python/sandpit/options.py): the
SANDPIT_* variables that the worker's C side sets are read there alone, each
with its default once, when the runtime starts; no other module of the
runtime reads one."""

import ast
import glob
import json
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "kernel", "python", "sandpit")

NAME = re.compile(r"SANDPIT_\w*")


def names_read(source):
    """The SANDPIT_* names that a module's source holds as strings (or parts of
    one: "SANDPIT_" + x, f"SANDPIT_{x}"), as a variable's name is held; the
    names that prose mentions (docstrings, messages) are not."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, (str, bytes)):
            value = node.value.decode("latin-1") if isinstance(node.value, bytes) \
                else node.value
            if NAME.fullmatch(value):
                found.add(value)
    return found


@pytest.mark.parametrize("source", [
    "import os\nos.environ.get('SANDPIT_SANDBOX', 'on')",
    "import os\nos.environ['SANDPIT_SEED']",
    "import os\nos.getenv('SANDPIT_DPI')",
    "import os\nos.environb.get(b'SANDPIT_SANDBOX')",
    "import os\nos.environ.get('SANDPIT_' + 'SANDBOX')",
    "import os\nname = 'SEED'\nos.environ.get(f'SANDPIT_{name}')",
])
def test_a_read_of_a_variable_is_seen(source):
    assert names_read(source)


def test_no_other_module_reads_a_sandpit_variable():
    readers = {}
    for path in sorted(glob.glob(os.path.join(PACKAGE, "*.py"))):
        if os.path.basename(path) != "options.py":
            with open(path, encoding="utf-8") as f:
                found = names_read(f.read())
            if found:
                readers[os.path.basename(path)] = sorted(found)
    assert readers == {}


def c_variables():
    """The SANDPIT_* variables that the worker's C code sets for Python: those
    it sets (setenv) and does not take out again (unsetenv) before Python runs
    cells."""
    set_, unset = set(), set()
    for path in glob.glob(os.path.join(ROOT, "kernel", "**", "*.c"), recursive=True):
        with open(path, encoding="utf-8") as f:
            text = f.read()
        set_.update(re.findall(r"\bsetenv\(\"(SANDPIT_\w+)\"", text))
        unset.update(re.findall(r"\bunsetenv\(\"(SANDPIT_\w+)\"", text))
    return set_ - unset


def test_options_reads_each_variable_the_c_side_sets():
    wanted = c_variables()
    assert "SANDPIT_SANDBOX" in wanted, "the pattern no longer finds the C side's setenv"
    with open(os.path.join(PACKAGE, "options.py"), encoding="utf-8") as f:
        assert names_read(f.read()) == wanted


PROBE = """
import json, os, sys
sys.path.insert(0, sys.argv[1])
from sandpit import options
before = {n: getattr(options, n) for n in ("SANDBOX", "NETWORK", "WORKSPACE", "MEMORY_MIB",
                                           "MAX_FILE_MIB", "FIGURE_FORMAT", "DPI", "SEED")}
os.environ.update(SANDPIT_SANDBOX="off", SANDPIT_SEED="99", SANDPIT_WORKSPACE="/elsewhere")
from sandpit import seeding
print(json.dumps([before, options.workspace(), seeding.seed(), options.SANDBOX]))
"""


def probe(env):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SANDPIT_")} | env
    out = subprocess.run([sys.executable, "-c", PROBE, os.path.dirname(PACKAGE)], env=env,
                         capture_output=True, text=True, check=True, timeout=60).stdout
    return json.loads(out)


def test_each_default_when_the_kernel_said_nothing(tmp_path):
    before, workspace, seed, sandbox = probe({})
    assert before == {"SANDBOX": True, "NETWORK": False, "WORKSPACE": None,
                      "MEMORY_MIB": "0", "MAX_FILE_MIB": "0", "FIGURE_FORMAT": "png",
                      "DPI": "", "SEED": None}
    assert workspace == os.getcwd() and seed is None and sandbox is True


def test_the_kernels_options_as_the_worker_sets_them():
    before, workspace, seed, sandbox = probe({
        "SANDPIT_SANDBOX": "on", "SANDPIT_NETWORK": "on", "SANDPIT_WORKSPACE": "/ws",
        "SANDPIT_MEMORY_MIB": "512", "SANDPIT_MAX_FILE_MIB": "8",
        "SANDPIT_FIGURE_FORMAT": " SVG ", "SANDPIT_DPI": " 50 ", "SANDPIT_SEED": "7"})
    assert before == {"SANDBOX": True, "NETWORK": True, "WORKSPACE": "/ws",
                      "MEMORY_MIB": "512", "MAX_FILE_MIB": "8", "FIGURE_FORMAT": "svg",
                      "DPI": "50", "SEED": 7}
    # read once: a cell's change of os.environ changes none of them
    assert workspace == "/ws" and seed == 7 and sandbox is True


@pytest.mark.parametrize("value, expected", [("off", False), ("", False), ("on", True)])
def test_the_sandbox_is_on_unless_said_otherwise(value, expected):
    assert probe({"SANDPIT_SANDBOX": value})[0]["SANDBOX"] is expected


@pytest.mark.parametrize("value", ["", "x", "1.5"])
def test_a_seed_that_is_not_a_whole_number_is_none(value):
    assert probe({"SANDPIT_SEED": value})[0]["SEED"] is None
