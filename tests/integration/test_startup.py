"""What a new worker does not do before its first cell: what made it slow to
start. Its runtime is loaded without importlib.abc (which pulls in
importlib.resources, pathlib and tempfile), from bytecode compiled at build
time; it starts no process (platform's `uname -p`); and what a cell may never
need (the comm package and traitlets, uuid, random) is imported only by the
cell that needs it. No time is asserted here (that is `make bench`'s), only
that none of this comes back. The magics (and %history's argparse and
shlex), getpass and copy are loaded by the first cell that uses them, and
work from there as if they had been loaded at start.
"""

import re

import pytest

from sandpit_testing import start, stdout_of, stop

# Modules that a worker used to import at start, and must not until a cell asks.
NOT_AT_START = ("importlib.abc", "importlib.resources", "tempfile", "subprocess",
                "platform", "uuid", "random", "comm", "traitlets", "sandpit.comms")


# What a plain cell does not use, and the runtime loads only when a cell does:
# the magics, with %history and what it parses its line with; getpass (and
# termios), adapted as it is imported; copy, for display objects' metadata;
# sandpit.figures (and weakref), for the figures pyplot keeps open.
LAZY = ("sandpit.magics", "sandpit.history", "argparse", "gettext", "shlex", "getpass",
        "termios", "copy", "sandpit.figures", "weakref")


@pytest.fixture(scope="module")
def k(jupyter_dir, tmp_path_factory):
    k = start("sandpit", cwd=str(tmp_path_factory.mktemp("ws")))
    yield k
    stop(k)


def test_nothing_a_cell_may_not_need_is_imported_at_start(k):
    # The first cell of this kernel, which imports nothing but sys.
    loaded = k.value("sorted(m for m in %r if m in __import__('sys').modules)"
                     % (NOT_AT_START,))
    assert loaded == "[]"


def test_the_runtime_runs_from_the_bytecode_built_with_it(k):
    k.run("import sys, marshal\n"
          "loader = sys.modules['sandpit.runtime'].__loader__\n"
          "entries = dict(loader.modules)")
    # Every module of the runtime has bytecode that this interpreter takes.
    assert k.value("[n for n, e in entries.items() if e[2] is None]") == "[]"
    # Without it (a binary built by another Python), the source compiles to the
    # same code under the same filename.
    out = k.run("for name, (source, pkg, code) in entries.items():\n"
                "    loader.modules[name] = (source, pkg, None)\n"
                "    try:\n"
                "        fallback = loader.get_code(name)\n"
                "    finally:\n"
                "        loader.modules[name] = (source, pkg, code)\n"
                "    built = marshal.loads(code)\n"
                "    assert fallback.co_filename == built.co_filename == loader.origin(name)\n"
                "    assert fallback.co_code == built.co_code, name\n"
                "print(len(entries))")
    assert int(out) > 10
    # Its source is there for tracebacks and inspection.
    assert "def display(" in k.value(
        "__import__('inspect').getsource(sys.modules['sandpit.display'].display)")


def test_platform_answers_without_starting_a_process(k):
    # Debian's pandas asks platform.uname()[4] at import, which runs `uname -p`:
    # in the sandbox no program runs, and the answer comes without trying.
    assert k.value("__import__('platform').uname()[4] is not None, "
                   "__import__('platform').processor()") == "(True, '')"
    assert k.value("'subprocess' in __import__('sys').modules") == "False"


def test_comms_arrive_with_the_comm_package(k):
    k.run("import comm\nc = comm.create_comm(target_name='startup-test')")
    assert k.value("type(c).__module__, comm.get_comm_manager() is "
                   "__import__('sys').modules['sandpit.comms'].manager") == "('sandpit.comms', True)"


