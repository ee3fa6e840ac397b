"""Unit tests of the link (kernel/python/sandpit/link.py): the kinds of frame
between worker and supervisor, their parser and their builders, and that no
other module of the runtime spells a kind out. That the kinds are those of the
C side is test_link_schema.py's to check, against kernel/link/frames.h."""

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


# --- raw text -----------------------------------------------------------------------


def c_define(name):
    """The value of a #define of kernel/link/frames.h (an integer expression)."""
    with open(os.path.join(ROOT, "kernel", "link", "frames.h")) as f:
        for line in f:
            parts = line.split(None, 2)
            if parts[:2] == ["#define", name]:
                expr = parts[2].split("/*")[0].replace("u", "")
                return eval(expr, {})
    raise AssertionError(name + " is not in frames.h")


def test_raw_text_limits_are_those_of_the_c_side():
    assert link.RAW_MIN == c_define("LINK_RAW_MIN")
    assert link.RAW_MAX == c_define("LINK_MAX_RAW")


def test_large_strings_go_beside_the_json():
    big = "x" * link.RAW_MIN
    accented = "é" * link.RAW_MIN
    content = {"data": {"text/plain": "<Figure>", "image/png": big, "text/html": accented},
               "metadata": {}, "text": big, "small": "y"}
    frame = link.iopub("display_data", content, parent="m")
    out, paths, texts = link._take_raw(frame)
    assert paths == [["data", "image/png"], ["data", "text/html"], ["text"]]
    # ASCII goes as the str itself (the C side takes its bytes), the rest as UTF-8
    assert texts[0] is big and texts[2] is big
    assert texts[1] == accented.encode("utf-8")
    assert out["raw"] == paths
    assert out["content"] == {"data": {"text/plain": "<Figure>"}, "metadata": {},
                              "small": "y"}
    # what the caller holds is left as it was (a display's bundle may be shown again)
    assert frame["content"] is content and content["data"]["image/png"] is big
    assert "raw" not in frame
    # and once the supervisor puts the texts back, the frame means what it did
    back = json.loads(link.dumps(out))
    for path, text in zip(back.pop("raw"), texts):
        place = back["content"]
        for key in path[:-1]:
            place = place.setdefault(key, {})
        place[path[-1]] = text if isinstance(text, str) else text.decode("utf-8")
    assert back == json.loads(link.dumps(frame))


def test_what_stays_in_the_json():
    lone = "\ud800" + "x" * link.RAW_MIN  # a lone surrogate: no UTF-8 for it
    deep = {"a": {"b": "x" * link.RAW_MIN}}  # deeper than a member's member
    many = {"data": {"k%d" % i: "x" * link.RAW_MIN for i in range(link.RAW_MAX + 3)}}
    for content, expect in (({"text": "x" * (link.RAW_MIN - 1)}, 0), ({"text": lone}, 0),
                            ({"nest": deep}, 0), (many, link.RAW_MAX)):
        out, paths, _ = link._take_raw(link.iopub("stream", content))
        assert len(paths) == expect
        if not expect:
            assert "raw" not in out
    # only iopub frames have raw text
    reply = link.reply("", "m", {"status": "ok", "text": "x" * link.RAW_MIN})
    assert link._take_raw(reply) == (reply, [], [])


# --- _sandpit, the worker's C module: link.py alone uses it --------------------------


def _sandpit_uses(source):
    """Where a module's source reaches _sandpit: by importing it (from anywhere),
    as an attribute of a module it imports (link._sandpit), or by its name as
    a string (sys.modules["_sandpit"], importlib.import_module("_sandpit")).
    A marker attribute named _sandpit on a function of the module's own (as
    guard.py and request.py set) is not one."""
    tree = ast.parse(source)
    modules = set()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                modules.add(a.asname or a.name.split(".")[0])
                if a.name.split(".")[0] == "_sandpit":
                    found.append((node.lineno, "import " + a.name))
        elif isinstance(node, ast.ImportFrom):
            for a in node.names:
                modules.add(a.asname or a.name)
            if node.module and node.module.split(".")[0] == "_sandpit" or \
                    any(a.name == "_sandpit" for a in node.names):
                found.append((node.lineno, "from %s import" % node.module))
    allowed = set()  # the attribute names of getattr(own_object, "_sandpit")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("getattr", "hasattr", "setattr") and len(node.args) >= 2:
            owner, name = node.args[0], node.args[1]
            if not (isinstance(owner, ast.Name) and owner.id in modules):
                allowed.add(id(name))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr == "_sandpit" and \
                not (isinstance(node.value, ast.Name) and node.value.id not in modules):
            found.append((node.lineno, "._sandpit"))
        elif isinstance(node, ast.Constant) and node.value in ("_sandpit", b"_sandpit") \
                and id(node) not in allowed:
            found.append((node.lineno, repr(node.value)))
    return sorted(found)


@pytest.mark.parametrize("source", [
    "import _sandpit",
    "import _sandpit as s",
    "from _sandpit import write",
    "from .link import _sandpit",
    "from sandpit.link import _sandpit",
    "from . import link\nlink._sandpit.write(1, 'x')",
    "import sandpit.link\nsandpit.link._sandpit.write(1, 'x')",
    "import sys\nsys.modules.get('_sandpit')",
    "import sys\nsys.modules['_sandpit'].log(1, 'x')",
    "import importlib\nimportlib.import_module('_sandpit')",
    "__import__('_sandpit')",
    "from . import link\ngetattr(link, '_sandpit')",
    "from . import link\nvars(link)['_sandpit']",
])
def test_a_use_of_sandpit_is_seen(source):
    assert _sandpit_uses(source)


def test_a_marker_named_sandpit_on_a_function_is_not_a_use():
    assert _sandpit_uses("def f():\n    pass\nf._sandpit = True\n"
                         "getattr(f, '_sandpit', False)\nf._sandpit_reworded = 1") == []


def test_only_link_uses_sandpit():
    used = {}
    for name in sorted(os.listdir(PACKAGE)):
        if name.endswith(".py") and name != "link.py":
            with open(os.path.join(PACKAGE, name), encoding="utf-8") as f:
                found = _sandpit_uses(f.read())
            if found:
                used[name] = found
    assert used == {}
    with open(os.path.join(PACKAGE, "link.py"), encoding="utf-8") as f:
        assert "import _sandpit" in [what for _, what in _sandpit_uses(f.read())]
