"""The worker's exit statuses (kernel/link/worker_exit.h) are reported by name:
a worker that cannot confine itself ends with WORKER_EXIT_SANDBOX (3), and the
kernel's log says so in words, whether the worker was exec'd, forked from the
template or started beforehand (the spare)."""
import os
import time

import pytest
from jupyter_client.manager import KernelManager

from sandpit_testing import TIMEOUT, Kernel, install_spec

NAMED = "exited with status 3 (WORKER_EXIT_SANDBOX: could not confine itself)"


def start_with_connection_file(name, ws, conn, stderr):
    km = KernelManager(kernel_name=name, connection_file=str(conn))
    km.start_kernel(cwd=str(ws), stderr=stderr)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    return Kernel(km, kc)


@pytest.mark.parametrize("template", ["on", "off"])
def test_a_worker_that_cannot_confine_itself_is_reported_by_name(jupyter_dir, tmp_path,
                                                                 template):
    """A replaced connection file (the key may lie elsewhere) stops every next
    worker before it confines itself: status 3, named in the log."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    log = tmp_path / "kernel.log"
    name = install_spec(jupyter_dir, "--template", template)
    with open(log, "wb") as f:
        k = start_with_connection_file(name, ws, ws / "sub" / "conn.json", stderr=f)
    try:
        conn = ws / "sub" / "conn.json"
        os.rename(conn, ws / "moved.json")
        conn.write_text((ws / "moved.json").read_text())
        k.shell_reply(k.kc.execute("import os; os.abort()"))
        deadline = time.monotonic() + TIMEOUT
        while "is no longer the one the kernel started with" not in log.read_text() \
                or NAMED not in log.read_text():
            if "LeakSanitizer" in log.read_text():
                pytest.skip("a sanitised worker's leak report replaces its exit status")
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
        # Said by the supervisor, not only by the worker.
        assert any(NAMED in line and line.startswith("[sandpit kernel")
                   for line in log.read_text().splitlines()), log.read_text()[-2000:]
    finally:
        k.kc.stop_channels()
        k.km.shutdown_kernel(now=True)


def test_a_cell_that_exits_with_a_status_of_sandpit_is_not_named(jupyter_dir, tmp_path):
    """Once a worker has said hello, its status is its cells' (os._exit(3)):
    the log says the number only, not the sandbox's failure."""
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "kernel.log"
    name = install_spec(jupyter_dir)
    with open(log, "wb") as f:
        km = KernelManager(kernel_name=name)
        km.start_kernel(cwd=str(ws), stderr=f)
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        k = Kernel(km, kc)
        k.shell_reply(kc.execute("import os; os._exit(3)"))
        deadline = time.monotonic() + TIMEOUT
        while "exited with status 3" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
        assert "WORKER_EXIT_SANDBOX" not in log.read_text()
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
