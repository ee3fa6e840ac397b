"""Transports and the iopub handshake: the kernel binds ipc sockets when the
connection file says so, and greets each new iopub subscriber with
iopub_welcome (JEP 65, an XPUB socket)."""

import time
import uuid

import zmq
from jupyter_client.manager import KernelManager
from jupyter_client.session import Session

from sandpit_testing import Kernel, stdout_of


def test_ipc_transport(jupyter_dir, tmp_path):
    km = KernelManager(kernel_name="sandpit", transport="ipc",
                       ip=str(tmp_path / ("k-" + uuid.uuid4().hex[:6])))
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=30)
        k = Kernel(km, kc)
        reply, out = k.execute("print('over ipc')")
        assert reply["content"]["status"] == "ok"
        assert stdout_of(out) == "over ipc\n"
        assert km.get_connection_info()["transport"] == "ipc"
    finally:
        kc.stop_channels()
        km.shutdown_kernel()


def test_iopub_welcome(kernel):
    info = kernel.km.get_connection_info()
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.linger = 0
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect("%s://%s:%d" % (info["transport"], info["ip"], info["iopub_port"]))
    session = Session(key=kernel.km.session.key)
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert sub.poll(int((deadline - time.monotonic()) * 1000)), "no iopub_welcome"
            idents, msg = session.feed_identities(sub.recv_multipart())
            msg = session.deserialize(msg)
            if msg["msg_type"] == "iopub_welcome":
                assert msg["content"] == {"subscription": ""}
                return
    finally:
        sub.close()
    raise AssertionError("no iopub_welcome")
