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
import struct
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


# The pipes a cell could write to: only its own stdout and stderr.
PIPES_HELD = r"""
import fcntl, os, stat
held = []
for name in os.listdir("/proc/self/fd"):
    try:
        fd = int(name)
        if (stat.S_ISFIFO(os.fstat(fd).st_mode)
                and fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY):
            held.append(fd)
    except OSError:
        pass
print(sorted(held))
"""


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
        # Workers forked from the template (from the third) hold no log pipe either.
        for _ in range(3):
            k.execute("import os; os._exit(1)")
            assert k.run(PIPES_HELD) == "[1, 2]\n"
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
    """The worker's own lines still reach the log once cells run (over the link),
    and nothing the worker sends makes a line that looks like the kernel's: a
    newline in a log frame, in the kind of a frame dropped, in _sandpit.log."""
    log_path = tmp_path / "kernel.log"
    k = start_logged(jupyter_dir, tmp_path, log_path)
    forged = "\n[sandpit kernel 00:00:00.000 error] forged"
    try:
        k.run("import _sandpit, json\n"
              "_sandpit.log(1, 'a line from the worker, after the lock')\n"
              "_sandpit.log(1, %r)\n"
              "_sandpit.send(json.dumps({'type': 'log', 'text': %r}).encode())\n"
              "_sandpit.send(json.dumps({'type': %r}).encode())\n"
              % (forged, forged, forged))
    finally:
        stop(k)
    text = log_path.read_text(errors="replace")
    assert re.search(r"worker\| \[sandpit worker .* warning\] a line from the worker, "
                     r"after the lock", text), text[-2000:]
    assert text.count("[sandpit kernel 00:00:00.000 error]") == 3, text[-2000:]
    assert not re.search(r"^\[sandpit kernel 00:00:00.000", text, re.M), text[-2000:]


def vm_rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) >> 10
    return 0


def flood_shell(k, size, seconds, conns=4):
    """Clients without the key send unsigned messages of size bytes on shell
    from conns connections for a bounded time; returns the supervisor's peak
    VmRSS in MiB."""
    import zmq
    pid = k.km.provisioner.process.pid
    info = k.km.get_connection_info()
    ctx = zmq.Context()
    socks = []
    for _ in range(conns):
        s = ctx.socket(zmq.DEALER)
        s.linger = 0
        s.sndhwm = 1000
        s.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
        socks.append(s)
    big = b"x" * size
    peak = 0
    deadline = time.monotonic() + seconds
    for _ in range(100000):
        if time.monotonic() > deadline:
            break
        for s in socks:
            try:
                # A signature of the right form, so that it is checked in full.
                s.send_multipart([b"<IDS|MSG>", b"0" * 64, b"{}", b"{}", b"{}", big],
                                 zmq.NOBLOCK)
            except zmq.Again:
                pass
        time.sleep(0.02)
        peak = max(peak, vm_rss_mib(pid))
    for s in socks:
        s.close()
    ctx.term()
    return peak


def test_a_client_without_the_key_cannot_grow_the_supervisor(jupyter_dir, tmp_path):
    """Unsigned messages of 64 MiB (over the default --max-message, refused as
    their first frame comes) and of 24 MiB (under it, refused at their
    signature), from four connections: the supervisor's memory stays bounded (it
    reached 4.8 GB in 20 s when ZeroMQ kept a thousand per connection), and the
    kernel answers its real client throughout."""
    from sandpit_testing import start
    k = start("sandpit", cwd=str(tmp_path))
    try:
        assert k.run("x = 1\nprint('before')") == "before\n"
        over = flood_shell(k, 64 << 20, 8)
        assert k.run("print(x + 1)") == "2\n"
        under = flood_shell(k, 24 << 20, 8)
        assert k.run("print(x + 2)") == "3\n"
    finally:
        stop(k)
    assert over < 256, "64 MiB messages took the supervisor to %d MiB" % over
    assert under < 512, "24 MiB messages took the supervisor to %d MiB" % under


def sandpit(*args, **kwargs):
    return subprocess.run([SANDPIT, *args], capture_output=True, text=True,
                          timeout=TIMEOUT * 2, **kwargs)


