"""execute_request end to end: message order, counts, streams, results,
errors, user_expressions, stop_on_error, is_complete, history, kernel_info.

Each test talks to the real kernel through jupyter_client."""

import re
import time

from sandpit_testing import TIMEOUT, stdout_of


def test_message_order_and_parents(kernel):
    msg_id = kernel.kc.execute("print('hi')\n6 * 7")
    reply = kernel.shell_reply(msg_id)
    msgs = kernel.iopub_until_idle(msg_id, keep_status=True)
    kinds = [m["msg_type"] for m in msgs]
    assert kinds[0] == "status" and msgs[0]["content"]["execution_state"] == "busy"
    assert kinds[1] == "execute_input"
    assert kinds[2:] == ["stream", "execute_result", "status"]
    assert msgs[-1]["content"]["execution_state"] == "idle"
    for m in msgs:
        assert m["parent_header"]["msg_id"] == msg_id
        assert m["header"]["session"] == msgs[0]["header"]["session"]
    count = reply["content"]["execution_count"]
    assert msgs[1]["content"]["execution_count"] == count
    assert msgs[3]["content"]["execution_count"] == count
    assert msgs[3]["content"]["data"] == {"text/plain": "42"}
    assert reply["content"]["status"] == "ok"
    assert reply["content"]["user_expressions"] == {}
    assert reply["content"]["payload"] == []


def test_header_fields(kernel):
    msg_id = kernel.kc.execute("1")
    reply = kernel.shell_reply(msg_id)
    h = reply["header"]
    assert h["msg_type"] == "execute_reply"
    assert h["version"].startswith("5.")
    assert h["msg_id"] and h["session"] and h["username"]
    assert reply["parent_header"]["msg_id"] == msg_id
    kernel.iopub_until_idle(msg_id)


def test_state_persists(kernel):
    kernel.run("counter = 40\ndef bump(n):\n    return n + 1\nclass Box:\n    v = 2\nimport math")
    assert kernel.value("bump(counter) + Box.v") == "43"
    assert kernel.value("math.sqrt(16)") == "4.0"


def test_execution_count_silent_and_store_history(kernel):
    r1, _ = kernel.execute("1")
    n = r1["content"]["execution_count"]
    r2, out = kernel.execute("print('quiet')\n2", silent=True)
    assert r2["content"]["status"] == "ok"
    # a cell that stores no history answers with the last stored cell's count,
    # as ipykernel does
    assert r2["content"]["execution_count"] == n
    # silent: no execute_input, no result, but streams still go out
    assert [m["msg_type"] for m in out] == ["stream"]
    msg_id = kernel.kc.execute("3", store_history=False)
    assert kernel.shell_reply(msg_id)["content"]["execution_count"] == n
    msgs = kernel.iopub_until_idle(msg_id, keep_status=True)
    assert "execute_input" in [m["msg_type"] for m in msgs]
    r4, _ = kernel.execute("4")
    assert r4["content"]["execution_count"] == n + 1


def test_trailing_expression_rules(kernel):
    _, out = kernel.execute("None")
    assert out == []
    _, out = kernel.execute("y = 5")
    assert out == []
    _, out = kernel.execute("y + 1;")
    assert out == []
    _, out = kernel.execute("y\nz = y * 2\nz")
    assert [m["content"]["data"]["text/plain"] for m in out] == ["10"]
    _, out = kernel.execute("for i in range(2):\n    i")
    assert out == []


def test_underscore_holds_last_result(kernel):
    kernel.execute("'first'")
    kernel.execute("'second'")
    assert kernel.value("(_, __)") == "('second', 'first')"


def test_stdout_stderr_and_fd_output(kernel):
    _, out = kernel.execute("import sys, os\nprint('a')\nprint('b', file=sys.stderr)\n"
                            "os.write(1, b'c\\n'); None")
    assert stdout_of(out) == "a\nc\n"
    assert stdout_of(out, "stderr") == "b\n"


def test_print_is_one_message(kernel):
    _, out = kernel.execute("print('x')")
    streams = [m for m in out if m["msg_type"] == "stream"]
    assert len(streams) == 1 and streams[0]["content"]["text"] == "x\n"


