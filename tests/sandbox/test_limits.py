"""The kernel's limits (issue #4): time, memory, output and file size.

Each limit gets a kernel started with it (one per module fixture, shared by the
cases that leave it usable). A cell that hits a limit must end with the error the
issue names, and the kernel must answer afterwards: with its globals when the
worker answered the interrupt, with a new worker and an error that says the state
was lost when it had to be restarted.
"""

import re
import time

import pytest

from sandbox_helpers import (ASAN, assert_intact, assert_lost, boot, expect_error,
                             kernel_info, memory_limit_applies, plant, stdout_of, stop)

BUSY = "while True:\n    pass"
# An upper bound on how long a limit may take to act is a guard against a hang,
# not a measure of speed: it is counted from the execute_input (when the request
# went to the worker), so that a loaded machine makes the test slower, not red.
HANG_GUARD_S = 20
# What memory_limit_applies() found when it returns False (its report checked).
NO_MEMORY_LIMIT = ("the worker has no memory limit in an AddressSanitizer build "
                   "(the report says so): nothing to allocate past")


def timed_error(k, code, ename, timeout=60, metadata=None):
    """Runs a cell that must fail with ename. Returns (evalue, since_sent,
    since_started): seconds from sending the request to its reply (a lower bound
    on what the kernel counted), and from its execute_input to the reply (an upper
    bound: the time the request waited in the queue is left out)."""
    content = {"code": code, "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
    msg = k.kc.session.msg("execute_request", content, metadata=metadata or {})
    t0 = time.monotonic()
    k.kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    while k.next_iopub(msg_id, timeout)["msg_type"] != "execute_input":
        pass
    t1 = time.monotonic()
    reply = k.shell_reply(msg_id, timeout)
    t2 = time.monotonic()
    outputs = k.iopub_until_idle(msg_id, timeout)
    c = reply["content"]
    assert c["status"] == "error" and c["ename"] == ename, c
    shown = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert shown and shown[-1]["evalue"] == c["evalue"]
    return c["evalue"], t2 - t0, t2 - t1


# --- time ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def timed(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, "--timeout", "2", cwd=tmp_path_factory.mktemp("timed"))
    yield k
    stop(k)


def test_time_limit_ends_a_busy_loop_and_keeps_globals(timed):
    token = plant(timed)
    evalue, since_sent, since_started = timed_error(timed, BUSY, "TimeoutError")
    assert evalue == "cell exceeded its time limit of 2 s"
    assert since_sent >= 1.9 and since_started < 2 + HANG_GUARD_S, (since_sent,
                                                                     since_started)
    assert_intact(timed, token)
    # the next cell has its own two seconds (had the last cell's time been counted
    # against it, it would be stopped at once)
    assert timed.run("import time\ntime.sleep(0.5)\nprint('in time')") == "in time\n"


def test_time_limit_ends_a_sleep(timed):
    token = plant(timed)
    evalue, _, since_started = timed_error(timed, "import time\ntime.sleep(60)",
                                           "TimeoutError")
    assert evalue == "cell exceeded its time limit of 2 s"
    assert since_started < 2 + HANG_GUARD_S
    assert_intact(timed, token)


@pytest.mark.parametrize("code", [
    "import signal\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n" + BUSY,
    # one call into compiled code that never checks for signals
    "sum(range(10**15))",
], ids=["ignores-SIGINT", "long-C-call"])
def test_time_limit_restarts_a_cell_that_does_not_stop(timed, code):
    """After the interrupt, the cell has INTERRUPT_GRACE_S (5 s) to stop; then its
    worker is replaced and the error says that the state was lost."""
    plant(timed)
    evalue, since_sent, since_started = timed_error(timed, code, "TimeoutError")
    # one wording for the time limit, whether the cell stopped or not
    assert evalue.startswith("cell exceeded its time limit of 2 s and did not stop"), evalue
    assert "restarted" in evalue and "lost" in evalue, evalue
    assert since_sent >= 6.9 and since_started < 7 + HANG_GUARD_S, (since_sent,
                                                                     since_started)
    assert_lost(timed)
    # the new worker has the limit too
    evalue, _, since_started = timed_error(timed, BUSY, "TimeoutError")
    assert evalue == "cell exceeded its time limit of 2 s"
    assert since_started < 2 + HANG_GUARD_S


def test_request_metadata_tightens_the_limit(timed):
    token = plant(timed)
    evalue, since_sent, _ = timed_error(timed, BUSY, "TimeoutError",
                                        metadata={"sandpit": {"timeout": 1}})
    assert evalue == "cell exceeded its time limit of 1 s"
    assert since_sent >= 0.9
    assert_intact(timed, token)


# A limit that is not a number of at least 0 ("none", -1) is refused with an
# error reply (tests/integration/test_execute.py), so it cannot loosen one either.
@pytest.mark.parametrize("asked", [10, 0])
def test_request_metadata_never_loosens_the_limit(timed, asked):
    token = plant(timed)
    evalue, since_sent, since_started = timed_error(
        timed, BUSY, "TimeoutError", metadata={"sandpit": {"timeout": asked}})
    assert evalue == "cell exceeded its time limit of 2 s"
    assert since_sent >= 1.9 and since_started < 2 + HANG_GUARD_S
    assert_intact(timed, token)


def test_request_metadata_limits_a_kernel_without_one(jupyter_dir, tmp_path):
    k = boot(jupyter_dir, cwd=tmp_path)
    try:
        assert kernel_info(k)["sandpit"]["timeout"] == 0
        token = plant(k)
        evalue, since_sent, since_started = timed_error(
            k, BUSY, "TimeoutError", metadata={"sandpit": {"timeout": 1}})
        assert evalue == "cell exceeded its time limit of 1 s"
        assert since_sent >= 0.9 and since_started < 1 + HANG_GUARD_S
        assert_intact(k, token)
        # the request's limit was for that request only
        reply, _ = k.execute("import time\ntime.sleep(1.5)\nok = 1")
        assert reply["content"]["status"] == "ok"
    finally:
        stop(k)


# --- memory ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def mem(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, "--memory", "1024", cwd=tmp_path_factory.mktemp("mem"))
    yield k
    stop(k)


def assert_can_allocate(k, mib=256):
    assert k.run("b = bytearray(%d << 20)\nprint(len(b) >> 20)\ndel b" % mib) == \
        "%d\n" % mib


def past_the_limit(k):
    """MiB just above the kernel's memory limit: an allocation of that much fails
    only because of the limit, on any machine that could give it (50 GB would fail
    on most machines with or without the limit)."""
    mib = kernel_info(k)["sandpit"]["memory_mib"]
    assert mib == 1024
    return mib + 128


def test_allocating_past_the_limit(mem):
    if not memory_limit_applies(mem):
        pytest.skip(NO_MEMORY_LIMIT)
    token = plant(mem)
    evalue, _ = expect_error(mem, "b = bytearray(%d << 20)" % past_the_limit(mem),
                             "MemoryError")
    assert evalue == ("the worker could not get more memory within this kernel's limit of "
                      "1024 MiB (--memory)")
    assert_intact(mem, token)
    assert_can_allocate(mem)


def test_allocating_past_the_limit_with_numpy(mem):
    if not memory_limit_applies(mem):
        pytest.skip(NO_MEMORY_LIMIT)
    token = plant(mem)
    mib = past_the_limit(mem)
    evalue, _ = expect_error(mem, "import numpy as np\na = np.ones(%d << 17)" % mib,
                             "MemoryError")
    assert evalue.startswith("Unable to allocate %.2f GiB" % (mib / 1024)), evalue
    assert_intact(mem, token)


def test_a_growing_list(jupyter_dir, tmp_path):
    """The list lives in a function's frame: once the MemoryError has ended the
    cell, the next cell must have the memory back (it is the next thing a user
    does; see the report for why it does not)."""
    k = boot(jupyter_dir, "--memory", "1024", cwd=tmp_path)
    try:
        if not memory_limit_applies(k):
            pytest.skip(NO_MEMORY_LIMIT)
        token = plant(k)
        expect_error(k, "def grow():\n    chunks = []\n    while True:\n"
                        "        chunks.append(bytearray(8 << 20))\ngrow()", "MemoryError")
        assert_can_allocate(k)
        assert_intact(k, token)
    finally:
        stop(k)


def test_a_growing_global_list(jupyter_dir, tmp_path):
    """Memory a global still holds stays taken; freeing it makes room again."""
    k = boot(jupyter_dir, "--memory", "1024", cwd=tmp_path)
    try:
        if not memory_limit_applies(k):
            pytest.skip(NO_MEMORY_LIMIT)
        token = plant(k)
        expect_error(k, "hog = []\nwhile True:\n    hog.append(bytearray(8 << 20))",
                     "MemoryError")
        assert_intact(k, token)
        assert int(k.value("len(hog)")) > 64  # it did get most of the 1024 MiB
        k.run("del hog")
        assert_can_allocate(k)
        # threads need memory for their stacks: they start again too
        assert k.run("import threading\nout = []\n"
                     "ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]\n"
                     "[t.start() for t in ts]\n[t.join() for t in ts]\n"
                     "print(sorted(out))") == "%s\n" % list(range(8))
    finally:
        stop(k)


# --- output -----------------------------------------------------------------------------------

NOTICE = ("\n[sandpit: output limit of %d bytes reached; %d more bytes of output were "
          "dropped]\n")


@pytest.fixture(scope="module")
def capped(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, "--max-output", "10000", cwd=tmp_path_factory.mktemp("capped"))
    yield k
    stop(k)


def test_output_stops_at_the_cap_and_the_cell_runs_to_its_end(capped):
    token = plant(capped)
    reply, outputs = capped.execute("for i in range(3000):\n    print('y' * 999)\n"
                                    "finished = True\nprint('the end')")
    assert reply["content"]["status"] == "ok"
    out = stdout_of(outputs)
    assert len(out) == 10000 and set(out) == {"y", "\n"}
    dropped = 3000 * 1000 + len("the end\n") - 10000
    assert stdout_of(outputs, "stderr") == NOTICE % (10000, dropped)
    assert capped.value("finished") == "True"
    assert_intact(capped, token)
    # the next cell has its own allowance
    reply, outputs = capped.execute("print('z' * 5000)")
    assert stdout_of(outputs) == "z" * 5000 + "\n"
    assert stdout_of(outputs, "stderr") == ""


def test_output_cap_counts_stderr_and_displays(capped):
    token = plant(capped)
    reply, outputs = capped.execute(
        "import sys\nsys.stderr.write('e' * 6000)\nsys.stderr.flush()\n"
        "display({'text/plain': 'd' * 20000}, raw=True)\nprint('p' * 100)")
    assert reply["content"]["status"] == "ok"
    assert not [m for m in outputs if m["msg_type"] == "display_data"]
    stderr = stdout_of(outputs, "stderr")
    assert stderr.startswith("e" * 6000)
    notices = re.findall(r"\[sandpit: output limit of 10000 bytes reached; (\d+) more "
                         r"bytes of output were dropped\]", stderr)
    assert len(notices) == 1 and int(notices[0]) >= 20000
    assert_intact(capped, token)


USAGE_CELL = r"""
def _sandpit_usage():  # (bytes the worker has written, its peak resident memory)
    with open('/proc/self/io') as f:
        wrote = int([l for l in f if l.startswith('wchar:')][0].split()[1])
    with open('/proc/self/status') as f:
        peak = int([l for l in f if l.startswith('VmHWM:')][0].split()[1]) << 10
    return wrote, peak
"""


@pytest.mark.parametrize("text, chars", [("'x'", 1 << 30), ("'\\u00e9'", 1 << 29)],
                         ids=["ascii", "two-byte-utf8"])
def test_print_of_1_gb(jupyter_dir, tmp_path, text, chars):
    """With the agent profile's output cap: a print of a gigabyte (of text whose
    UTF-8 is a gigabyte) must need no more memory than the string itself, and what
    goes past the cap must be dropped in the worker, not sent to the supervisor to
    be dropped there (which took 48 s). The worker's own counters say both: its
    peak resident memory (VmHWM) and the bytes it wrote (wchar, which counts every
    byte written to the link)."""
    k = boot(jupyter_dir, "--max-output", "10000", "--memory", "1536", cwd=tmp_path)
    try:
        token = plant(k)
        k.run(USAGE_CELL)
        reply, outputs = k.execute(
            "s = %s * %d\nbefore = _sandpit_usage()\nprint(s)\n"
            "after = _sandpit_usage()\ndel s\nfinished = True" % (text, chars),
            timeout=120)
        assert reply["content"]["status"] == "ok", reply["content"]
        char = "x" if chars == 1 << 30 else "\u00e9"
        assert stdout_of(outputs) == char * (10000 // len(char.encode()))
        assert stdout_of(outputs, "stderr") == NOTICE % (10000, (1 << 30) + 1 - 10000)
        assert k.value("finished") == "True"
        wrote_before, peak_before = eval(k.value("before"))
        wrote_after, peak_after = eval(k.value("after"))
        # (an AddressSanitizer build holds up to 256 MiB of freed memory in quarantine)
        assert peak_after - peak_before < (64 + (320 if ASAN else 0)) << 20, \
            "printing took %d MiB more memory" % ((peak_after - peak_before) >> 20)
        assert wrote_after - wrote_before < 1 << 20, \
            "the worker wrote %d MiB to send the output" % ((wrote_after - wrote_before) >> 20)
        assert_intact(k, token)
    finally:
        stop(k)


# --- file size -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sized(jupyter_dir, tmp_path_factory):
    ws = tmp_path_factory.mktemp("sized")
    k = boot(jupyter_dir, "--max-file", "10", cwd=ws)
    yield k, ws
    stop(k)


def test_writing_a_10_gb_file(sized):
    k, ws = sized
    token = plant(k)
    evalue, _ = expect_error(k, "with open('sparse.bin', 'wb') as f:\n"
                                "    f.seek(10 << 30)\n    f.write(b'x')", "OSError")
    assert evalue == "[Errno 27] File too large"
    assert (ws / "sparse.bin").stat().st_size == 0
    evalue, _ = expect_error(k, "chunk = bytes(1 << 20)\n"
                                "with open('big.bin', 'wb') as f:\n"
                                "    for i in range(10 << 10):  # 10 GiB\n"
                                "        f.write(chunk)", "OSError")
    assert evalue == "[Errno 27] File too large"
    assert (ws / "big.bin").stat().st_size == 10 << 20  # filled up to the limit
    assert_intact(k, token)
    # below the limit, files are written as usual
    k.run("with open('small.bin', 'wb') as f:\n    f.write(bytes(5 << 20))")
    assert (ws / "small.bin").stat().st_size == 5 << 20