@pytest.fixture
def started(tmp_path):
    """A kernel that `sandpit start` launched for a workspace of its own (network
    off): (workspace, connection file's path)."""
    ws = tmp_path / "started"
    ws.mkdir()
    p = sandpit("start", "--workspace", str(ws))
    assert p.returncode == 0, p.stderr
    conn = p.stdout.strip().splitlines()[-1]
    yield ws, conn
    sandpit("stop", "--workspace", str(ws))


def test_sandpit_start_listens_on_ipc_in_a_private_folder(started):
    """`sandpit start` writes an ipc connection file whose sockets are in a
    folder of mode 0700; `sandpit run` and jupyter_client use it, and `sandpit
    stop` removes the folder."""
    ws, conn = started
    with open(conn) as f:
        info = json.load(f)
    assert info["transport"] == "ipc", info
    folder = os.path.dirname(info["ip"])
    st = os.lstat(folder)
    assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700, oct(st.st_mode)
    assert os.path.dirname(folder) == os.path.dirname(conn)
    for ch in ("shell", "iopub", "stdin", "control", "hb"):
        path = "%s-%d" % (info["ip"], info["%s_port" % ch])
        assert stat.S_ISSOCK(os.stat(path).st_mode), path
    p = sandpit("run", "print(6 * 7)", "--workspace", str(ws))
    assert p.returncode == 0 and p.stdout.strip() == "42", (p.stdout, p.stderr)
    from jupyter_client import BlockingKernelClient
    kc = BlockingKernelClient(connection_file=conn)
    kc.load_connection_file()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        reply = kc.execute_interactive("print(1 + 1)", timeout=TIMEOUT)
        assert reply["content"]["status"] == "ok", reply["content"]
    finally:
        kc.stop_channels()
    assert sandpit("stop", "--workspace", str(ws)).returncode == 0
    assert not os.path.exists(folder)
    assert not os.path.exists(conn)


# A ZeroMQ SUB socket by hand (ZMTP 3.0, NULL mechanism), as code in a cell can
# write one: it connects to an iopub endpoint, subscribes to everything and says
# what it read.
ZMTP_SUB = r"""
import socket, struct
def zmtp_sub(transport, ip, port):
    try:
        if transport == "ipc":
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            addr = "%s-%d" % (ip, port)
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            addr = (ip, port)
        s.settimeout(5)
        s.connect(addr)
    except OSError as e:
        return "cannot connect: %s" % e
    s.sendall(b"\xff" + b"\0" * 8 + b"\x7f\x03\x00" + b"NULL".ljust(20, b"\0")
              + b"\0" * 32)
    body = b"\x05READY\x0bSocket-Type" + struct.pack(">I", 3) + b"SUB"
    s.sendall(bytes([4, len(body)]) + body + b"\x00\x01\x01")
    got = b""
    try:
        while len(got) < 64 + 200:
            chunk = s.recv(65536)
            if not chunk:
                break
            got += chunk
    except OSError:
        pass
    return "read %d bytes" % len(got) if len(got) > 64 + 40 else "read nothing"
"""


def test_a_network_on_kernel_cannot_read_a_started_kernels_iopub(started, jupyter_dir,
                                                                tmp_path):
    """A cell of a --network on kernel, told where a network-off `sandpit start`
    kernel's iopub is, cannot subscribe to it: the socket is in the runtime
    folder, which every worker has hidden (over TCP 127.0.0.1 it read the other
    kernel's cells and outputs). Its seccomp filter refuses AF_UNIX sockets
    too, and the folder is hidden whatever the filter allows."""
    from sandpit_testing import start
    ws, conn = started
    with open(conn) as f:
        info = json.load(f)
    name = install_spec(jupyter_dir, "--network", "on")
    other = tmp_path / "other"
    other.mkdir()
    k = start(name, cwd=str(other))
    try:
        layers = k.request("kernel_info")["content"]["sandpit"]["layers"]
        state = {l["name"]: l["state"] for l in layers}
        if state.get("mount-namespace") != "active":
            pytest.skip("no mount namespace here: nothing can be hidden from a cell")
        out = k.run(ZMTP_SUB + "print(zmtp_sub(%r, %r, %d))"
                    % (info["transport"], info["ip"], info["iopub_port"]))
    finally:
        stop(k)
    assert not out.startswith("read "), out
    assert out.startswith("cannot connect"), out


