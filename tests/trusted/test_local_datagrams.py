"""Local sockets of the host stay out of a cell's reach (issue 27, finding 3).

A network namespace does not separate AF_UNIX sockets that have a path: they
are found through the file system, and Landlock does not govern connecting to
one. A cell that made a datagram pair (socketpair(AF_UNIX, SOCK_DGRAM)) could
send to any such socket by path (sendto, or connect after connect(AF_UNSPEC)),
or bind a half to a path, and reach /dev/log, journald, systemd's notify
socket, or a --network on kernel of another workspace. What must hold, with the
network off and on alike: no datagram or seqpacket pairs; with the network off,
no connect, bind, or sendto/sendmsg with an address, whatever the family.

Each case runs in a real kernel through jupyter_client, against real host
sockets that listen in a folder outside the workspace, and checks that nothing
arrives. The calls go through ctypes, under sandpit's audit hook, so that what
answers is the Linux kernel's filter.
"""

import json
import os
import socket

import pytest

from sandpit_testing import install_spec, start, stop

EPERM = 1
EISCONN = 106

ATTACK = r"""
import ctypes, ctypes.util, json, os, socket
_libc = ctypes.CDLL(None, use_errno=True)
def _addr(path):
    raw = path.encode()
    return ctypes.create_string_buffer(b"\x01\x00" + raw + b"\x00", 2 + len(raw) + 1)
def _call(name, *args):
    ctypes.set_errno(0)
    r = getattr(_libc, name)(*args)
    return [r, ctypes.get_errno()]
class _iov(ctypes.Structure):
    _fields_ = [("base", ctypes.c_void_p), ("len", ctypes.c_size_t)]
class _msghdr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_void_p), ("namelen", ctypes.c_uint),
                ("iov", ctypes.POINTER(_iov)), ("iovlen", ctypes.c_size_t),
                ("control", ctypes.c_void_p), ("controllen", ctypes.c_size_t),
                ("flags", ctypes.c_int)]
_out = {}
_targets = %(targets)r
_bound = %(bound)r
for _kind, _type in (("dgram", 2), ("seqpacket", 5), ("raw", 3),
                     ("dgram-cloexec", 2 | 0o2000000), ("dgram-nonblock", 2 | 0o4000)):
    _sv = (ctypes.c_int * 2)(-1, -1)
    _out["socketpair-" + _kind] = _call("socketpair", 1, _type, 0, _sv)
    for _t in _targets:
        if _sv[0] >= 0:
            _a = _addr(_t)
            _call("sendto", _sv[0], b"dgram-sendto", 12, 0, _a, len(_a))
            _unspec = ctypes.create_string_buffer(16)
            _call("connect", _sv[0], _unspec, 16)
            _call("connect", _sv[0], _a, len(_a))
            _call("send", _sv[0], b"dgram-connected", 15, 0)
    if _sv[1] >= 0:
        _a = _addr(_bound + "-" + _kind)
        _call("bind", _sv[1], _a, len(_a))
# the high half of an int argument: the kernel ignores it, the filter must not be fooled
_nr = {"x86_64": 53, "aarch64": 199}.get(__import__("platform").machine())
if _nr:
    _sv = (ctypes.c_int * 2)(-1, -1)
    _libc.syscall.restype = ctypes.c_long
    for _kind, _fam, _type in (("hi-type", 1, (1 << 32) | 2),
                               ("hi-family", (1 << 32) | 1, 2)):
        ctypes.set_errno(0)
        _r = _libc.syscall(ctypes.c_long(_nr), ctypes.c_long(_fam), ctypes.c_long(_type),
                           ctypes.c_long(0), _sv)
        _out["socketpair-" + _kind] = [_r, ctypes.get_errno()]
# what asyncio and a cell may still do: a connected stream pair inside the worker
_sv = (ctypes.c_int * 2)(-1, -1)
_out["socketpair-stream"] = _call("socketpair", 1, 1 | 0o2000000 | 0o4000, 0, _sv)
for _i, _t in enumerate(_targets):
    _a = _addr(_t)
    _out["sendto-%%d" %% _i] = _call("sendto", _sv[0], b"stream-sendto", 13, 0, _a,
                                     len(_a))
    _buf = ctypes.create_string_buffer(b"stream-sendmsg")
    _v = _iov(ctypes.cast(_buf, ctypes.c_void_p), 14)
    _m = _msghdr(ctypes.cast(_a, ctypes.c_void_p), len(_a), ctypes.pointer(_v), 1,
                 None, 0, 0)
    _out["sendmsg-%%d" %% _i] = _call("sendmsg", _sv[0], ctypes.byref(_m), 0)
    _out["connect-%%d" %% _i] = _call("connect", _sv[0], _a, len(_a))
_a = _addr(_bound + "-stream")
_out["bind-stream"] = _call("bind", _sv[1], _a, len(_a))
_out["send-stream"] = _call("send", _sv[0], b"x", 1, 0)
_out["recv-stream"] = [len(os.read(_sv[1], 1)), 0]
_out["link-type"] = socket.socket(fileno=os.dup(3)).type
_unspec = ctypes.create_string_buffer(16)
_out["link-unspec"] = _call("connect", 3, _unspec, 16)
print(json.dumps(_out))
"""

