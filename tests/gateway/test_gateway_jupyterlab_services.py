"""@jupyterlab/services (npm), the library JupyterLab talks to its server
with, run from node against `sandpit serve` directly
(tests/node/gateway_client.mjs): KernelManager starts a kernel, executes,
completes, inspects, interrupts, restarts and shuts it down; SessionManager
makes a notebook's session, runs a cell in its kernel, renames and shuts it
down. The driver runs once per module; each test checks a part of what it
saw."""

import json
import os
import subprocess

import pytest

from .gateway_testing import ROOT, V1

NODE_DIR = os.path.join(ROOT, "tests", "node")


@pytest.fixture(scope="module")
def seen(serve, tmp_path_factory):
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@jupyterlab", "services")):
        pytest.fail("@jupyterlab/services is not installed in tests/node: run make deps")
    out_path = tmp_path_factory.mktemp("jlab") / "out.json"
    proc = subprocess.run(["node", "gateway_client.mjs", serve.url + "/", serve.token,
                           serve.kernel_name(), str(out_path)],
                          cwd=NODE_DIR, capture_output=True, text=True, timeout=240)
    out = json.loads(out_path.read_text()) if out_path.exists() else {}
    assert proc.returncode == 0 and "failure" not in out, (
        "the client failed after %s: %s\n%s%s\n--- server log ---\n%s"
        % (out.get("steps"), out.get("failure"), proc.stdout[-3000:], proc.stderr[-3000:],
           serve.log()[-5000:]))
    return out


def stream(out, step):
    return "".join(m["content"]["text"] for m in out[step]["iopub"] if m["type"] == "stream")


def test_kernel_manager_executes(seen):
    assert seen["info"] == "sandpit"
    assert stream(seen, "stream") == "hello from sandpit\n"
    assert [m["content"]["data"]["text/plain"] for m in seen["result"]["iopub"]
            if m["type"] == "execute_result"] == ["42"]
    assert seen["error"]["reply"]["status"] == "error"
    assert seen["error"]["reply"]["ename"] == "ZeroDivisionError"
    assert any(m["type"] == "display_data" and
               m["content"]["data"].get("image/png", "").startswith("iVBORw0KGgo")
               for m in seen["image"]["iopub"])


def test_kernel_manager_completes_and_inspects(seen):
    assert "os" in seen["complete"]["matches"]
    assert seen["inspect"]["found"] and "len(obj, /)" in seen["inspect"]["data"]["text/plain"]


def test_kernel_manager_interrupts_restarts_shuts_down(seen, serve):
    assert seen["interrupt"]["reply"]["ename"] == "KeyboardInterrupt"
    assert stream(seen, "survived") == "42\n"
    assert stream(seen, "after_restart") == "False\n"
    assert seen["after_restart"]["reply"]["execution_count"] == 1
    assert seen["kernel_id"] in seen["running_before_shutdown"]
    assert seen["kernel_id"] not in seen["running_after_shutdown"]
    assert seen["kernel_id"] not in [k["id"] for k in serve.kernels()]


def test_session_manager(seen, serve):
    s = seen["session"]
    assert s["path"] == "work/analysis.ipynb"
    assert seen["session_info"] == "sandpit"
    assert stream(seen, "session_run") == "45\n"
    assert {"id": s["id"], "path": "work/analysis.ipynb"} in seen["sessions_listed"]
    assert "work/renamed.ipynb" in seen["sessions_renamed"]
    assert s["id"] not in seen["sessions_after_shutdown"]
    assert s["kernel_id"] not in seen["kernels_at_end"]
    assert serve.ok("GET", "/api/sessions") == []
    assert serve.kernels() == []


def test_the_library_speaks_v1(seen):
    """@jupyterlab/services offers the v1 subprotocol; the gateway takes it."""
    assert seen["protocol"] == V1