def test_the_streams_write_in_c_as_their_method_does(kernel):
    # print() finds each stream's write in C; the method in Python is the same
    # write, and both say the same about what is not text.
    assert kernel.value("__import__('sys').stdout.write.__name__, "
                        "__import__('sys').stderr.write.__name__") == \
        "('stdout_write', 'stderr_write')"
    _, out = kernel.execute(
        "import sys\nclass S(str): pass\n"
        "n = sys.stdout.write(S('sub\\n')), type(sys.stdout).write(sys.stdout, 'py\\n')\n"
        "errors = []\n"
        "for w in (sys.stdout.write, lambda s: type(sys.stdout).write(sys.stdout, s)):\n"
        "    try:\n"
        "        w(b'x')\n"
        "    except TypeError as e:\n"
        "        errors.append(str(e))\n"
        "print(n, errors, file=sys.stderr)")
    assert stdout_of(out) == "sub\npy\n"
    assert stdout_of(out, "stderr") == \
        "(4, 3) ['write() argument must be str, not bytes', " \
        "'write() argument must be str, not bytes']\n"
    # What captures a context's output still takes what it writes.
    _, out = kernel.execute("from contextlib import redirect_stdout\nimport io\n"
                            "f = io.StringIO()\nwith redirect_stdout(f):\n    print('in')\n"
                            "print(repr(f.getvalue()))")
    assert stdout_of(out) == "'in\\n'\n"
    _, out = kernel.execute("%%capture cap\nprint('hidden')\nprint('also', file=sys.stderr)")
    assert stdout_of(out) == stdout_of(out, "stderr") == ""
    assert kernel.value("cap.stdout, cap.stderr") == "('hidden\\n', 'also\\n')"


def test_large_output_is_complete(kernel):
    _, out = kernel.execute("for i in range(20000):\n    print(i)")
    text = stdout_of(out)
    assert text == "".join("%d\n" % i for i in range(20000))
    # coalesced: far fewer messages than prints
    assert len(out) < 200


def test_unicode_output(kernel):
    _, out = kernel.execute("print('héllo wörld ✓ 🐍')\n'ß'")
    assert stdout_of(out) == "héllo wörld ✓ 🐍\n"
    assert out[-1]["content"]["data"]["text/plain"] == "'ß'"


def test_streaming_before_sleep_ends(kernel):
    msg_id = kernel.kc.execute("import time\nprint('first')\ntime.sleep(2)\nprint('second')")
    arrivals = {}
    deadline = time.monotonic() + 20
    while len(arrivals) < 2 and time.monotonic() < deadline:
        m = kernel.kc.get_iopub_msg(timeout=10)
        if m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "stream":
            arrivals[m["content"]["text"].strip()] = time.monotonic()
    kernel.shell_reply(msg_id)
    kernel.iopub_until_idle(msg_id)
    assert set(arrivals) == {"first", "second"}
    # 'first' was on the client while the cell was still sleeping
    assert arrivals["second"] - arrivals["first"] > 1.0


def test_error_reply_and_traceback(kernel):
    reply, out = kernel.execute("def f():\n    return 1 / 0\n\nf()")
    c = reply["content"]
    assert c["status"] == "error"
    assert c["ename"] == "ZeroDivisionError"
    assert c["evalue"] == "division by zero"
    errors = [m for m in out if m["msg_type"] == "error"]
    assert len(errors) == 1
    # without its colours (Pygments colours the code, as in IPython)
    tb = re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(errors[0]["content"]["traceback"]))
    assert errors[0]["content"]["ename"] == "ZeroDivisionError"
    # the user's lines, with the cell's line numbers, and none of the kernel's frames
    assert "----> 4" in tb and "f()" in tb
    assert "----> 2" in tb and "return 1 / 0" in tb
    assert "sandpit" not in tb and "runtime.py" not in tb


def test_syntax_error_shows_where(kernel):
    reply, out = kernel.execute("x = 1\ny = (2 +\nz = 3")
    assert reply["content"]["ename"] == "SyntaxError"
    tb = "\n".join(reply["content"]["traceback"])
    assert "line 2" in tb or "line 3" in tb
    assert "^" in tb