INET_ATTACK = r"""
import ctypes, json
_libc = ctypes.CDLL(None, use_errno=True)
_out = {}
for _family in (2, 10):
    for _kind in (1, 2):
        for _i, _t in enumerate(%(targets)r):
            _a = ctypes.create_string_buffer(b"\x01\x00" + _t.encode() + b"\x00")
            _s = _libc.socket(_family, _kind, 0)
            _unspec = ctypes.create_string_buffer(16)
            _libc.connect(_s, _unspec, 16)
            ctypes.set_errno(0)
            _r = _libc.sendto(_s, b"inet", 4, 0, _a, len(_a))
            _out["sendto-%%d-%%d-%%d" %% (_family, _kind, _i)] = [_r, ctypes.get_errno()]
            ctypes.set_errno(0)
            _r = _libc.connect(_s, _a, len(_a))
            _out["connect-%%d-%%d-%%d" %% (_family, _kind, _i)] = [_r, ctypes.get_errno()]
            _libc.close(_s)
print(json.dumps(_out))
"""

ASYNCIO = """
import asyncio, socket
a, b = socket.socketpair()
b.setblocking(False)
async def _read():
    loop = asyncio.get_running_loop()
    loop.call_soon(a.send, b'x')
    return await loop.sock_recv(b, 1)
print(await _read(), asyncio.get_event_loop_policy() is not None)
"""


@pytest.fixture
def host(tmp_path):
    """Host sockets in a folder outside any workspace: a datagram socket (as
    /dev/log and systemd's notify socket are) and a seqpacket listener."""
    folder = tmp_path / "host"
    folder.mkdir()
    os.chmod(folder, 0o777)
    dgram = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    dgram.bind(str(folder / "dgram.sock"))
    dgram.setblocking(False)
    seq = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    seq.bind(str(folder / "seqpacket.sock"))
    seq.listen(8)
    seq.setblocking(False)
    for name in ("dgram.sock", "seqpacket.sock"):
        os.chmod(folder / name, 0o777)
    yield folder, dgram, seq
    dgram.close()
    seq.close()


def received(dgram, seq):
    """What reached the host sockets: datagrams and connections."""
    got = []
    while True:
        try:
            got.append(dgram.recv(100))
        except BlockingIOError:
            break
    while True:
        try:
            conn, _ = seq.accept()
        except BlockingIOError:
            break
        got.append("a connection")
        conn.close()
    return got


def attack(k, folder, bound):
    targets = [str(folder / "dgram.sock"), str(folder / "seqpacket.sock")]
    out = k.run(ATTACK % {"targets": targets, "bound": str(bound)})
    return json.loads(out)


