"""The kernel keeps serving whatever a client or a cell does: interrupts,
crashes of the worker, messages that are malformed or badly signed, unknown
requests, restarts and shutdown."""

import glob
import os
import signal
import time

import pytest
from jupyter_client.session import Session

from sandpit_testing import install_spec, private_base, raw_socket, start, stop, stdout_of


def test_interrupt_keeps_globals(fresh_kernel):
    k = fresh_kernel
    k.run("x = 5")
    # Interrupted once it says it is in its loop, however long it took to get there.
    msg_id = k.kc.execute("print('looping', flush=True)\nwhile True:\n    pass")
    k.wait_for_line(msg_id, "looping")
    k.km.interrupt_kernel()
    reply = k.shell_reply(msg_id, timeout=10)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    k.iopub_until_idle(msg_id)
    assert k.value("x") == "5"


def test_interrupt_sleep_and_signal_mode(jupyter_dir, tmp_path):
    """interrupt_mode "signal": jupyter_client sends SIGINT to the kernel's process
    group; the supervisor forwards it once, and the globals survive."""
    name = install_spec(jupyter_dir, "--interrupt-mode", "signal")
    k = start(name, cwd=str(tmp_path))
    try:
        assert k.km.kernel_spec.interrupt_mode == "signal"
        k.run("y = 'still here'")
        for _ in range(2):
            msg_id = k.kc.execute("import time\nprint('sleeping', flush=True)\n"
                                  "time.sleep(30)")
            k.wait_for_line(msg_id, "sleeping")
            k.km.interrupt_kernel()
            reply = k.shell_reply(msg_id, timeout=10)
            assert reply["content"]["ename"] == "KeyboardInterrupt"
            k.iopub_until_idle(msg_id)
        assert k.value("y") == "'still here'"
        # an interrupt while idle changes nothing
        k.km.interrupt_kernel()
        time.sleep(0.2)
        assert k.run("print(y)") == "still here\n"
    finally:
        stop(k)


# One call into compiled code that holds SIGINT off until it returns, as a long
# numpy call does, and costs no CPU: ppoll with SIGINT in its signal mask, until
# a byte comes on the FIFO that the test writes (or 120 s pass).
C_CALL = """
import ctypes, os, signal
class _Poll(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("events", ctypes.c_short), ("revents", ctypes.c_short)]
class _Time(ctypes.Structure):
    _fields_ = [("sec", ctypes.c_long), ("nsec", ctypes.c_long)]
def c_call(path):
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    mask = (ctypes.c_ulong * 16)()
    mask[0] = 1 << (signal.SIGINT - 1)
    print("in the C call", flush=True)
    ctypes.CDLL("libc.so.6").ppoll(ctypes.byref(_Poll(fd, 1, 0)), 1,
                                   ctypes.byref(_Time(120, 0)), mask)
"""


def told_still_running(k, msg_id):
    """Waits for the line that says the cell has not stopped since the
    interrupt; returns it."""
    while True:
        m = k.next_iopub(msg_id)
        assert m["msg_type"] in ("stream", "status"), m
        if m["msg_type"] == "stream" and "has not stopped" in m["content"]["text"]:
            assert m["content"]["name"] == "stderr", m
            return m["content"]["text"]


def test_an_interrupt_in_a_long_c_call_keeps_the_state(fresh_kernel, tmp_path):
    """No time limit: a cell inside a call to compiled code when interrupted is
    told so on stderr after the grace period, and keeps running; it ends with
    KeyboardInterrupt when the call returns, and the variables survive."""
    k = fresh_kernel
    os.mkfifo(tmp_path / "release")
    k.run(C_CALL + "kept = 42")
    msg_id = k.kc.execute("c_call('release')")
    k.wait_for_line(msg_id, "in the C call")
    k.km.interrupt_kernel()
    line = told_still_running(k, msg_id)
    assert line.strip().count("\n") == 0, line
    assert "will stop when that call returns" in line, line
    assert "Interrupt again to restart the worker" in line, line
    # the call returns: the interrupt lands then
    fd = os.open(tmp_path / "release", os.O_WRONLY | os.O_NONBLOCK)
    os.write(fd, b"x")
    os.close(fd)
    c = k.shell_reply(msg_id)["content"]
    assert c["status"] == "error" and c["ename"] == "KeyboardInterrupt", c
    shown = [m["content"]["ename"] for m in k.iopub_until_idle(msg_id)
             if m["msg_type"] == "error"]
    assert shown == ["KeyboardInterrupt"]
    assert k.value("kept") == "42"