def test_exception_with_custom_class_and_cause(kernel):
    reply, _ = kernel.execute(
        "class MyError(Exception):\n    pass\ntry:\n    {}['k']\n"
        "except KeyError as e:\n    raise MyError('boom') from e")
    c = reply["content"]
    assert c["ename"] == "MyError" and c["evalue"] == "boom"
    tb = "\n".join(c["traceback"])
    assert "KeyError" in tb and "direct cause" in tb


def test_system_exit_does_not_kill(kernel):
    kernel.run("keep = 'kept'")
    reply, _ = kernel.execute("import sys\nsys.exit(3)")
    assert reply["content"]["ename"] == "SystemExit"
    assert kernel.value("keep") == "'kept'"


def test_user_expressions(kernel):
    kernel.run("ue = 6")
    reply, _ = kernel.execute("ue += 1", user_expressions={"a": "ue * 2", "b": "1/0",
                                                          "c": "undefined_name"})
    ue = reply["content"]["user_expressions"]
    assert ue["a"] == {"status": "ok", "data": {"text/plain": "14"}, "metadata": {}}
    assert ue["b"]["status"] == "error" and ue["b"]["ename"] == "ZeroDivisionError"
    assert ue["c"]["status"] == "error" and ue["c"]["ename"] == "NameError"
    # not evaluated after a failed cell
    reply, _ = kernel.execute("1/0", user_expressions={"a": "ue"})
    assert reply["content"]["user_expressions"] == {}


def test_stop_on_error_aborts_queued(kernel):
    kernel.run("ran = []")
    # the first cell sleeps so that the other two are queued when it fails
    ids = [kernel.kc.execute("import time; time.sleep(0.5); ran.append(1); 1/0"),
           kernel.kc.execute("ran.append(2)"),
           kernel.kc.execute("ran.append(3)")]
    replies = [kernel.shell_reply(i) for i in ids]
    assert [r["content"]["status"] for r in replies] == ["error", "aborted", "aborted"]
    for i in ids:
        kernel.iopub_until_idle(i)
    assert kernel.value("ran") == "[1]"
    # after the abort, new requests run again
    kernel.run("ran.append(4)")
    assert kernel.value("ran") == "[1, 4]"


def test_stop_on_error_false(kernel):
    kernel.run("ran2 = []")
    ids = [kernel.kc.execute("ran2.append(1); 1/0", stop_on_error=False),
           kernel.kc.execute("ran2.append(2)")]
    replies = [kernel.shell_reply(i) for i in ids]
    assert [r["content"]["status"] for r in replies] == ["error", "ok"]
    for i in ids:
        kernel.iopub_until_idle(i)
    assert kernel.value("ran2") == "[1, 2]"


def test_is_complete(kernel):
    cases = {
        "x = 1": "complete",
        "print('hello')": "complete",
        "for i in range(3):": "incomplete",
        "def f(x):\n    return x": "incomplete",
        "def f(x):\n    return x\n": "complete",
        "x = [1,": "incomplete",
        "print('''abc": "incomplete",
        "import = 7q": "invalid",
        "1 +": "invalid",
    }
    for code, status in cases.items():
        reply = kernel.request("is_complete", code)
        assert reply["content"]["status"] == status, code
    reply = kernel.request("is_complete", "if True:")
    assert reply["content"]["indent"] == "    "


def test_history(kernel):
    kernel.run("hist_a = 1")
    kernel.run("hist_b = 2")
    reply = kernel.request("history", hist_access_type="tail", n=2, output=False, raw=True)
    hist = reply["content"]["history"]
    assert [h[2] for h in hist] == ["hist_a = 1", "hist_b = 2"]
    session, line = hist[0][0], hist[0][1]
    reply = kernel.request("history", hist_access_type="range", session=session, start=line,
                           stop=line + 1, output=False, raw=True)
    assert reply["content"]["history"] == [[session, line, "hist_a = 1"]]
    reply = kernel.request("history", hist_access_type="search", pattern="hist_*",
                           output=False, raw=True)
    assert len(reply["content"]["history"]) >= 2
    kernel.execute("hist_b * 21")
    reply = kernel.request("history", hist_access_type="tail", n=1, output=True, raw=True)
    assert reply["content"]["history"][0][2] == ["hist_b * 21", "42"]


