"""The messaging protocol's shapes, message by message: what ipykernel's own
tests/test_message_spec.py checks of ipykernel, checked of sandpit (but for
ipykernel's version numbers: sandpit has its own).

Each reply on shell and control and each iopub message a request brings is
held to the fields and types the protocol gives it (SPECS below), with the
parent it must name; then what the content must say: execution counts,
silent cells, errors, user_expressions, stop_on_error, replies in the order of
their requests, inspection, completion, kernel_info, connect_request,
comm_info, is_complete, history, the payloads of an execute_reply (one
set_next_input per cell; ask_exit for exit and quit) and shutdown.

One kernel serves the module; shutdown has a kernel of its own.
"""

import re

import pytest

from sandpit_testing import TIMEOUT

# --- the shapes ---------------------------------------------------------------------------


def _is(*types):
    return lambda v: isinstance(v, types) and not isinstance(v, bool) or (
        bool in types and isinstance(v, bool))


def _one_of(*values):
    return lambda v: v in values


def _list_of(check):
    return lambda v: isinstance(v, list) and all(check(x) for x in v)


def _version_at_least(major, minor):
    def check(v):
        m = re.match(r"^(\d+)\.(\d+)", v) if isinstance(v, str) else None
        return m is not None and (int(m.group(1)), int(m.group(2))) >= (major, minor)
    return check


MIME = re.compile(r"^[\w\-+.]+/[\w\-+.]+$")


def _bundle(v):
    """data of a MIME bundle: MIME type -> text (JSON types as JSON)."""
    return isinstance(v, dict) and all(
        MIME.match(k) and (isinstance(x, str) or k.endswith("json")) for k, x in v.items())


STR, INT, BOOL, DICT, LIST = _is(str), _is(int), _is(bool), _is(dict), _is(list)
HEADER = {"msg_id": STR, "msg_type": STR, "session": STR, "username": STR,
          "version": _version_at_least(5, 0)}
ERROR = {"ename": STR, "evalue": STR, "traceback": _list_of(STR)}
REPLY = {"status": _one_of("ok", "error", "aborted")}

# msg_type -> {field: check} of its content; for replies, what status "ok" adds.
SPECS = {
    "execute_reply": {"execution_count": INT, "user_expressions": DICT, "payload": LIST},
    "inspect_reply": {"found": BOOL, "data": _bundle, "metadata": DICT},
    "complete_reply": {"matches": _list_of(STR), "cursor_start": INT, "cursor_end": INT,
                       "metadata": DICT},
    "kernel_info_reply": {"protocol_version": _version_at_least(5, 0), "implementation": STR,
                          "implementation_version": STR, "language_info": DICT,
                          "banner": STR},
    "connect_reply": {"shell_port": INT, "control_port": INT, "stdin_port": INT,
                      "iopub_port": INT, "hb_port": INT},
    "comm_info_reply": {"comms": DICT},
    "is_complete_reply": {"status": _one_of("complete", "incomplete", "invalid", "unknown")},
    "history_reply": {"history": _list_of(lambda e: isinstance(e, list) and len(e) == 3)},
    "shutdown_reply": {"restart": BOOL},
    "status": {"execution_state": _one_of("busy", "idle", "starting")},
    "execute_input": {"code": STR, "execution_count": INT},
    "execute_result": {"execution_count": INT, "data": _bundle, "metadata": DICT},
    "display_data": {"data": _bundle, "metadata": DICT},
    "update_display_data": {"data": _bundle, "metadata": DICT, "transient": DICT},
    "clear_output": {"wait": BOOL},
    "stream": {"name": _one_of("stdout", "stderr"), "text": STR},
    "error": ERROR,
}
REPLIES_WITHOUT_STATUS = {"connect_reply", "is_complete_reply"}


def check_fields(what, obj, spec):
    assert isinstance(obj, dict), (what, obj)
    for field, check in spec.items():
        assert field in obj, "%s has no %s: %r" % (what, field, obj)
        assert check(obj[field]), "%s: %s is %r" % (what, field, obj[field])


