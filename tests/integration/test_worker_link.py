"""Who reads the worker's link: between the main shell's cells its main thread
reads it itself (a request wakes the thread that runs it); while a main-shell
cell runs, the reader thread does, and hands the link back when the cell ends.
Whoever reads, every frame must reach where it belongs, in the order it came:
requests queued behind a cell, and a subshell's input replies and interrupts
whether the main shell runs a cell or has nothing to run.
"""

import time

import pytest

from sandpit_testing import start, stop, stdout_of


@pytest.fixture(scope="module")
def k(jupyter_dir, tmp_path_factory):
    k = start("sandpit", cwd=str(tmp_path_factory.mktemp("ws")))
    yield k
    stop(k)


def subshell(k):
    msg = k.kc.session.msg("create_subshell_request", {})
    k.kc.control_channel.send(msg)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        reply = k.kc.get_control_msg(timeout=10)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply["content"]["subshell_id"]
    raise AssertionError("no create_subshell_reply")


def send_to(k, subshell_id, code, allow_stdin=False):
    msg = k.kc.session.msg("execute_request", {"code": code, "silent": False,
                                               "store_history": True,
                                               "user_expressions": {},
                                               "allow_stdin": allow_stdin})
    msg["header"]["subshell_id"] = subshell_id
    k.kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def test_requests_queued_behind_a_cell_run_in_order(k):
    # The first cell sleeps while the others arrive: the reader thread routes
    # them, and the main thread takes them after it, before reading the link.
    ids = [k.kc.execute("import time\ntime.sleep(0.3)\norder = []")]
    ids += [k.kc.execute("order.append(%d)" % i) for i in range(1, 6)]
    counts = []
    for msg_id in ids:
        reply = k.shell_reply(msg_id)
        assert reply["content"]["status"] == "ok", reply["content"]
        counts.append(reply["content"]["execution_count"])
        k.iopub_until_idle(msg_id)
    assert counts == list(range(counts[0], counts[0] + 6))
    assert k.value("order") == "[1, 2, 3, 4, 5]"


def test_a_subshell_gets_its_input_while_the_main_shell_is_idle(k):
    sid = subshell(k)
    sub_id = send_to(k, sid, "answer = input('sub? ')\nprint('got', answer)", allow_stdin=True)
    asked = k.kc.get_stdin_msg(timeout=10)
    assert asked["content"]["prompt"] == "sub? "
    k.kc.input("forty-two")  # read and routed by the main thread, which has no cell
    reply = k.shell_reply(sub_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(k.iopub_until_idle(sub_id)) == "got forty-two\n"


def test_a_subshell_gets_its_input_while_a_main_shell_cell_runs(k):
    """The main shell's cell waits for what the subshell does with the input:
    it can only see it if the reader thread routes the input reply meanwhile."""
    sid = subshell(k)
    sub_id = send_to(k, sid, "handed = input('sub? ')", allow_stdin=True)
    assert k.kc.get_stdin_msg(timeout=10)["content"]["prompt"] == "sub? "
    main_id = k.kc.execute("import time\nprint('main waits', flush=True)\n"
                           "t0 = time.monotonic()\n"
                           "while 'handed' not in globals() and time.monotonic() - t0 < 10:\n"
                           "    time.sleep(0.01)\n"
                           "main_saw = globals().get('handed')")
    k.wait_for_line(main_id, "main waits")
    k.kc.input("over")
    assert k.shell_reply(sub_id)["content"]["status"] == "ok"
    k.iopub_until_idle(sub_id)
    assert k.shell_reply(main_id)["content"]["status"] == "ok"
    k.iopub_until_idle(main_id)
    assert k.value("main_saw") == "'over'"