def test_a_second_interrupt_restarts_the_worker(fresh_kernel, tmp_path):
    """A cell that has not stopped at the first interrupt, and said so: the
    second restarts its worker, and the error says the state was lost."""
    k = fresh_kernel
    os.mkfifo(tmp_path / "release")
    k.run(C_CALL + "lost = 1")
    msg_id = k.kc.execute("c_call('release')")
    k.wait_for_line(msg_id, "in the C call")
    k.km.interrupt_kernel()
    told_still_running(k, msg_id)
    k.km.interrupt_kernel()
    c = k.shell_reply(msg_id)["content"]
    assert c["status"] == "error" and c["ename"] == "WorkerDied", c
    assert c["evalue"].startswith("Interrupted again"), c["evalue"]
    assert "restarted" in c["evalue"] and "lost" in c["evalue"], c["evalue"]
    shown = [m["content"] for m in k.iopub_until_idle(msg_id) if m["msg_type"] == "error"]
    assert [e["evalue"] for e in shown] == [c["evalue"]]
    assert k.run("print('alive')") == "alive\n"
    assert k.execute("lost")[0]["content"]["ename"] == "NameError"


@pytest.mark.parametrize("crash", [
    "import os\nos.abort()",
    "import ctypes\nctypes.string_at(0)",
    "import os\nos._exit(3)",
    "import os\nos.close(3)\nimport time\ntime.sleep(5)",
])
def test_worker_crash_is_contained(fresh_kernel, crash):
    k = fresh_kernel
    k.run("lost = 1")
    reply, out = k.execute(crash)
    c = reply["content"]
    assert c["status"] == "error"
    assert c["ename"] == "WorkerDied"
    assert "lost" in c["evalue"] and "restarted" in c["evalue"]
    # what the dying process wrote to stderr may come first; the error comes last
    assert [m["msg_type"] for m in out][-1] == "error"
    assert {m["msg_type"] for m in out} <= {"stream", "error"}
    # the kernel goes on, with a new worker and a fresh namespace
    assert k.run("print('alive')") == "alive\n"
    reply, _ = k.execute("lost")
    assert reply["content"]["ename"] == "NameError"


def test_queued_requests_survive_a_crash(fresh_kernel):
    k = fresh_kernel
    ids = [k.kc.execute("import os; os.abort()", stop_on_error=False),
           k.kc.execute("print('after')")]
    r1 = k.shell_reply(ids[0])
    r2 = k.shell_reply(ids[1])
    assert r1["content"]["ename"] == "WorkerDied"
    assert r2["content"]["status"] == "ok"
    assert stdout_of(k.iopub_until_idle(ids[1])) == "after\n"




def test_bad_signature_is_dropped(kernel):
    s = raw_socket(kernel, "shell")
    forger = Session(key=b"not-the-key", session="forger")
    forger.send(s, "execute_request", {"code": "forged = True", "silent": False})
    # the next message on the same socket is read after it: its reply comes first
    kernel.kc.session.send(s, "kernel_info_request", {})
    assert s.poll(10000)
    assert kernel.kc.session.recv(s, mode=0)[1]["msg_type"] == "kernel_info_reply"
    assert s.poll(200) == 0  # the forged request was never answered
    reply, _ = kernel.execute("'forged' in dir()")
    assert reply["content"]["status"] == "ok"
    assert kernel.value("'forged' in dir()") == "False"
    s.close()


@pytest.mark.parametrize("frames", [
    [b"<IDS|MSG>"],
    [b"no delimiter", b"x", b"{}", b"{}", b"{}", b"{}"],
    [b"<IDS|MSG>", b"", b"not json", b"{}", b"{}", b"{}"],
    [b"<IDS|MSG>", b"", b"{}", b"{}", b"{}", b"{}"],
    [b"<IDS|MSG>", b"", b'{"msg_id": "1", "msg_type": 5}', b"{}", b"{}", b"{}"],
    [b"<IDS|MSG>", b"", b'{"msg_id": "1", "msg_type": "execute_request"}', b"[]", b"{}",
     b'{"code": 1}'],
    [b"\xff" * 100],
])
def test_malformed_messages_do_not_deafen(kernel, frames):
    for channel in ("shell", "control"):
        s = raw_socket(kernel, channel)
        s.send_multipart(frames)
        s.close()
    assert kernel.run("print('still listening')") == "still listening\n"


FORGED_FRAMES = r"""
import _sandpit, json
def send(frame):
    _sandpit.send(frame if isinstance(frame, bytes) else json.dumps(frame).encode())
send(b"not JSON at all")
send({"type": "bogus"})
send({"type": "iopub", "msg_type": "execute_request", "content": {}})
send({"type": "reply", "shell": ""})
send({"type": "reply", "shell": "", "parent": "not-the-running-one",
      "content": {"status": "ok"}})
send({"type": "reply", "shell": "no-such-subshell", "content": {"status": "ok"}})
print("still running")
"""


