"""What the gateway's tests (and the benchmark) share: `sandpit serve` and
Debian's Jupyter Server started as processes on 127.0.0.1 with a token, a REST
helper, and a kernel client over the kernel's WebSocket
(/api/kernels/{id}/channels) speaking either of jupyter_server's two
protocols: the legacy one (JSON text frames; binary frames with u32
big-endian offsets for messages with buffers) and
`v1.kernel.websocket.jupyter.org` (u64 little-endian offsets, then the
channel, header, parent header, metadata, content and buffers).

The tests run against `sandpit serve` (SANDPIT_BIN). With
SANDPIT_GATEWAY_REFERENCE=1 in the environment they start a plain Jupyter
Server instead (it serves the same kernel API, and runs the same sandpit
kernelspec), which checks the tests themselves against the reference
implementation (1.23 has both protocols).
"""

import json
import os
import secrets
import socket
import struct
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from sandpit_testing import ROOT, SANDPIT  # noqa: E402,F401

PYTHON = "/usr/bin/python3"
LIMIT = 60  # seconds any one wait may take
START = 30  # seconds a server has to answer GET /api
V1 = "v1.kernel.websocket.jupyter.org"
REFERENCE = os.environ.get("SANDPIT_GATEWAY_REFERENCE") == "1"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class HttpError(Exception):
    def __init__(self, status, body, headers):
        super().__init__("HTTP %d: %r" % (status, body))
        self.status, self.body, self.headers = status, body, headers


def http(url, method="GET", body=None, headers=None, timeout=LIMIT):
    """One request; returns (status, headers, parsed JSON body or None).
    Error statuses are returned too, not raised."""
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
    if data is not None:
        req.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            status, hdrs, text = r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        status, hdrs, text = e.code, e.headers, e.read()
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = text
    return status, hdrs, parsed


