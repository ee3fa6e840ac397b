"""Fixtures shared by the integration tests.

Every test drives the real binary the way users do: a kernelspec is installed
with `sandpit install --prefix` into a temporary Jupyter data folder, and
jupyter_client's KernelManager starts kernels from it. SANDPIT_BIN names the
binary under test (the Makefile sets it; by default build/sandpit).
"""

import os
import pathlib
import queue
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SANDPIT = os.environ.get("SANDPIT_BIN") or os.path.join(ROOT, "build", "sandpit")
TIMEOUT = 30

sys.path.insert(0, HERE)


_BASE = None


def pytest_configure(config):
    """Installs the default sandpit kernelspec into a temporary Jupyter data
    folder first on JUPYTER_PATH, before any test (unittest classes such as the
    conformance suite start kernels in setUpClass, before fixtures run)."""
    global _BASE
    _BASE = tempfile.mkdtemp(prefix="sandpit-tests-")
    subprocess.run([SANDPIT, "install", "--prefix", _BASE], check=True,
                   stdout=subprocess.DEVNULL)
    os.environ["JUPYTER_PATH"] = os.path.join(_BASE, "share", "jupyter")
    # Keep the runtime files (connection files) and caches of test kernels out of
    # the home folder.
    os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(_BASE, "runtime")
    os.environ["XDG_CACHE_HOME"] = os.path.join(_BASE, "cache")


def pytest_unconfigure(config):
    if _BASE:
        shutil.rmtree(_BASE, ignore_errors=True)


@pytest.fixture(scope="session")
def jupyter_dir():
    """The Jupyter data prefix with the default sandpit kernelspec."""
    return pathlib.Path(_BASE)


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

    def execute(self, code, timeout=TIMEOUT, **kwargs):
        """Runs code; returns (reply, outputs): outputs are the iopub messages of
        the request between busy and idle, without status and execute_input."""
        msg_id = self.kc.execute(code, **kwargs)
        reply = self.shell_reply(msg_id, timeout)
        return reply, self.iopub_until_idle(msg_id, timeout)

    def shell_reply(self, msg_id, timeout=TIMEOUT):
        deadline = time.monotonic() + timeout
        while True:
            msg = self.kc.get_shell_msg(timeout=max(0.1, deadline - time.monotonic()))
            if msg["parent_header"].get("msg_id") == msg_id:
                return msg

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


@pytest.fixture(scope="module")
def kernel(jupyter_dir, tmp_path_factory):
    """One kernel for a test module (state is shared between its tests)."""
    k = start("sandpit", cwd=str(tmp_path_factory.mktemp("ws")))
    yield k
    stop(k)


@pytest.fixture
def fresh_kernel(jupyter_dir, tmp_path):
    """A kernel of its own for one test, started in tmp_path."""
    k = start("sandpit", cwd=str(tmp_path))
    yield k
    stop(k)


@pytest.fixture
def kernel_with(jupyter_dir, tmp_path):
    """Starts kernels from a kernelspec with the given options:
    kernel_with("--timeout", "2") -> Kernel. Each is stopped after the test."""
    started = []

    def make(*args, cwd=None):
        name = install_spec(jupyter_dir, *args)
        k = start(name, cwd=str(cwd or tmp_path))
        started.append(k)
        return k
    yield make
    for k in started:
        stop(k)
