"""What a platform's monitoring reads from a kernel: how many cells it ran,
how many requests reached their time limit, how many workers ended out of
memory and how many were started again, in kernel_info_reply's sandpit
section and in `sandpit status --json` (and its text)."""

import json
import subprocess

import pytest

from sandpit_testing import SANDPIT

LIMIT = 90


def sandpit(*args, cwd, check=None):
    p = subprocess.run([SANDPIT, *args], cwd=str(cwd), capture_output=True, text=True,
                       timeout=LIMIT)
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


@pytest.fixture
def ws(jupyter_dir, tmp_path):
    w = tmp_path / "ws"
    w.mkdir()
    yield w
    sandpit("stop", cwd=w)


def counts(ws):
    return json.loads(sandpit("status", "--json", cwd=ws, check=0).stdout)["counts"]


def test_status_counts_cells_timeouts_and_restarts(ws):
    sandpit("start", "--timeout", "2", cwd=ws, check=0)
    assert counts(ws) == {"cells": 0, "timeouts": 0, "out_of_memory": 0,
                          "worker_restarts": 0}
    sandpit("run", "x = 1", cwd=ws, check=0)
    sandpit("run", "import time\ntime.sleep(30)", cwd=ws, check=1)
    c = counts(ws)
    assert (c["cells"], c["timeouts"], c["worker_restarts"]) == (2, 1, 0), c
    # A worker that dies is started again, once.
    sandpit("run", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)", cwd=ws)
    sandpit("run", "print('again')", cwd=ws, check=0)
    c = counts(ws)
    assert (c["cells"], c["timeouts"], c["worker_restarts"]) == (4, 1, 1), c
    assert c["out_of_memory"] == 0
    # A cell that does not stop when interrupted at its limit: one timeout, and
    # its worker restarted, counted once.
    sandpit("run", "import time\nwhile True:\n    try:\n        time.sleep(10)\n"
            "    except KeyboardInterrupt:\n        pass", cwd=ws, check=1)
    c = counts(ws)
    assert (c["cells"], c["timeouts"], c["worker_restarts"]) == (5, 2, 2), c
    text = sandpit("status", cwd=ws, check=0).stdout
    assert "counts: 5 cells, 2 timed out, 0 out of memory, 2 worker restarts" in text, text


def test_kernel_info_has_the_counts(kernel):
    kernel.run("y = 2")
    kernel.kc.kernel_info()
    reply = kernel.kc.get_shell_msg(timeout=LIMIT)
    c = reply["content"]["sandpit"]["counts"]
    assert set(c) == {"cells", "timeouts", "out_of_memory", "worker_restarts"}
    assert c["cells"] >= 1 and all(type(v) is int for v in c.values())


def test_a_worker_ended_by_its_memory_limit_is_counted(ws):
    """Where the machine gives the worker a memory cgroup, shared memory past
    the limit ends the worker: one out_of_memory, one restart. Elsewhere the
    mapping is refused or raises MemoryError, and nothing is counted."""
    sandpit("start", "--memory", "256", cwd=ws, check=0)
    code = ("import mmap\nchunk = b'x' * (1 << 20)\nm = mmap.mmap(-1, 512 << 20)\n"
            "for off in range(0, 512 << 20, 1 << 20):\n    m[off:off + (1 << 20)] = chunk\n")
    p = sandpit("run", "--json", code, cwd=ws)
    out = json.loads(p.stdout)
    killed = bool(out.get("error")) and "ran out of memory" in out["error"]["evalue"]
    c = counts(ws)
    assert c["out_of_memory"] == (1 if killed else 0), (c, out.get("error"))
    assert c["worker_restarts"] == (1 if killed else 0), c
    if not killed:
        pytest.skip("no memory cgroup here: the worker was not ended (%s)"
                    % (out.get("error") or {}).get("ename"))
