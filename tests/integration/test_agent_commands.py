"""What an agent's harness meets with `sandpit start`, `run` and `status`
(issue 28, items 9 to 14): a busy kernel is live and says which cell runs; a
run queued behind a long cell waits its turn; --json always prints one object;
SIGTERM and SIGHUP interrupt the cell of the run they end; the agent profile
lets the result and the end of a long log through; charts of an earlier
session are never overwritten; a sub-folder finds its workspace's kernel."""

import json
import os
import signal
import subprocess
import time

import pytest

from sandpit_testing import SANDPIT

TIMEOUT = 120


@pytest.fixture
def env(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    return dict(os.environ, HOME=str(home), JUPYTER_RUNTIME_DIR=str(tmp_path / "rt"))


def sandpit(env, *args, cwd=None, timeout=TIMEOUT):
    return subprocess.run([SANDPIT, *args], env=env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)


@pytest.fixture
def start(env, tmp_path):
    """Starts a kernel for tmp_path/ws with the options given; stops it after."""
    ws = tmp_path / "ws"
    ws.mkdir()

    def start(*options):
        p = sandpit(env, "start", "--workspace", str(ws), *options)
        assert p.returncode == 0, p.stderr
        return ws
    yield start
    sandpit(env, "stop", "--workspace", str(ws))


@pytest.fixture
def kernel(start):
    return start()


def run_json(env, ws, code, *args, cwd=None):
    p = sandpit(env, "run", "--json", "--workspace", str(ws), *args, code, cwd=cwd)
    assert p.returncode in (0, 1), (p.stdout, p.stderr)
    return json.loads(p.stdout)


def wait_for(path, proc=None, limit=60):
    for _ in range(int(limit * 10)):
        if path.exists():
            return
        if proc is not None and proc.poll() is not None:
            pytest.fail("the run ended first: %s %s" % proc.communicate())
        time.sleep(0.1)
    pytest.fail("%s never appeared" % path)


# A cell that says it runs, then waits for the test's go (bounded).
HOLD = """
import os, time
open('running', 'w').close()
for i in range(1200):
    if os.path.exists('go'):
        break
    time.sleep(0.1)
'held'
"""


def popen_run(env, ws, code, *args, cwd=None):
    return subprocess.Popen([SANDPIT, "run", "--json", *args, code], env=env,
                            cwd=cwd or ws, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)


def test_a_busy_kernel_is_live_and_a_queued_run_waits_its_turn(env, kernel):
    ws = kernel
    held = popen_run(env, ws, HOLD)
    queued = None
    try:
        wait_for(ws / "running", held)
        # past the 10 s that status used to wait on shell for a busy kernel
        time.sleep(11)
        p = sandpit(env, "status", "--json", "--workspace", str(ws))
        assert p.returncode == 0, (p.stdout, p.stderr)
        s = json.loads(p.stdout)
        assert s["live"] is True and s["busy"] is True, s
        assert s["running"]["execution_count"] == 1
        assert s["running"]["seconds"] >= 0
        text = sandpit(env, "status", "--workspace", str(ws))
        assert text.returncode == 0
        assert "running, pid %d" % s["pid"] in text.stdout
        assert "busy             cell [1] running for" in text.stdout
        # a run behind it: past the 30 s after which it used to give up
        queued = popen_run(env, ws, "1 + 1")
        time.sleep(32)
        assert queued.poll() is None, queued.communicate()
        (ws / "go").touch()
        out, err = queued.communicate(timeout=TIMEOUT)
        assert queued.returncode == 0, (out, err)
        assert json.loads(out)["result"] == "2"
        out, err = held.communicate(timeout=TIMEOUT)
        assert json.loads(out)["result"] == "'held'"
        s = json.loads(sandpit(env, "status", "--json", "--workspace", str(ws)).stdout)
        assert s["live"] is True and s["busy"] is False and s["running"] is None
    finally:
        (ws / "go").touch()
        for p in (held, queued):
            if p is not None and p.poll() is None:
                p.kill()
                p.communicate()


def test_json_prints_an_object_when_no_kernel_runs(env, tmp_path):
    ws = tmp_path / "nothing"
    ws.mkdir()
    p = sandpit(env, "run", "--json", "--workspace", str(ws), "1")
    assert p.returncode == 2
    out = json.loads(p.stdout)
    assert out["status"] == "unavailable"
    assert "no kernel is running for %s" % ws in out["reason"]
    p = sandpit(env, "run", "--json", "--timeout", "soon", "1")
    assert p.returncode == 2
    assert json.loads(p.stdout)["status"] == "unavailable"
    p = sandpit(env, "run", "--json", "--workspace", str(ws / "missing"), "1")
    assert p.returncode == 2 and json.loads(p.stdout)["status"] == "unavailable"
    p = sandpit(env, "status", "--json", "--workspace", str(ws / "missing"))
    assert p.returncode == 2
    out = json.loads(p.stdout)
    assert out["live"] is False and out["status"] == "unavailable", out


def test_json_prints_an_object_when_the_kernel_exits_while_the_cell_runs(env, kernel):
    ws = kernel
    pid = json.loads(sandpit(env, "status", "--json", "--workspace", str(ws)).stdout)["pid"]
    held = popen_run(env, ws, HOLD)
    try:
        wait_for(ws / "running", held)
        os.kill(pid, signal.SIGKILL)
        out, err = held.communicate(timeout=TIMEOUT)
    finally:
        (ws / "go").touch()
        if held.poll() is None:
            held.kill()
            held.communicate()
    assert held.returncode == 2, (out, err)
    j = json.loads(out)
    assert j["status"] == "unavailable" and "exited" in j["reason"], j


def queued_behind(env, ws, count):
    """Waits until count cells wait behind the running one."""
    for _ in range(600):
        s = json.loads(sandpit(env, "status", "--json", "--workspace", str(ws)).stdout)
        if (s.get("running") or {}).get("queued") == count:
            return
        time.sleep(0.1)
    pytest.fail("the cells were never queued: %s" % s)


def test_a_cell_whose_run_was_killed_before_its_turn_does_not_run(env, kernel):
    ws = kernel
    held = popen_run(env, ws, HOLD)
    queued = []
    try:
        wait_for(ws / "running", held)
        for sig, name in ((signal.SIGKILL, "killed"), (signal.SIGTERM, "termed")):
            p = popen_run(env, ws, "open(%r, 'w').close()" % name)
            queued.append(p)
            queued_behind(env, ws, len(queued))
        for p, sig in zip(queued, (signal.SIGKILL, signal.SIGTERM)):
            p.send_signal(sig)
            out, err = p.communicate(timeout=TIMEOUT)
        assert p.returncode == 2
        j = json.loads(out)
        assert j["status"] == "unavailable" and "will not run" in j["reason"], j
        kept = popen_run(env, ws, "open('kept', 'w').close()")
        queued.append(kept)
        queued_behind(env, ws, 3)
        (ws / "go").touch()
        out, err = kept.communicate(timeout=TIMEOUT)
        assert kept.returncode == 0, (out, err)
        held.communicate(timeout=TIMEOUT)
    finally:
        (ws / "go").touch()
        for p in [held] + queued:
            if p.poll() is None:
                p.kill()
                p.communicate()
    assert (ws / "kept").exists()
    assert not (ws / "killed").exists()
    assert not (ws / "termed").exists()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_ending_run_with_a_signal_interrupts_its_cell(env, kernel, sig):
    ws = kernel
    code = ("import time\nopen('running', 'w').close()\n"
            "for i in range(1200):\n    time.sleep(0.1)\n")
    p = popen_run(env, ws, code)
    try:
        wait_for(ws / "running", p)
        p.send_signal(sig)
        out, err = p.communicate(timeout=TIMEOUT)
    finally:
        if p.poll() is None:
            p.kill()
            p.communicate()
    assert p.returncode == 1, (out, err)
    j = json.loads(out)
    assert j["status"] == "error" and j["error"]["ename"] == "KeyboardInterrupt", j
    # the cell stopped, and its variables are kept: i no longer grows
    first = run_json(env, ws, "i")
    assert first["status"] == "ok" and int(first["result"]) < 1199, first
    assert run_json(env, ws, "i")["result"] == first["result"]


def test_agent_profile_keeps_the_result_and_the_end_of_a_long_log(env, start):
    ws = start("--profile", "agent")
    out = run_json(env, ws, "for i in range(5000):\n    print('line', i)\n'the end'")
    assert out["status"] == "ok", out
    assert out["result"] == "'the end'"
    assert out["stdout"].startswith("line 0\nline 1\n")
    assert out["stdout"].endswith("line 4999\n")
    assert "characters cut ...]" in out["stdout"]


def test_as_text_a_long_log_keeps_its_beginning_and_end(env, start):
    ws = start("--profile", "agent")
    p = sandpit(env, "run", "--workspace", str(ws), "--max-chars", "100",
                "for i in range(5000):\n    print('line', i)\n'the end'")
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("line 0\nline 1\n")
    assert "characters cut ...]\n" in p.stdout
    assert p.stdout.endswith("line 4998\nline 4999\n'the end'\n")
    assert len(p.stdout) < 200


def test_a_result_past_the_kernels_cap_comes_through_cut(env, start):
    ws = start("--max-output", "10000")
    out = run_json(env, ws, "print('x' * 20000)\n'a' * 3000 + 'b' * 100000 + 'c' * 3000")
    assert out["status"] == "ok", out
    r = out["result"]
    assert r.startswith("'aaa") and r.endswith("ccc'"), r[:80]
    assert "bytes cut ...]" in r and len(r) < 5000
    assert "output limit of 10000 bytes reached" in out["stderr"]


SVG = "<svg xmlns='http://www.w3.org/2000/svg'><text>%s</text></svg>"


def test_an_earlier_sessions_chart_is_never_overwritten(env, kernel):
    ws = kernel
    cell = "display({'image/svg+xml': %r, 'text/plain': 'c'}, raw=True)"
    first = run_json(env, ws, cell % (SVG % "first"))
    [f1] = first["files"]
    again = run_json(env, ws, cell % (SVG % "second"), "--restart")
    [f2] = again["files"]
    assert again["execution_count"] == first["execution_count"] == 1
    assert f1 != f2
    with open(f1) as f:
        assert "first" in f.read()
    with open(f2) as f:
        assert "second" in f.read()


def test_a_sub_folder_finds_its_workspaces_kernel(env, kernel):
    ws = kernel
    sub = ws / "task" / "deeper"
    sub.mkdir(parents=True)
    p = subprocess.run([SANDPIT, "run", "--json", "import os; os.getcwd()"], env=env,
                       cwd=sub, capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 0, (p.stdout, p.stderr)
    assert json.loads(p.stdout)["status"] == "ok"
    assert "the kernel of the enclosing workspace %s" % ws in p.stderr
    s = subprocess.run([SANDPIT, "status", "--json"], env=env, cwd=sub,
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert s.returncode == 0 and json.loads(s.stdout)["workspace"] == str(ws)
    # with --workspace naming the sub-folder itself, it is that folder's alone
    p = sandpit(env, "run", "--json", "--workspace", str(sub), "1")
    assert p.returncode == 2 and "no kernel is running" in json.loads(p.stdout)["reason"]


def test_status_tells_a_kernel_that_does_not_answer_from_none(env, kernel):
    ws = kernel
    pid = json.loads(sandpit(env, "status", "--json", "--workspace", str(ws)).stdout)["pid"]
    os.kill(pid, signal.SIGSTOP)
    try:
        p = sandpit(env, "status", "--workspace", str(ws))
    finally:
        os.kill(pid, signal.SIGCONT)
    assert p.returncode == 1
    assert "pid %d is there but does not answer" % pid in p.stdout