def validate(msg, msg_type=None, parent=None):
    """Checks msg's header and parent's, and its content against SPECS; msg_type
    and parent (a msg_id) are what it must be and name."""
    check_fields("a header", msg["header"], HEADER)
    if msg["parent_header"]:
        check_fields("a parent header", msg["parent_header"], HEADER)
    kind = msg["header"]["msg_type"]
    assert msg["msg_type"] == kind
    if msg_type is not None:
        assert kind == msg_type, (kind, msg_type)
    if parent is not None:
        assert msg["parent_header"]["msg_id"] == parent
    content = msg["content"]
    if kind.endswith("_reply") and kind not in REPLIES_WITHOUT_STATUS:
        check_fields(kind, content, REPLY)
        if content["status"] == "error":
            check_fields(kind, content, ERROR)
            return content
        if content["status"] == "aborted":
            return content
    check_fields(kind, content, SPECS[kind])
    if kind == "is_complete_reply" and content["status"] == "incomplete":
        check_fields(kind, content, {"indent": STR})
    return content


# --- the kernel and its messages ------------------------------------------------------------


@pytest.fixture(scope="module")
def k(kernel):
    return kernel


def reply_to(k, msg_id, channel="shell"):
    """The reply to msg_id on shell or control, validated."""
    if channel == "shell":
        msg = k.shell_reply(msg_id)
    else:
        msg = k.kc.get_control_msg(timeout=TIMEOUT)
    return validate(msg, parent=msg_id)


def send(k, msg_type, content=None, channel="shell"):
    msg = k.kc.session.msg(msg_type, content or {})
    getattr(k.kc, channel + "_channel").send(msg)
    return msg["header"]["msg_id"]


def run(k, code, **kwargs):
    """Executes code; returns (reply content, iopub messages from busy to idle),
    every message validated and parented to the request."""
    msg_id = k.kc.execute(code, **kwargs)
    content = reply_to(k, msg_id)
    outputs = k.iopub_until_idle(msg_id, keep_status=True)
    for m in outputs:
        validate(m, parent=msg_id)
    return content, outputs


def kinds(outputs):
    """The msg_types between busy and idle (which must be first and last)."""
    states = [m["content"]["execution_state"] for m in outputs if m["msg_type"] == "status"]
    assert states == ["busy", "idle"] and outputs[0]["msg_type"] == "status", outputs
    return [m["msg_type"] for m in outputs[1:-1]]


def answer_input_then(k, msg_id, value="go"):
    """Waits for the cell msg_id to ask for input, then answers value."""
    msg = k.kc.get_stdin_msg(timeout=TIMEOUT)
    assert msg["msg_type"] == "input_request"
    assert msg["parent_header"]["msg_id"] == msg_id
    k.kc.input(value)


# --- execute --------------------------------------------------------------------------------


def test_execute(k):
    content, outputs = run(k, "x = 1")
    assert content["status"] == "ok" and content["user_expressions"] == {}
    assert kinds(outputs) == ["execute_input"]
    assert outputs[1]["content"]["code"] == "x = 1"
    assert outputs[1]["content"]["execution_count"] == content["execution_count"]


def test_execution_counts(k):
    first, _ = run(k, "x = 1")
    second, _ = run(k, "x = 2")
    assert second["execution_count"] == first["execution_count"] + 1
    # a silent cell publishes nothing but its statuses, and counts nothing
    silent = []
    for code in ("x = 3", "x = 4"):
        msg_id = k.kc.execute(code, silent=True)
        silent.append(reply_to(k, msg_id)["execution_count"])
        outputs = k.iopub_until_idle(msg_id, keep_status=True)
        assert kinds(outputs) == []
        for m in outputs:
            validate(m, "status", msg_id)
    third, _ = run(k, "x = 5")
    assert silent[0] == silent[1]
    assert third["execution_count"] == second["execution_count"] + 1
    assert k.value("x") == "5"


