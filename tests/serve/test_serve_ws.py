"""`sandpit serve`'s WebSocket: the legacy protocol's binary messages (as
jupyter_server's own serialize_binary_message writes and reads them), the
v1.kernel.websocket.jupyter.org subprotocol, buffers both ways through a
comm, clients sharing a kernel, and the iopub a reconnecting session missed."""

import json
import struct
import time
import uuid

import pytest

from serve_helpers import Server, collect, execute, message, stdout_text, ws_connect

websocket = pytest.importorskip("websocket")
zmqhandlers = pytest.importorskip("jupyter_server.base.zmqhandlers")

V1 = "v1.kernel.websocket.jupyter.org"

ECHO_TARGET = (
    "import comm\n"
    "def echo_target(c, open_msg):\n"
    "    c.on_msg(lambda m: c.send({'echo': m['content']['data']},\n"
    "                              buffers=[bytes(b)[::-1] for b in m['buffers']]))\n"
    "comm.get_comm_manager().register_target('echo', echo_target)\n")


def v1_encode(msg, buffers=()):
    """The v1 subprotocol's frame, as jupyter_server 2 writes it
    (serialize_msg_to_ws_v1): u64 LE count and offsets, channel, four parts."""
    parts = [json.dumps(msg[k]).encode()
             for k in ("header", "parent_header", "metadata", "content")] + list(buffers)
    channel = msg["channel"].encode()
    offsets = [8 * (1 + 1 + len(parts) + 1)]
    offsets.append(len(channel) + offsets[-1])
    for p in parts:
        offsets.append(len(p) + offsets[-1])
    return b"".join([len(offsets).to_bytes(8, "little")] +
                    [o.to_bytes(8, "little") for o in offsets] + [channel] + parts)


def v1_decode(data):
    n = int.from_bytes(data[:8], "little")
    offs = [int.from_bytes(data[8 * (i + 1):8 * (i + 2)], "little") for i in range(n)]
    channel = data[offs[0]:offs[1]].decode()
    parts = [data[offs[i]:offs[i + 1]] for i in range(1, n - 1)]
    msg = {k: json.loads(parts[i]) for i, k in
           enumerate(("header", "parent_header", "metadata", "content"))}
    msg.update(channel=channel, msg_type=msg["header"]["msg_type"], buffers=parts[4:])
    return msg


def legacy_recv(ws):
    opcode, data = ws.recv_data()
    if opcode == websocket.ABNF.OPCODE_BINARY:
        return zmqhandlers.deserialize_binary_message(data)
    return json.loads(data)


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture
def kernel_id(server):
    kid = server.start_kernel()["id"]
    yield kid
    server.call("DELETE", "/api/kernels/" + kid)


def run(ws, code, send, recv):
    req = execute(code)
    send(ws, req)
    return collect(lambda: recv(ws), req["header"]["msg_id"])


def test_v1_subprotocol_runs_cells(server, kernel_id):
    ws = ws_connect(server, kernel_id, subprotocols=[V1])
    try:
        assert ws.getsubprotocol() == V1
        msgs = run(ws, "print('v1 here')", lambda w, m: w.send_binary(v1_encode(m)),
                   lambda w: v1_decode(w.recv()))
        assert stdout_text(msgs) == "v1 here\n"
        reply = [m for m in msgs if m["msg_type"] == "execute_reply"][0]
        assert reply["channel"] == "shell"
        # A text frame is not a v1 message: dropped, and the kernel serves on.
        ws.send(json.dumps(execute("print('lost')")))
        msgs = run(ws, "print('after')", lambda w, m: w.send_binary(v1_encode(m)),
                   lambda w: v1_decode(w.recv()))
        assert stdout_text(msgs) == "after\n"
    finally:
        ws.close()


@pytest.mark.parametrize("proto", ["legacy", "v1"])
def test_buffers_cross_both_ways(server, kernel_id, proto):
    if proto == "v1":
        ws = ws_connect(server, kernel_id, subprotocols=[V1])
        send = lambda w, m, b=(): w.send_binary(v1_encode(m, b))  # noqa: E731
        recv = lambda w: v1_decode(w.recv())  # noqa: E731
    else:
        ws = ws_connect(server, kernel_id)

        def send(w, m, b=()):
            if b:
                w.send_binary(zmqhandlers.serialize_binary_message(dict(m, buffers=list(b))))
            else:
                w.send(json.dumps(m))
        recv = legacy_recv
    try:
        run(ws, ECHO_TARGET, send, recv)
        comm_id = uuid.uuid4().hex
        send(ws, message("comm_open", {"comm_id": comm_id, "target_name": "echo", "data": {}}))
        payload = bytes(range(256)) * 40
        send(ws, message("comm_msg", {"comm_id": comm_id, "data": {"x": 1}}),
             [payload, b"ab"])
        for _ in range(50):
            m = recv(ws)
            if m["msg_type"] == "comm_msg" and m["content"]["comm_id"] == comm_id:
                break
        else:
            raise AssertionError("no echo")
        assert m["channel"] == "iopub"
        assert m["content"]["data"] == {"echo": {"x": 1}}
        assert [bytes(b) for b in m["buffers"]] == [payload[::-1], b"ba"]
    finally:
        ws.close()


