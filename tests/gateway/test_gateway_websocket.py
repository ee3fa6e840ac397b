"""The kernel's WebSocket (/api/kernels/{id}/channels) with a raw client
(python3-websocket), in both of jupyter_server's protocols: the legacy one
(JSON text frames; a message with buffers in a binary frame of u32 big-endian
offsets) and the v1.kernel.websocket.jupyter.org subprotocol (u64
little-endian offsets, channel, header, parent, metadata, content, buffers).
Buffers go both ways through comms; several clients share a kernel; a client
that comes back with its session_id gets the messages it missed."""

import time
import uuid

import pytest

from .gateway_testing import V1, stdout_of

PROTOCOLS = ("legacy", "v1")
PAYLOAD = bytes(range(256)) * 4
ECHO_TARGET = (
    "import comm\n"
    "def echo_target(c, open_msg):\n"
    "    c.on_msg(lambda m: c.send({'echo': m['content']['data']},\n"
    "                              buffers=[bytes(b)[::-1] for b in m['buffers']]))\n"
    "comm.get_comm_manager().register_target('echo', echo_target)\n")


@pytest.fixture(scope="module")
def kid(serve):
    kernel_id = serve.start_kernel()["id"]
    yield kernel_id
    serve.request("DELETE", "/api/kernels/" + kernel_id)


@pytest.fixture(params=PROTOCOLS)
def ws(request, serve, kid):
    client = serve.ws(kid, request.param)
    client.wait_ready()
    yield client
    client.close()


def test_subprotocol_is_chosen_as_offered(ws):
    if ws.protocol == "v1":
        assert ws.subprotocol == V1
    else:
        assert not ws.subprotocol


def test_execute(ws):
    reply, out = ws.execute("print('hi')\n6 * 7")
    assert reply["channel"] == "shell" and reply["msg_type"] == "execute_reply"
    assert reply["content"]["status"] == "ok"
    assert stdout_of(out) == "hi\n"
    assert [m["content"]["data"]["text/plain"] for m in out
            if m["msg_type"] == "execute_result"] == ["42"]
    assert all(m["channel"] == "iopub" for m in out)
    assert reply["parent_header"]["session"] == ws.session
    if ws.protocol == "legacy":
        assert reply["frame"] == "text"
    else:
        assert reply["frame"] == "binary"


def test_control_channel(ws):
    reply = ws.request("kernel_info_request", {}, channel="control")
    assert reply["channel"] == "control"
    assert reply["content"]["implementation"] == "sandpit"


def test_kernel_sends_buffers(ws):
    target = "from-kernel-" + uuid.uuid4().hex[:6]
    msg_id = ws.send("shell", "execute_request", {
        "code": "import comm\n"
                "c = comm.create_comm(target_name=%r, data={'hello': 1})\n"
                "c.send({'n': 2}, buffers=[b'\\x00\\x01\\x02', bytes(range(256)) * 4])\n"
                % target,
        "silent": False, "store_history": True, "user_expressions": {},
        "allow_stdin": False, "stop_on_error": True})
    opened = ws.next(lambda m: m["msg_type"] == "comm_open"
                     and m["content"].get("target_name") == target)
    sent = ws.next(lambda m: m["msg_type"] == "comm_msg"
                   and m["content"]["comm_id"] == opened["content"]["comm_id"])
    assert sent["channel"] == "iopub" and sent["content"]["data"] == {"n": 2}
    assert [bytes(b) for b in sent["buffers"]] == [b"\x00\x01\x02", PAYLOAD]
    assert sent["frame"] == "binary"
    assert ws.reply(msg_id)["content"]["status"] == "ok"


def test_client_sends_buffers(ws):
    ws.run(ECHO_TARGET)
    comm_id = uuid.uuid4().hex
    ws.send("shell", "comm_open", {"comm_id": comm_id, "target_name": "echo", "data": {}})
    ws.send("shell", "comm_msg", {"comm_id": comm_id, "data": {"x": 1}},
            buffers=[PAYLOAD, b"ab"])
    echoed = ws.next(lambda m: m["msg_type"] == "comm_msg"
                     and m["content"]["comm_id"] == comm_id)
    assert echoed["content"]["data"] == {"echo": {"x": 1}}
    assert [bytes(b) for b in echoed["buffers"]] == [PAYLOAD[::-1], b"ba"]
    ws.send("shell", "comm_close", {"comm_id": comm_id, "data": {}})


def test_empty_buffer_and_many_buffers(ws):
    ws.run(ECHO_TARGET)
    comm_id = uuid.uuid4().hex
    ws.send("shell", "comm_open", {"comm_id": comm_id, "target_name": "echo", "data": {}})
    bufs = [b"", b"x"] + [bytes([i]) * i for i in range(1, 20)]
    ws.send("shell", "comm_msg", {"comm_id": comm_id, "data": {}}, buffers=bufs)
    echoed = ws.next(lambda m: m["msg_type"] == "comm_msg"
                     and m["content"]["comm_id"] == comm_id)
    assert [bytes(b) for b in echoed["buffers"]] == [b[::-1] for b in bufs]


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_two_clients_share_a_kernel(serve, kid, protocol):
    a = serve.ws(kid, protocol)
    b = serve.ws(kid, "legacy" if protocol == "v1" else "v1")
    try:
        a.wait_ready()
        b.wait_ready()
        msg_id = a.send("shell", "execute_request", {
            "code": "print('seen by both')", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        assert a.reply(msg_id)["content"]["status"] == "ok"
        # b sees the iopub of a's request (its reply goes to a only).
        assert stdout_of(b.iopub_until_idle(msg_id)) == "seen by both\n"
        assert stdout_of(a.iopub_until_idle(msg_id)) == "seen by both\n"
        assert b.run("print('and b')") == "and b\n"
    finally:
        a.close()
        b.close()


def test_reconnect_with_session_gets_missed_messages(serve, kid):
    session = uuid.uuid4().hex
    a = serve.ws(kid, session_id=session)
    a.wait_ready()
    msg_id = a.send("shell", "execute_request", {
        "code": "import time\ntime.sleep(2)\nprint('while away')", "silent": False,
        "store_history": True, "user_expressions": {}, "allow_stdin": False,
        "stop_on_error": True})
    a.close()
    time.sleep(4)  # the cell finishes while no client is connected
    b = serve.ws(kid, session_id=session)
    try:
        # The promise is the iopub messages (Jupyter Server replays the
        # shell reply as well).
        assert stdout_of(b.iopub_until_idle(msg_id, timeout=30)) == "while away\n"
    finally:
        b.close()


def test_bad_kernel_id_is_refused(serve):
    import websocket
    for bad in (str(uuid.uuid4()), "not-a-uuid"):
        with pytest.raises((OSError, websocket.WebSocketException)):
            serve.ws(bad)

