"""`sandpit mcp`'s details, driven over stdio JSON-RPC as a client drives it:
workspace_read of text that is not UTF-8 and of a byte range, --max-chars,
labelled streams, the reason a start failed, and a runaway cell when the
client closes standard input."""

import json
import os
import select
import shutil
import subprocess
import time

from sandpit_testing import SANDPIT

INIT = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "t", "version": "0"}}}


def call(i, name, args, meta=None):
    params = {"name": name, "arguments": args}
    if meta:
        params["_meta"] = meta
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": params}


def by_hand(ws, calls, *extra, binary=SANDPIT):
    """Sends initialize and the calls, closes stdin; the replies by id."""
    lines = [INIT] + [call(i, name, args) for i, (name, args) in enumerate(calls, 1)]
    proc = subprocess.run([binary, "mcp", "--workspace", str(ws), *extra],
                          input="".join(json.dumps(x) + "\n" for x in lines),
                          capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    return {r.get("id"): r for r in map(json.loads, proc.stdout.splitlines())}, proc.stderr


def texts(reply):
    return [c["text"] for c in reply["result"]["content"] if c["type"] == "text"]


def test_workspace_read_refuses_what_is_not_utf8(jupyter_dir, tmp_path):
    """An overlong NUL, a surrogate, a 5-byte form, a cut sequence and a NUL:
    each a clear error that says where, never an empty success."""
    files = {"overlong.txt": b"ab\xc0\x80cd", "surrogate.txt": b"x\xed\xa0\x80",
             "five.txt": b"\xf8\x88\x80\x80\x80", "cut.txt": b"abc\xe2\x82",
             "nul.txt": b"a\x00b", "past.txt": b"\xf4\x90\x80\x80",
             "good.txt": "kosme κόσμε \U0010ffff\n".encode()}
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    names = list(files)
    replies, _ = by_hand(tmp_path, [("workspace_read", {"path": n}) for n in names])
    for i, name in enumerate(names, 1):
        result = replies[i]["result"]
        if name == "good.txt":
            assert not result["isError"]
            assert texts(replies[i]) == ["kosme κόσμε \U0010ffff\n"]
            continue
        assert result["isError"], (name, result)
        text = "".join(texts(replies[i]))
        assert "is not UTF-8 text" in text and name in text, text
    assert "byte 2 of its 6" in "".join(texts(replies[1]))
    assert "a NUL" in "".join(texts(replies[names.index("nul.txt") + 1]))


def test_workspace_read_takes_a_bounded_range(jupyter_dir, tmp_path):
    (tmp_path / "log.txt").write_text("".join(f"line {i:05d}\n" for i in range(20000)))
    (tmp_path / "accents.txt").write_text("é" * 50)
    replies, _ = by_hand(tmp_path, [
        ("workspace_read", {"path": "log.txt"}),
        ("workspace_read", {"path": "log.txt", "offset": 11 * 100, "length": 22}),
        ("workspace_read", {"path": "accents.txt", "offset": 1, "length": 6}),
        ("workspace_read", {"path": "log.txt", "length": 10 ** 7}),
        ("workspace_read", {"path": "log.txt", "offset": -1}),
        ("workspace_read", {"path": "log.txt", "offset": 10 ** 6}),
    ])
    first = texts(replies[1])
    assert len(first[0]) == 100000 and first[0].startswith("line 00000\n")
    assert "bytes 0 to 100000 of 220000" in first[1] and '"offset": 100000' in first[1]
    assert texts(replies[2])[0] == "line 00100\nline 00101\n"
    # a range moved to whole characters at both ends
    accents = texts(replies[3])
    assert accents[0] == "éé" and "bytes 2 to 6 of 100" in accents[1]
    assert replies[4]["error"]["code"] == -32602
    assert replies[5]["error"]["code"] == -32602
    assert replies[6]["result"]["isError"] and "past the end" in texts(replies[6])[0]


def test_max_chars_and_labelled_streams(jupyter_dir, tmp_path):
    code = "import sys\nprint('o' * 500)\nprint('e' * 500, file=sys.stderr)\n'r' * 500"
    replies, _ = by_hand(tmp_path, [("python_exec", {"code": code})], "--max-chars", "100")
    out, err, result = texts(replies[1])
    assert out.startswith("[stdout]\nooo") and out.rstrip().endswith("ooo")
    assert err.startswith("[stderr]\neee")
    for t in (out, err, result):
        assert "characters cut" in t and len(t) < 200, t
    replies, _ = by_hand(tmp_path, [("python_exec", {"code": code})], "--max-chars", "0")
    assert texts(replies[1])[0] == "[stdout]\n" + "o" * 500 + "\n"
    proc = subprocess.run([SANDPIT, "mcp", "--max-chars", "lots"], input="",
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--max-chars" in proc.stderr


def test_a_start_failure_says_why(jupyter_dir, tmp_path):
    """Without its worker beside it, the kernel cannot start: the result
    quotes the kernel's own reason."""
    lone = tmp_path / "bin"
    lone.mkdir()
    shutil.copy(SANDPIT, lone / "sandpit")
    ws = tmp_path / "ws"
    ws.mkdir()
    replies, _ = by_hand(ws, [("python_exec", {"code": "1"})], binary=str(lone / "sandpit"))
    text = "".join(texts(replies[1]))
    assert replies[1]["result"]["isError"]
    assert "could not start" in text and "sandpit-worker" in text, text


def children(pid):
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            out += [int(p) for p in f.read().split()]
    return out


def gone(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def test_closing_stdin_ends_a_runaway_cell(jupyter_dir, tmp_path):
    """No --timeout, a cell that ignores interrupts, and the client goes away:
    the server interrupts the cell, then ends it with its kernel, and exits."""
    proc = subprocess.Popen([SANDPIT, "mcp", "--workspace", str(tmp_path)],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    try:
        code = ("import signal, sys\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\n"
                "print('spinning', flush=True)\nwhile True:\n    try:\n        pass\n"
                "    except BaseException:\n        pass\n")
        for msg in (INIT, call(1, "python_exec", {"code": code}, {"progressToken": "t"})):
            proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()
        deadline, seen = time.monotonic() + 120, b""
        while b"spinning" not in seen and time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1)
            if ready:
                seen += os.read(proc.stdout.fileno(), 65536)
        assert b"spinning" in seen, seen
        kernels = children(proc.pid)
        assert kernels
        proc.stdin.close()
        proc.wait(timeout=90)
        out, err = proc.stdout.read(), proc.stderr.read()
        assert proc.returncode == 0, err
        reply = json.loads([line for line in (seen + out).splitlines()
                            if b'"id":1' in line][0])
        assert reply["result"]["isError"]
        # Ended by the server (the kernel with it), or by the kernel's own
        # escalation after the interrupt where it has one: ended either way.
        text = "".join(texts(reply))
        assert "did not stop when interrupted" in text or "WorkerDied" in text, text
        deadline = time.monotonic() + 30
        while not all(map(gone, kernels)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert all(map(gone, kernels)), "the kernel outlived the server"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_an_idle_kernel_goes_and_the_next_call_says_it_is_fresh(jupyter_dir, tmp_path):
    proc = subprocess.Popen([SANDPIT, "mcp", "--workspace", str(tmp_path), "--idle-timeout",
                             "2"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)

    def ask(msg):
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()
        while True:  # bounded by the read's own end: the server answers each request
            reply = json.loads(proc.stdout.readline())
            if reply.get("id") == msg["id"]:
                return reply

    try:
        ask(INIT)
        assert texts(ask(call(1, "python_exec", {"code": "kept = 1\nprint(kept)"}))) == [
            "[stdout]\n1\n"]
        kernels = children(proc.pid)
        deadline = time.monotonic() + 60
        while not all(map(gone, kernels)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert kernels and all(map(gone, kernels)), "the idle kernel did not stop"
        note, out = texts(ask(call(2, "python_exec", {"code": "print('kept' in globals())"})))
        assert "fresh interpreter" in note and out == "[stdout]\nFalse\n"
    finally:
        proc.stdin.close()
        proc.wait(timeout=60)
