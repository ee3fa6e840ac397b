"""`sandpit serve`'s REST API and its legacy WebSocket protocol, as
jupyter_server's gateway client uses them: the token, the kernelspecs and
their logos, kernels created, listed, read and deleted with the model
jupyter_server parses, cells run over the WebSocket."""

import datetime
import json
import os

import pytest

from serve_helpers import Server, collect, execute, stdout_text, ws_connect

websocket = pytest.importorskip("websocket")


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


def test_api_answers_with_the_token_only(server):
    assert server.call("GET", "/api") == (200, {"version": server.call("GET", "/api")[1]["version"]})
    status, body = server.call("GET", "/api", token=False)
    assert status == 401 and set(body) == {"reason", "message"}
    assert server.call("GET", "/api", token=False,
                       headers={"Authorization": "token wrong"})[0] == 401
    assert server.call("GET", "/api", token=False,
                       headers={"Authorization": "token " + server.token + "x"})[0] == 401
    assert server.call("GET", "/api", token=False,
                       headers={"Authorization": "Bearer " + server.token})[0] == 200
    assert server.call("GET", "/api?token=" + server.token, token=False)[0] == 200
    assert server.call("GET", "/api?token=nope", token=False)[0] == 401
    assert server.token not in server.log()


def test_kernelspecs_and_their_logos(server):
    status, specs = server.call("GET", "/api/kernelspecs")
    assert status == 200
    name = specs["default"]
    spec = specs["kernelspecs"][name]
    assert spec["name"] == name and spec["spec"]["language"] == "python"
    assert set(spec["resources"]) >= {"logo-64x64"}
    status, raw = server.request("GET", spec["resources"]["logo-64x64"])
    assert status == 200 and raw.startswith(b"\x89PNG")
    assert server.call("GET", "/api/kernelspecs/" + name) == (200, spec)
    assert server.call("GET", "/api/kernelspecs/nope")[0] == 404


@pytest.mark.parametrize("path", [
    "/kernelspecs/sandpit/../../../../etc/passwd", "/kernelspecs/sandpit/%2e%2e/x",
    "/kernelspecs/sandpit/kernel.json", "/kernelspecs/sandpit/%2fetc%2fpasswd",
    "/kernelspecs/sandpit//x",
    "/kernelspecs/sandpit/logo-64x64.png/x", "/kernelspecs/other/logo-64x64.png",
])
def test_kernelspec_files_are_the_logos_alone(server, path):
    status, raw = server.request("GET", path)
    assert status in (400, 404), (path, status)
    assert b"root:" not in raw


def test_kernel_model_create_list_get_delete(server):
    status, raw, headers = server.request("POST", "/api/kernels", {"name": "sandpit"},
                                          with_headers=True)
    assert status == 201
    model = json.loads(raw)
    assert set(model) == {"id", "name", "last_activity", "execution_state", "connections"}
    assert headers["Location"] == "/api/kernels/" + model["id"]
    # jupyter_server's gateway client parses the date exactly so.
    datetime.datetime.strptime(model["last_activity"], "%Y-%m-%dT%H:%M:%S.%fZ")
    assert model["execution_state"] == "idle" and model["connections"] == 0
    kid = model["id"]
    status, listed = server.call("GET", "/api/kernels")
    assert status == 200 and kid in [k["id"] for k in listed]
    assert server.call("GET", "/api/kernels/" + kid)[1]["id"] == kid
    assert server.call("DELETE", "/api/kernels/" + kid)[0] == 204
    assert server.call("GET", "/api/kernels/" + kid)[0] == 404
    assert server.call("DELETE", "/api/kernels/" + kid)[0] == 404


def test_bad_requests_are_json_errors(server):
    for method, path, body, want in [
        ("POST", "/api/kernels", b"{not json", 400),
        ("POST", "/api/kernels", {"name": "no-such-kernel"}, 404),
        ("POST", "/api/kernels", {"name": 3}, 400),
        ("GET", "/api/kernels/not-a-uuid", None, 404),
        ("GET", "/api/kernels/00000000-0000-4000-8000-000000000000", None, 404),
        ("GET", "/api/nothing", None, 404),
        ("PUT", "/api/kernels", b"{}", 405),
        ("POST", "/api/kernels", {"env": {"KERNEL_X": 5}}, 400),
        ("POST", "/api/kernels", {"env": ["KERNEL_X"]}, 400),
    ]:
        status, raw = server.request(method, path, body)
        assert status == want, (method, path, status, raw)
        assert set(json.loads(raw)) == {"reason", "message"}


def test_a_large_body_is_refused(server):
    status, raw = server.request("POST", "/api/kernels", b"{" + b" " * (2 << 20) + b"}")
    assert status == 413


def test_cells_run_over_the_legacy_websocket(server):
    kid = server.start_kernel()["id"]
    ws = ws_connect(server, kid, session_id="legacy-1")
    try:
        assert server.call("GET", "/api/kernels/" + kid)[1]["connections"] == 1
        req = execute("x = 6 * 7\nprint(x)")
        ws.send(json.dumps(req))
        msgs = collect(lambda: json.loads(ws.recv()), req["header"]["msg_id"])
        assert stdout_text(msgs) == "42\n"
        reply = [m for m in msgs if m["msg_type"] == "execute_reply"][0]
        assert reply["channel"] == "shell" and reply["content"]["status"] == "ok"
        assert all(m["channel"] == "iopub" for m in msgs if m["msg_type"] == "stream")
        # The state persists: the same kernel answers the next cell.
        req = execute("print(x + 1)")
        ws.send(json.dumps(req))
        assert stdout_text(collect(lambda: json.loads(ws.recv()),
                                   req["header"]["msg_id"])) == "43\n"
    finally:
        ws.close()
    server.call("DELETE", "/api/kernels/" + kid)


