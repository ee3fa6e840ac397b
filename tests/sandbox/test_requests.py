"""Every request that runs user code is under a limit (issue #9, hole 3).

Completion and inspection call the user's __dir__ and __repr__: one that loops
must not hang Tab and Shift-Tab, nor the requests queued behind them; they have
a short limit of their own (--introspection-timeout) and answer with an error
naming it. A comm message runs a widget's handler, under the cell's limit. A
worker stopped by a SIGSTOP from its own code is noticed, continued, and the
cell told; one that keeps stopping is restarted. A thread that a cell leaves
spinning is stopped by the CPU budget of the background, and the next cell says
so.

One kernel serves the module; the cases that lose its worker come last.
"""

import os
import select
import time
import uuid

import pytest

from sandbox_helpers import (TIMEOUT, assert_intact, boot, expect_error, plant, stdout_of,
                             stop)

CELL_LIMIT_S = 2
INTROSPECTION_LIMIT_S = 1
# A guard against a hang, not a measure of speed: the limit, the grace period of
# an interrupt (5 s) and room for a loaded machine.
HANG_GUARD_S = 30


@pytest.fixture(scope="module")
def box(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, "--timeout", str(CELL_LIMIT_S), "--introspection-timeout",
             str(INTROSPECTION_LIMIT_S), cwd=tmp_path_factory.mktemp("requests"))
    yield k
    stop(k)


def send(k, msg_type, content):
    msg = k.kc.session.msg(msg_type, content)
    k.kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


LOOPING_OBJECTS = """
class Spins:
    def __dir__(self):
        while True:
            pass
    def __repr__(self):
        while True:
            pass
spins = Spins()
"""


@pytest.mark.parametrize("msg_type, content, reply_type", [
    ("complete_request", {"code": "spins.", "cursor_pos": 6}, "complete_reply"),
    ("inspect_request", {"code": "spins", "cursor_pos": 5, "detail_level": 0},
     "inspect_reply"),
])
def test_introspection_of_an_object_that_loops(box, msg_type, content, reply_type):
    token = plant(box)
    box.run(LOOPING_OBJECTS)
    asked = send(box, msg_type, content)
    # the request queued behind it runs once it has been stopped
    behind = box.kc.execute("print('behind')")
    reply = box.shell_reply(asked, HANG_GUARD_S)
    assert reply["msg_type"] == reply_type
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "TimeoutError", c
    assert c["evalue"] == "%s exceeded its time limit of %g s" % (msg_type,
                                                                   INTROSPECTION_LIMIT_S)
    assert box.shell_reply(behind, HANG_GUARD_S)["content"]["status"] == "ok"
    assert stdout_of(box.iopub_until_idle(behind)) == "behind\n"
    assert_intact(box, token)


def test_a_comm_handler_that_loops(box):
    token = plant(box)
    box.run("import comm\n"
            "def spin_target(c, open_msg):\n"
            "    @c.on_msg\n"
            "    def _(msg):\n"
            "        while True:\n"
            "            pass\n"
            "comm.get_comm_manager().register_target('spin', spin_target)\n")
    comm_id = uuid.uuid4().hex
    opened = send(box, "comm_open", {"comm_id": comm_id, "target_name": "spin", "data": {}})
    box.iopub_until_idle(opened)
    spun = send(box, "comm_msg", {"comm_id": comm_id, "data": {}})
    outputs = box.iopub_until_idle(spun, HANG_GUARD_S)
    errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert errors and errors[-1]["ename"] == "TimeoutError", outputs
    assert errors[-1]["evalue"] == "comm_msg exceeded its time limit of %g s" % CELL_LIMIT_S
    assert_intact(box, token)


def test_a_worker_stopped_by_its_own_code_is_continued(box):
    """SIGSTOP to itself is allowed by the sandbox (a process may signal itself);
    the supervisor sees the worker stop, continues it, and the cell says so."""
    token = plant(box)
    reply, outputs = box.execute("import os, signal\n"
                                 "os.kill(os.getpid(), signal.SIGSTOP)\n"
                                 "print('continued')", timeout=HANG_GUARD_S)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs) == "continued\n"
    assert "the worker was stopped by signal %d (SIGSTOP) and has been continued" % \
        __import__("signal").SIGSTOP in stdout_of(outputs, "stderr")
    assert_intact(box, token)


def worker_pid(k):
    return int(k.run("import os\nprint(os.getpid())"))


def wait_for_exit(pid, timeout):
    """Waits for the process to end, on its pidfd (an event, not a poll)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        ready, _, _ = select.select([fd], [], [], timeout)
        assert ready, "the worker %d is still running after %s s" % (pid, timeout)
    finally:
        os.close(fd)


def test_a_worker_that_keeps_stopping_is_restarted(box):
    plant(box)
    evalue, _ = expect_error(box, "import os, signal\n"
                                  "for _ in range(10):\n"
                                  "    os.kill(os.getpid(), signal.SIGSTOP)\n",
                             "WorkerDied", timeout=HANG_GUARD_S)
    assert "stopped by signal" in evalue and "so it was restarted" in evalue, evalue
    assert "variables and imports from earlier cells are lost" in evalue


def test_a_thread_left_spinning_after_its_cell(box):
    """A thread that spins after its cell has ended uses up the budget of the
    background (the cell limit's worth of CPU, refilled at a tenth of a CPU: the
    unit tests check that light work goes on), its worker is restarted, and the
    next cell says why."""
    pid = worker_pid(box)
    box.run("import threading\n"
            "def spin():\n"
            "    while True:\n"
            "        pass\n"
            "threading.Thread(target=spin, daemon=True).start()\n")
    started = time.monotonic()
    wait_for_exit(pid, HANG_GUARD_S)
    # at least the budget's worth of CPU went by (a lower bound: not a speed test)
    assert time.monotonic() - started >= CELL_LIMIT_S * 0.9
    reply, outputs = box.execute("print('fresh')", timeout=TIMEOUT)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs) == "fresh\n"
    notice = stdout_of(outputs, "stderr")
    assert "threads left running by an earlier cell used the CPU" in notice, notice
    assert "variables and imports from earlier cells are lost" in notice
    assert worker_pid(box) != pid
