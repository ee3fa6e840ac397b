"""Unit tests of %history (kernel/python/sandpit/history.py) without a kernel:
its ranges are IPython's (IPython itself says what they are), the queries it
asks the supervisor for, and what it prints. The supervisor is played by a
link sink that answers each history frame."""

import os
import sys
import threading

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "kernel", "python"))

from sandpit import history, link, magics  # noqa: E402


@pytest.mark.parametrize("text", [
    "", "4", "1-4", "1:4", "4 6 8-9", "~1/", "~2/1-3", "3/2-5", "~2/1-~1/3", "2/4:3/2",
    "x 1-2 y", "~0/", "12-",
])
def test_ranges_are_ipythons(text):
    from IPython.core.history import extract_hist_ranges
    assert list(history.ranges(text)) == list(extract_hist_ranges(text))


@pytest.fixture
def supervisor():
    """Answers each history query with what answer(query) returns; the queries
    asked are in .asked."""
    class Supervisor:
        asked = []
        session = 7
        entries = [[6, 1, ["x = 1", None]], [7, 1, ["y = 2\nz = 3", None]],
                   [7, 2, ["y", "2"]], [7, 3, ["%history", None]]]

        def answer(self, query):
            rows = self.entries if query.get("output") else [
                [s, n, text[0]] for s, n, text in self.entries]
            if query["hist_access_type"] == "tail":
                rows = rows[-query["n"]:]
            return {"history": rows, "session": self.session}

    sup = Supervisor()

    def sink(obj, buffers):
        sup.asked.append(obj["query"])
        reply = dict(sup.answer(obj["query"]), type=link.HISTORY_REPLY, id=obj["id"])
        threading.Thread(target=link.history_reply_received, args=(reply,)).start()
    link.set_sink(sink)
    history.install()
    yield sup
    link.set_sink(None)


class Shell:
    user_ns = {}


def run(line):
    return magics.run_line(Shell(), "history", line, ("<test>", 1))


def test_the_queries_asked(supervisor):
    run("1-4 ~1/ -o")
    assert supervisor.asked == [
        {"raw": False, "output": True, "hist_access_type": "range", "session": 0,
         "start": 1, "stop": 5},
        {"raw": False, "output": True, "hist_access_type": "range", "session": -1,
         "start": 1, "stop": 0}]
    supervisor.asked.clear()
    run("-g import os -u -r")
    assert supervisor.asked == [{"raw": True, "output": False, "hist_access_type": "search",
                                 "pattern": "*import os*", "unique": True, "n": None}]
    supervisor.asked.clear()
    run("-l 2")
    assert supervisor.asked == [{"raw": False, "output": False, "hist_access_type": "tail",
                                 "n": 3}]


def test_what_it_prints(supervisor, capsys):
    run("-n")
    assert capsys.readouterr().out == (" 6/1: x = 1\n   1:\ny = 2\nz = 3\n   2: y\n"
                                       "   3: %history\n")
    run("-o -p")
    assert capsys.readouterr().out == (">>> x = 1\n>>> y = 2\n... z = 3\n...\n>>> y\n2\n"
                                       ">>> %history\n")
    # -l leaves out the latest, this very %history
    run("-l 2")
    assert capsys.readouterr().out == "y = 2\nz = 3\ny\n"
    # a pattern with a range keeps the lines that match, numbered
    run("1-3 -g z")
    assert capsys.readouterr().out == "   1:\ny = 2\nz = 3\n"


def test_into_a_file_and_usage_errors(supervisor, tmp_path, capsys):
    target = tmp_path / "cells.py"
    run("-f %s" % target)
    assert target.read_text() == "x = 1\ny = 2\nz = 3\ny\n%history\n"
    assert capsys.readouterr().out == ""
    with pytest.raises(magics.UsageError, match="exists already"):
        run("-f %s" % target)
    with pytest.raises(magics.UsageError, match="unrecognized arguments|expected one"):
        run("-f")
    with pytest.raises(magics.UsageError, match="-l"):
        run("-l -3")


def test_a_refusal_is_a_usage_error():
    link.set_sink(lambda obj, buffers: threading.Thread(
        target=link.history_reply_received,
        args=({"type": link.HISTORY_REPLY, "id": obj["id"],
               "error": "the history cannot be read"},)).start())
    try:
        with pytest.raises(magics.UsageError, match="cannot be read"):
            history.magic_history(None, "", None, ("<test>", 1))
    finally:
        link.set_sink(None)