def refused_with(fn):
    with pytest.raises(websocket.WebSocketBadStatusException) as e:
        fn()
    return e.value.status_code


def test_the_websocket_needs_the_token_and_an_allowed_origin(server):
    """Refused with an HTTP status that says why, as REST is."""
    kid = server.start_kernel()["id"]
    assert refused_with(lambda: ws_connect(server, kid, token=False)) == 401
    assert refused_with(lambda: ws_connect(server, kid, token=False,
                                           headers=["Authorization: token wrong"])) == 401
    assert refused_with(lambda: ws_connect(server, kid, origin="http://evil.example")) == 403
    assert refused_with(lambda: ws_connect(
        server, "00000000-0000-4000-8000-000000000000")) == 404
    assert refused_with(lambda: ws_connect(server, "not-a-uuid")) == 404
    assert refused_with(lambda: ws_connect(server, kid, subprotocols=[
        "v1.kernel.websocket.jupyter.org"], origin="http://evil.example")) == 403
    ws = ws_connect(server, kid, origin="http://127.0.0.1:%d" % server.port)
    ws.close()
    server.call("DELETE", "/api/kernels/" + kid)


def test_garbage_on_the_websocket_is_dropped_and_the_kernel_serves_on(server):
    kid = server.start_kernel()["id"]
    ws = ws_connect(server, kid)
    try:
        for junk in ["not json", "[]", '{"channel": "shell"}', '{"channel": "hb",'
                     ' "header": {"msg_id": "a", "msg_type": "x"}}',
                     json.dumps({"channel": "iopub", "header": {"msg_id": "b",
                                                                "msg_type": "x"}})]:
            ws.send(junk)
        ws.send_binary(b"\x00\x00\x00\x05\xff\xff\xff\xff")
        ws.send_binary(b"\x00")
        req = execute("print('still here')")
        ws.send(json.dumps(req))
        msgs = collect(lambda: json.loads(ws.recv()), req["header"]["msg_id"])
        assert stdout_text(msgs) == "still here\n"
    finally:
        ws.close()
    server.call("DELETE", "/api/kernels/" + kid)


def test_the_kernels_connection_files_are_private(server):
    kid = server.start_kernel()["id"]
    # The server's folder of connection files: mode 0700, the user's own.
    pid = server.proc.pid
    found = []
    base = os.environ.get("TMPDIR", "/tmp")
    for root in [os.path.join(base, "sandpit-user-%d" % os.getuid())]:
        for name in os.listdir(root):
            if name.startswith("sandpit-%d-serve-" % pid):
                found.append(os.path.join(root, name))
    assert len(found) == 1
    st = os.stat(found[0])
    assert st.st_mode & 0o777 == 0o700 and st.st_uid == os.getuid()
    assert any(n.endswith(".json") for n in os.listdir(found[0]))
    server.call("DELETE", "/api/kernels/" + kid)


def test_the_websocket_takes_the_token_in_its_query(server):
    kid = server.start_kernel()["id"]
    url = "ws://127.0.0.1:%d/api/kernels/%s/channels?session_id=q&token=%s" % (
        server.port, kid, server.token)
    ws = websocket.create_connection(url, timeout=30)
    try:
        req = execute("print('query')")
        ws.send(json.dumps(req))
        assert stdout_text(collect(lambda: json.loads(ws.recv()),
                                   req["header"]["msg_id"])) == "query\n"
    finally:
        ws.close()
    with pytest.raises(websocket.WebSocketException):
        websocket.create_connection(url.replace(server.token, "wrong"), timeout=30)
    server.call("DELETE", "/api/kernels/" + kid)


def test_cors_is_closed_without_allow_origin(server):
    status, raw, headers = server.request("OPTIONS", "/api/kernels", token=False,
                                          headers={"Origin": "http://app.example"},
                                          with_headers=True)
    assert "Access-Control-Allow-Origin" not in headers
    status, raw, headers = server.request("GET", "/api", with_headers=True,
                                          headers={"Origin": "http://app.example"})
    assert status == 200 and "Access-Control-Allow-Origin" not in headers


def test_cors_opens_to_the_allowed_origin():
    s = Server("--allow-origin", "http://app.example")
    try:
        status, raw, headers = s.request("OPTIONS", "/api/kernels", token=False,
                                         headers={"Origin": "http://app.example"},
                                         with_headers=True)
        assert status == 204
        assert headers["Access-Control-Allow-Origin"] == "http://app.example"
        assert "Authorization" in headers["Access-Control-Allow-Headers"]
        kid = s.start_kernel()["id"]
        ws_connect(s, kid, origin="http://app.example").close()
        with pytest.raises(websocket.WebSocketException):
            ws_connect(s, kid, origin="http://other.example")
    finally:
        s.stop()
