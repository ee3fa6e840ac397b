"""Requests on the control channel that the worker answers (inspection,
completion) wait while a cell runs, before the shell's requests, and are
answered in the order they were sent."""

import time

from sandpit_testing import TIMEOUT


def send_control(k, msg_type, content):
    msg = k.kc.session.msg(msg_type, content)
    k.kc.control_channel.send(msg)
    return msg["header"]["msg_id"]


def control_replies(k, count):
    """The next count replies on control, in the order they came."""
    deadline = time.monotonic() + TIMEOUT
    replies = []
    while len(replies) < count:
        replies.append(k.kc.get_control_msg(timeout=max(0.1, deadline - time.monotonic())))
    return replies


def test_control_requests_are_answered_in_order(fresh_kernel, tmp_path):
    k = fresh_kernel
    k.run("first, second, third = 1, 'two', 3.0")
    # The cell waits for the file "go", which the test writes once every
    # request below is in the kernel's queue.
    cell = k.kc.execute("import os, time\nprint('waiting', flush=True)\n"
                        "deadline = time.monotonic() + 60\n"
                        "while not os.path.exists('go') and time.monotonic() < deadline:\n"
                        "    time.sleep(0.02)")
    k.wait_for_line(cell, "waiting")
    names = ["first", "second", "third"]
    ids = [send_control(k, "inspect_request",
                        {"code": n, "cursor_pos": len(n), "detail_level": 0}) for n in names]
    queued = k.kc.execute("print('after')")
    # The supervisor answers kernel_info on control itself, at once, and reads
    # one client's control requests in order: once it has answered, the three
    # inspections are waiting.
    info = send_control(k, "kernel_info_request", {})
    assert control_replies(k, 1)[0]["parent_header"]["msg_id"] == info
    (tmp_path / "go").write_text("")
    assert k.shell_reply(cell)["content"]["status"] == "ok"
    replies = control_replies(k, 3)
    assert [r["parent_header"]["msg_id"] for r in replies] == ids
    for r, n in zip(replies, names):
        assert r["msg_type"] == "inspect_reply" and r["content"]["status"] == "ok", r
        assert r["content"]["found"], (n, r["content"])
    # the shell's request waited for them, and then ran
    assert k.shell_reply(queued)["content"]["status"] == "ok"
