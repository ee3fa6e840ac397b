"""Unit tests of the link (kernel/python/sandpit/link.py): the kinds of frame
between worker and supervisor, their parser and their builders, and that no
other module of the runtime spells a kind out."""

import ast
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "kernel", "python", "sandpit")
sys.path.insert(0, os.path.dirname(PACKAGE))

from sandpit import link  # noqa: E402

GOOD = {
    link.REQUEST: {"shell": "", "msg_type": "execute_request", "header": {"msg_id": "m"},
                   "content": {"code": "1"}, "execution_count": 1},
    link.INTERRUPT: {"shell": "s1", "parent": "m", "reason": "timeout", "limit": 2.0},
    link.SUBSHELL: {"op": "create", "id": "s1"},
    link.INPUT_REPLY: {"parent": "m", "content": {"value": "Ada"}},
    link.HISTORY_REPLY: {"id": 3, "history": [[1, 2, "x = 1"]], "session": 4},
}


def frame(kind, **fields):
    obj = dict(GOOD[kind], type=kind)
    obj.update(fields)
    return json.dumps(obj).encode()


def test_the_kinds_are_those_of_the_c_side():
    assert link.INCOMING == ("request", "interrupt", "subshell", "input_reply",
                             "history_reply")
    assert link.OUTGOING == ("hello", "iopub", "reply", "input_request", "history")


@pytest.mark.parametrize("kind", sorted(GOOD))
def test_parse_takes_each_kind_the_supervisor_sends(kind):
    got_kind, got, buffers = link.parse(frame(kind), [b"x"])
    assert got_kind == kind and got["type"] == kind and buffers == [b"x"]
    for field, value in GOOD[kind].items():
        assert got[field] == value


