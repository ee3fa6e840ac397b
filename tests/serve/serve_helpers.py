"""Helpers of the tests of `sandpit serve`'s own API: a server started the
way users start it (the real binary, a port on 127.0.0.1, a token), REST
calls with urllib, WebSocket clients with python3-websocket, and a Jupyter
message made by hand. Every wait is bounded in time."""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import uuid

import pytest

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from sandpit_testing import SANDPIT  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NODE_DIR = os.path.join(ROOT, "tests", "node")
NODE_MIN = (20, 18, 1)  # tests/node/package.json's engines

TOKEN = "t0k3n-for-the-tests"
START_S = 30


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A `sandpit serve` process; stop() ends it (SIGTERM, then SIGKILL)."""

    def __init__(self, *args, token=TOKEN, cwd=None, env=None):
        self.token = token
        self.own_cwd = cwd is None
        self.cwd = cwd or tempfile.mkdtemp(prefix="sandpit-serve-")
        self.saved_log = None
        e = dict(os.environ)
        e.pop("JUPYTER_TOKEN", None)
        e.update(env or {})
        # A free port may be taken by another process before the server binds
        # it: then again with another, a few times.
        for attempt in range(5):
            self.port = free_port()
            self.errlog = tempfile.NamedTemporaryFile(prefix="sandpit-serve-log-",
                                                      delete=False)
            argv = [SANDPIT, "serve", "--port", str(self.port)]
            if token is not None:
                argv += ["--token", token]
            self.proc = subprocess.Popen(argv + list(args), cwd=self.cwd, env=e,
                                         stdout=subprocess.DEVNULL, stderr=self.errlog)
            self.base = "http://127.0.0.1:%d" % self.port
            try:
                self.wait_ready()
                return
            except AssertionError:
                retry = attempt < 4 and "cannot listen" in self.log()
                if self.proc.poll() is None:
                    self.proc.kill()
                self.proc.wait(10)
                os.unlink(self.errlog.name)
                if not retry:
                    if self.own_cwd:
                        shutil.rmtree(self.cwd, ignore_errors=True)
                    raise

    def log(self):
        if self.saved_log is not None:
            return self.saved_log
        with open(self.errlog.name, errors="replace") as f:
            return f.read()

    def wait_ready(self):
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("sandpit serve exited: %s" % self.log())
            try:
                if self.token is None:
                    with socket.create_connection(("127.0.0.1", self.port), timeout=1):
                        return
                status, body = self.request("GET", "/api")
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.05)
        raise AssertionError("sandpit serve did not answer: %s" % self.log())

    def request(self, method, path, body=None, headers=None, token=True, with_headers=False):
        h = {"Content-Type": "application/json"}
        if token is True:
            h["Authorization"] = "token " + self.token
        h.update(headers or {})
        data = None
        if body is not None:
            data = body if isinstance(body, bytes) else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, headers=h, method=method)
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                return (r.status, r.read()) + ((r.headers,) if with_headers else ())
        except urllib.error.HTTPError as e:
            return (e.code, e.read()) + ((e.headers,) if with_headers else ())

    def call(self, method, path, body=None, **kw):
        status, raw = self.request(method, path, body, **kw)[:2]
        return status, (json.loads(raw) if raw else None)

    def start_kernel(self, **body):
        status, model = self.call("POST", "/api/kernels", body)
        assert status == 201, (status, model)
        return model

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if self.saved_log is None:
            self.saved_log = self.log()
            os.unlink(self.errlog.name)
            if self.own_cwd:
                shutil.rmtree(self.cwd, ignore_errors=True)
        # Under the sanitizers, a report from the server (or its kernels) fails.
        assert "Sanitizer" not in self.saved_log, self.saved_log
        return self.proc.returncode


def message(msg_type, content, channel="shell", session="test-session"):
    return {
        "header": {"msg_id": uuid.uuid4().hex, "msg_type": msg_type, "username": "test",
                   "session": session, "date": "2024-01-01T00:00:00.000000Z",
                   "version": "5.3"},
        "parent_header": {}, "metadata": {}, "content": content, "channel": channel,
    }


def execute(code, **kw):
    return message("execute_request", {"code": code, "silent": False, "store_history": True,
                                       "user_expressions": {}, "allow_stdin": False}, **kw)


def ws_connect(server, kernel_id, session_id=None, subprotocols=None, headers=None,
               token=True, origin=None):
    import websocket
    url = "ws://127.0.0.1:%d/api/kernels/%s/channels" % (server.port, kernel_id)
    if session_id:
        url += "?session_id=" + session_id
    h = list(headers or [])
    if token:
        h.append("Authorization: token " + server.token)
    kw = {"origin": origin} if origin else {}
    return websocket.create_connection(url, header=h, timeout=30,
                                       subprotocols=subprotocols, **kw)


def collect(recv, parent_id, until="execute_reply", limit=200):
    """Messages (decoded by recv) parented to parent_id, up to the reply of
    type until and the status idle, at most limit messages read."""
    got, reply, idle = [], None, False
    for _ in range(limit):
        m = recv()
        if m is None or m["parent_header"].get("msg_id") != parent_id:
            continue
        got.append(m)
        if m["msg_type"] == until:
            reply = m
        if m["msg_type"] == "status" and m["content"].get("execution_state") == "idle":
            idle = True
        if reply and idle:
            return got
    raise AssertionError("no %s and idle among %r" % (until, got))


def stdout_text(msgs):
    return "".join(m["content"]["text"] for m in msgs
                   if m["msg_type"] == "stream" and m["content"]["name"] == "stdout")


def node_skip_reason():
    """Why E2B's SDK cannot run here (no node, or one older than it needs), or None."""
    node = shutil.which("node")
    if not node:
        return "no node on PATH"
    out = subprocess.run([node, "--version"], capture_output=True, text=True,
                         timeout=30).stdout.strip()
    m = re.match(r"v(\d+)\.(\d+)\.(\d+)", out)
    if not m or tuple(int(x) for x in m.groups()) < NODE_MIN:
        return "node %s is older than %s, which E2B's SDK needs" % (
            out, ".".join(map(str, NODE_MIN)))
    return None


def e2b_url(server):
    """The URL the server logged for E2B's SDK."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        m = re.search(r"E2B_SANDBOX_URL=(https?://[^\s\"]+)", server.log())
        if m:
            return m.group(1).rstrip('"')
        time.sleep(0.05)
    raise AssertionError("no E2B URL in the log: %s" % server.log())


def run_e2b_client(server, script, url, **env_extra):
    """Runs tests/node/<script> (E2B's SDK in its local mode) against url:
    the JSON object it printed last. Skipped where node cannot run the SDK."""
    why = node_skip_reason()
    if why:
        pytest.skip(why)
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@e2b", "code-interpreter")):
        pytest.fail("@e2b/code-interpreter is not installed in tests/node: run make deps")
    env = dict(os.environ, E2B_DEBUG="true", E2B_SANDBOX_URL=url, **env_extra)
    env.pop("E2B_API_KEY", None)
    proc = subprocess.run(["node", script], cwd=NODE_DIR, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, (proc.stdout[-3000:], proc.stderr[-3000:],
                                  server.log()[-5000:])
    return json.loads(proc.stdout.strip().splitlines()[-1])
