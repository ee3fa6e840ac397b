"""`sandpit serve` at its edges: a slow client dropped, connections from one
address bounded, headers too large, an address other than loopback refused
without TLS, HTTPS and WSS with a certificate, the token from a file or
generated and shown once, the log as JSON lines."""

import json
import os
import shutil
import socket
import ssl
import subprocess
import time
import urllib.request

import pytest

from serve_helpers import SANDPIT, Server, collect, execute, free_port, stdout_text

websocket = pytest.importorskip("websocket")


def closed_within(sock, seconds, trickle=None):
    """Whether the server closes sock within seconds (trickle: a byte sent
    every second meanwhile)."""
    deadline = time.monotonic() + seconds
    sock.settimeout(1)
    while time.monotonic() < deadline:
        try:
            if trickle is not None:
                sock.send(trickle)
            if sock.recv(4096) == b"":
                return True
        except socket.timeout:
            continue
        except OSError:
            return True
    return False


def test_a_client_that_sends_its_header_slowly_is_dropped():
    s = Server()
    try:
        slow = socket.create_connection(("127.0.0.1", s.port))
        slow.send(b"GET /api HTTP/1.1\r\n")
        assert s.call("GET", "/api")[0] == 200  # others are served meanwhile
        assert closed_within(slow, 60, trickle=b"X")
        slow.close()
        assert s.call("GET", "/api")[0] == 200
    finally:
        s.stop()


def test_connections_from_one_address_are_bounded():
    s = Server("--max-connections-per-address", "8")
    socks = []
    try:
        for _ in range(8):
            socks.append(socket.create_connection(("127.0.0.1", s.port)))
        extra = socket.create_connection(("127.0.0.1", s.port))
        assert closed_within(extra, 10)
        extra.close()
        for x in socks:
            x.close()
        socks = []
        # Once they have gone, the address is served again.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                if s.call("GET", "/api")[0] == 200:
                    break
            except OSError:
                time.sleep(0.1)
        assert s.call("GET", "/api")[0] == 200
    finally:
        for x in socks:
            x.close()
        s.stop()


