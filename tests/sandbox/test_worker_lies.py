"""The worker cannot lie to the supervisor (issue #9, hole 4).

Code in the worker can write to its link to the supervisor (the runtime's own
_sandpit.send, or fd 3 itself). A forged reply must not end a cell that is still
running nor shift later replies onto the wrong request; a worker that keeps
forging is restarted. Output parented to a finished or unknown request counts
against a kernel-wide budget: 5,000,000 bytes under a 10,000-byte cap do not get
through. Images count apart from text, so a text cap keeps charts. A frame larger
than the caps allow is refused in the worker (an exception the cell sees) and,
written to the link by hand, ends the worker before the supervisor buffers it;
the supervisor's memory goes back after large frames.

One kernel serves the module; the cases that lose its worker come last.
"""

import json
import time

import pytest

from sandbox_helpers import (TIMEOUT, assert_intact, boot, expect_error, plant, stdout_of,
                             stop)

MAX_OUTPUT = 10000
MAX_IMAGES = 200000
# link_worker_frame_limit(): the caps however JSON escapes them, and 4 MiB more
FRAME_LIMIT = 6 * MAX_OUTPUT + MAX_IMAGES + (4 << 20)


@pytest.fixture(scope="module")
def box(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, "--max-output", str(MAX_OUTPUT), "--max-image-output",
             str(MAX_IMAGES), cwd=tmp_path_factory.mktemp("lies"))
    yield k
    stop(k)


FORGE = """
import _sandpit, json
def forge(frame):
    _sandpit.send(json.dumps(frame).encode())
"""


def test_a_forged_reply_does_not_end_the_cell(box):
    """A reply that names no request is dropped: the cell runs to its end and gets
    its own reply, and the next cell gets its own too."""
    box.run(FORGE)
    reply, outputs = box.execute(
        "forge({'type': 'reply', 'shell': '', 'content': {'status': 'error', "
        "'ename': 'Forged', 'evalue': 'not this cell', 'traceback': []}})\n"
        "print('ran to the end')")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs) == "ran to the end\n"
    reply, outputs = box.execute("print('next')")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs) == "next\n"


def test_raw_text_counts_and_must_be_text(box):
    """Large strings travel beside the JSON as raw text: they count against the
    caps as any output does, and raw text that is not UTF-8, or claims a place
    that is taken, or is not there, drops its frame (and nothing else)."""
    box.run(FORGE + "frame = {'type': 'iopub', 'msg_type': 'stream',\n"
                    "         'content': {'name': 'stdout'}, 'raw': [['text']]}\n")
    reply, outputs = box.execute(
        "_sandpit.send(json.dumps(frame).encode(), ['y' * 50000])\n"
        "print('capped')")
    assert reply["content"]["status"] == "ok", reply["content"]
    out = stdout_of(outputs)
    assert out == "y" * MAX_OUTPUT, len(out)
    assert "more bytes of output were dropped" in stdout_of(outputs, "stderr")
    reply, outputs = box.execute(
        "for bad, text in ((frame, b'\\xc0\\xaf'), (frame, b'a\\x00b'),\n"
        "                  (dict(frame, content={'name': 'stdout', 'text': 'taken'}), 'z'),\n"
        "                  (dict(frame, raw=[['text'], ['more']]), 'z')):\n"
        "    _sandpit.send(json.dumps(bad).encode(), [text])\n"
        "_sandpit.send(json.dumps(frame).encode(), ['caf\\u00e9 \\\\ \"quoted\"\\n'])\n"
        "print('end')")
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs) == 'caf\u00e9 \\ "quoted"\nend\n'


def test_images_count_apart_from_text(box):
    """A text cap of 10,000 bytes keeps charts of 60 kB; images stop at their own
    budget, with the text of the display kept, and a line says so."""
    reply, outputs = box.execute(
        "from sandpit.display import display\n"
        "for i in range(4):\n"
        "    display({'image/png': 'iVBORw0KGgo' + 'A' * 59989, 'text/plain': '<chart %d>' % i}, raw=True)\n")
    assert reply["content"]["status"] == "ok", reply["content"]
    shown = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
    assert [len(d.get("image/png", "")) for d in shown] == [60000, 60000, 60000, 0], \
        [sorted(d) for d in shown]
    assert [d["text/plain"] for d in shown] == ["<chart %d>" % i for i in range(4)]
    assert "image limit of %d bytes reached; 60000 bytes of images were dropped" % \
        MAX_IMAGES in stdout_of(outputs, "stderr")


