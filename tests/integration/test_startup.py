"""What a new worker does not do before its first cell: what made it slow to
start. Its runtime is loaded without importlib.abc (which pulls in
importlib.resources, pathlib and tempfile), from bytecode compiled at build
time; it starts no process (platform's `uname -p`); and what a cell may never
need (the comm package and traitlets, uuid, random) is imported only by the
cell that needs it. No time is asserted here (that is `make bench`'s), only
that none of this comes back.
"""

import pytest

from sandpit_testing import start, stop

# Modules that a worker used to import at start, and must not until a cell asks.
NOT_AT_START = ("importlib.abc", "importlib.resources", "tempfile", "subprocess",
                "platform", "uuid", "random", "comm", "traitlets", "sandpit.comms")


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