def test_a_header_too_large_is_refused():
    s = Server()
    try:
        with socket.create_connection(("127.0.0.1", s.port)) as c:
            c.sendall(b"GET /api HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 65536 + b"\r\n\r\n")
            c.settimeout(10)
            try:
                answer = c.recv(4096)
            except OSError:
                answer = b""
            assert not answer.startswith(b"HTTP/1.1 200")
        assert s.call("GET", "/api")[0] == 200
    finally:
        s.stop()


def test_other_addresses_need_tls_or_allow_insecure():
    r = subprocess.run([SANDPIT, "serve", "--ip", "0.0.0.0", "--port", str(free_port()),
                        "--token", "x"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2 and "TLS" in r.stderr


def test_a_token_from_a_file_and_a_generated_one(tmp_path):
    d = str(tmp_path)
    path = os.path.join(d, "token")
    with open(path, "w") as f:
        f.write("from-the-file\n")
    s = Server("--token-file", path, token=None)
    try:
        s.token = "from-the-file"
        assert s.call("GET", "/api")[0] == 200
        assert "from-the-file" not in s.log()
    finally:
        s.stop()
    s = Server(token=None)
    try:
        log = s.log()
        token = log.split("?token=")[1].split()[0]
        assert len(token) >= 32
        s.token = token
        assert s.call("GET", "/api")[0] == 200
        assert log.count(token) == 1
    finally:
        s.stop()


def test_the_log_as_json_lines():
    s = Server("--log-format", "json", "--log-level", "info")
    try:
        kid = s.start_kernel(env={"KERNEL_USERNAME": "bob"})["id"]
        s.call("DELETE", "/api/kernels/" + kid)
    finally:
        s.stop()
    lines = [x for x in s.log().splitlines() if x.strip()]
    objects = [json.loads(x) for x in lines]  # every line, the kernel's own too
    assert all({"time", "level", "message"} <= set(x) for x in objects)
    about = [x for x in objects if x.get("kernel_id") == kid]
    assert all(x["user"] == "bob" for x in about)
    assert any(x["message"] == "kernel started" or x["message"].startswith("kernel started")
               for x in about)
    assert any(x["message"].startswith("[sandpit kernel") for x in about)
    assert s.token not in s.log()


@pytest.mark.skipif(not shutil.which("openssl"), reason="no openssl command here")
def test_https_and_wss(tmp_path):
    d = str(tmp_path)
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
                    "-keyout", key, "-out", cert], check=True, capture_output=True,
                   timeout=60)
    port = free_port()
    proc = subprocess.Popen([SANDPIT, "serve", "--port", str(port), "--token", "tls",
                             "--certfile", cert, "--keyfile", key],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    ctx = ssl.create_default_context(cafile=cert)
    try:
        deadline, ok = time.monotonic() + 30, False
        req = urllib.request.Request("https://127.0.0.1:%d/api" % port,
                                     headers={"Authorization": "token tls"})
        while not ok and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                    ok = r.status == 200
            except OSError:
                time.sleep(0.1)
        assert ok
        post = urllib.request.Request("https://127.0.0.1:%d/api/kernels" % port, data=b"{}",
                                      headers={"Authorization": "token tls"}, method="POST")
        with urllib.request.urlopen(post, context=ctx, timeout=60) as r:
            kid = json.loads(r.read())["id"]
        ws = websocket.create_connection(
            "wss://127.0.0.1:%d/api/kernels/%s/channels" % (port, kid),
            header=["Authorization: token tls"], timeout=30,
            sslopt={"ca_certs": cert})
        try:
            req = execute("print('over tls')")
            ws.send(json.dumps(req))
            msgs = collect(lambda: json.loads(ws.recv()), req["header"]["msg_id"])
            assert stdout_text(msgs) == "over tls\n"
        finally:
            ws.close()
        # Plain HTTP on the TLS port gets nothing.
        with pytest.raises(OSError):
            urllib.request.urlopen("http://127.0.0.1:%d/api" % port, timeout=10).read()
    finally:
        proc.terminate()
        proc.wait(30)


def test_a_quiet_websocket_is_pinged_and_closed_when_it_does_not_answer():
    import base64
    s = Server("--ws-ping-interval", "1")
    try:
        kid = s.start_kernel()["id"]
        c = socket.create_connection(("127.0.0.1", s.port))
        key = base64.b64encode(os.urandom(16)).decode()
        c.sendall(("GET /api/kernels/%s/channels HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n"
                   "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
                   "Sec-WebSocket-Version: 13\r\nAuthorization: token %s\r\n\r\n"
                   % (kid, s.port, key, s.token)).encode())
        c.settimeout(10)
        head = b""
        while b"\r\n\r\n" not in head:
            head += c.recv(4096)
        assert head.startswith(b"HTTP/1.1 101")
        rest = head.split(b"\r\n\r\n", 1)[1]
        # A ping comes (opcode 9), perhaps after the kernel's own messages, and,
        # unanswered, the connection ends.
        deadline = time.monotonic() + 20
        opcodes = []
        while 9 not in opcodes and time.monotonic() < deadline:
            while len(rest) >= 2:
                n, at = rest[1] & 0x7F, 2
                if n == 126:
                    n, at = int.from_bytes(rest[2:4], "big"), 4
                elif n == 127:
                    n, at = int.from_bytes(rest[2:10], "big"), 10
                if len(rest) < at + n:
                    break
                opcodes.append(rest[0] & 0x0F)
                rest = rest[at + n:]
            if 9 not in opcodes:
                rest += c.recv(4096)
        assert 9 in opcodes, opcodes
        assert closed_within(c, 60)
        c.close()
        assert s.call("GET", "/api/kernels/" + kid)[1]["connections"] == 0
    finally:
        s.stop()
