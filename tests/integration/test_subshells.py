"""Kernel subshells (JEP 91, protocol 5.5) and where output goes: a subshell
runs its requests concurrently with the main shell, sharing its globals; a
thread that a cell started writes to that cell, even after it ended."""

import time

from sandpit_testing import stdout_of


def control(k, msg_type, content=None):
    msg = k.kc.session.msg(msg_type, content or {})
    k.kc.control_channel.send(msg)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        reply = k.kc.get_control_msg(timeout=10)
        if reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            return reply
    raise AssertionError("no reply to " + msg_type)


def execute_in(k, subshell_id, code):
    msg = k.kc.session.msg("execute_request", {"code": code, "silent": False,
                                               "store_history": True,
                                               "user_expressions": {}, "allow_stdin": False})
    msg["header"]["subshell_id"] = subshell_id
    k.kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def test_protocol_and_features(kernel):
    info = kernel.request("kernel_info")["content"]
    assert info["protocol_version"] == "5.5"
    assert "kernel subshells" in info["supported_features"]


def test_subshell_runs_while_main_is_busy(fresh_kernel):
    """The main shell's cell waits for what only the subshell's cell does: it can
    finish in time only if the two run at once."""
    k = fresh_kernel
    k.run("shared = 5")
    created = control(k, "create_subshell_request")
    assert created["msg_type"] == "create_subshell_reply"
    sid = created["content"]["subshell_id"]
    assert control(k, "list_subshell_request")["content"]["subshell_id"] == [sid]

    main_id = k.kc.execute("import time\nprint('main started', flush=True)\n"
                           "t0 = time.monotonic()\n"
                           "while 'sub_value' not in globals() and time.monotonic() - t0 < 30:\n"
                           "    time.sleep(0.01)\n"
                           "main_saw_sub = 'sub_value' in globals()")
    k.wait_for_line(main_id, "main started")
    sub_id = execute_in(k, sid, "print('from the subshell', shared * 2)\nsub_value = 7")
    sub_reply = k.shell_reply(sub_id)
    assert sub_reply["content"]["status"] == "ok"
    assert stdout_of(k.iopub_until_idle(sub_id)) == "from the subshell 10\n"
    main_reply = k.shell_reply(main_id, timeout=60)
    assert main_reply["content"]["status"] == "ok"
    k.iopub_until_idle(main_id)
    # the subshell's cell ran while the main shell's was waiting for it
    assert k.value("(sub_value, main_saw_sub)") == "(7, True)"

    assert control(k, "delete_subshell_request", {"subshell_id": sid})["content"] == \
        {"status": "ok"}
    assert control(k, "list_subshell_request")["content"]["subshell_id"] == []
    gone = k.shell_reply(execute_in(k, sid, "1"))
    assert gone["content"]["status"] == "error"
    bad = control(k, "delete_subshell_request", {"subshell_id": "no-such"})
    assert bad["content"]["status"] == "error"


def test_interrupting_a_subshell(fresh_kernel):
    k = fresh_kernel
    sid = control(k, "create_subshell_request")["content"]["subshell_id"]
    sub_id = execute_in(k, sid, "import time\nprint('looping', flush=True)\n"
                                "while True:\n    time.sleep(0.01)")
    k.wait_for_line(sub_id, "looping")
    control(k, "interrupt_request")
    reply = k.shell_reply(sub_id)
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    k.iopub_until_idle(sub_id)
    assert k.run("print('main is fine')") == "main is fine\n"


def test_thread_output_goes_to_the_cell_that_started_it(kernel):
    """The thread prints only once the second cell has started, and the second
    cell ends only once the thread has printed."""
    first = kernel.kc.execute(
        "import threading\n"
        "go, printed = threading.Event(), threading.Event()\n"
        "def later():\n"
        "    go.wait(30)\n"
        "    print('from the thread')\n"
        "    printed.set()\n"
        "threading.Thread(target=later).start()\n")
    kernel.shell_reply(first)
    kernel.iopub_until_idle(first)
    # the next cell runs while the thread prints
    second = kernel.kc.execute("go.set()\nassert printed.wait(30)\nprint('second cell')")
    assert kernel.shell_reply(second)["content"]["status"] == "ok"
    assert stdout_of(kernel.iopub_until_idle(second)) == "second cell\n"
    late = kernel.next_iopub(first, timeout=5)
    assert late["msg_type"] == "stream"
    assert late["content"]["text"] == "from the thread\n"


def test_output_from_c_goes_to_the_running_cell(kernel):
    reply, out = kernel.execute("import os\nos.write(1, b'from fd 1\\n')\n"
                                "os.write(2, b'from fd 2\\n')\nNone")
    assert stdout_of(out) == "from fd 1\n"
    assert stdout_of(out, "stderr") == "from fd 2\n"


def test_printf_from_c_reaches_the_cell(kernel):
    reply, out = kernel.execute("import ctypes\nlibc = ctypes.CDLL(None)\n"
                                "libc.printf(b'printf from C %d\\n', 42)\nNone")
    assert reply["content"]["status"] == "ok"
    assert stdout_of(out) == "printf from C 42\n"