def test_frames_forged_by_a_cell_are_dropped(kernel):
    """A cell can write to the worker's end of the link. What is not a frame the
    worker may send, or is malformed, or answers a request that its shell is not
    running, is dropped: this cell is answered once, by its own reply, after its
    output; and the kernel keeps serving."""
    reply, out = kernel.execute(FORGED_FRAMES)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "execution_count" in reply["content"]
    assert stdout_of(out) == "still running\n"
    assert [m["msg_type"] for m in out] == ["stream"]
    assert kernel.run("print(6 * 7)") == "42\n"


def test_execute_without_code_is_an_error(kernel):
    s = raw_socket(kernel, "shell")
    kernel.kc.session.send(s, "execute_request", {"silent": False})
    assert s.poll(5000)
    reply = kernel.kc.session.recv(s, mode=0)[1]
    assert reply["content"]["status"] == "error"
    s.close()


def test_unknown_request_gets_a_reply(kernel):
    s = raw_socket(kernel, "shell")
    kernel.kc.session.send(s, "frobnicate_request", {})
    assert s.poll(5000)
    reply = kernel.kc.session.recv(s, mode=0)[1]
    assert reply["msg_type"] == "frobnicate_reply"
    assert reply["content"]["status"] == "error"
    assert "frobnicate_request" in reply["content"]["evalue"]
    s.close()
    assert kernel.run("print('next')") == "next\n"


def test_input_request(fresh_kernel):
    k = fresh_kernel
    msg_id = k.kc.execute("name = input('Who? ')\nprint('hello', name)", allow_stdin=True)
    req = k.kc.get_stdin_msg(timeout=10)
    assert req["msg_type"] == "input_request"
    assert req["content"] == {"prompt": "Who? ", "password": False}
    assert req["parent_header"]["msg_id"] == msg_id
    k.kc.input("Ada")
    reply = k.shell_reply(msg_id)
    assert reply["content"]["status"] == "ok"
    assert stdout_of(k.iopub_until_idle(msg_id)) == "hello Ada\n"
    # without allow_stdin, input() fails at once with a clear error
    reply, _ = k.execute("input('x')", allow_stdin=False)
    assert reply["content"]["ename"] == "StdinNotImplementedError"
    assert "allow_stdin" in reply["content"]["evalue"]


def test_getpass_asks_for_a_password(fresh_kernel):
    k = fresh_kernel
    msg_id = k.kc.execute("import getpass\nsecret = getpass.getpass('Key: ')\n"
                          "print(len(secret))", allow_stdin=True)
    req = k.kc.get_stdin_msg(timeout=10)
    assert req["content"] == {"prompt": "Key: ", "password": True}
    k.kc.input("hunter2")
    assert k.shell_reply(msg_id)["content"]["status"] == "ok"
    assert stdout_of(k.iopub_until_idle(msg_id)) == "7\n"


def test_interrupt_while_waiting_for_input(fresh_kernel):
    k = fresh_kernel
    k.run("z = 3")
    msg_id = k.kc.execute("input('never answered')", allow_stdin=True)
    k.kc.get_stdin_msg(timeout=10)
    k.km.interrupt_kernel()
    reply = k.shell_reply(msg_id)
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    k.iopub_until_idle(msg_id)
    assert k.value("z") == "3"


def test_restart_in_place(fresh_kernel):
    """The restart that sandpit's own clients ask for, with metadata: the
    worker is replaced inside the same kernel process."""
    k = fresh_kernel
    k.run("before = 1")
    r, _ = k.execute("2")
    assert r["content"]["execution_count"] >= 2
    h = k.request("history", hist_access_type="range", session=0, output=False, raw=True)
    first = h["content"]["history"][0][0]
    msg = k.kc.session.msg("shutdown_request", {"restart": True},
                           metadata={"sandpit": {"in_place": True}})
    k.kc.control_channel.send(msg)
    reply = k.kc.get_control_msg(timeout=10)
    assert reply["content"] == {"status": "ok", "restart": True}
    # the same kernel process answers, with a fresh worker and count
    assert k.km.is_alive()
    reply, _ = k.execute("before")
    assert reply["content"]["ename"] == "NameError"
    assert reply["content"]["execution_count"] == 1
    # history survived, and the new session is the next one
    h = k.request("history", hist_access_type="range", session=first, output=False,
                  raw=True)
    assert [e[2] for e in h["content"]["history"]] == ["before = 1", "2"]
    h = k.request("history", hist_access_type="range", session=0, output=False, raw=True)
    assert [e[2] for e in h["content"]["history"]] == ["before"]
    assert h["content"]["history"][0][0] > first


