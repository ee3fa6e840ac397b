"""MCP over Streamable HTTP at `sandpit serve`'s /mcp: the official MCP
TypeScript SDK's StreamableHTTPClientTransport (tests/node/mcp_http_client.mjs)
lists the tools, calls them, cancels a call and ends its session, whose
processes must then be gone; and raw HTTP for the transport's edges: the
token, the session id, Accept, Origin, the protocol version, hostile bodies,
a session's process that dies, the session limit and the cull."""

import base64
import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request

import pytest

from serve_helpers import Server

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE_DIR = os.path.join(ROOT, "tests", "node")
ACCEPT_BOTH = "application/json, text/event-stream"
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "1"}}}


def processes():
    """{pid: (ppid, command line)} of every process."""
    out = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % name) as f:
                stat = f.read()
            with open("/proc/%s/cmdline" % name, "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        out[int(name)] = (ppid, cmd)
    return out


def descendants(pid):
    """Command lines of pid's descendants (pid -> command)."""
    procs, found, todo = processes(), {}, [pid]
    while todo:
        p = todo.pop()
        for child, (ppid, cmd) in procs.items():
            if ppid == p and child not in found:
                found[child] = cmd
                todo.append(child)
    return found


def session_processes(server):
    """The `sandpit mcp` children of the server and their kernels."""
    return {p: c for p, c in descendants(server.proc.pid).items()
            if " mcp " in c + " " or " kernel " in c}


def wait_for(pred, seconds=20):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.1)
    return pred()


