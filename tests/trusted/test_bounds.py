"""Everything from the worker is bounded in the supervisor (issue #27, findings 4
and 6).

Code in the worker can write to its link (the runtime's _sandpit.send, or fd 3
itself, after moving the runtime off it with dup2). What it can make the
supervisor hold, and what it can make the client receive, has a bound:

- the supervisor answers one history query of the worker's at a time, and stops
  reading a link while a few MiB wait for the worker: a worker that asks and never
  reads cannot grow it (its peak RSS is read from /proc);
- the output caps count the whole size of every message a cell causes (comms, a
  pager payload, tracebacks, metadata, transient, every MIME type by what it
  holds), between cells too, and a rate of messages a second bounds their number,
  with one line on the cell's stderr.

Each case checks what reached the client and that the kernel still answers.
"""

import json
import queue
import time

import pytest

from sandpit_testing import ASAN, TIMEOUT, install_spec, start, stdout_of, stop

MAX_OUTPUT = 10000
# The supervisor's own lines ("[sandpit: output limit ... reached ...]"), which no
# cap counts.
NOTES = 2000
RATE, BURST = 500, 2500  # LIMITS_RATE, LIMITS_BURST (kernel/supervisor/limits.h)

FORGE = """
import _sandpit, json
from sandpit import request as _request
def forge(msg_type, content, metadata=None, buffers=()):
    frame = {'type': 'iopub', 'msg_type': msg_type, 'content': content}
    if metadata is not None:
        frame['metadata'] = metadata
    _sandpit.send(json.dumps(frame).encode(), list(buffers))
"""


def boot(jupyter_dir, tmp_path_factory, *options):
    name = install_spec(jupyter_dir, *options)
    return start(name, cwd=str(tmp_path_factory.mktemp("bounds")))


@pytest.fixture(scope="module")
def capped(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, tmp_path_factory, "--max-output", str(MAX_OUTPUT))
    k.run(FORGE)
    yield k
    stop(k)


@pytest.fixture(scope="module")
def plain(jupyter_dir, tmp_path_factory):
    """A kernel with the default options: no output cap, the rate alone."""
    k = boot(jupyter_dir, tmp_path_factory, "--memory", "256")
    k.run(FORGE)
    yield k
    stop(k)


def size(m):
    """What a message brings the client: its content, metadata and buffers."""
    return (len(json.dumps(m["content"])) + len(json.dumps(m.get("metadata") or {}))
            + sum(len(b) for b in m.get("buffers") or ()))


def received(reply, outputs):
    return size(reply) + sum(size(m) for m in outputs)


def assert_answers(k):
    assert k.run("print('still here')") == "still here\n"


def late_messages(k, seconds):
    """Every iopub message that comes within seconds (a bounded wait)."""
    got, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline and len(got) < 100000:
        try:
            got.append(k.kc.get_iopub_msg(timeout=0.2))
        except queue.Empty:
            pass
    return got


# --- 6: the caps count every message, whole ---------------------------------------------


