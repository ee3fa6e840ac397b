"""The runtime's mirror of the link's schema against the C side itself, read
from the sources: the kinds of frame of kernel/link/frames.h (their wire names
in frames.c, which way each goes), the iopub types, subshell operations and
interrupt reasons that frames.c accepts, and the requests that
kernel/supervisor/dispatch.c queues for the worker (the NULL entries of its
table) against the runtime's handlers. Each name of link.py is compared with
the C side, not with a literal of its own, so that a kind added or renamed on
one side alone fails here."""

import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "kernel", "python", "sandpit")
sys.path.insert(0, os.path.dirname(PACKAGE))

from sandpit import handlers, link  # noqa: E402


def c_source(*parts):
    """A C file of the tree without its comments."""
    with open(os.path.join(ROOT, *parts), encoding="utf-8") as f:
        return re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)


def c_block(source, opening, what):
    """The text between the braces that follow opening (a regular expression)."""
    m = re.search(opening + r"\s*\{(.*?)\n\}", source, re.S)
    assert m, "%s not found: the pattern of this test no longer matches the C" % what
    return m.group(1)


def c_kinds():
    """[(enumerator, wire name)] of frames.h's enum link_kind, in its order, and
    the first enumerator that the worker sends (link_kind_from_worker)."""
    enum = c_block(c_source("kernel", "link", "frames.h"), r"enum link_kind", "enum link_kind")
    order = [name.strip() for name in enum.split(",") if name.strip()]
    assert order[-1] == "LINK_KINDS"
    order = order[:-1]
    frames = c_source("kernel", "link", "frames.c")
    table = c_block(frames, r"kind_names\[LINK_KINDS\]\s*=", "kind_names")
    names = dict(re.findall(r"\[(LINK_\w+)\]\s*=\s*\"(\w+)\"", table))
    assert sorted(names) == sorted(order)
    first = re.search(r"link_kind_from_worker\(enum link_kind kind\)\s*\{[^}]*"
                      r"kind >= (LINK_\w+)", frames)
    assert first, "link_kind_from_worker not found"
    return [(e, names[e]) for e in order], first.group(1)


def test_each_kind_of_frames_h_is_in_link_py_by_its_name():
    kinds, _ = c_kinds()
    # LINK_INPUT_REPLY is link.INPUT_REPLY, and its value the wire name
    assert {e[len("LINK_"):]: getattr(link, e[len("LINK_"):], None) for e, _ in kinds} == \
        {e[len("LINK_"):]: name for e, name in kinds}


def test_the_kinds_go_the_way_frames_h_says():
    kinds, first_from_worker = c_kinds()
    enums = [e for e, _ in kinds]
    split = enums.index(first_from_worker)
    names = [name for _, name in kinds]
    assert link.INCOMING == tuple(names[:split])
    # The runtime sends every kind the worker sends but the log, which the
    # worker's C code sends for it (link.SENT_BY_C).
    assert link.OUTGOING + link.SENT_BY_C == tuple(names[split:])
    assert sorted(link._REQUIRED) == sorted(link.INCOMING)


def test_the_iopub_types_are_those_of_frames_c():
    table = c_block(c_source("kernel", "link", "frames.c"), r"iopub_types\[\]\s*=",
                    "iopub_types")
    assert link.IOPUB_TYPES == tuple(re.findall(r"\"(\w+)\"", table))


@pytest.mark.parametrize("parser, field, python", [
    ("link_subshell_parse", "op", "SUBSHELL_OPS"),
    ("link_interrupt_parse", "reason", "INTERRUPT_REASONS"),
])
def test_the_values_a_field_may_take_are_those_of_frames_c(parser, field, python):
    body = c_block(c_source("kernel", "link", "frames.c"),
                   r"int %s\([^)]*\)" % parser, parser)
    accepted = set(re.findall(r"strcmp\(%s, \"(\w+)\"\)" % field, body))
    assert accepted, "no strcmp of %s in %s" % (field, parser)
    assert sorted(getattr(link, python)) == sorted(accepted)


def test_each_request_queued_for_the_worker_has_a_handler():
    table = c_block(c_source("kernel", "supervisor", "dispatch.c"),
                    r"struct handler \w+\[\]\s*=", "dispatch.c's table of handlers")
    # {msg_type, handler, ...}: a NULL handler queues the request for the worker
    entries = re.findall(r"\{\s*\"(\w+)\"\s*,\s*(\w+)\s*[,}]", table)
    assert entries, "no entries found in dispatch.c's table"
    to_worker = {name for name, fn in entries if fn == "NULL"}
    assert to_worker
    assert sorted(handlers.HANDLERS) == sorted(to_worker)


def c_function(name):
    """The body of one of frames.c's functions."""
    return c_block(c_source("kernel", "link", "frames.c"), r"\b%s\([^)]*\)" % name, name)


def c_fields_read(kind):
    """(the fields link_<kind>_parse reads, those it requires) of frames.c."""
    body = c_function("link_%s_parse" % kind)
    read = set(re.findall(r"\b(?:str|object|boolean|number|integer)\(&c, \"(\w+)\"", body))
    read |= set(re.findall(r"json_object_get\(obj, \"(\w+)\"\)", body))
    required = set(re.findall(r"\b(?:str|object)\(&c, \"(\w+)\", true", body))
    required |= set(re.findall(r"fail\(&c, \"no \\\"(\w+)\\\"\"\)", body))
    return read, required


# A frame of each kind that the runtime builds, with every field it may have.
BUILT = {
    link.IOPUB: link.iopub("stream", {"name": "stdout", "text": "x"}, parent="m",
                           metadata={"a": 1}),
    link.REPLY: link.reply("s1", "m", {"status": "ok"}, {"a": 1}),
    link.INPUT_REQUEST: link.input_request("m", "Name? ", False),
    link.HISTORY: link.history_query(1, {"hist_access_type": "tail"}),
}


@pytest.mark.parametrize("kind", sorted(BUILT))
def test_what_the_runtime_builds_is_what_frames_c_parses(kind):
    read, required = c_fields_read(kind)
    assert required, "no required field found in link_%s_parse" % kind
    fields = set(BUILT[kind]) - {"type"}
    assert fields <= read and required <= fields


def test_the_runtime_builds_each_kind_it_sends_but_hello():
    # hello is written by the worker's C code (kernel/worker/worker.c), and
    # link.send_hello only passes it on
    assert sorted(BUILT) == sorted(set(link.OUTGOING) - {link.HELLO})


@pytest.mark.parametrize("kind", sorted(link._REQUIRED))
def test_what_the_runtime_requires_is_what_frames_c_always_builds(kind):
    body = c_function("link_%s_build" % kind)
    added = set(re.findall(r"\badd(?:_string|_object)?\(o, \"(\w+)\"", body))
    assert set(link._REQUIRED[kind]) <= added
    # add_string and add_object leave a NULL field out: one that the runtime
    # requires must be one without which the builder makes no frame
    for field, member in re.findall(r"\badd_(?:string|object)\(o, \"(\w+)\", f->(\w+)\)",
                                    body):
        if field in link._REQUIRED[kind]:
            assert re.search(r"if \([^)]*!f->%s\b[^)]*\)\s*return NULL;" % member, body), field