def test_jupyter_client_s_ipc_transport_works(jupyter_dir, tmp_path):
    """The README's way to choose ipc where Jupyter starts the kernel:
    KernelManager(transport="ipc") with a prefix in the runtime folder; the
    kernel answers there."""
    import uuid
    from jupyter_client.manager import KernelManager
    from jupyter_core.paths import jupyter_runtime_dir
    from sandpit_testing import Kernel
    os.makedirs(jupyter_runtime_dir(), mode=0o700, exist_ok=True)
    km = KernelManager(kernel_name="sandpit", transport="ipc",
                       ip=os.path.join(jupyter_runtime_dir(), "kernel-" + uuid.uuid4().hex))
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    k = Kernel(km, kc)
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        info = km.get_connection_info()
        assert info["transport"] == "ipc"
        sock = "%s-%d" % (info["ip"], info["iopub_port"])
        assert stat.S_ISSOCK(os.stat(sock).st_mode)
        assert os.path.dirname(sock) == jupyter_runtime_dir()
        assert k.run("print(6 * 7)") == "42\n"
    finally:
        stop(k)


def test_the_heartbeat_does_not_hold_echoes_for_a_client_that_does_not_read(
        jupyter_dir, tmp_path):
    """The heartbeat echoes what it is sent, to anyone: a client without the key
    that sends 16 MiB frames and never reads the echoes took the supervisor to
    3 GB in 10 s. Pings are small, and few echoes are kept: the supervisor stays
    small, and the real client's heartbeat still beats."""
    import zmq
    from sandpit_testing import start
    k = start("sandpit", cwd=str(tmp_path))
    ctx = zmq.Context()
    try:
        pid = k.km.provisioner.process.pid
        info = k.km.get_connection_info()
        peak = 0
        for size in (16 << 20, 4000):
            s = ctx.socket(zmq.DEALER)
            s.linger = 0
            s.rcvhwm = 1
            s.setsockopt(zmq.RCVBUF, 4096)
            s.connect("%s://%s:%d" % (info["transport"], info["ip"], info["hb_port"]))
            big = b"x" * size
            deadline = time.monotonic() + 5
            for _ in range(5000):
                if time.monotonic() > deadline or peak > 2048:
                    break
                try:
                    s.send(big, zmq.NOBLOCK)
                except zmq.Again:
                    pass
                time.sleep(0.005)
                peak = max(peak, vm_rss_mib(pid))
            s.close()
        assert k.run("print(6 * 7)") == "42\n"
        assert k.kc.hb_channel.is_beating()
    finally:
        ctx.term()
        stop(k)
    assert peak < 256, "the heartbeat took the supervisor to %d MiB" % peak


def zmtp_subscriber(host, port):
    """A SUB peer by hand (ZMTP 3.0, NULL mechanism) on a plain socket that
    reads nothing: pyzmq's own XSUB keeps each topic it sends in a trie of its
    own, one level a byte, which a 1 MiB topic overflows."""
    s = socket.create_connection((host, port), timeout=5)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    s.sendall(b"\xff" + b"\0" * 8 + b"\x7f\x03\x00" + b"NULL".ljust(20, b"\0")
              + b"\0" * 32)
    body = b"\x05READY\x0bSocket-Type" + struct.pack(">I", 3) + b"SUB"
    s.sendall(bytes([4, len(body)]) + body)
    s.setblocking(False)
    return s


def subscribe(s, topic):
    """Sends one subscription frame; False when the socket would block."""
    body = b"\x01" + topic
    frame = (bytes([0, len(body)]) if len(body) < 256
             else b"\x02" + struct.pack(">Q", len(body))) + body
    try:
        s.sendall(frame)
        return True
    except (BlockingIOError, OSError):
        return False