@pytest.mark.parametrize("what, cell", [
    ("comm_open and comm_msg",
     "for i in range(10):\n"
     "    forge('comm_open', {'comm_id': 'c%d' % i, 'target_name': 't',\n"
     "                        'data': {'state': 'x' * 1000000}})\n"
     "    forge('comm_msg', {'comm_id': 'c%d' % i, 'data': {'state': 'y' * 1000000}})\n"),
    ("comm_msg buffers",
     "for i in range(10):\n"
     "    forge('comm_msg', {'comm_id': 'c', 'data': {}}, buffers=[b'z' * 1000000])\n"),
    ("error frames",
     "for i in range(10):\n"
     "    forge('error', {'ename': 'E', 'evalue': 'v' * 1000000,\n"
     "                    'traceback': ['t' * 1000]})\n"),
    ("display buffers beside an image",
     "for i in range(10):\n"
     "    forge('display_data', {'data': {'image/png': 'iVBORw0KGgo', 'text/plain': 'x'},\n"
     "                           'metadata': {}}, buffers=[b'z' * 1000000])\n"),
    ("display metadata",
     "for i in range(10):\n"
     "    forge('display_data', {'data': {'text/plain': 'x'},\n"
     "                           'metadata': {'m': 'x' * 1000000}})\n"),
    ("display transient",
     "for i in range(10):\n"
     "    forge('display_data', {'data': {'text/plain': 'x'}, 'metadata': {},\n"
     "                           'transient': {'t': 'x' * 1000000}})\n"),
    ("message metadata",
     "for i in range(10):\n"
     "    forge('display_data', {'data': {'text/plain': 'x'}, 'metadata': {}},\n"
     "          metadata={'m': 'x' * 1000000})\n"),
    ("a made-up image type holding text",
     "from sandpit.display import display\n"
     "for i in range(10):\n"
     "    display({'image/x-text': 'x' * 1000000}, raw=True)\n"),
    ("an image/png that is no PNG",
     "from sandpit.display import display\n"
     "for i in range(10):\n"
     "    display({'image/png': 'x' * 1000000}, raw=True)\n"),
    ("an SVG that is text",
     "from sandpit.display import display\n"
     "for i in range(10):\n"
     "    display({'image/svg+xml': 'x' * 1000000}, raw=True)\n"),
    ("a stream with a long name",
     "for i in range(10):\n"
     "    forge('stream', {'name': 'n' * 1000000, 'text': 'a'})\n"),
    ("a stream with more than its text",
     "for i in range(10):\n"
     "    forge('stream', {'name': 'stdout', 'text': 'a', 'junk': 'x' * 1000000})\n"),
])
def test_every_message_counts_against_the_cap(capped, what, cell):
    """10 MB of each kind of message a cell can send reach the client as little more
    than the cap; the cell runs to its end, and a line says what was dropped."""
    reply, outputs = capped.execute(cell + "print('ran to the end')")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert received(reply, outputs) < MAX_OUTPUT + NOTES, (what, received(reply, outputs))
    assert "more bytes of output were dropped" in stdout_of(outputs, "stderr"), what
    assert_answers(capped)


def test_a_pager_payload_counts(capped):
    """A 3 MB page (obj?, help()) leaves the reply's payload empty under the cap."""
    reply, outputs = capped.execute(
        "from sandpit.inspection import page\npage('p' * 3000000)")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert reply["content"]["payload"] == []
    assert received(reply, outputs) < MAX_OUTPUT + NOTES
    assert "more bytes of output were dropped" in stdout_of(outputs, "stderr")
    # a small page still comes whole
    reply, _ = capped.execute("page('a short page')")
    assert reply["content"]["payload"][0]["data"]["text/plain"] == "a short page"


def test_a_long_traceback_counts(capped):
    """An error whose value is 131 KB: the client gets its name and the start of its
    value, on iopub and in the reply, within the cap."""
    reply, outputs = capped.execute("raise ValueError('v' * 131000)")
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == "ValueError", c["ename"]
    assert c["evalue"].startswith("vvv")
    errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1 and errors[0]["ename"] == "ValueError"
    assert received(reply, outputs) < MAX_OUTPUT + NOTES
    assert_answers(capped)


