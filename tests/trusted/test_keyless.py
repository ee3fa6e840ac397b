"""The kernel's log and its sockets against the worker and a client without the
key (issue 27, findings 11 and 15).

The log: a cell could write without end to the kernel's log (the worker's log
pipe was open to it), past --max-file, and every frame the supervisor dropped
was logged, once each. Now the pipe is closed before cells run, the worker's
lines come over the link, and what the worker can make the kernel log, and what
it logs of frames it drops, is bounded per minute and per kernel.

The sockets: a client without the key could send large messages that the
supervisor kept (ZeroMQ queued a thousand per peer), and read any kernel's
iopub over TCP. Now ZeroMQ keeps a few per peer, nothing of a badly signed
message is copied, --max-message is lower, and the kernels that sandpit starts
itself (`sandpit start`, `sandpit mcp`) listen on ipc sockets in a folder of
mode 0700 that every worker has hidden.
"""

import json
import os
import re
import socket
import stat
import subprocess
import time

import pytest

from sandpit_testing import SANDPIT, TIMEOUT, install_spec, stdout_of

FLOOD = 200 << 20  # bytes a cell tries to put in the log, each way


def start_logged(jupyter_dir, cwd, log_path, *options):
    """A kernel from a kernelspec with these options whose stderr (its log, as
    Jupyter keeps it) goes to log_path."""
    from jupyter_client.manager import KernelManager
    from sandpit_testing import Kernel
    name = install_spec(jupyter_dir, *options)
    log = open(log_path, "wb")
    km = KernelManager(kernel_name=name)
    km.start_kernel(cwd=str(cwd), stderr=log)
    log.close()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    return Kernel(km, kc)


def stop(k):
    k.kc.stop_channels()
    k.km.shutdown_kernel(now=True)


# Writes FLOOD bytes of lines to every pipe the cell holds (the log's, if it
# can find it, and fd 2 itself), and says which descriptors it wrote to.
WRITE_EVERYWHERE = r"""
import fcntl, os, stat
line = b"L" * 1023 + b"\n"
chunk = line * 64
wrote = []
for name in sorted(os.listdir("/proc/self/fd"), key=int):
    fd = int(name)
    if fd in (0, 1, 3):
        continue
    try:
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            continue
        if fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_WRONLY:
            continue
        os.set_blocking(fd, True)
        sent = 0
        while sent < %d:
            sent += os.write(fd, chunk)
        wrote.append(fd)
    except OSError:
        pass
open("wrote.txt", "w").write(repr(wrote))
""" % FLOOD


def test_the_log_stays_bounded(jupyter_dir, tmp_path):
    """A cell writes 200 MiB to every pipe it holds (the log's and fd 2), forges
    100,000 frames the supervisor drops and 100,000 "log" frames, with
    --max-file 1: the kernel's log stays a few hundred kB, says that lines were
    dropped, and the kernel answers."""
    log_path = tmp_path / "kernel.log"
    k = start_logged(jupyter_dir, tmp_path, log_path, "--max-file", "1",
                     "--max-output", "10000")
    try:
        reply, outputs = k.execute(WRITE_EVERYWHERE, timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        reply, _ = k.execute(
            "import _sandpit, json\n"
            "for i in range(100000):\n"
            "    _sandpit.send(json.dumps({'type': 'no such kind', 'n': i}).encode())\n"
            "for i in range(100000):\n"
            "    _sandpit.send(json.dumps({'type': 'log', 'text': 'F' * 1000}).encode())\n",
            timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        assert k.run("print(6 * 7)") == "42\n"
    finally:
        stop(k)
    size = os.path.getsize(log_path)
    text = log_path.read_text(errors="replace")
    assert size < 400 << 10, "the kernel's log grew to %d bytes" % size
    assert "are dropped, and counted" in text, text[-2000:]
    # fd 2 is the cell's own stderr (capped as output); no other pipe is left.
    wrote = (tmp_path / "wrote.txt").read_text()
    assert wrote == "[2]", wrote


def test_the_worker_still_logs(jupyter_dir, tmp_path):
    """The worker's own lines still reach the log once cells run (over the link):
    a comm for a target nobody registered is logged as a warning."""
    log_path = tmp_path / "kernel.log"
    k = start_logged(jupyter_dir, tmp_path, log_path)
    try:
        k.run("import _sandpit\n_sandpit.log(1, 'a line from the worker, after the lock')")
    finally:
        stop(k)
    text = log_path.read_text(errors="replace")
    assert re.search(r"worker\| \[sandpit worker .* warning\] a line from the worker, "
                     r"after the lock", text), text[-2000:]
