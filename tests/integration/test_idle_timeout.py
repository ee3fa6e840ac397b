"""Kernels that outlive their agents: `sandpit start --idle-timeout S` (the
kernel stops itself after S seconds with no request and no cell running),
`sandpit status --all` (every kernel of the user, from the runtime folder,
without a request to any), and `stop` leaving no lock file behind."""

import glob
import json
import os
import subprocess
import time

from sandpit_testing import SANDPIT


def sandpit(*args, cwd, env=None, timeout=120):
    return subprocess.run([SANDPIT, *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=timeout)


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def listed(runtime_env):
    out = sandpit("status", "--all", "--json", cwd="/", env=runtime_env)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["kernels"]


def test_an_idle_kernel_stops_itself_and_a_cell_is_not_idle(jupyter_dir, tmp_path):
    runtime = tmp_path / "runtime"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime))
    ws = tmp_path / "ws"
    ws.mkdir()
    started = sandpit("start", "--idle-timeout", "2", cwd=ws, env=env)
    assert started.returncode == 0, started.stderr
    try:
        status = json.loads(sandpit("status", "--json", cwd=ws, env=env).stdout)
        pid = status["pid"]
        kernels = [k for k in listed(env) if k["pid"] == pid]
        assert len(kernels) == 1 and kernels[0]["workspace"] == str(ws.resolve())
        assert kernels[0]["live"] is True and "idle_s" in kernels[0]
        # A cell longer than the limit is not idleness: it runs to its end.
        ran = sandpit("run", "import time\ntime.sleep(4)\nprint('finished')", cwd=ws,
                      env=env)
        assert ran.returncode == 0 and ran.stdout == "finished\n", ran.stdout + ran.stderr
        deadline = time.monotonic() + 60
        while alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not alive(pid), "the kernel did not stop after 2 s with no request"
        assert [k for k in listed(env) if k["pid"] == pid] == []
        assert glob.glob(str(runtime / "*.activity")) == []
    finally:
        sandpit("stop", cwd=ws, env=env)


def test_status_all_lists_a_busy_kernel_without_asking_it(jupyter_dir, tmp_path):
    runtime = tmp_path / "runtime"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime))
    ws = tmp_path / "ws"
    ws.mkdir()
    assert sandpit("start", cwd=ws, env=env).returncode == 0
    try:
        run = subprocess.Popen([SANDPIT, "run", "import time\ntime.sleep(60)"], cwd=ws,
                               env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
        deadline, busy = time.monotonic() + 60, []
        while not busy and time.monotonic() < deadline:
            busy = [k for k in listed(env) if k["busy"]]
            time.sleep(0.2)
        assert busy and busy[0]["workspace"] == str(ws.resolve()) and "busy_s" in busy[0]
        text = sandpit("status", "--all", cwd=ws, env=env).stdout
        assert "busy" in text and str(ws.resolve()) in text
        run.kill()
        run.wait()
    finally:
        sandpit("stop", cwd=ws, env=env)
    assert "no sandpit kernel is running" in sandpit("status", "--all", cwd=ws,
                                                       env=env).stdout


def test_stop_leaves_no_file_behind(jupyter_dir, tmp_path):
    runtime = tmp_path / "runtime"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime))
    ws = tmp_path / "ws"
    ws.mkdir()
    assert sandpit("start", cwd=ws, env=env).returncode == 0
    stopped = sandpit("stop", cwd=ws, env=env)
    assert stopped.returncode == 0, stopped.stderr
    assert sorted(os.listdir(runtime)) == []
    # stop without a kernel makes no lock file either
    sandpit("stop", cwd=ws, env=env)
    assert sorted(os.listdir(runtime)) == []


def test_the_agent_profile_sets_an_idle_limit(jupyter_dir, tmp_path):
    runtime = tmp_path / "runtime"
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(runtime))
    ws = tmp_path / "ws"
    ws.mkdir()
    assert sandpit("start", "--profile", "agent", cwd=ws, env=env).returncode == 0
    try:
        (state,) = glob.glob(str(runtime / "sandpit-*.state.json"))
        with open(state) as f:
            argv = json.load(f)["argv"]
        assert argv[argv.index("--idle-timeout") + 1] == "3600"
    finally:
        sandpit("stop", cwd=ws, env=env)