def test_charts_still_show_under_the_cap(capped):
    """A real PNG and a real SVG are images: they pass a 10,000-byte text cap."""
    capped.run("import base64, struct, zlib\n"
               "def png(w, h):\n"
               "    raw = b''.join(b'\\x00' + b'\\xff\\x00\\x00' * w for _ in range(h))\n"
               "    def chunk(t, d):\n"
               "        return (struct.pack('>I', len(d)) + t + d\n"
               "                + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff))\n"
               "    return (b'\\x89PNG\\r\\n\\x1a\\n'\n"
               "            + chunk(b'IHDR', struct.pack('>IIBBBBB', w, h, 8, 2, 0, 0, 0))\n"
               "            + chunk(b'IDAT', zlib.compress(raw)) + chunk(b'IEND', b''))\n"
               "noise = bytes(range(256)) * 200\n")
    reply, outputs = capped.execute(
        "from sandpit.display import display\n"
        "b64 = base64.b64encode(png(200, 100) + noise).decode()\n"
        "svg = ('<?xml version=\"1.0\"?>\\n<!DOCTYPE svg>\\n<svg xmlns=\"http://www.w3.org/2000/svg\">'\n"
        "       + '<rect width=\"1\" height=\"1\"/>' * 2000 + '</svg>')\n"
        "display({'image/png': b64, 'text/plain': '<Figure>'}, raw=True)\n"
        "display({'image/svg+xml': svg, 'text/plain': '<Figure>'}, raw=True)\n")
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
    assert len(shown) == 2
    assert len(shown[0]["image/png"]) > MAX_OUTPUT
    assert len(shown[1]["image/svg+xml"]) > MAX_OUTPUT
    assert "dropped" not in stdout_of(outputs, "stderr")


def test_comms_between_cells_count_for_the_kernel(capped):
    """Comm messages a thread sends after its cell has ended count against the
    kernel's cap for late output: 5 MB do not get through."""
    reply, _ = capped.execute(
        "import threading, time\n"
        "def later():\n"
        "    time.sleep(0.5)\n"
        "    for i in range(5):\n"
        "        forge('comm_msg', {'comm_id': 'c', 'data': {'s': 'x' * 1000000}})\n"
        "threading.Thread(target=later).start()\n")
    assert reply["content"]["status"] == "ok"
    got = late_messages(capped, 3)
    comms = [m for m in got if m["msg_type"] == "comm_msg"]
    assert sum(size(m) for m in comms) < MAX_OUTPUT, len(comms)
    assert any("after its cell has ended" in m["content"].get("text", "")
               for m in got if m["msg_type"] == "stream")
    assert_answers(capped)


def test_a_flood_of_messages_is_held_to_the_rate(plain):
    """20,000 clear_output messages in a tight loop: after a burst, at most RATE a
    second reach the client; one line on stderr says so, and the cell runs on."""
    start_t = time.monotonic()
    reply, outputs = plain.execute(
        "import time\n"
        "for i in range(20000):\n"
        "    forge('clear_output', {'wait': True})\n"
        "time.sleep(0.2)  # output past the rate is dropped, not held: let it fall\n"
        "print('ran to the end')", timeout=120)
    elapsed = time.monotonic() - start_t
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs) == "ran to the end\n"
    cleared = sum(1 for m in outputs if m["msg_type"] == "clear_output")
    assert cleared <= BURST + RATE * (elapsed + 1), (cleared, elapsed)
    assert cleared < 20000
    err = stdout_of(outputs, "stderr")
    assert err.count("messages a second of output") == 1, err
    assert "messages of output were dropped past the rate" in err
    assert_answers(plain)


def test_a_progress_bar_is_not_held(plain):
    """An ordinary progress bar (clear_output(wait=True) and a line, a hundred times,
    tens a second) keeps every message."""
    reply, outputs = plain.execute(
        "import time\n"
        "for i in range(100):\n"
        "    forge('clear_output', {'wait': True})\n"
        "    print('step', i, flush=True)\n"
        "    time.sleep(0.01)\n")
    assert reply["content"]["status"] == "ok"
    assert sum(1 for m in outputs if m["msg_type"] == "clear_output") == 100
    assert "rate" not in stdout_of(outputs, "stderr")


# --- 4: the supervisor's memory ---------------------------------------------------------


def supervisor_peak_kib(k):
    with open("/proc/%d/status" % k.km.provisioner.process.pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])