@pytest.mark.parametrize("frame", [
    b"",  # nothing
    struct.pack("<Q", 7) + b"\x00" * 8,  # a table longer than the frame
    struct.pack("<Q", 6) + b"".join(struct.pack("<Q", o) for o in (56, 61, 60, 60, 60, 60))
    + b"shell",  # offsets that go back
    struct.pack("<Q", 2 ** 40),  # a huge count
    struct.pack("<Q", 6) + b"".join(struct.pack("<Q", o) for o in (56, 61, 2 ** 62, 0, 0, 0))
    + b"shell",  # an offset past the end
])
def test_hostile_v1_frames_are_dropped(server, kernel_id, frame):
    ws = ws_connect(server, kernel_id, subprotocols=[V1])
    try:
        ws.send_binary(frame)
        msgs = run(ws, "print('fine')", lambda w, m: w.send_binary(v1_encode(m)),
                   lambda w: v1_decode(w.recv()))
        assert stdout_text(msgs) == "fine\n"
    finally:
        ws.close()


def test_clients_share_a_kernel(server, kernel_id):
    a = ws_connect(server, kernel_id, session_id="share-a")
    b = ws_connect(server, kernel_id, session_id="share-b", subprotocols=[V1])
    try:
        assert server.call("GET", "/api/kernels/" + kernel_id)[1]["connections"] == 2
        req = execute("shared = 5\nprint('from a')")
        a.send(json.dumps(req))
        collect(lambda: json.loads(a.recv()), req["header"]["msg_id"])
        # b sees a's output on iopub (not a's reply, which is a's alone).
        seen = collect(lambda: v1_decode(b.recv()), req["header"]["msg_id"],
                       until="stream")
        assert stdout_text(seen) == "from a\n"
        assert not [m for m in seen if m["channel"] == "shell"]
        msgs = run(b, "print(shared * 2)", lambda w, m: w.send_binary(v1_encode(m)),
                   lambda w: v1_decode(w.recv()))
        assert stdout_text(msgs) == "10\n"
    finally:
        a.close()
        b.close()


def test_a_session_that_reconnects_gets_what_it_missed(server, kernel_id):
    away = ws_connect(server, kernel_id, session_id="comes-back")
    run(away, "pass", lambda w, m: w.send(json.dumps(m)), lambda w: json.loads(w.recv()))
    away.close()
    other = ws_connect(server, kernel_id, session_id="stays")
    req = execute("print('while you were away')")
    other.send(json.dumps(req))
    collect(lambda: json.loads(other.recv()), req["header"]["msg_id"])
    other.close()
    back = ws_connect(server, kernel_id, session_id="comes-back")
    try:
        missed = collect(lambda: json.loads(back.recv()), req["header"]["msg_id"],
                         until="stream")
        assert stdout_text(missed) == "while you were away\n"
    finally:
        back.close()
    # A session never seen gets nothing of the past.
    fresh = ws_connect(server, kernel_id, session_id="new-one")
    try:
        fresh.settimeout(1)
        with pytest.raises(websocket.WebSocketTimeoutException):
            fresh.recv()
    finally:
        fresh.close()


def test_a_message_over_the_bound_closes_the_websocket(server, kernel_id):
    ws = ws_connect(server, kernel_id)
    ws.send(json.dumps(execute("x = '%s'" % ("a" * (33 << 20)))))
    with pytest.raises((websocket.WebSocketException, OSError)):
        for _ in range(10):
            ws.recv()
    ws = ws_connect(server, kernel_id)  # the server serves on
    try:
        msgs = run(ws, "print(1)", lambda w, m: w.send(json.dumps(m)),
                   lambda w: json.loads(w.recv()))
        assert stdout_text(msgs) == "1\n"
    finally:
        ws.close()


def test_many_clients_of_one_kernel_are_counted_right():
    # Each client takes three ZeroMQ sockets of the kernel's context, which has
    # room for about a thousand: past 256 clients, upgrades are refused, and
    # none is miscounted.
    s = Server("--max-connections-per-address", "2000")
    socks = []
    try:
        kid = s.start_kernel()["id"]
        refused = 0
        for _ in range(300):
            try:
                socks.append(ws_connect(s, kid))
            except (websocket.WebSocketException, OSError):
                refused += 1
        assert len(socks) == 256 and refused == 44
        assert s.call("GET", "/api/kernels/" + kid)[1]["connections"] == 256
        for w in socks:
            w.close()
        socks = []
        deadline = time.monotonic() + 30
        while (s.call("GET", "/api/kernels/" + kid)[1]["connections"] != 0 and
               time.monotonic() < deadline):
            time.sleep(0.1)
        assert s.call("GET", "/api/kernels/" + kid)[1]["connections"] == 0
        ws = ws_connect(s, kid)
        try:
            msgs = run(ws, "print('ok')", lambda w, m: w.send(json.dumps(m)),
                       lambda w: json.loads(w.recv()))
            assert stdout_text(msgs) == "ok\n"
        finally:
            ws.close()
    finally:
        for w in socks:
            w.close()
        s.stop()