def test_late_output_is_capped_for_the_whole_kernel(box):
    """A thread floods 5,000,000 bytes after its cell has ended, half of it
    parented to that cell and half to a request that never ran, past the worker's
    own pump: at most the cap gets through (and one line saying so)."""
    box.run(FORGE)
    first = box.kc.execute(
        "import threading\n"
        "from sandpit import request\n"
        "go = threading.Event()\n"
        "def flood(parent):\n"
        "    go.wait()\n"
        "    for i in range(500):\n"
        "        forge({'type': 'iopub', 'msg_type': 'stream',\n"
        "               'parent': parent if i % 2 else 'never-ran',\n"
        "               'content': {'name': 'stdout', 'text': 'x' * 10000}})\n"
        "flooder = threading.Thread(target=flood, args=(request.current_tag(),))\n"
        "flooder.start()\n")
    assert box.shell_reply(first)["content"]["status"] == "ok"
    box.iopub_until_idle(first)
    # The flood starts once the first cell has ended, and is over when the second
    # has joined it: everything it sent reached the client before that idle.
    second = box.kc.execute("go.set()\nflooder.join()\nprint('joined')")
    texts = []
    while True:
        m = box.kc.get_iopub_msg(timeout=TIMEOUT)
        if m["parent_header"].get("msg_id") == second:
            if m["msg_type"] == "status" and m["content"]["execution_state"] == "idle":
                break
            continue
        if m["msg_type"] == "stream":
            texts.append(m["content"]["text"])
    assert box.shell_reply(second)["content"]["status"] == "ok"
    flood = "".join(t for t in texts if set(t) == {"x"})
    notices = [t for t in texts if "after its cell has ended is limited" in t]
    assert len(flood) <= MAX_OUTPUT, len(flood)
    assert len(notices) == 1, notices


def test_output_too_large_for_a_message_is_refused_in_the_cell(box):
    """An output larger than any message the kernel accepts from the worker is not
    sent: the cell gets an exception that says so, and keeps its variables."""
    token = plant(box)
    evalue, _ = expect_error(
        box, "from sandpit.display import display\n"
             "display({'text/plain': 'x' * %d}, raw=True)" % (FRAME_LIMIT + 1000),
        "ValueError")
    assert "more than the %d bytes a message from the code may have" % FRAME_LIMIT \
        in evalue, evalue
    assert_intact(box, token)


def supervisor_rss_kb(k):
    with open("/proc/%d/status" % k.km.provisioner.process.pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def test_the_supervisor_gives_memory_back_after_large_frames(box):
    """Frames just under the limit pass through the supervisor (and are dropped
    there, past the text cap); once it is idle again (half a second without a
    large frame: the pages are kept for the next large output meanwhile), its
    buffers and what it freed have gone back to the system."""
    box.run("pass")
    box.request("kernel_info")
    before = supervisor_rss_kb(box)
    box.run(FORGE)
    reply, outputs = box.execute(
        "frame = {'type': 'iopub', 'msg_type': 'display_data',\n"
        "         'content': {'data': {'text/plain': 'x' * %d}, 'metadata': {}}}\n"
        "text = json.dumps(frame).encode()\n"
        "for _ in range(3):\n"
        "    _sandpit.send(text)\n"
        "del frame, text\n" % (FRAME_LIMIT - 1000))
    assert reply["content"]["status"] == "ok", reply["content"]
    assert "more bytes of output were dropped" in stdout_of(outputs, "stderr")
    box.request("kernel_info")  # the loop has finished its turn with the frames
    deadline = time.monotonic() + 3
    while (after := supervisor_rss_kb(box)) - before >= 2048 and time.monotonic() < deadline:
        time.sleep(0.05)
    print("supervisor RSS: %d kB before, %d kB after three frames of %d bytes"
          % (before, after, FRAME_LIMIT - 1000))
    # each frame made the link's buffer 8 MiB and parsed 4 MiB of JSON
    assert after - before < 2048, (before, after)


def test_a_worker_that_keeps_forging_replies_is_restarted(box):
    plant(box)
    box.run(FORGE)
    evalue, _ = expect_error(
        box, "for _ in range(11):\n"
             "    forge({'type': 'reply', 'shell': '', 'parent': 'not-this-cell',\n"
             "           'content': {'status': 'ok'}})\n"
             "import time\n"
             "time.sleep(%d)\n" % TIMEOUT,
        "WorkerDied")
    assert "11 replies to requests it was not running" in evalue, evalue
    assert "variables and imports from earlier cells are lost" in evalue


def test_a_frame_over_the_limit_ends_the_worker_unread(box):
    """400 MB announced by hand on the link: the worker is ended at the frame's
    first bytes, the cell says why, and the supervisor has not grown."""
    box.run("pass")
    before = supervisor_rss_kb(box)
    plant(box)
    evalue, _ = expect_error(
        box, "import os, struct\n"
             "os.write(3, struct.pack('=II', 400 << 20, 10) + b'{' * 65536)\n"
             "import time\n"
             "time.sleep(%d)\n" % TIMEOUT,
        "WorkerDied")
    assert "sent a message of %d bytes, more than the %d bytes this kernel accepts" % (
        400 << 20, FRAME_LIMIT) in evalue, evalue
    assert box.run("print('alive')") == "alive\n"
    assert supervisor_rss_kb(box) - before < 2048