def big_history(k):
    """Cells of 1.4 MB each: an answer to a tail of three is 4 MiB, more than the
    link's socket holds, so it is still being written when the next query comes."""
    for _ in range(3):
        k.run("x = 1  # " + "h" * 1400000)


def test_the_runtime_asks_for_the_history_from_many_threads(plain):
    """The runtime asks one query at a time whatever its threads, so none of its
    queries is refused, large answers included."""
    big_history(plain)
    out = plain.run(
        "import threading\n"
        "from sandpit import link\n"
        "errors = []\n"
        "def ask():\n"
        "    for _ in range(3):\n"
        "        try:\n"
        "            link.history({'hist_access_type': 'tail', 'n': 3, 'raw': True,\n"
        "                          'output': False})\n"
        "        except Exception as e:\n"
        "            errors.append(str(e))\n"
        "ts = [threading.Thread(target=ask) for _ in range(4)]\n"
        "[t.start() for t in ts]; [t.join() for t in ts]\n"
        "print(errors)", timeout=120)
    assert out == "[]\n"


HOSTILE = """
import json, os, socket, struct, time
q = json.dumps({'type': 'history', 'id': 1, 'query': {
    'hist_access_type': 'tail', 'n': 100, 'raw': True, 'output': False}}).encode()
frame = struct.pack('=II', len(q) + 4, len(q)) + q
saved = os.dup(3)
a, b = socket.socketpair()
os.dup2(a.fileno(), 3)  # the runtime reads elsewhere from now on
os.set_blocking(saved, False)
data, deadline = frame * 150, time.monotonic() + 10
while data and time.monotonic() < deadline:
    try:
        data = data[os.write(saved, data):]
    except BlockingIOError:
        time.sleep(0.01)
time.sleep(2)  # the supervisor answers meanwhile
os._exit(0)
"""


def test_history_queries_without_reading_do_not_grow_the_supervisor(plain):
    """150 history queries whose answers are 4 MiB each, from a worker that reads
    none: the supervisor's peak memory grows by far less than one answer each; the
    kernel answers afterwards, with its history."""
    if ASAN:
        pytest.skip("an AddressSanitizer build's memory is its shadow's")
    big_history(plain)
    plain.run("pass")
    before = supervisor_peak_kib(plain)
    plain.execute(HOSTILE, timeout=60)
    plain.drain_iopub()
    assert_answers(plain)
    grown = supervisor_peak_kib(plain) - before
    assert grown < 100 * 1024, "the supervisor grew by %d KiB" % grown
    out = plain.run("from sandpit import link\n"
                    "print(len(link.history({'hist_access_type': 'tail', 'n': 3,\n"
                    "                        'raw': True, 'output': False})))")
    assert out == "3\n"


def test_input_requests_are_bounded(capped):
    """100 forged input requests of 1 MB each: the client gets one, with a prompt
    of at most 16 KiB and nothing else; none for a cell whose client takes no
    input."""
    code = ("frame = {'type': 'input_request', 'parent': _request.current().msg_id,\n"
            "         'content': {'prompt': 'p' * 1000000, 'password': False,\n"
            "                     'junk': 'j' * 100000}}\n"
            "for i in range(100):\n"
            "    _sandpit.send(json.dumps(frame).encode())\n"
            "print('ran to the end')")
    for allow in (True, False):
        msg_id = capped.kc.execute(code, allow_stdin=allow)
        reply = capped.shell_reply(msg_id, timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        asked = []
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline:
            try:
                asked.append(capped.kc.get_stdin_msg(timeout=0.2))
            except queue.Empty:
                pass
        capped.iopub_until_idle(msg_id)
        assert len(asked) == (1 if allow else 0), len(asked)
        if allow:
            assert sorted(asked[0]["content"]) == ["password", "prompt"]
            assert len(asked[0]["content"]["prompt"]) == 16 << 10
    assert_answers(capped)
