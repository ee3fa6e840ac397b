"""Messages a hostile client sends (issue #9, hole 5), over raw ZeroMQ with the
kernel's real key, signed by hand.

A replayed message must not run twice; only the lower-case hex that clients send
is a signature; a well-signed request with a readable header always gets a reply,
an error reply when the rest cannot be read (deep nesting, \\u0000, a lone
surrogate, bytes that are not UTF-8); a message larger than --max-message is
dropped at the socket. After each, the kernel keeps serving.

Every wait is bounded: a reply that should come is waited for TIMEOUT seconds;
one that must not come is checked after a later request's reply, which the
kernel sends only after it has dealt with the earlier message (shell requests
are read and answered in order).
"""

import hashlib
import hmac
import json
import uuid

import pytest
import zmq
import zmq.utils.monitor

from sandbox_helpers import TIMEOUT, boot, stop
from sandpit_testing import raw_socket


class Raw:
    """A DEALER of its own on the kernel's shell port, signing with its key."""

    def __init__(self, k, channel="shell"):
        self.k = k
        self.key = k.km.session.key
        self.sock = raw_socket(k, channel)

    def sign(self, parts):
        h = hmac.new(self.key, digestmod=hashlib.sha256)
        for p in parts:
            h.update(p)
        return h.hexdigest().encode()

    def frames(self, msg_type, content=b"{}", metadata=b"{}", msg_id=None):
        msg_id = msg_id or uuid.uuid4().hex
        header = json.dumps({"msg_id": msg_id, "msg_type": msg_type, "session": "raw",
                             "username": "test", "date": "2024-01-01T00:00:00Z",
                             "version": "5.3"}).encode()
        if not isinstance(content, bytes):
            content = json.dumps(content).encode()
        parts = [header, b"{}", metadata, content]
        return msg_id, [b"<IDS|MSG>", self.sign(parts)] + parts

    def send(self, frames):
        self.sock.send_multipart(frames)

    def execute_frames(self, code):
        """(msg_id, frames) of a signed execute_request, not sent."""
        return self.frames("execute_request", {
            "code": code, "silent": False, "store_history": False,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": False})

    def execute(self, code):
        """Sends an execute_request; returns (msg_id, the frames sent)."""
        msg_id, frames = self.execute_frames(code)
        self.send(frames)
        return msg_id, frames

    def replies(self, until, timeout=TIMEOUT):
        """Every reply read until the one parented to msg_id `until`, in order:
        [(parent msg_id, msg_type, content)]."""
        got = []
        poller = zmq.Poller()
        poller.register(self.sock, zmq.POLLIN)
        while True:
            assert poller.poll(timeout * 1000), "no reply to %s in %d s" % (until, timeout)
            frames = self.sock.recv_multipart()
            i = frames.index(b"<IDS|MSG>")
            header, parent, _, content = (json.loads(f) for f in frames[i + 2:i + 6])
            got.append((parent.get("msg_id"), header["msg_type"], content))
            if parent.get("msg_id") == until:
                return got

    def reply_to(self, msg_id, timeout=TIMEOUT):
        return self.replies(msg_id, timeout)[-1]

    def wait_disconnected(self, timeout=TIMEOUT):
        """Waits until the kernel drops this connection (as ZeroMQ does to a peer
        that sends a frame over ZMQ_MAXMSGSIZE); fails after timeout."""
        poller = zmq.Poller()
        poller.register(self.monitor, zmq.POLLIN)
        while True:
            assert poller.poll(timeout * 1000), "the kernel kept the connection"
            event = zmq.utils.monitor.recv_monitor_message(self.monitor)
            if event["event"] == zmq.EVENT_DISCONNECTED:
                return

    def watch(self):
        """Starts watching this connection's events (before sending)."""
        self.monitor = self.sock.get_monitor_socket(zmq.EVENT_DISCONNECTED)

    def close(self):
        if getattr(self, "monitor", None) is not None:
            self.sock.disable_monitor()
            self.monitor.close(0)
        self.sock.close(0)


@pytest.fixture(scope="module")
def kern(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, cwd=tmp_path_factory.mktemp("messages"))
    yield k
    stop(k)


@pytest.fixture
def raw(kern):
    r = Raw(kern)
    yield r
    r.close()


def test_a_replayed_message_runs_once(kern, raw):
    kern.run("ran = 0")
    first, frames = raw.execute("ran += 1")
    assert raw.reply_to(first)[2]["status"] == "ok"
    raw.send(frames)  # the very same frames, signature and all
    check, _ = raw.execute("print(ran)")
    got = raw.replies(check)
    assert [p for p, _, _ in got] == [check], "the replay was answered: %r" % got
    assert kern.value("ran") == "1"


def test_a_replay_on_another_connection_is_refused_too(kern, raw):
    kern.run("ran2 = 0")
    first, frames = raw.execute("ran2 += 1")
    assert raw.reply_to(first)[2]["status"] == "ok"
    other = Raw(kern)
    try:
        other.send(frames)
        check, _ = other.execute("pass")
        assert [p for p, _, _ in other.replies(check)] == [check]
    finally:
        other.close()
    assert kern.value("ran2") == "1"


@pytest.mark.parametrize("case", ["upper", "mixed"])
def test_only_lower_case_hex_is_a_signature(kern, raw, case):
    kern.run("cased = 0")
    msg_id, frames = raw.execute_frames("cased += 1")
    sig = frames[1].decode()
    assert sig != sig.upper()  # there are letters to change
    frames[1] = (sig.upper() if case == "upper" else
                 "".join(c.upper() if i % 2 else c for i, c in enumerate(sig))).encode()
    assert frames[1] != sig.encode()
    raw.send(frames)
    check, _ = raw.execute("pass")
    assert [p for p, _, _ in raw.replies(check)] == [check]
    assert kern.value("cased") == "0"
    # the same message, signed as clients sign, runs (the refused one was not
    # remembered, so this is no replay)
    raw.send(frames[:1] + [sig.encode()] + frames[2:])
    assert raw.reply_to(msg_id)[2]["status"] == "ok"
    assert kern.value("cased") == "1"


def nested(depth):
    return ("[" * depth + "]" * depth).encode()


UNREADABLE = {
    "nested-300": ("metadata", nested(300), "metadata nests deeper than 256 levels"),
    "nested-1000": ("metadata", nested(1000), "metadata nests deeper than 256 levels"),
    "nested-2047": ("content", b'{"code": ' + nested(2047) + b"}",
                    "content nests deeper than 256 levels"),
    "nul": ("content", b'{"code": "x = 1\\u0000"}', "content is not valid JSON"),
    "lone-surrogate": ("content", b'{"code": "x = \'\\ud800\'"}',
                       "content is not valid JSON"),
    "not-utf-8": ("content", b'{"code": "x = \'\xff\xfe\'"}', "content is not valid JSON"),
    "encoded-surrogate": ("content", b'{"code": "x = \'\xed\xa0\x80\'"}',
                          "content is not valid JSON"),
}


@pytest.mark.parametrize("case", sorted(UNREADABLE))
@pytest.mark.parametrize("msg_type", ["execute_request", "complete_request",
                                      "kernel_info_request"])
def test_an_unreadable_request_gets_an_error_reply(kern, raw, case, msg_type):
    part, text, why = UNREADABLE[case]
    kwargs = {"content": text} if part == "content" else {"metadata": text}
    msg_id, frames = raw.frames(msg_type, **kwargs)
    raw.send(frames)
    parent, reply_type, content = raw.reply_to(msg_id)
    assert reply_type == msg_type.replace("_request", "_reply")
    assert content["status"] == "error", content
    assert content["ename"] == "ValueError"
    assert why in content["evalue"], content["evalue"]
    # busy and idle, as for any request, so that a client waiting for idle goes on
    states = [m["content"]["execution_state"]
              for m in kern.iopub_until_idle(msg_id, keep_status=True)
              if m["msg_type"] == "status"]
    assert states == ["busy", "idle"]
    # and the shell is not wedged: the next cell runs at once, globals intact
    kern.run("alive = 1")
    assert kern.value("alive") == "1"


def test_an_unreadable_control_request_gets_an_error_reply(kern):
    raw = Raw(kern, "control")
    try:
        msg_id, frames = raw.frames("kernel_info_request", metadata=nested(1000))
        raw.send(frames)
        parent, reply_type, content = raw.reply_to(msg_id)
        assert reply_type == "kernel_info_reply" and content["status"] == "error"
    finally:
        raw.close()


def test_an_unreadable_message_that_is_not_a_request_is_dropped(kern, raw):
    kern.run("comms_seen = 1")
    msg_id, frames = raw.frames("comm_msg", content=b'{"comm_id": "\xff"}')
    raw.send(frames)
    check, _ = raw.execute("pass")
    assert [p for p, _, _ in raw.replies(check)] == [check]


# --- the size of a message --------------------------------------------------------------


@pytest.fixture(scope="module")
def small(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, "--max-message", "1", cwd=tmp_path_factory.mktemp("small"))
    yield k
    stop(k)


def supervisor_peak_kib(k):
    with open("/proc/%d/status" % k.km.provisioner.process.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])


def test_a_message_over_max_message_is_dropped(small):
    k = small
    k.run("big = 0")
    r = Raw(k)
    try:
        # under the limit, with a buffer: runs
        msg_id, frames = r.execute_frames("big += 1")
        r.send(frames + [b"b" * (512 << 10)])
        assert r.reply_to(msg_id)[2]["status"] == "ok"
        # one frame over the limit: ZeroMQ drops it, and the connection, unread
        r.watch()
        msg_id, frames = r.execute_frames("big += 10")
        r.send(frames + [b"b" * ((1 << 20) + 1)])
        r.wait_disconnected()
    finally:
        r.close()
    # frames each under the limit, together over it: the supervisor drops them
    several = Raw(k)
    try:
        msg_id, frames = several.execute_frames("big += 100")
        several.send(frames + [b"b" * (300 << 10)] * 4)
        check, _ = several.execute("pass")
        assert [p for p, _, _ in several.replies(check)] == [check]
    finally:
        several.close()
    assert k.value("big") == "1"
    assert k.request("kernel_info")["content"]["status"] == "ok"


def test_a_huge_message_costs_the_supervisor_little(jupyter_dir, tmp_path):
    """256 MiB by default: a 1 GiB frame is refused as soon as its size arrives."""
    k = boot(jupyter_dir, cwd=tmp_path)
    try:
        before = supervisor_peak_kib(k)
        r = Raw(k)
        try:
            r.watch()
            msg_id, frames = r.execute_frames("pass")
            huge = bytearray(1 << 30)  # zero pages: they cost the test nothing either
            r.sock.send_multipart(frames + [huge], copy=False)
            r.wait_disconnected()
        finally:
            r.close()
        assert k.run("print('still here')") == "still here\n"
        assert supervisor_peak_kib(k) - before < 64 << 10
    finally:
        stop(k)