def check_common(k, out, folder, dgram, seq, ws):
    # nothing left the worker: the point of the test
    assert received(dgram, seq) == []
    # no datagram or seqpacket pair (SOCK_RAW is a datagram pair to AF_UNIX)
    for kind in ("dgram", "seqpacket", "raw", "dgram-cloexec", "dgram-nonblock",
                 "hi-type", "hi-family"):
        if kind.startswith("hi-") and "socketpair-" + kind not in out:
            continue  # an architecture without its number in the table
        assert out["socketpair-" + kind] == [-1, EPERM], (kind, out)
    # a bound half would have left a socket file to be reached by path
    assert not [p for p in os.listdir(ws) if p.startswith("bound-")
                and p != "bound-stream"], os.listdir(ws)
    # a stream pair still works, with flags: asyncio's self-pipe, comms
    assert out["socketpair-stream"] == [0, 0]
    assert out["send-stream"] == [1, 0] and out["recv-stream"] == [1, 0]
    assert k.run(ASYNCIO) == "b'x' True\n"
    # the link is a connected stream: connect(AF_UNSPEC) cannot undo it
    assert out["link-type"] == socket.SOCK_STREAM
    assert out["link-unspec"][0] == -1
    assert k.run("print(6 * 7)") == "42\n"


def test_network_off_no_local_datagrams(jupyter_dir, tmp_path, host):
    folder, dgram, seq = host
    ws = tmp_path / "ws"
    ws.mkdir()
    k = start("sandpit", cwd=str(ws))
    try:
        out = attack(k, folder, ws / "bound")
        check_common(k, out, folder, dgram, seq, ws)
        # no address given to any socket call, whatever the family
        for i in range(2):
            assert out["sendto-%d" % i] == [-1, EPERM], out
            assert out["sendmsg-%d" % i] == [-1, EPERM], out
            assert out["connect-%d" % i] == [-1, EPERM], out
        assert out["bind-stream"] == [-1, EPERM], out
        assert out["link-unspec"] == [-1, EPERM], out
        assert not (ws / "bound-stream").exists()
    finally:
        stop(k)


def test_network_on_no_local_datagrams(jupyter_dir, tmp_path, host):
    folder, dgram, seq = host
    ws = tmp_path / "ws"
    ws.mkdir()
    name = install_spec(jupyter_dir, "--network", "on")
    k = start(name, cwd=str(ws))
    try:
        out = attack(k, folder, ws / "bound")
        check_common(k, out, folder, dgram, seq, ws)
        # sendto and connect are the network's own calls here; on the only local
        # sockets there are (connected stream pairs) an address changes nothing
        for i in range(2):
            assert out["sendto-%d" % i] == [-1, EISCONN], out
            assert out["sendmsg-%d" % i] == [-1, EISCONN], out
            assert out["connect-%d" % i][0] == -1, out
        # an IP socket given a local address reaches nothing either
        inet = k.run(INET_ATTACK % {"targets": [str(folder / "dgram.sock"),
                                                str(folder / "seqpacket.sock")]})
        assert received(dgram, seq) == []
        assert all(r[0] == -1 for r in json.loads(inet).values()), inet
        # TCP and UDP only, as the report says: not UDP-Lite, SCTP or MPTCP
        for kind, proto in ((2, 136), (1, 132), (1, 262)):
            for family in (2, 10):
                assert k.run("import ctypes\n_l = ctypes.CDLL(None, use_errno=True)\n"
                             "print(_l.socket(%d, %d, %d), ctypes.get_errno())"
                             % (family, kind, proto)) == "-1 1\n", (family, kind, proto)
        # and the network itself still works: UDP to a host socket on 127.0.0.1
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as rx:
            rx.bind(("127.0.0.1", 0))
            rx.settimeout(10)
            k.run("import socket\nsocket.socket(socket.AF_INET, socket.SOCK_DGRAM)"
                  ".sendto(b'udp', ('127.0.0.1', %d))" % rx.getsockname()[1])
            assert rx.recv(10) == b"udp"
    finally:
        stop(k)