def test_execute_error(k):
    content, outputs = run(k, "1/0")
    assert (content["status"], content["ename"]) == ("error", "ZeroDivisionError")
    errors = [m for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1
    error = validate(errors[0], "error")
    assert (error["ename"], error["evalue"]) == ("ZeroDivisionError", "division by zero")


FAIL_WHEN_TOLD = "input('go? ')\nraise ValueError('stop here')"


def test_stop_on_error_aborts_the_cells_behind(k):
    """An error with stop_on_error (the default) answers the execute requests
    waiting behind it "aborted"; with stop_on_error false, they run."""
    k.drain_iopub()
    first = k.kc.execute(FAIL_WHEN_TOLD, allow_stdin=True)
    k.kc.get_stdin_msg(timeout=TIMEOUT)  # it runs: the next two wait behind it
    behind = [k.kc.execute("print('never')"), k.kc.execute("print('never')")]
    k.kc.input("go")
    assert reply_to(k, first)["status"] == "error"
    for msg_id in behind:
        assert reply_to(k, msg_id)["status"] == "aborted"
    first = k.kc.execute(FAIL_WHEN_TOLD, allow_stdin=True, stop_on_error=False)
    k.kc.get_stdin_msg(timeout=TIMEOUT)
    behind = k.kc.execute("print('runs')")
    k.kc.input("go")
    assert reply_to(k, first)["status"] == "error"
    assert reply_to(k, behind)["status"] == "ok"
    k.drain_iopub()


def test_replies_come_in_the_order_of_the_requests(k):
    """Other requests behind a failing cell are not aborted, and each is answered
    after the one before it, whoever answers it (ipykernel's order)."""
    first = k.kc.execute(FAIL_WHEN_TOLD, allow_stdin=True)
    k.kc.get_stdin_msg(timeout=TIMEOUT)
    behind = [k.kc.kernel_info(), k.kc.comm_info(), k.kc.inspect("print")]
    k.kc.input("go")
    order = []
    for _ in range(4):
        msg = k.kc.get_shell_msg(timeout=TIMEOUT)
        validate(msg)
        order.append((msg["parent_header"]["msg_id"], msg["content"]["status"]))
    assert order == [(first, "error")] + [(msg_id, "ok") for msg_id in behind]
    k.drain_iopub()


def test_user_expressions(k):
    content, _ = run(k, "x = 1", user_expressions={"foo": "x + 1"})
    assert content["user_expressions"] == {
        "foo": {"status": "ok", "data": {"text/plain": "2"}, "metadata": {}}}
    content, _ = run(k, "x = 0", user_expressions={"foo": "nosuchname"})
    foo = content["user_expressions"]["foo"]
    assert foo["status"] == "error" and foo["ename"] == "NameError"
    check_fields("a failed user expression", foo, ERROR)


# --- inspect, complete, is_complete -----------------------------------------------------------


def test_inspect(k):
    assert not reply_to(k, k.kc.inspect("nosuchname_dne"))["found"]
    run(k, "a = 5")
    content = reply_to(k, k.kc.inspect("a"))
    assert content["found"]
    assert "Type:" in content["data"]["text/plain"]
    assert "Docstring:" in content["data"]["text/plain"]


def test_inspect_in_detail(k):
    run(k, "ip = get_ipython()")
    content = reply_to(k, k.kc.inspect("ip.object_inspect", cursor_pos=10, detail_level=1))
    assert content["found"]
    assert "Signature:" in content["data"]["text/plain"]
    assert "Source:" in content["data"]["text/plain"]


def test_complete(k):
    run(k, "alpha = albert = 5")
    content = reply_to(k, k.kc.complete("al", 2))
    assert {"alpha", "albert"} <= set(content["matches"])
    assert (content["cursor_start"], content["cursor_end"]) == (0, 2)


@pytest.mark.parametrize("code, status", [("a = 1", "complete"),
                                          ("for i in range(3):", "incomplete"),
                                          ("a = )", "invalid")])
def test_is_complete(k, code, status):
    assert reply_to(k, k.kc.is_complete(code))["status"] == status


# --- what the kernel says of itself -------------------------------------------------------------


def test_kernel_info(k):
    content = reply_to(k, k.kc.kernel_info())
    assert content["status"] == "ok"
    assert content["language_info"]["name"] == "python"
    assert isinstance(content["language_info"]["version"], str)


def test_connect_request(k):
    content = reply_to(k, send(k, "connect_request"))
    info = k.km.get_connection_info()
    assert {name: content[name] for name in SPECS["connect_reply"]} == \
        {name: info[name] for name in SPECS["connect_reply"]}


def test_comm_info(k):
    content = reply_to(k, k.kc.comm_info())
    assert content["status"] == "ok"
    content = reply_to(k, k.kc.comm_info(target_name="no.such.target"))
    assert content["comms"] == {}


# --- history -----------------------------------------------------------------------------------


@pytest.mark.parametrize("access, kwargs", [
    ("range", {"start": 1, "stop": 2}),
    ("tail", {"n": 1}),
    ("search", {"n": 1, "pattern": "*"}),
])
def test_history(k, access, kwargs):
    run(k, "x = 1", store_history=True)
    msg_id = k.kc.history(hist_access_type=access, raw=True, output=True, session=0,
                          **kwargs)
    content = reply_to(k, msg_id)
    assert len(content["history"]) == 1
    session, line, (source, output) = content["history"][0]
    assert isinstance(session, int) and isinstance(line, int) and isinstance(source, str)


# --- iopub ----------------------------------------------------------------------------------


def test_stream(k):
    _, outputs = run(k, "print('hi')")
    streams = [m for m in outputs if m["msg_type"] == "stream"]
    assert [validate(m, "stream") for m in streams] == [{"name": "stdout", "text": "hi\n"}]


def test_display_data_and_its_updates(k):
    _, outputs = run(k, "from IPython.display import display, clear_output\n"
                        "h = display(1, display_id='d1')\nh.update(2)\n"
                        "clear_output(wait=True)\n3")
    assert kinds(outputs) == ["execute_input", "display_data", "update_display_data",
                              "clear_output", "execute_result"]
    first = validate(outputs[2], "display_data")
    assert first["data"] == {"text/plain": "1"} and first["transient"] == {"display_id": "d1"}
    assert validate(outputs[3], "update_display_data")["data"] == {"text/plain": "2"}
    assert validate(outputs[4], "clear_output")["wait"] is True
    assert validate(outputs[5], "execute_result")["data"] == {"text/plain": "3"}


# --- payloads -----------------------------------------------------------------------------------


def test_one_set_next_input_per_cell(k):
    content, _ = run(k, "ip = get_ipython()\nfor i in range(3):\n"
                        "    ip.set_next_input('Hello There %d' % i)\n")
    assert content["payload"] == [{"source": "set_next_input", "text": "Hello There 2",
                                   "replace": False}]


@pytest.mark.parametrize("code", ["exit", "exit()", "quit()", "quit", "x = 1\nexit\n"])
def test_exit_asks_the_client_to_end_the_session(k, code):
    """jupyter console quits on this payload (and asks the kernel to shut down)."""
    content, outputs = run(k, code)
    assert content["status"] == "ok"
    assert content["payload"] == [{"source": "ask_exit", "keepkernel": False}]
    assert kinds(outputs) == ["execute_input"]  # no "Use exit()" text, no error


def test_exit_keeping_the_kernel(k):
    content, _ = run(k, "exit(keep_kernel=True)")
    assert content["payload"] == [{"source": "ask_exit", "keepkernel": True}]
    content, _ = run(k, "exit = 5\nexit")  # a name of the user's own is just a name
    assert content["payload"] == []
    assert k.value("exit") == "5"
    run(k, "del exit")


def test_page_payload(k):
    content, _ = run(k, "len?")
    (page,) = content["payload"]
    assert page["source"] == "page" and isinstance(page["start"], int)
    assert _bundle(page["data"]) and "Return the number of items" in page["data"]["text/plain"]


# --- shutdown -----------------------------------------------------------------------------------


def test_shutdown(fresh_kernel):
    k = fresh_kernel
    msg_id = send(k, "shutdown_request", {"restart": False}, channel="control")
    content = reply_to(k, msg_id, channel="control")
    assert content == {"status": "ok", "restart": False}
    # then the kernel's process ends
    assert k.km.provisioner.process.wait(timeout=TIMEOUT) is not None
    assert not k.km.is_alive()
