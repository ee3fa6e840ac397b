"""Unit tests of execution (kernel/python/sandpit/execution.py): a cell's last
expression, its result numbered by its own cell, and top-level await, with
two shells running at once (two threads, as the main shell and a subshell)."""

import os
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "kernel", "python"))

from sandpit import execution  # noqa: E402

WAIT = 10  # seconds any one step may take


@pytest.fixture
def results(monkeypatch):
    """(value, count) of each result shown, with the worker's displayhook."""
    shown = []
    monkeypatch.setattr(sys, "displayhook", execution.displayhook)
    execution.on_result(lambda value, count: shown.append((value, count)))
    yield shown
    execution.on_result(None)


def run(code, ns, count=1, **kwargs):
    filename = execution.cell_filename(count)
    execution.register_source(filename, code)
    execution.run_code(code, filename, count, ns=ns, **kwargs)


def test_the_last_expression_is_the_result(results):
    ns = {}
    run("x = 6\nx * 7", ns, count=3)
    run("x * 2;", ns, count=4)
    run("x  # a comment", ns, count=5, silent=True)
    run("x + 1", ns, count=6, store_history=False)
    assert results == [(42, 3), (7, 6)]
    assert ns["_3"] == 42 and ns["Out"] == {3: 42} and "_6" not in ns
    assert (ns["_"], ns["__"]) == (7, 42)


def test_cell_names_and_labels():
    name = execution.cell_filename(12)
    assert execution.cell_label(name) == "Cell In[12]"
    assert execution.cell_filename(12) != name
    assert execution.cell_label("/usr/lib/python3.11/os.py") is None


def test_record_input_keeps_in_and_underscore_i():
    ns = {}
    for count, code in enumerate(("a = 1", "b = 2", "c = 3"), start=1):
        execution.record_input(count, code, ns)
    assert ns["In"] == ["", "a = 1", "b = 2", "c = 3"]
    assert (ns["_i"], ns["_ii"], ns["_i3"]) == ("b = 2", "a = 1", "c = 3")


def test_a_result_is_numbered_by_its_own_cell_while_another_runs(results):
    """Cell 1 shows its result while cell 2 runs in another thread: it is
    numbered 1, not by whichever cell began last."""
    started, release, shown = threading.Event(), threading.Event(), threading.Event()
    ns = {"started": started, "release": release, "shown": shown}
    execution.on_result(lambda value, count: (results.append((value, count)),
                                              value == "first" and shown.set()))
    first = threading.Thread(target=run, args=("started.set()\nrelease.wait(%d)\n'first'"
                                               % WAIT, ns, 1))
    first.start()
    run("started.wait(%d)\nrelease.set()\nshown.wait(%d)\n'second'" % (WAIT, WAIT), ns, 2)
    first.join(WAIT)
    assert results == [("first", 1), ("second", 2)]


def test_two_shells_await_at_the_same_time():
    """Each thread (the main shell, a subshell) awaits on an event loop of its own."""
    started, release = threading.Event(), threading.Event()
    ns = {"started": started, "release": release}
    errors = []

    def main_shell():
        try:  # started is set while this thread's loop runs the cell
            run("import asyncio\n"
                "def hold():\n"
                "    started.set()\n"
                "    return release.wait(%d)\n"
                "held = await asyncio.get_running_loop().run_in_executor(None, hold)"
                % WAIT, ns, 1)
        except BaseException as e:
            errors.append(e)
    thread = threading.Thread(target=main_shell)
    thread.start()
    assert started.wait(WAIT)
    try:
        run("await asyncio.sleep(0)\nawaited = True", ns, 2)
    finally:
        release.set()
        thread.join(WAIT)
    assert ns["awaited"] is True and errors == []
    assert execution.event_loop() is execution.event_loop()


@pytest.mark.parametrize("code", ["total = sum(range(10))",
                                  "import asyncio\nawait asyncio.sleep(0)\ntotal = 45"])
def test_a_profiler_sees_the_users_code_alone(code):
    """run() with a profiler (%prun) runs plain and awaiting code alike, and
    the profile holds the cell's frames, not run()'s own."""
    import cProfile
    import pstats
    ns = {}
    profiler = cProfile.Profile()
    execution.run(execution.compile_statements(execution.parse(code, "<p>").body, "<p>"),
                  ns, profiler)
    files = {f for f, _, _ in pstats.Stats(profiler).stats}
    assert ns["total"] == 45 and "<p>" in files
    assert not any(f.endswith("execution.py") for f in files), files