def post(server, body, session=None, accept=ACCEPT_BOTH, token=True, headers=None,
         timeout=60):
    """(status, headers, body bytes) of a POST to /mcp."""
    h = {"Content-Type": "application/json"}
    if accept is not None:
        h["Accept"] = accept
    if token:
        h["Authorization"] = "Bearer " + server.token
    if session:
        h["Mcp-Session-Id"] = session
    h.update(headers or {})
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(server.base + "/mcp", data=data, headers=h, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def events(raw):
    """The JSON messages of an SSE body."""
    out = []
    for block in raw.decode().split("\n\n"):
        data = [line[6:] for line in block.split("\n") if line.startswith("data: ")]
        if data:
            out.append(json.loads("\n".join(data)))
    return out


def initialise(server):
    status, headers, raw = post(server, INIT, accept="application/json")
    assert status == 200, (status, raw)
    sid = headers["Mcp-Session-Id"]
    assert sid and all(33 <= ord(c) <= 126 for c in sid)
    assert json.loads(raw)["result"]["protocolVersion"] == "2025-06-18"
    assert post(server, {"jsonrpc": "2.0", "method": "notifications/initialized"},
                session=sid)[0] == 202
    return sid


def exec_call(code, rid=2, token=None):
    params = {"name": "python_exec", "arguments": {"code": code}}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def text_of(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


@pytest.fixture(scope="module")
def sdk_run():
    """One run of the SDK's client against a fresh server; what it printed,
    and the session's processes seen before it ended the session and after."""
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@modelcontextprotocol",
                                      "sdk")):
        pytest.fail("@modelcontextprotocol/sdk is not installed in tests/node: run make deps")
    s = Server()
    try:
        proc = subprocess.Popen(["node", "mcp_http_client.mjs", s.base + "/mcp", s.token],
                                cwd=NODE_DIR, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            first = proc.stdout.readline()
            assert first.startswith("session "), first + proc.stderr.read()
            during = session_processes(s)
            proc.stdin.write("go\n")
            proc.stdin.flush()
            rest, err = proc.communicate(timeout=120)
        finally:
            if proc.poll() is None:
                proc.kill()
        assert proc.returncode == 0, rest + err
        gone = wait_for(lambda: not session_processes(s), 30)
        yield json.loads(rest), first.split()[1], during, gone, session_processes(s)
    finally:
        s.stop()


def test_the_sdk_lists_the_tools_and_keeps_state(sdk_run):
    out = sdk_run[0]
    assert out["server"]["name"] == "sandpit"
    assert out["protocol"] == "2025-06-18"
    assert {t["name"] for t in out["tools"]} == {"python_exec", "python_reset",
                                                 "workspace_list", "workspace_read"}
    assert text_of(out["first"]) == "[stdout]\nx is 42\n"
    assert text_of(out["second"]) == "43"
    assert out["error"]["isError"] is True
    assert "ZeroDivisionError" in text_of(out["error"])
    assert out["ping"] == {}


def test_the_sdk_gets_a_chart_as_a_png(sdk_run):
    images = [c for c in sdk_run[0]["chart"]["content"] if c["type"] == "image"]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png"
    assert base64.b64decode(images[0]["data"]).startswith(b"\x89PNG\r\n\x1a\n")


def test_the_sdk_receives_progress_while_a_cell_prints(sdk_run):
    out = sdk_run[0]
    assert [m for m in out["progress"] if m.startswith("tick")] == \
        ["tick 0\n", "tick 1\n", "tick 2\n"]
    assert text_of(out["printer"]) == "[stdout]\ntick 0\ntick 1\ntick 2\n"


def test_the_sdk_cancels_a_call_and_the_variables_survive(sdk_run):
    out = sdk_run[0]
    assert "cell is sleeping\n" in out["cancel_progress"]
    assert out["cancel"].startswith("rejected"), out["cancel"]
    assert text_of(out["after_cancel"]) == "[stdout]\ninterrupted 42\n"
    assert out["cancel_s"] < 20  # interrupted, not left to sleep its 30 s


def test_ending_the_session_stops_its_processes(sdk_run):
    out, sid, during, gone, left = sdk_run
    assert out["session"] == sid
    cmds = list(during.values())
    assert any(" mcp " in c for c in cmds) and any(" kernel " in c for c in cmds), cmds
    assert out["terminated"] is True
    assert gone, left
    assert out["after_end"].startswith("rejected"), out["after_end"]


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def sid(server):
    return initialise(server)


def test_without_the_token_401(server):
    assert post(server, INIT, token=False)[0] == 401
    status = post(server, INIT, headers={"Authorization": "Bearer wrong"})[0]
    assert status == 401


def test_without_a_session_id_400_and_unknown_404(server, sid):
    status, _, raw = post(server, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    assert status == 400 and "Mcp-Session-Id" in json.loads(raw)["error"]["message"]
    status, _, raw = post(server, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
                          session="0" * 48)
    assert status == 404 and json.loads(raw)["error"]["code"] == -32000
    assert post(server, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
                session="x" * 5000)[0] in (404, 431)
    # initialize starts a session: not within one.
    assert post(server, INIT, session=sid)[0] == 400


def test_accept_must_take_json_or_sse_406(server, sid):
    status, _, raw = post(server, {"jsonrpc": "2.0", "id": 5, "method": "tools/list"},
                          session=sid, accept="text/html")
    assert status == 406, raw
    status, headers, raw = post(server, {"jsonrpc": "2.0", "id": 6, "method": "tools/list"},
                                session=sid, accept="text/event-stream")
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    assert events(raw)[0]["id"] == 6


def test_a_foreign_origin_403_and_the_same_host_allowed(server, sid):
    list_tools = {"jsonrpc": "2.0", "id": 7, "method": "tools/list"}
    assert post(server, list_tools, session=sid,
                headers={"Origin": "http://evil.example"})[0] == 403
    assert post(server, INIT, headers={"Origin": "http://evil.example"})[0] == 403
    assert post(server, list_tools, session=sid,
                headers={"Origin": "http://" + "a" * 3000})[0] == 403
    same = "http://127.0.0.1:%d" % server.port
    assert post(server, list_tools, session=sid, headers={"Origin": same})[0] == 200


def test_an_unsupported_protocol_version_400(server, sid):
    list_tools = {"jsonrpc": "2.0", "id": 8, "method": "tools/list"}
    status, _, raw = post(server, list_tools, session=sid,
                          headers={"MCP-Protocol-Version": "1999-01-01"})
    assert status == 400 and "1999-01-01" in json.loads(raw)["error"]["message"]
    for v in ("2025-06-18", "2025-03-26"):
        assert post(server, list_tools, session=sid,
                    headers={"MCP-Protocol-Version": v})[0] == 200


@pytest.mark.parametrize("body,code", [
    (b"this is not JSON", -32700),
    (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ", -32700),
    (b"[" * 100000, -32700),
    (b"[]", -32600),
    (b"42", -32600),
    (b"{\"id\": 1, \"method\": \"tools/list\"}", -32600),
    (b"{\"jsonrpc\": \"2.0\", \"id\": 1.5, \"method\": \"tools/list\"}", -32600),
    (b"{\"jsonrpc\": \"2.0\", \"id\": null, \"method\": \"tools/list\"}", -32600),
    (b"{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": 7}", -32600),
    (json.dumps([{"jsonrpc": "2.0", "method": "ping", "id": i} for i in range(65)]).encode(),
     -32600),
    (json.dumps([INIT, {"jsonrpc": "2.0", "id": 2, "method": "ping"}]).encode(), -32600),
])
def test_hostile_bodies_are_refused_clearly(server, sid, body, code):
    status, _, raw = post(server, body, session=sid)
    assert status == 400, raw
    assert json.loads(raw)["error"]["code"] == code
    assert post(server, {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                session=sid)[0] == 200


def test_a_huge_body_413(server, sid):
    big = exec_call("x = '" + "a" * (2 << 20) + "'")
    assert post(server, big, session=sid)[0] == 413
    assert post(server, {"jsonrpc": "2.0", "id": 9, "method": "ping"},
                session=sid)[0] == 200


def test_json_answers_batches_and_notifications(server, sid):
    status, headers, raw = post(server, exec_call("y = 5\ny * 2", rid="a"), session=sid,
                                accept="application/json")
    assert status == 200 and headers["Content-Type"] == "application/json"
    reply = json.loads(raw)
    assert reply["id"] == "a" and text_of(reply["result"]) == "10"
    batch = [{"jsonrpc": "2.0", "id": 10, "method": "ping"},
             {"jsonrpc": "2.0", "method": "notifications/whatever"},
             {"jsonrpc": "2.0", "id": 11, "method": "tools/list"}]
    status, _, raw = post(server, batch, session=sid, accept="application/json")
    assert status == 200
    assert sorted(m["id"] for m in json.loads(raw)) == [10, 11]
    # A notification or a response alone: 202, no body.
    status, _, raw = post(server, {"jsonrpc": "2.0", "id": 99, "result": {}}, session=sid)
    assert status == 202 and raw == b""


def test_an_sse_call_carries_its_progress_then_its_result(server, sid):
    code = "import time\nfor i in range(2):\n    print('p', i, flush=True)\n    time.sleep(0.3)"
    status, headers, raw = post(server, exec_call(code, rid=12, token="tk"), session=sid)
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    msgs = events(raw)
    progress = [m["params"] for m in msgs if m.get("method") == "notifications/progress"]
    assert progress and all(p["progressToken"] == "tk" for p in progress)
    assert [p["message"] for p in progress if p["message"].startswith("p ")] == \
        ["p 0\n", "p 1\n"]
    assert msgs[-1]["id"] == 12 and "result" in msgs[-1]


def test_get_405_and_delete_needs_a_known_session(server):
    req = urllib.request.Request(server.base + "/mcp", method="GET",
                                 headers={"Authorization": "Bearer " + server.token,
                                          "Accept": "text/event-stream"})
    with pytest.raises(urllib.error.HTTPError) as e:
        urllib.request.urlopen(req, timeout=30)
    assert e.value.code == 405
    for sess, want in ((None, 400), ("0" * 48, 404)):
        h = {"Authorization": "Bearer " + server.token}
        if sess:
            h["Mcp-Session-Id"] = sess
        req = urllib.request.Request(server.base + "/mcp", method="DELETE", headers=h)
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(req, timeout=30)
        assert e.value.code == want


def mcp_children(server):
    return {p for p, c in descendants(server.proc.pid).items()
            if " mcp " in c and processes()[p][0] == server.proc.pid}


def test_a_dead_process_ends_its_session_and_its_streams(server):
    before = mcp_children(server)
    sid = initialise(server)
    mine = mcp_children(server) - before
    assert len(mine) == 1
    result = {}

    def long_call():
        result["reply"] = post(server, exec_call("import time\ntime.sleep(60)", rid=13),
                               session=sid, timeout=90)

    t = threading.Thread(target=long_call)
    t.start()
    time.sleep(2)
    killed = mine.pop()
    os.kill(killed, signal.SIGKILL)
    t.join(30)
    assert not t.is_alive()
    status, _, raw = result["reply"]
    assert status == 200
    last = events(raw)[-1]
    assert last["id"] == 13 and "session has ended" in last["error"]["message"]
    assert post(server, {"jsonrpc": "2.0", "id": 14, "method": "ping"},
                session=sid)[0] == 404
    # Its kernel's connection file is in the server's private folder, which
    # goes with the server, not left in Jupyter's runtime folder.
    for d in (os.environ.get("JUPYTER_RUNTIME_DIR"),
              os.path.expanduser("~/.local/share/jupyter/runtime")):
        assert not d or not os.path.exists(os.path.join(d, "sandpit-mcp-%d.json" % killed))


def test_sessions_are_bounded_and_culled():
    s = Server("--max-kernels", "1", "--cull-idle-timeout", "2")
    try:
        first = initialise(s)
        status, _, raw = post(s, INIT)
        assert status == 503 and "limit" in json.loads(raw)["error"]["message"]
        # Idle (nothing asked of it: asking would be activity) past 2 s: ended.
        assert wait_for(lambda: not session_processes(s), 30)
        assert post(s, {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                    session=first)[0] == 404
        assert "idle past the cull timeout" in s.log()
        status, raw = s.request("GET", "/metrics")
        assert status == 200
        assert "sandpit_mcp_sessions_culled_total 1\n" in raw.decode()
        assert "sandpit_mcp_sessions 0\n" in raw.decode()
        initialise(s)  # its place is free again
    finally:
        s.stop()


def test_a_call_cancelled_while_it_waits_its_turn_never_runs(server):
    sid = initialise(server)
    replies = {}

    def call(rid, code):
        replies[rid] = post(server, exec_call(code, rid=rid), session=sid, timeout=90)

    first = threading.Thread(target=call, args=("first", "import time\ntime.sleep(3)"))
    first.start()
    time.sleep(1)
    queued = threading.Thread(target=call, args=("queued", "flag = 'ran'"))
    queued.start()
    time.sleep(0.5)
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": "queued", "reason": "test"}}
    assert post(server, cancel, session=sid)[0] == 202
    queued.join(10)
    assert not queued.is_alive()  # its stream ended, without an answer
    assert [m for m in events(replies["queued"][2]) if "id" in m] == []
    first.join(30)
    assert events(replies["first"][2])[-1]["id"] == "first"
    status, _, raw = post(server, exec_call("print(globals().get('flag'))", rid=3),
                          session=sid, accept="application/json")
    assert text_of(json.loads(raw)["result"]) == "[stdout]\nNone\n"


def test_a_client_that_goes_mid_call_leaves_the_session_working(server):
    sid = initialise(server)
    import socket
    body = json.dumps(exec_call("import time\ntime.sleep(1.5)\nleft = 'done'", rid=20))
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.sendall(("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                  "Mcp-Session-Id: %s\r\nContent-Type: application/json\r\n"
                  "Accept: %s\r\nContent-Length: %d\r\n\r\n%s"
                  % (server.token, sid, ACCEPT_BOTH, len(body), body)).encode())
    assert sock.recv(4096).startswith(b"HTTP/1.1 200")
    sock.close()  # gone before the answer: not a cancellation, the cell runs on
    status, _, raw = post(server, exec_call("print(left)", rid=21), session=sid,
                          accept="application/json")
    assert status == 200 and text_of(json.loads(raw)["result"]) == "[stdout]\ndone\n"


def test_the_servers_stop_ends_every_session():
    s = Server()
    try:
        initialise(s)
        initialise(s)
        assert wait_for(lambda: sum(" kernel " in c for c in session_processes(s).values())
                        == 2, 30)
        pids = list(session_processes(s))
    finally:
        assert s.stop() == 0
    assert wait_for(lambda: not [p for p in pids if os.path.exists("/proc/%d" % p)], 20)


def test_an_answer_past_the_streams_bound_is_an_error_not_a_cut(server, sid):
    code = ("import os, base64\nfrom IPython.display import display\nfor i in range(3):\n"
            "    data = b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom(5 << 20)\n"
            "    display({'image/png': base64.b64encode(data).decode()}, raw=True)")
    for accept in (ACCEPT_BOTH, "application/json"):
        status, _, raw = post(server, exec_call(code, rid=30), session=sid, accept=accept)
        assert status == 200
        reply = events(raw)[-1] if accept == ACCEPT_BOTH else json.loads(raw)
        assert reply["id"] == 30 and "larger than the server's bound" in \
            reply["error"]["message"]
    assert post(server, {"jsonrpc": "2.0", "id": 31, "method": "ping"},
                session=sid)[0] == 200


def test_a_batch_with_a_call_streams_each_answer(server, sid):
    batch = [exec_call("z = 3\nz * 3", rid="b1"),
             {"jsonrpc": "2.0", "id": "b2", "method": "ping"}]
    status, headers, raw = post(server, batch, session=sid)
    assert status == 200 and headers["Content-Type"] == "text/event-stream"
    answers = {m["id"]: m for m in events(raw) if "id" in m}
    assert set(answers) == {"b1", "b2"}
    assert text_of(answers["b1"]["result"]) == "9" and answers["b2"]["result"] == {}


def test_sessions_are_apart_and_an_older_version_is_spoken(server):
    init = json.loads(json.dumps(INIT))
    init["params"]["protocolVersion"] = "2025-03-26"
    status, headers, raw = post(server, init, accept="application/json")
    assert status == 200 and json.loads(raw)["result"]["protocolVersion"] == "2025-03-26"
    one, two = headers["Mcp-Session-Id"], initialise(server)
    assert one != two
    h = {"MCP-Protocol-Version": "2025-03-26"}
    post(server, exec_call("who = 'one'", rid=1), session=one, headers=h)
    post(server, exec_call("who = 'two'", rid=1), session=two)
    for sess, want in ((one, "one"), (two, "two")):
        status, _, raw = post(server, exec_call("print(who)", rid=1), session=sess,
                              accept="application/json")
        assert text_of(json.loads(raw)["result"]) == "[stdout]\n%s\n" % want
