"""Kernel subshells (JEP 91, protocol 5.5) and where output goes: a subshell
runs its requests concurrently with the main shell, sharing its globals; a
thread that a cell started writes to that cell, even after it ended."""

import time

from sandpit_testing import TIMEOUT, stdout_of


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


# --- per-request state: limits and output counts belong to the request -----------------

NOTICE = ("\n[sandpit: output limit of %d bytes reached; %d more bytes of output "
          "were dropped]\n")


def test_each_request_has_its_own_output_count(kernel_with):
    """A main-shell cell prints past the cap, then waits while a subshell cell
    runs. The subshell's cell must neither reset the main cell's count nor share
    its cap: the main cell still ends with the note of how much of its output
    was dropped, and the subshell's short output arrives whole."""
    k = kernel_with("--max-output", "1000")
    k.run("import threading\ngo_on = threading.Event()")
    sid = control(k, "create_subshell_request")["content"]["subshell_id"]
    main_id = k.kc.execute("print('x' * 4999)\nassert go_on.wait(30)")
    first = k.next_iopub(main_id)
    while first["msg_type"] != "stream":  # its output is out: it now waits
        first = k.next_iopub(main_id)
    sub_id = execute_in(k, sid, "print('from the subshell')\ngo_on.set()")
    # the two replies may come in either order
    replies = {}
    for _ in range(100):
        if len(replies) == 2:
            break
        m = k.kc.get_shell_msg(timeout=TIMEOUT)
        replies[m["parent_header"].get("msg_id")] = m["content"]["status"]
    assert replies.get(sub_id) == "ok" and replies.get(main_id) == "ok", replies
    assert stdout_of(k.iopub_until_idle(sub_id)) == "from the subshell\n"
    outputs = [first] + k.iopub_until_idle(main_id)
    assert stdout_of(outputs) == "x" * 1000
    assert stdout_of(outputs, "stderr") == NOTICE % (1000, 5000 - 1000)


def test_a_subshell_cell_over_its_time_limit_ends_with_timeout_error(kernel_with):
    """A subshell's cell that does not stop when its time limit interrupts it
    (it sleeps in C, where the exception cannot reach it) has its worker
    restarted, like the main shell's, and ends with a TimeoutError naming the
    limit, on iopub and in its reply."""
    k = kernel_with("--timeout", "1")
    sid = control(k, "create_subshell_request")["content"]["subshell_id"]
    sub_id = execute_in(k, sid, "import time\ntime.sleep(60)")
    reply = k.shell_reply(sub_id)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "TimeoutError", reply["content"]
    errors = [m["content"] for m in k.iopub_until_idle(sub_id) if m["msg_type"] == "error"]
    assert [e["ename"] for e in errors] == ["TimeoutError"]
    assert "time limit of 1 s" in errors[0]["evalue"]
    assert k.run("print('the kernel goes on')") == "the kernel goes on\n"


# --- state that belongs to a request or a shell, not to the worker ------------------------


def test_a_subshell_request_does_not_take_input_away_from_the_main_shell(fresh_kernel):
    """allow_stdin belongs to the request: a subshell's request whose client
    takes no input, run while a main-shell cell waits in input(), leaves that
    cell free to ask again."""
    k = fresh_kernel
    sid = control(k, "create_subshell_request")["content"]["subshell_id"]
    main_id = k.kc.execute("first = input('first? ')\nsecond = input('second? ')\n"
                           "print(first, second)", allow_stdin=True)
    assert k.kc.get_stdin_msg(timeout=10)["content"]["prompt"] == "first? "
    sub_id = execute_in(k, sid, "print('the subshell ran')")  # allow_stdin false
    assert k.shell_reply(sub_id)["content"]["status"] == "ok"
    assert stdout_of(k.iopub_until_idle(sub_id)) == "the subshell ran\n"
    k.kc.input("one")
    asked = k.kc.get_stdin_msg(timeout=10)
    assert asked["content"]["prompt"] == "second? "
    assert asked["parent_header"]["msg_id"] == main_id
    k.kc.input("two")
    reply = k.shell_reply(main_id)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(k.iopub_until_idle(main_id)) == "one two\n"
    # the subshell's own requests are still refused input, as their client asked
    refused = k.shell_reply(execute_in(k, sid, "input('x')"))
    assert refused["content"]["ename"] == "StdinNotImplementedError"