def test_shutdown_exits_cleanly(jupyter_dir, tmp_path):
    k = start("sandpit", cwd=str(tmp_path))
    pid = k.km.provisioner.process.pid
    k.run("open('made-by-cell.txt', 'w').write('x')")
    mine = glob.glob(os.path.join(private_base(), "sandpit-%d-*" % pid))
    assert len(mine) == 1  # the kernel's private temporary folder
    k.kc.shutdown()
    deadline = time.monotonic() + 10
    while k.km.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not k.km.is_alive()
    assert k.km.provisioner.process.returncode == 0
    # it removed its private temporary folder, and nothing it did not make
    assert (tmp_path / "made-by-cell.txt").exists()
    assert not os.path.exists(mine[0])
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    k.kc.stop_channels()
    k.km.cleanup_resources()


def test_sigterm_exits(jupyter_dir, tmp_path):
    k = start("sandpit", cwd=str(tmp_path))
    proc = k.km.provisioner.process
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0
    k.kc.stop_channels()
    k.km.cleanup_resources()


def test_kernel_ends_when_its_client_dies(jupyter_dir, tmp_path):
    """A client killed without shutting its kernel down (a crashed notebook
    server, a console in a closed terminal) must not leave the kernel running."""
    import subprocess
    import sys
    script = ("import sys, time\n"
              "from jupyter_client.manager import KernelManager\n"
              "km = KernelManager(kernel_name='sandpit')\n"
              "km.start_kernel(cwd=sys.argv[1])\n"
              "kc = km.client(); kc.start_channels(); kc.wait_for_ready(timeout=30)\n"
              "print(km.provisioner.process.pid, flush=True)\n"
              "time.sleep(60)\n")
    client = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    try:
        kernel_pid = int(client.stdout.readline())
        os.kill(kernel_pid, 0)  # running
        client.kill()
        client.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                os.kill(kernel_pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.1)
        with pytest.raises(ProcessLookupError):
            os.kill(kernel_pid, 0)
    finally:
        client.kill()


def test_taken_port_is_named(tmp_path):
    """A port the client picked may be taken by the time the kernel binds it:
    the kernel says which, and exits."""
    import json
    import socket
    import subprocess
    from sandpit_testing import SANDPIT
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    port = taken.getsockname()[1]
    free = []
    for _ in range(4):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        free.append(s)
    ports = [s.getsockname()[1] for s in free]
    for s in free:
        s.close()
    conn = {"shell_port": ports[0], "iopub_port": ports[1], "stdin_port": ports[2],
            "control_port": port, "hb_port": ports[3], "ip": "127.0.0.1", "key": "k",
            "transport": "tcp", "signature_scheme": "hmac-sha256"}
    path = tmp_path / "kernel.json"
    path.write_text(json.dumps(conn))
    proc = subprocess.run([SANDPIT, "kernel", "-f", str(path)], capture_output=True,
                          text=True, timeout=30, cwd=str(tmp_path))
    taken.close()
    assert proc.returncode != 0
    assert "control port %d" % port in proc.stderr
    assert proc.stdout == ""


def test_bad_connection_file_is_explained(tmp_path):
    import subprocess
    from sandpit_testing import SANDPIT
    path = tmp_path / "kernel.json"
    path.write_text('{"shell_port": 1}')
    proc = subprocess.run([SANDPIT, "kernel", "-f", str(path)], capture_output=True,
                          text=True, timeout=30)
    assert proc.returncode != 0 and "connection file has no" in proc.stderr
    proc = subprocess.run([SANDPIT, "kernel", "-f", str(tmp_path / "missing.json")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and "missing.json" in proc.stderr


def test_folders_left_by_killed_kernels_are_removed(jupyter_dir, tmp_path):
    """A kernel killed outright cannot remove its private temporary folder; the
    next kernel removes those whose process is gone (and only those)."""
    import subprocess
    import sys
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    base = private_base()
    os.makedirs(base, mode=0o700, exist_ok=True)
    stale = os.path.join(base, "sandpit-%d-test%s" % (dead.pid, os.urandom(3).hex()))
    alive = os.path.join(base, "sandpit-%d-test%s" % (os.getpid(), os.urandom(3).hex()))
    for d in (stale, alive):
        os.makedirs(os.path.join(d, "matplotlib"))
    try:
        k = start("sandpit", cwd=str(tmp_path))
        stop(k)
        assert not os.path.exists(stale)
        assert os.path.exists(alive)
    finally:
        import shutil
        shutil.rmtree(stale, ignore_errors=True)
        shutil.rmtree(alive, ignore_errors=True)
