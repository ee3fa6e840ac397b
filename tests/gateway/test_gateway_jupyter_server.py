"""Debian's Jupyter Server 1.23 started with --gateway-url pointing at
`sandpit serve` (and --GatewayClient.auth_token with its token): kernels are
created, cells run, interrupted and restarted through Jupyter Server's own
REST and WebSocket API, as a notebook page does, and the results show that
they ran in a sandpit kernel of the gateway (its kernel_info, the gateway's
list of kernels, and a fact of the sandbox: a cell cannot open a socket)."""

import pytest

from .gateway_testing import LIMIT, JupyterServer, stdout_of

# A cell that tries to reach the front end's own port: under ipykernel it
# connects; in sandpit's worker no socket that names an address can be made.
REACH = ("import socket\n"
         "try:\n"
         "    socket.create_connection(('127.0.0.1', {port}), timeout=5).close()\n"
         "    print('connected')\n"
         "except OSError:\n"
         "    print('refused')\n")


@pytest.fixture(scope="module")
def front(serve, tmp_path_factory):
    """Jupyter Server with all kernel management sent to the gateway."""
    server = JupyterServer(tmp_path_factory.mktemp("front"),
                           "--gateway-url=" + serve.url,
                           "--GatewayClient.auth_token=" + serve.token,
                           "--GatewayClient.request_timeout=%d" % LIMIT,
                           "--GatewayClient.connect_timeout=%d" % LIMIT)
    yield server
    server.stop()


def gateway_ids(serve):
    return sorted(k["id"] for k in serve.kernels())


def test_kernelspecs_are_the_gateways(serve, front):
    specs = front.ok("GET", "/api/kernelspecs")
    assert "sandpit" in specs["kernelspecs"], specs
    mine = serve.ok("GET", "/api/kernelspecs")
    assert sorted(specs["kernelspecs"]) == sorted(mine["kernelspecs"])


def test_kernel_runs_in_the_gateway(serve, front):
    before = gateway_ids(serve)
    model = front.ok("POST", "/api/kernels", {"name": "sandpit"}, status=201)
    kid = model["id"]
    try:
        # Made by the gateway, not by Jupyter Server: the gateway lists it.
        assert kid in gateway_ids(serve) and kid not in before
        assert front.ok("GET", "/api/kernels/" + kid)["id"] == kid
        ws = front.ws(kid)
        try:
            info = ws.wait_ready()
            assert info["implementation"] == "sandpit", info
            assert ws.run("print(6 * 7)") == "42\n"
            reply, out = ws.execute("x = 6 * 7\nx")
            assert reply["content"]["status"] == "ok"
            assert [m["content"]["data"]["text/plain"] for m in out
                    if m["msg_type"] == "execute_result"] == ["42"]
            assert ws.run(REACH.format(port=front.port)) == "refused\n"
            reply, _ = ws.execute("1 / 0")
            assert reply["content"]["ename"] == "ZeroDivisionError"
        finally:
            ws.close()
    finally:
        assert front.request("DELETE", "/api/kernels/" + kid)[0] == 204
    assert kid not in gateway_ids(serve)


def test_interrupt_and_restart_through_the_front_end(serve, front):
    kid = front.ok("POST", "/api/kernels", {"name": "sandpit"}, status=201)["id"]
    try:
        ws = front.ws(kid)
        try:
            ws.wait_ready()
            ws.run("x = 1")
            msg_id = ws.send("shell", "execute_request", {
                "code": "import time\nprint('sleeping', flush=True)\ntime.sleep(60)",
                "silent": False, "store_history": True, "user_expressions": {},
                "allow_stdin": False, "stop_on_error": True})
            ws.next(lambda m: m["msg_type"] == "stream" and "sleeping" in m["content"]["text"]
                    and m["parent_header"].get("msg_id") == msg_id)
            assert front.request("POST", "/api/kernels/%s/interrupt" % kid)[0] == 204
            reply = ws.reply(msg_id)
            assert reply["content"]["status"] == "error"
            assert reply["content"]["ename"] == "KeyboardInterrupt"
            ws.iopub_until_idle(msg_id)
            assert ws.run("print(x)") == "1\n"
        finally:
            ws.close()
        status, _, model = front.request("POST", "/api/kernels/%s/restart" % kid)
        assert status == 200 and model["id"] == kid, (status, model)
        assert kid in gateway_ids(serve)
        ws = front.ws(kid)
        try:
            ws.wait_ready()
            reply, out = ws.execute("print('x' in globals())")
            assert stdout_of(out) == "False\n"
            assert reply["content"]["execution_count"] == 1
        finally:
            ws.close()
    finally:
        assert front.request("DELETE", "/api/kernels/" + kid)[0] == 204
    assert kid not in gateway_ids(serve)


def test_two_kernels_are_apart(serve, front):
    a = front.ok("POST", "/api/kernels", {"name": "sandpit"}, status=201)["id"]
    b = front.ok("POST", "/api/kernels", {"name": "sandpit"}, status=201)["id"]
    try:
        assert a != b and {a, b} <= set(gateway_ids(serve))
        wa, wb = front.ws(a), front.ws(b)
        try:
            wa.wait_ready()
            wb.wait_ready()
            wa.run("y = 'a'")
            wb.run("y = 'b'")
            assert wa.run("print(y)") == "a\n" and wb.run("print(y)") == "b\n"
        finally:
            wa.close()
            wb.close()
    finally:
        for kid in (a, b):
            assert front.request("DELETE", "/api/kernels/" + kid)[0] == 204
