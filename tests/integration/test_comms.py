"""Comms in both directions, with binary buffers, through the `comm`
package's API (comm.create_comm, comm.get_comm_manager) that current widget
libraries use; comm_info_request with target_name filtering; an unknown
target answered with comm_close."""

import time
import uuid

from sandpit_testing import raw_socket




def iopub_of_type(k, msg_type, timeout=10, where=lambda m: True):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        m = k.kc.get_iopub_msg(timeout=max(0.1, deadline - time.monotonic()))
        if m["msg_type"] == msg_type and where(m):
            return m
    raise AssertionError("no %s on iopub" % msg_type)


def test_kernel_opens_and_sends(kernel):
    msg_id = kernel.kc.execute(
        "import comm\n"
        "c = comm.create_comm(target_name='from-kernel', data={'hello': 1})\n"
        "c.send({'n': 2}, buffers=[b'\\x00\\x01\\x02'])\n")
    opened = iopub_of_type(kernel, "comm_open")
    assert opened["content"]["target_name"] == "from-kernel"
    assert opened["content"]["data"] == {"hello": 1}
    assert opened["parent_header"]["msg_id"] == msg_id
    sent = iopub_of_type(kernel, "comm_msg")
    assert sent["content"]["comm_id"] == opened["content"]["comm_id"]
    assert sent["content"]["data"] == {"n": 2}
    assert [bytes(b) for b in sent["buffers"]] == [b"\x00\x01\x02"]
    reply = kernel.shell_reply(msg_id)
    assert reply["content"]["status"] == "ok"
    info = kernel.request("comm_info", target_name="from-kernel")
    assert info["content"]["comms"] == {opened["content"]["comm_id"]:
                                        {"target_name": "from-kernel"}}
    assert kernel.request("comm_info", target_name="nothing")["content"]["comms"] == {}


def test_front_end_opens_and_echoes_buffers(kernel):
    kernel.run(
        "import comm\n"
        "closed = []\n"
        "def echo_target(c, open_msg):\n"
        "    c.on_msg(lambda m: c.send({'echo': m['content']['data']},\n"
        "                              buffers=[bytes(b)[::-1] for b in m['buffers']]))\n"
        "    c.on_close(lambda m: closed.append(m['content']['data']))\n"
        "comm.get_comm_manager().register_target('echo', echo_target)\n")
    s = raw_socket(kernel)
    session = kernel.kc.session
    comm_id = uuid.uuid4().hex
    session.send(s, "comm_open", {"comm_id": comm_id, "target_name": "echo", "data": {}})
    payload = bytes(range(256)) * 4
    session.send(s, "comm_msg", {"comm_id": comm_id, "data": {"x": 1}},
                 buffers=[payload, b"ab"])
    echoed = iopub_of_type(kernel, "comm_msg",
                           where=lambda m: m["content"]["comm_id"] == comm_id)
    assert echoed["content"]["data"] == {"echo": {"x": 1}}
    assert [bytes(b) for b in echoed["buffers"]] == [payload[::-1], b"ba"]
    info = kernel.request("comm_info")
    assert info["content"]["comms"][comm_id] == {"target_name": "echo"}
    session.send(s, "comm_close", {"comm_id": comm_id, "data": {"bye": True}})
    deadline = time.monotonic() + 10
    while kernel.value("closed") != "[{'bye': True}]" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert kernel.value("closed") == "[{'bye': True}]"
    assert comm_id not in kernel.request("comm_info")["content"]["comms"]
    s.close()


def test_unknown_target_is_closed(kernel):
    s = raw_socket(kernel)
    comm_id = uuid.uuid4().hex
    kernel.kc.session.send(s, "comm_open", {"comm_id": comm_id, "target_name": "no-such",
                                            "data": {}})
    closed = iopub_of_type(kernel, "comm_close",
                           where=lambda m: m["content"]["comm_id"] == comm_id)
    assert closed["content"]["comm_id"] == comm_id
    s.close()
    assert kernel.run("print('fine')") == "fine\n"


def test_raising_handler_does_not_break_the_kernel(kernel):
    kernel.run(
        "import comm\n"
        "def bad_target(c, m):\n"
        "    c.on_msg(lambda m: 1 / 0)\n"
        "comm.get_comm_manager().register_target('bad', bad_target)\n")
    s = raw_socket(kernel)
    comm_id = uuid.uuid4().hex
    kernel.kc.session.send(s, "comm_open", {"comm_id": comm_id, "target_name": "bad",
                                            "data": {}})
    kernel.kc.session.send(s, "comm_msg", {"comm_id": comm_id, "data": {}})
    err = iopub_of_type(kernel, "stream", where=lambda m: "ZeroDivisionError"
                        in m["content"]["text"])
    assert err["content"]["name"] == "stderr"
    s.close()
    assert kernel.run("print('still fine')") == "still fine\n"
