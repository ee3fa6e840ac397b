"""What the integration tests share: the binary under test, kernels started
the way users start them (jupyter_client's KernelManager, from an installed
kernelspec), and helpers that collect a request's messages.

It is a module of its own, not conftest.py, so that a test folder with a
conftest.py of its own cannot hide it.
"""

import os
import queue
import subprocess
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SANDPIT = os.environ.get("SANDPIT_BIN") or os.path.join(ROOT, "build", "sandpit")
# An AddressSanitizer build (make test SANITIZE=address) has an allocator of its
# own, and cannot run under a memory limit: its shadow memory counts as data. It
# says so in its report rather than claiming the limit, and the memory tests check
# that instead.
ASAN = os.path.exists(SANDPIT) and "AddressSanitizer" in subprocess.run(
    [SANDPIT, "--version"], capture_output=True, text=True).stdout
TIMEOUT = 30


def private_base(tmpdir=None):
    """The user's folder of kernels' private folders (kernel/supervisor/tmpdir.h):
    TMPDIR's (or /tmp's) sandpit-user-<uid>."""
    tmp = tmpdir or os.environ.get("TMPDIR", "")
    return os.path.join(tmp if tmp.startswith("/") else "/tmp", "sandpit-user-%d" % os.getuid())


def install_spec(jupyter_dir, *args, name=None):
    """Installs another kernelspec (with kernel options in args); returns its name."""
    name = name or "sandpit-test-" + uuid.uuid4().hex[:8]
    subprocess.run([SANDPIT, "install", "--prefix", str(jupyter_dir), "--name", name, *args],
                   check=True, stdout=subprocess.DEVNULL)
    return name


class Kernel:
    """A running kernel and a client, with helpers that collect a request's messages."""

    def __init__(self, km, kc):
        self.km, self.kc = km, kc
        self._held = []  # iopub messages read while waiting for another request's
        self._held_replies = []  # shell replies read while waiting for another's

    def next_iopub(self, msg_id, timeout=TIMEOUT):
        """The next iopub message parented to msg_id; others are kept for later."""
        for i, m in enumerate(self._held):
            if m["parent_header"].get("msg_id") == msg_id:
                return self._held.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            m = self.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
            if m["parent_header"].get("msg_id") == msg_id:
                return m
            if len(self._held) < 10000:
                self._held.append(m)

    def wait_for_line(self, msg_id, line, timeout=TIMEOUT):
        """Waits until the request has printed line on stdout (its code is then
        running); returns the iopub messages read meanwhile, the line's included."""
        deadline = time.monotonic() + timeout
        text, seen = "", []
        while line not in text.splitlines():
            m = self.next_iopub(msg_id, max(0.1, deadline - time.monotonic()))
            seen.append(m)
            if m["msg_type"] == "stream" and m["content"]["name"] == "stdout":
                text += m["content"]["text"]
        return seen

    def execute(self, code, timeout=TIMEOUT, **kwargs):
        """Runs code; returns (reply, outputs): outputs are the iopub messages of
        the request between busy and idle, without status and execute_input."""
        msg_id = self.kc.execute(code, **kwargs)
        reply = self.shell_reply(msg_id, timeout)
        return reply, self.iopub_until_idle(msg_id, timeout)

    def shell_reply(self, msg_id, timeout=TIMEOUT):
        """The reply to msg_id; replies to other requests are kept for later
        (requests of two shells may finish in either order)."""
        for i, m in enumerate(self._held_replies):
            if m["parent_header"].get("msg_id") == msg_id:
                return self._held_replies.pop(i)
        deadline = time.monotonic() + timeout
        while True:
            msg = self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg
            if len(self._held_replies) < 1000:
                self._held_replies.append(msg)

    def iopub_until_idle(self, msg_id, timeout=TIMEOUT, keep_status=False):
        deadline = time.monotonic() + timeout
        out = []
        while True:
            msg = self.next_iopub(msg_id, max(0.1, deadline - time.monotonic()))
            if msg["msg_type"] == "status":
                if keep_status:
                    out.append(msg)
                if msg["content"]["execution_state"] == "idle":
                    return out
                continue
            if msg["msg_type"] == "execute_input":
                if keep_status:
                    out.append(msg)
                continue
            out.append(msg)

    def run(self, code, **kwargs):
        """Runs code that must succeed; returns its stdout text."""
        reply, outputs = self.execute(code, **kwargs)
        assert reply["content"]["status"] == "ok", reply["content"]
        return stdout_of(outputs)

    def value(self, expr):
        """The text/plain repr of an expression, via user_expressions."""
        reply, _ = self.execute("", user_expressions={"v": expr})
        result = reply["content"]["user_expressions"]["v"]
        assert result["status"] == "ok", result
        return result["data"]["text/plain"]

    def request(self, method, *args, timeout=TIMEOUT, **kwargs):
        """Sends a shell request through the client method (complete, inspect, ...)
        and returns its reply."""
        msg_id = getattr(self.kc, method)(*args, **kwargs)
        return self.shell_reply(msg_id, timeout)

    def drain_iopub(self, seconds=0.2):
        self._held.clear()
        while True:
            try:
                self.kc.get_iopub_msg(timeout=seconds)
            except queue.Empty:
                return


def stdout_of(outputs, name="stdout"):
    return "".join(m["content"]["text"] for m in outputs
                   if m["msg_type"] == "stream" and m["content"]["name"] == name)


def start(kernel_name, cwd=None, **kwargs):
    from jupyter_client.manager import KernelManager
    km = KernelManager(kernel_name=kernel_name)
    km.start_kernel(cwd=cwd, **kwargs)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
    except RuntimeError:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        raise
    return Kernel(km, kc)


def stop(k):
    k.kc.stop_channels()
    k.km.shutdown_kernel(now=False)


def raw_socket(k, channel="shell"):
    """A DEALER socket of its own on one of the kernel's ROUTER channels, to
    send what a well-behaved client would not (or with buffers)."""
    import zmq
    s = zmq.Context.instance().socket(zmq.DEALER)
    s.linger = 0
    info = k.km.get_connection_info()
    s.connect("%s://%s:%d" % (info["transport"], info["ip"], info["%s_port" % channel]))
    return s