def test_subscriptions_without_the_key_cannot_grow_the_supervisor(jupyter_dir, tmp_path):
    """Anyone can subscribe to iopub. Subscriptions of 1 MiB topics, each one
    published back in an iopub_welcome to every subscriber, took the supervisor
    to 2.5 GB in a few seconds; 3,000 small ones flooded the real client with
    welcomes. Topics are small, ZeroMQ keeps none of them (every subscriber gets
    everything), and welcomes are limited: the supervisor stays small and the
    kernel answers."""
    from sandpit_testing import start
    k = start("sandpit", cwd=str(tmp_path))
    try:
        pid = k.km.provisioner.process.pid
        info = k.km.get_connection_info()
        peak = 0
        for size in (1 << 20, 0):
            s = zmtp_subscriber(info["ip"], info["iopub_port"])
            deadline = time.monotonic() + 4
            for i in range(3000):
                if time.monotonic() > deadline or peak > 2048:
                    break
                if not subscribe(s, b"%d" % i + b"a" * size):
                    time.sleep(0.01)
                peak = max(peak, vm_rss_mib(pid))
            s.close()
        k.drain_iopub(0.5)
        assert k.run("print(6 * 7)") == "42\n"
    finally:
        stop(k)
    assert peak < 256, "subscriptions took the supervisor to %d MiB" % peak


def test_the_kernel_s_own_messages_cannot_be_replayed_to_it(jupyter_dir, tmp_path):
    """On TCP, anyone reads iopub, where the kernel's messages come signed with
    the key. A comm_msg the kernel published, sent back to its shell port as it
    was, passed for the front end's: the cell's comm handler ran on it. A
    message in the kernel's own session is refused."""
    import zmq
    from sandpit_testing import start
    k = start("sandpit", cwd=str(tmp_path))
    ctx = zmq.Context()
    try:
        info = k.km.get_connection_info()
        sub = ctx.socket(zmq.SUB)
        sub.linger = 0
        sub.setsockopt(zmq.SUBSCRIBE, b"")
        sub.connect("%s://%s:%d" % (info["transport"], info["ip"], info["iopub_port"]))
        time.sleep(0.5)  # the subscription reaches the kernel
        k.run("import comm\n"
              "hits = []\n"
              "c = comm.create_comm(target_name='t')\n"
              "c.on_msg(lambda m: hits.append(m['content']['data']))\n"
              "c.send({'x': 1})\n")
        captured = None
        deadline = time.monotonic() + TIMEOUT
        while captured is None and time.monotonic() < deadline:
            if not sub.poll(1000):
                continue
            frames = sub.recv_multipart()
            i = frames.index(b"<IDS|MSG>")
            if json.loads(frames[i + 2]).get("msg_type") == "comm_msg":
                captured = frames[i:]
        assert captured, "no comm_msg seen on iopub"
        dealer = ctx.socket(zmq.DEALER)
        dealer.linger = 0
        dealer.connect("%s://%s:%d" % (info["transport"], info["ip"], info["shell_port"]))
        dealer.send_multipart(captured)
        time.sleep(1)
        hits = k.value("hits")
        dealer.close()
        sub.close()
    finally:
        ctx.term()
        stop(k)
    assert hits == "[]", "a replayed message of the kernel's ran the comm handler: " + hits


def test_sandpit_mcp_listens_on_ipc_in_a_private_folder(jupyter_dir, tmp_path):
    """`sandpit mcp`'s kernel listens on ipc sockets in a folder of mode 0700
    beside its private connection file; both go when the server ends."""
    proc = subprocess.Popen([SANDPIT, "mcp", "--workspace", str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        for msg in ({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                     "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                                "clientInfo": {"name": "t", "version": "0"}}},
                    {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "python_exec",
                                "arguments": {"code": "print(6 * 7)"}}}):
            proc.stdin.write(json.dumps(msg) + "\n")
            proc.stdin.flush()
            reply = json.loads(proc.stdout.readline())
            assert "result" in reply, reply
        assert "42" in json.dumps(reply["result"])
        conn = os.path.join(os.environ["JUPYTER_RUNTIME_DIR"],
                            "sandpit-mcp-%d.json" % proc.pid)
        with open(conn) as f:
            info = json.load(f)
        assert info["transport"] == "ipc", info
        folder = os.path.dirname(info["ip"])
        assert stat.S_IMODE(os.lstat(folder).st_mode) == 0o700
        assert stat.S_ISSOCK(os.stat("%s-%d" % (info["ip"], info["iopub_port"])).st_mode)
    finally:
        proc.stdin.close()
        assert proc.wait(timeout=TIMEOUT) == 0
        proc.stdout.close()
    assert not os.path.exists(conn) and not os.path.exists(folder)