class Server:
    """A server process on 127.0.0.1 with a token; its log in a file."""

    kind = "server"

    def __init__(self, argv, root, port, token, env=None):
        self.port, self.token = port, token
        self.url = "http://127.0.0.1:%d" % port
        self.ws_base = "ws://127.0.0.1:%d" % port
        self.root = root
        self.log_path = os.path.join(str(root), "%s-%d.log" % (self.kind, port))
        self._log = open(self.log_path, "wb")
        self.proc = subprocess.Popen(argv, cwd=str(root), env=env or dict(os.environ),
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START
        while True:
            if self.proc.poll() is not None:
                self._log.close()
                raise AssertionError("%s exited with %s:\n%s"
                                     % (self.kind, self.proc.returncode, self.log()))
            try:
                status, _, body = self.request("GET", "/api", timeout=2)
                if status == 200 and isinstance(body, dict) and "version" in body:
                    return
            except OSError:
                pass
            if time.monotonic() > deadline:
                self.stop()
                raise AssertionError("%s did not answer GET /api in %d s:\n%s"
                                     % (self.kind, START, self.log()))
            time.sleep(0.1)

    def log(self):
        try:
            with open(self.log_path, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def auth(self):
        return {"Authorization": "token " + self.token}

    def request(self, method, path, body=None, timeout=LIMIT, token=True, headers=None):
        h = dict(self.auth() if token else {})
        h.update(headers or {})
        return http(self.url + path, method, body, h, timeout)

    def ok(self, method, path, body=None, status=None):
        """A request that must succeed (with status, when given); returns its body."""
        got, _, parsed = self.request(method, path, body)
        expect = status or (200, 201, 204)
        assert got in (expect if isinstance(expect, tuple) else (expect,)), (got, parsed)
        return parsed

    def kernel_name(self):
        """The sandpit kernelspec's name on this server (the default when there
        is one called sandpit, else the default)."""
        specs = self.ok("GET", "/api/kernelspecs")
        if "sandpit" in specs["kernelspecs"]:
            return "sandpit"
        return specs["default"]

    def start_kernel(self, env=None):
        body = {"name": self.kernel_name()}
        if env is not None:
            body["env"] = env
        return self.ok("POST", "/api/kernels", body, status=201)

    def kernels(self):
        return self.ok("GET", "/api/kernels")

    def shutdown_all(self):
        try:
            for k in self.kernels():
                self.request("DELETE", "/api/kernels/" + k["id"], timeout=20)
        except (OSError, AssertionError, TypeError, KeyError) as e:
            print("could not shut the kernels down: %s" % e)

    def ws(self, kernel_id, protocol="legacy", session_id=None, **kwargs):
        return WsKernel(self, kernel_id, protocol, session_id, **kwargs)

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.shutdown_all()
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        self._log.close()


def started(start, port):
    """start(port) with the given port, or with a free one, tried again (three
    times at most) when another process took that one first."""
    for attempt in range(3):
        try:
            return start(port or free_port())
        except AssertionError as e:
            if port or attempt == 2 or "exited" not in str(e):
                raise


class SandpitServe(Server):
    """`sandpit serve --ip 127.0.0.1 --port N --token T [args]`."""

    kind = "sandpit-serve"

    def __init__(self, root, *args, token=None, port=None, env=None):
        token = token or secrets.token_hex(16)

        def start(p):
            argv = [SANDPIT, "serve", "--ip", "127.0.0.1", "--port", str(p),
                    "--token", token, *args]
            Server.__init__(self, argv, root, p, token, env)
        started(start, port)


class JupyterServer(Server):
    """Debian's Jupyter Server (`python3 -m jupyter_server`), with its own
    files in root; args are more of its options (--gateway-url=..., say)."""

    kind = "jupyter-server"

    def __init__(self, root, *args, token=None, port=None, env=None):
        token = token or secrets.token_hex(16)
        env = dict(env or os.environ)
        for var, sub in (("JUPYTER_RUNTIME_DIR", "runtime"), ("JUPYTER_CONFIG_DIR", "config"),
                         ("IPYTHONDIR", "ipython")):
            os.makedirs(os.path.join(str(root), sub), exist_ok=True)
            env[var] = os.path.join(str(root), sub)

        def start(p):
            argv = [PYTHON, "-m", "jupyter_server", "--ServerApp.ip=127.0.0.1",
                    "--ServerApp.port=%d" % p, "--ServerApp.port_retries=0",
                    "--ServerApp.token=" + token, "--ServerApp.password=",
                    "--ServerApp.open_browser=False", "--ServerApp.root_dir=" + str(root),
                    *args]
            if os.geteuid() == 0:
                argv.append("--ServerApp.allow_root=True")
            Server.__init__(self, argv, root, p, token, env)
        started(start, port)


def gateway(root, *args, **kwargs):
    """The server under test: `sandpit serve` with args, or (with
    SANDPIT_GATEWAY_REFERENCE=1) a plain Jupyter Server, which ignores them."""
    if REFERENCE:
        return JupyterServer(root, **kwargs)
    return SandpitServe(root, *args, **kwargs)


# --- the kernel's WebSocket ----------------------------------------------------------

def pack_legacy(msg):
    """A message with buffers as the legacy protocol's binary frame."""
    msg = dict(msg)
    buffers = [bytes(b) for b in msg.pop("buffers")]
    parts = [json.dumps(msg).encode()] + buffers
    offsets = [4 * (len(parts) + 1)]
    for p in parts[:-1]:
        offsets.append(offsets[-1] + len(p))
    return struct.pack("!%dI" % (len(parts) + 1), len(parts), *offsets) + b"".join(parts)


def unpack_legacy(data):
    (n,) = struct.unpack_from("!I", data, 0)
    offsets = list(struct.unpack_from("!%dI" % n, data, 4)) + [len(data)]
    parts = [data[offsets[i]:offsets[i + 1]] for i in range(n)]
    msg = json.loads(parts[0])
    msg["buffers"] = parts[1:]
    return msg


def pack_v1(channel, msg):
    parts = [json.dumps(msg.get(k, {})).encode()
             for k in ("header", "parent_header", "metadata", "content")]
    parts += [bytes(b) for b in msg.get("buffers", [])]
    parts.insert(0, channel.encode())
    offsets = [8 * (len(parts) + 2)]
    for p in parts:
        offsets.append(offsets[-1] + len(p))
    return (struct.pack("<Q", len(offsets)) + struct.pack("<%dQ" % len(offsets), *offsets)
            + b"".join(parts))


def unpack_v1(data):
    (n,) = struct.unpack_from("<Q", data, 0)
    offsets = list(struct.unpack_from("<%dQ" % n, data, 8))
    parts = [data[offsets[i]:offsets[i + 1]] for i in range(n - 1)]
    msg = {"channel": parts[0].decode()}
    for k, p in zip(("header", "parent_header", "metadata", "content"), parts[1:5]):
        msg[k] = json.loads(p) if p else {}
    msg["msg_type"] = msg["header"].get("msg_type")
    msg["buffers"] = parts[5:]
    return msg


class WsKernel:
    """A client of one kernel over its WebSocket, with helpers that collect a
    request's messages."""

    def __init__(self, server, kernel_id, protocol="legacy", session_id=None, timeout=LIMIT,
                 headers=None):
        import websocket
        self.protocol = protocol
        self.session = session_id or uuid.uuid4().hex
        url = "%s/api/kernels/%s/channels?session_id=%s" % (server.ws_base, kernel_id,
                                                            self.session)
        hdrs = ["Authorization: token " + server.token] + list(headers or [])
        kw = {"subprotocols": [V1]} if protocol == "v1" else {}
        self.ws = websocket.create_connection(url, header=hdrs, timeout=timeout, **kw)
        self.subprotocol = self.ws.getsubprotocol()
        self._held = []
        self._lock = threading.Lock()

    def close(self):
        self.ws.close()

    def message(self, channel, msg_type, content, buffers=(), metadata=None):
        return {"header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type,
                           "username": "test", "session": self.session,
                           "date": time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime()),
                           "version": "5.3"},
                "parent_header": {}, "metadata": metadata or {}, "content": content,
                "channel": channel, "buffers": list(buffers)}

    def send(self, channel, msg_type, content, buffers=()):
        """Sends a message; returns its msg_id."""
        import websocket
        msg = self.message(channel, msg_type, content, buffers)
        with self._lock:
            if self.protocol == "v1":
                self.ws.send(pack_v1(channel, msg), opcode=websocket.ABNF.OPCODE_BINARY)
            elif msg["buffers"]:
                self.ws.send(pack_legacy(msg), opcode=websocket.ABNF.OPCODE_BINARY)
            else:
                msg.pop("buffers")
                self.ws.send(json.dumps(msg))
        return msg["header"]["msg_id"]

    def recv(self, timeout=LIMIT):
        """The next message from the kernel (a dict with channel, msg_type,
        buffers, and frame: the kind of WebSocket frame it came in)."""
        self.ws.settimeout(max(0.1, timeout))
        data = self.ws.recv()
        if data in ("", b""):  # websocket-client's answer to a close frame
            import websocket
            raise websocket.WebSocketConnectionClosedException("the server closed")
        if isinstance(data, str):
            msg = json.loads(data)
            msg.setdefault("buffers", [])
        elif self.protocol == "v1":
            msg = unpack_v1(data)
        else:
            msg = unpack_legacy(data)
        msg.setdefault("msg_type", msg["header"].get("msg_type"))
        msg["frame"] = "text" if isinstance(data, str) else "binary"
        return msg

    def next(self, where, timeout=LIMIT):
        """The next message for which where(msg) holds; others are kept."""
        for i, m in enumerate(self._held):
            if where(m):
                return self._held.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no such message in %s s" % timeout)
            m = self.recv(left)
            if where(m):
                return m
            if len(self._held) < 10000:
                self._held.append(m)

    def reply(self, msg_id, timeout=LIMIT):
        return self.next(lambda m: m["parent_header"].get("msg_id") == msg_id
                         and m["channel"] in ("shell", "control"), timeout)

    def request(self, msg_type, content, channel="shell", timeout=LIMIT):
        return self.reply(self.send(channel, msg_type, content), timeout)

    def iopub_until_idle(self, msg_id, timeout=LIMIT):
        out = []
        deadline = time.monotonic() + timeout
        while True:
            m = self.next(lambda m: m["channel"] == "iopub"
                          and m["parent_header"].get("msg_id") == msg_id,
                          max(0.1, deadline - time.monotonic()))
            if m["msg_type"] == "status":
                if m["content"]["execution_state"] == "idle":
                    return out
                continue
            if m["msg_type"] != "execute_input":
                out.append(m)

    def execute(self, code, timeout=LIMIT, **content):
        body = {"code": code, "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
        body.update(content)
        msg_id = self.send("shell", "execute_request", body)
        reply = self.reply(msg_id, timeout)
        return reply, self.iopub_until_idle(msg_id, timeout)

    def run(self, code, timeout=LIMIT):
        """Runs code that must succeed; returns its stdout text."""
        reply, out = self.execute(code, timeout)
        assert reply["content"]["status"] == "ok", reply["content"]
        return stdout_of(out)

    def wait_ready(self, timeout=LIMIT):
        """Asks kernel_info until it is answered (the kernel may be starting);
        returns the reply's content."""
        deadline = time.monotonic() + timeout
        while True:
            msg_id = self.send("shell", "kernel_info_request", {})
            try:
                return self.reply(msg_id, min(2, max(0.1, deadline - time.monotonic())))["content"]
            except Exception:
                if time.monotonic() > deadline:
                    raise


def stdout_of(outputs, name="stdout"):
    return "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == name)


def wait_for(what, condition, timeout=LIMIT, step=0.1):
    """Polls condition() until truthy; returns its value or fails naming what."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %s s waiting for %s" % (timeout, what))
        time.sleep(step)