@pytest.mark.parametrize("raw, why", [
    (b"{", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (b'{"type": "frobnicate"}', "unknown kind"),
    (b'{"no": "type"}', "unknown kind"),
    # kinds the worker sends never come from the supervisor
    (b'{"type": "reply", "shell": "", "content": {}}', "unknown kind"),
    (b'{"type": "input_request", "parent": "m", "content": {}}', "unknown kind"),
    (frame(link.REQUEST, header="m"), "without header"),
    (frame(link.REQUEST, shell=None), "without shell"),
    (frame(link.INTERRUPT, parent=7), "without parent"),
    (frame(link.INTERRUPT, reason="boredom"), "with reason 'boredom'"),
    (frame(link.SUBSHELL, op="rename"), "with op 'rename'"),
    (frame(link.SUBSHELL, id=["s1"]), "without id"),
    (frame(link.INPUT_REPLY, content="Ada"), "without content"),
    (frame(link.HISTORY_REPLY, id="3"), "without id"),
    (frame(link.HISTORY_REPLY, history=None), "one of history"),
    (frame(link.HISTORY_REPLY, error="no"), "one of history"),
    (frame(link.HISTORY_REPLY, history={}), "one of history"),
])
def test_parse_refuses_what_is_not_a_frame(raw, why):
    with pytest.raises(link.FrameError, match=why):
        link.parse(raw)


def test_builders_make_the_kinds_the_worker_sends():
    assert link.iopub("stream", {"name": "stdout", "text": "x"}) == {
        "type": "iopub", "msg_type": "stream", "content": {"name": "stdout", "text": "x"}}
    assert link.iopub("display_data", {}, parent="m", metadata={"a": 1}) == {
        "type": "iopub", "msg_type": "display_data", "content": {}, "parent": "m",
        "metadata": {"a": 1}}
    assert link.reply("s1", "m", {"status": "ok"}) == {
        "type": "reply", "shell": "s1", "parent": "m", "content": {"status": "ok"}}
    assert link.reply("", "m", {}, {"m": 1})["metadata"] == {"m": 1}
    assert link.input_request("m", 42, 1) == {"type": "input_request", "parent": "m",
                                              "content": {"prompt": "42", "password": True}}
    assert link.history_query(5, {"hist_access_type": "tail"}) == {
        "type": "history", "id": 5, "query": {"hist_access_type": "tail"}}


def _answering(answer):
    """A sink that answers each history frame from another thread, as the
    reader thread would hand over the supervisor's reply; the frames sent are
    kept in the list it returns."""
    import threading
    sent = []

    def sink(obj, buffers):
        sent.append(obj)
        reply = answer(obj)
        if reply is not None:
            threading.Thread(target=link.history_reply_received,
                             args=(dict(reply, type=link.HISTORY_REPLY, id=obj["id"]),)
                             ).start()
    link.set_sink(sink)
    return sent


def test_history_asks_and_waits_for_its_own_answer():
    sent = _answering(lambda obj: {"history": [[2, 1, "a"], [2, 2, ["b", "1"]]],
                                   "session": 2})
    try:
        got = link.history({"hist_access_type": "range", "session": 0})
        again = link.history({"hist_access_type": "tail"})
    finally:
        link.set_sink(None)
    assert got == [(2, 1, "a"), (2, 2, ("b", "1"))] and got.session == 2
    assert [f["query"] for f in sent] == [{"hist_access_type": "range", "session": 0},
                                         {"hist_access_type": "tail"}]
    assert sent[0]["id"] != sent[1]["id"] and again == got
    assert link._history_waiting == {}  # nothing left waiting


def test_history_says_why_it_was_refused():
    _answering(lambda obj: {"error": "history: \"n\" must be a whole number"})
    try:
        with pytest.raises(link.HistoryError, match="must be a whole number"):
            link.history({"n": -1})
    finally:
        link.set_sink(None)


def test_history_does_not_wait_for_ever(monkeypatch):
    monkeypatch.setattr(link, "HISTORY_WAIT", 0.01)
    _answering(lambda obj: None)
    try:
        with pytest.raises(link.HistoryError, match="did not answer"):
            link.history({})
    finally:
        link.set_sink(None)
    # an answer that comes too late, or to nothing, is dropped
    link.history_reply_received({"type": link.HISTORY_REPLY, "id": 10 ** 9,
                                 "history": []})


def test_dumps_writes_what_json_cannot_say():
    text = link.dumps({"nan": float("nan"), "inf": [float("inf")], "b": b"\x00\xff",
                       "s": {1}, 2: "key"})
    assert json.loads(text) == {"nan": None, "inf": [None], "b": "AP8=", "s": [1],
                                "2": "key"}


def test_send_goes_to_the_sink_outside_a_worker():
    sent = []
    link.set_sink(lambda obj, buffers: sent.append((obj, buffers)))
    try:
        link.send(link.reply("", "m", {"status": "ok"}), [b"buf"])
    finally:
        link.set_sink(None)
    assert sent == [({"type": "reply", "shell": "", "parent": "m",
                      "content": {"status": "ok"}}, [b"buf"])]


def _kinds_spelled(path, kinds):
    """The kinds of frame that a module spells out: as the "type" of a dict it
    builds, or compared with something."""
    tree = ast.parse(open(path, encoding="utf-8").read(), path)
    found = set()
    for node in ast.walk(tree):
        values = []
        if isinstance(node, ast.Dict):
            values = [v for k, v in zip(node.keys, node.values)
                      if isinstance(k, ast.Constant) and k.value == "type"]
        elif isinstance(node, ast.Compare):
            values = [node.left] + node.comparators
            values += [e for v in node.comparators if isinstance(v, (ast.Tuple, ast.List,
                                                                       ast.Set))
                       for e in v.elts]
        found.update(v.value for v in values
                     if isinstance(v, ast.Constant) and v.value in kinds)
    return found


def test_no_other_module_spells_a_kind_of_frame():
    kinds = set(link.INCOMING + link.OUTGOING)
    spelled = {}
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py") and name != "link.py":
            found = _kinds_spelled(os.path.join(PACKAGE, name), kinds)
            if found:
                spelled[name] = sorted(found)
    assert spelled == {}