def test_capture_in_one_shell_leaves_another_shells_output_alone(fresh_kernel):
    """%%capture takes what its own cell writes and displays, not what a
    subshell's cell writes meanwhile."""
    k = fresh_kernel
    sid = control(k, "create_subshell_request")["content"]["subshell_id"]
    k.run("import threading\ninside, release = threading.Event(), threading.Event()")
    main_id = k.kc.execute("%%capture cap\nprint('captured')\ndisplay('captured too')\n"
                           "inside.set()\nreleased = release.wait(30)")
    sub_id = execute_in(k, sid, "inside.wait(30)\nprint('from the subshell')\n"
                                "display('shown by the subshell')\nrelease.set()")
    assert k.shell_reply(sub_id)["content"]["status"] == "ok"
    sub_out = k.iopub_until_idle(sub_id)
    assert stdout_of(sub_out) == "from the subshell\n"
    assert [m["content"]["data"]["text/plain"] for m in sub_out
            if m["msg_type"] == "display_data"] == ["'shown by the subshell'"]
    assert k.shell_reply(main_id)["content"]["status"] == "ok"
    assert k.iopub_until_idle(main_id) == []
    assert k.value("(cap.stdout, [o.data['text/plain'] for o in cap.outputs])") == \
        "('captured\\n', [\"'captured too'\"])"
    assert k.run("print('after')") == "after\n"


def test_top_level_await_in_a_subshell_while_the_main_shell_awaits(fresh_kernel):
    """Each shell runs its cells' coroutines on an event loop of its own."""
    k = fresh_kernel
    sid = control(k, "create_subshell_request")["content"]["subshell_id"]
    k.run("import asyncio, threading\nstarted, release = threading.Event(), threading.Event()\n"
          "def hold():\n"
          "    started.set()\n"
          "    return release.wait(30)")
    # started is set while the main shell's loop runs its cell
    main_id = k.kc.execute("await asyncio.get_running_loop().run_in_executor(None, hold)\n"
                           "'main awaited'")
    sub_id = execute_in(k, sid, "started.wait(30)\nawait asyncio.sleep(0)\nrelease.set()\n"
                                "print('the subshell awaited')")
    sub = k.shell_reply(sub_id)
    assert sub["content"]["status"] == "ok", sub["content"]
    assert stdout_of(k.iopub_until_idle(sub_id)) == "the subshell awaited\n"
    main = k.shell_reply(main_id)
    assert main["content"]["status"] == "ok", main["content"]
    results = [m for m in k.iopub_until_idle(main_id) if m["msg_type"] == "execute_result"]
    assert [r["content"]["data"]["text/plain"] for r in results] == ["'main awaited'"]


def test_a_result_is_numbered_by_its_own_cell(fresh_kernel):
    """The value of a cell's last expression is shown with that cell's count,
    even while a subshell's cell runs."""
    k = fresh_kernel
    sid = control(k, "create_subshell_request")["content"]["subshell_id"]
    k.run("import threading\ninside, release, finish = (threading.Event(), "
          "threading.Event(), threading.Event())")
    main_id = k.kc.execute("inside.set()\nrelease.wait(30)\n'main result'")
    sub_id = execute_in(k, sid, "inside.wait(30)\nrelease.set()\nfinish.wait(30)\n"
                                "'subshell result'")
    main = k.shell_reply(main_id)
    results = [m for m in k.iopub_until_idle(main_id) if m["msg_type"] == "execute_result"]
    assert [r["content"]["execution_count"] for r in results] == \
        [main["content"]["execution_count"]]
    k.run("finish.set()")
    sub = k.shell_reply(sub_id)
    results = [m for m in k.iopub_until_idle(sub_id) if m["msg_type"] == "execute_result"]
    assert [r["content"]["execution_count"] for r in results] == \
        [sub["content"]["execution_count"]]
    assert k.value("Out[%d]" % main["content"]["execution_count"]) == "'main result'"