def test_a_plain_cell_loads_no_magics_getpass_or_copy(fresh_kernel):
    k = fresh_kernel
    k.run("x = 1")
    # Nor the ast module's helpers: cells are parsed with the classes of _ast,
    # which it re-exports (an error's traceback imports it for its carets);
    # nor what lays out a traceback (traceback, linecache with tokenize).
    assert k.run("import sys\nprint(sorted(m for m in %r if m in sys.modules))"
                 % (LAZY + ("ast", "traceback", "linecache", "tokenize", "textwrap"),)) == "[]\n"
    # An error, and the value of an expression, need none of them either.
    reply, outputs = k.execute("1 / 0")
    assert reply["content"]["ename"] == "ZeroDivisionError"
    assert any("ZeroDivisionError" in line for m in outputs if m["msg_type"] == "error"
               for line in m["content"]["traceback"])
    k.run("x + 1")
    assert k.run("print(sorted(m for m in %r if m in sys.modules))" % (LAZY,)) == "[]\n"

    # They come with the first cell that uses them, and work as they did.
    assert "x = 1" in k.run("%history").splitlines()
    assert "per loop" in k.run("%timeit -n1 -r1 pass")
    reply, outputs = k.execute("!echo hi")
    assert "shell commands are disabled in this kernel" in stdout_of(outputs, "stderr")
    matches = k.request("complete", "%hi", 3)["content"]["matches"]
    assert "%history" in matches and "%hist" in matches
    assert k.run("import getpass\n"
                 "print(getpass.getpass is sys.modules['sandpit.streams'].getpass)") == "True\n"
    assert k.run("from sandpit.display import Math\nm = {'k': [1]}\n"
                 "s, copied = Math('x', metadata=m)._repr_latex_()\n"
                 "print(copied == m and copied is not m)") == "True\n"
    reply, outputs = k.execute("1 / 0")
    assert reply["content"]["ename"] == "ZeroDivisionError"


def test_the_first_traceback_shows_the_lines_of_cells_run_before_it(fresh_kernel):
    # linecache comes with the first traceback; the cells before it are in it.
    k = fresh_kernel
    k.run("def f(x):\n    return 1 / x")
    assert k.run("import sys\nprint('linecache' in sys.modules)") == "False\n"
    reply, outputs = k.execute("f(0)")
    assert reply["content"]["ename"] == "ZeroDivisionError"
    tb = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(reply["content"]["traceback"]))
    assert "Cell In[1], line 2" in tb and "return 1 / x" in tb, tb
    assert k.run("import inspect\nprint(inspect.getsource(f), end='')") == \
        "def f(x):\n    return 1 / x\n"


def test_ipaddress_waits_for_its_first_use(fresh_kernel):
    # _dh's pathlib imports urllib.parse, which imports ipaddress at its top;
    # the module is there, unrun, until something asks it for a name.
    k = fresh_kernel
    assert k.value("type(__import__('sys').modules['ipaddress']).__name__") == "'_LazyModule'"
    assert k.value("type(_dh[0]).__name__") == "'PosixPath'"
    # urllib.parse asks it for bracketed hosts: from there it is the module.
    assert k.value("__import__('urllib.parse').parse.urlsplit('http://[::1]:8/').hostname") \
        == "'::1'"
    assert k.run("import ipaddress, sys, types\n"
                 "print(type(sys.modules['ipaddress']) is types.ModuleType,\n"
                 "      ipaddress.ip_address('10.1.2.3').is_private,\n"
                 "      ipaddress.__file__.endswith('/ipaddress.py'))") == "True True True\n"
    # A module imported after it finds it as it is.
    assert k.value("__import__('sys').modules['ipaddress'].IPv4Network('10.0.0.0/8')"
                   ".num_addresses") == "16777216"


# The worker's pages that hold the embedded runtime (its sources and
# bytecode), counted from its own pagemap: the whole pages between the first
# and the last byte of the files, whose addresses numpy gives from the
# importer's memoryviews of them.
RESIDENT_RUNTIME = """\
import os, struct, sys, numpy
_entries = sys.modules['sandpit.runtime'].__loader__.modules
_spans = [(numpy.frombuffer(v, dtype=numpy.uint8).ctypes.data, len(v))
          for e in _entries.values() for v in (e[0], e[2]) if v is not None and len(v)]
_page = os.sysconf('SC_PAGESIZE')
_lo = min(a for a, n in _spans) // _page + 1
_hi = max(a + n for a, n in _spans) // _page

def resident_runtime_pages():
    with open('/proc/self/pagemap', 'rb') as f:
        f.seek(_lo * 8)
        entries = struct.unpack('%dQ' % (_hi - _lo), f.read((_hi - _lo) * 8))
    return sum(e >> 63 for e in entries)
"""


def test_the_runtimes_pages_go_back_after_each_import_from_it(fresh_kernel):
    k = fresh_kernel
    k.run(RESIDENT_RUNTIME)
    # After start-up, and after the first cell.
    assert k.value("resident_runtime_pages()") == "0"
    # Reading a module's source maps its pages (and their neighbours)...
    assert int(k.run("bytes(_entries['sandpit.magics'][0])\n"
                     "print(resident_runtime_pages())")) > 0
    # ...and an import from the runtime, here the first magic's, gives them back.
    assert "per loop" in k.run("%timeit -n1 -r1 pass")
    assert k.value("'sandpit.magics' in sys.modules, resident_runtime_pages()") == "(True, 0)"