def test_kernel_info_on_shell_and_control(kernel):
    reply = kernel.request("kernel_info")
    c = reply["content"]
    assert c["status"] == "ok"
    assert c["implementation"] == "sandpit"
    assert c["protocol_version"].startswith("5.")
    li = c["language_info"]
    import platform
    assert li["name"] == "python" and li["version"] == platform.python_version()
    assert li["mimetype"] == "text/x-python" and li["file_extension"] == ".py"
    assert li["pygments_lexer"] == "ipython3" and li["nbconvert_exporter"] == "python"
    assert li["codemirror_mode"] == {"name": "ipython", "version": 3}
    assert "sandpit" in c["banner"] and c["help_links"]
    # on control too
    msg = kernel.kc.session.msg("kernel_info_request", {})
    kernel.kc.control_channel.send(msg)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        r = kernel.kc.get_control_msg(timeout=10)
        if r["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            break
    assert r["msg_type"] == "kernel_info_reply" and r["content"]["implementation"] == "sandpit"


def test_comm_info(kernel):
    reply = kernel.request("comm_info")
    assert reply["content"] == {"status": "ok", "comms": {}}


def test_replies_on_shell_come_in_request_order(kernel):
    """A kernel_info_request and a history_request sent behind a running cell
    are answered after it, as ipykernel answers them; on control, at once."""
    kc = kernel.kc
    cell = kc.execute("answer = input('go? ')", allow_stdin=True)
    info = kc.kernel_info()
    hist = kc.history(hist_access_type="tail", n=1, raw=True, output=False)
    assert kc.get_stdin_msg(timeout=TIMEOUT)["content"]["prompt"] == "go? "
    # the cell is running and waits: control answers now
    msg = kc.session.msg("kernel_info_request", {})
    kc.control_channel.send(msg)
    assert kc.get_control_msg(timeout=TIMEOUT)["parent_header"]["msg_id"] == \
        msg["header"]["msg_id"]
    kc.input("yes")
    order = [kc.get_shell_msg(timeout=TIMEOUT) for _ in range(3)]
    assert [m["parent_header"]["msg_id"] for m in order] == [cell, info, hist]
    assert order[2]["content"]["history"][0][2] == "answer = input('go? ')"
    for msg_id in (cell, info, hist):
        kernel.iopub_until_idle(msg_id)
    assert kernel.value("answer") == "'yes'"


def test_connect_request_gives_the_ports(kernel):
    msg = kernel.kc.session.msg("connect_request", {})
    kernel.kc.shell_channel.send(msg)
    reply = kernel.shell_reply(msg["header"]["msg_id"])
    kernel.iopub_until_idle(msg["header"]["msg_id"])
    assert reply["header"]["msg_type"] == "connect_reply"
    info = kernel.km.get_connection_info()
    for channel in ("shell", "iopub", "stdin", "control", "hb"):
        assert reply["content"]["%s_port" % channel] == info["%s_port" % channel]


def send_with_time_limit(kc, code, timeout):
    """What the README shows: an execute_request with {"sandpit": {"timeout": N}}
    in its metadata, which Debian's jupyter_client's execute() cannot send."""
    content = {"code": code, "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
    msg = kc.session.msg("execute_request", content,
                         metadata={"sandpit": {"timeout": timeout}})
    kc.shell_channel.send(msg)
    return msg["header"]["msg_id"]


def test_a_time_limit_that_is_not_one_is_refused(kernel):
    for bad in ("soon", -1, [5]):
        msg_id = send_with_time_limit(kernel.kc, "ran_anyway = True", bad)
        reply = kernel.shell_reply(msg_id)
        kernel.iopub_until_idle(msg_id)
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "ValueError"
        assert "sandpit.timeout" in reply["content"]["evalue"]
    msg_id = send_with_time_limit(kernel.kc, "print('ran' if 'ran_anyway' in dir() "
                                  "else 'refused')", 30)
    assert kernel.shell_reply(msg_id)["content"]["status"] == "ok"
    assert stdout_of(kernel.iopub_until_idle(msg_id)) == "refused\n"
