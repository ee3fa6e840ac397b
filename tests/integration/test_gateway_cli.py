"""`sandpit start`, `run`, `status` and `stop`, as an agent or a script uses
them from a shell: a persistent sandboxed kernel per workspace, cells sent one
command at a time, state shared between them."""

import hashlib
import json
import os
import select
import stat
import subprocess

import pytest

from sandpit_testing import SANDPIT

LIMIT = 90


def sandpit(*args, cwd, input=None, check=None):
    """Runs `sandpit ARGS` in cwd; returns the CompletedProcess."""
    p = subprocess.run([SANDPIT, *args], cwd=str(cwd), input=input, capture_output=True,
                       text=True, timeout=LIMIT)
    if check is not None:
        assert p.returncode == check, (p.returncode, p.stdout, p.stderr)
    return p


def run_json(ws, *args, check=None, **kw):
    p = sandpit("run", "--json", *args, cwd=ws, check=check, **kw)
    return json.loads(p.stdout), p.returncode


def runtime_files(ws):
    digest = hashlib.sha256(os.path.realpath(ws).encode()).hexdigest()[:16]
    base = os.path.join(os.environ["JUPYTER_RUNTIME_DIR"], "sandpit-" + digest)
    return base + ".json", base + ".state.json"


@pytest.fixture
def ws(jupyter_dir, tmp_path):
    """A workspace; any kernel started for it is stopped after the test."""
    w = tmp_path / "ws"
    w.mkdir()
    yield w
    sandpit("stop", cwd=w)


def test_done_when_two_runs_share_state_and_a_chart_is_a_file(ws):
    p = sandpit("start", cwd=ws, check=0)
    conn, state = runtime_files(ws)
    assert p.stdout.strip() == conn
    assert stat.S_IMODE(os.stat(conn).st_mode) == 0o600
    info = json.load(open(conn))
    # ipc sockets in a private folder beside the file (tests/trusted/test_keyless.py)
    assert info["transport"] == "ipc" and len(info["key"]) >= 32
    assert info["ip"] == conn[:-len(".json")] + ".ipc/k"

    first, rc = run_json(ws, "numbers = [3, 1, 2]\nprint('sorted:', sorted(numbers))")
    assert rc == 0 and first["status"] == "ok"
    assert first["stdout"] == "sorted: [1, 2, 3]\n" and first["error"] is None

    second, rc = run_json(ws, "import matplotlib.pyplot as plt\n"
                              "plt.plot(numbers)\nlen(numbers)")
    assert rc == 0 and second["result"] == "3", "the second run sees the first's variable"
    assert second["execution_count"] == first["execution_count"] + 1
    assert len(second["files"]) == 1
    png = second["files"][0]
    n = second["execution_count"]
    assert png == str(ws / "outputs" / ("cell-%d-1.png" % n))
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert "iVBOR" not in json.dumps(second), "images are files, never inlined"
    kinds = [o["type"] for o in second["outputs"]]
    assert "display_data" in kinds and "execute_result" in kinds

    p = sandpit("stop", cwd=ws, check=0)
    assert "stopped" in p.stdout
    assert not os.path.exists(conn) and not os.path.exists(state)
    p = sandpit("run", "print(1)", cwd=ws, check=2)
    assert "no kernel is running" in p.stderr and "sandpit start" in p.stderr


def test_errors_text_mode_code_sources_and_cuts(ws, tmp_path):
    sandpit("start", cwd=ws, check=0)
    out, rc = run_json(ws, "def f():\n    raise ValueError('bad value')\nf()")
    assert rc == 1 and out["status"] == "error"
    assert out["error"]["ename"] == "ValueError" and out["error"]["evalue"] == "bad value"
    tb = "".join(out["error"]["traceback"])
    assert "ValueError: bad value" in tb and "\x1b[" not in tb, "colour codes are removed"

    # As text: streams as they come, the traceback on stderr, exit status 1.
    p = sandpit("run", "print('out'); import sys; print('err', file=sys.stderr); 1/0",
                cwd=ws, check=1)
    assert p.stdout == "out\n"
    assert "err\n" in p.stderr and "ZeroDivisionError: division by zero" in p.stderr

    # Code from a file and from standard input.
    script = tmp_path / "cell.py"
    script.write_text("value = 'from a file'\nprint(value)\n")
    assert sandpit("run", "-f", str(script), cwd=ws, check=0).stdout == "from a file\n"
    assert sandpit("run", cwd=ws, input="print(value.upper())\n", check=0).stdout == \
        "FROM A FILE\n"

    # Long text is cut, saying how much.
    out, rc = run_json(ws, "--max-chars", "100", "print('x' * 5000)")
    assert rc == 0 and len(out["stdout"]) < 200
    assert "4901 characters cut" in out["stdout"]
    assert out["stdout"].startswith("x" * 50) and out["stdout"].endswith("x\n")

    # --timeout is the request's own limit.
    out, rc = run_json(ws, "--timeout", "1", "import time\ntime.sleep(30)")
    assert rc == 1 and out["error"]["ename"] == "TimeoutError"
    assert "1 s" in out["error"]["evalue"]

    # Bad use is a clear error with status 2.
    p = sandpit("run", "--max-chars", "lots", "1", cwd=ws, check=2)
    assert "--max-chars" in p.stderr
    p = sandpit("run", "--json", cwd=ws, input="", check=0)  # an empty cell is fine


def test_status_reports_limits_and_layers(ws):
    p = sandpit("status", "--json", cwd=ws, check=1)
    assert json.loads(p.stdout)["live"] is False
    sandpit("start", "--profile", "agent", "--timeout", "12", "--seed", "5", cwd=ws, check=0)
    s = json.loads(sandpit("status", "--json", cwd=ws, check=0).stdout)
    assert s["live"] is True and s["workspace"] == str(ws.resolve())
    assert s["limits"]["timeout"] == 12, "an explicit option wins over the profile"
    assert s["limits"]["max_output_bytes"] == 1000000 and s["limits"]["memory_mib"] == 2048
    assert s["limits"]["network"] is False
    names = [layer["name"] for layer in s["layers"]]
    assert "seccomp" in names and "landlock" in names
    assert all(layer["state"] != "pending" for layer in s["layers"]), \
        "start waits until the worker runs"
    os.kill(s["pid"], 0)
    text = sandpit("status", cwd=ws, check=0).stdout
    assert "running, pid %d" % s["pid"] in text and "time per cell    12 s" in text

    # A second start finds the running kernel and keeps it.
    p = sandpit("start", cwd=ws, check=0)
    assert "already running" in p.stderr
    assert json.loads(sandpit("status", "--json", cwd=ws).stdout)["pid"] == s["pid"]


def test_interrupt_and_restart_between_commands(ws):
    sandpit("start", "--seed", "11", cwd=ws, check=0)
    first, _ = run_json(ws, "import random\nkeep = 1\nrandom.random()")
    sleeper = subprocess.Popen([SANDPIT, "run", "import time\nprint('sleeping', flush=True)\n"
                                "time.sleep(60)"],
                               cwd=str(ws), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    # Interrupt once the cell says it runs: text mode prints streams as they come.
    ready, _, _ = select.select([sleeper.stdout], [], [], LIMIT)
    assert ready and sleeper.stdout.readline() == "sleeping\n"
    sandpit("run", "--interrupt", cwd=ws, check=0)
    _, err = sleeper.communicate(timeout=LIMIT)
    assert sleeper.returncode == 1 and "KeyboardInterrupt" in err
    assert run_json(ws, "keep")[0]["result"] == "1", "an interrupt keeps the variables"

    sandpit("run", "--restart", cwd=ws, check=0)
    out, rc = run_json(ws, "import random\nrandom.random()")
    assert out["result"] == first["result"], "--seed repeats the numbers after a restart"
    out, rc = run_json(ws, "keep")
    assert rc == 1 and out["error"]["ename"] == "NameError"


def proc_start_time(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])


def test_restart_starts_again_a_kernel_that_exits(ws):
    """A kernel that exits on a restart request, as the messaging spec says a
    kernel does, is started again by `run --restart` with the same command
    line and connection file. ipykernel, which does exit, stands in for it in
    the workspace's state files, as `sandpit start` would have written them."""
    from jupyter_client.connect import write_connection_file
    conn, state = runtime_files(ws)
    os.makedirs(os.path.dirname(conn), exist_ok=True)
    write_connection_file(conn, ip="127.0.0.1")
    argv = ["/usr/bin/python3", "-m", "ipykernel_launcher", "-f", conn]
    first = subprocess.Popen(argv, cwd=str(ws), stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
    try:
        with open(state, "w") as f:
            json.dump({"pid": first.pid, "start_time": proc_start_time(first.pid),
                       "workspace": str(ws), "connection_file": conn, "argv": argv}, f)
        out, rc = run_json(ws, "x = 5\nx")
        assert rc == 0 and out["result"] == "5"
        p = sandpit("run", "--restart", "print('x' in globals())", cwd=ws, check=0)
        assert p.stdout == "False\n"
        assert first.wait(timeout=LIMIT) is not None, "ipykernel exited on the restart"
        new = json.load(open(state))
        assert new["pid"] != first.pid and new["argv"] == argv
        os.kill(new["pid"], 0)
        assert run_json(ws, "y = 1\ny")[0]["result"] == "1"
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()


def test_run_reaches_a_kernel_by_its_connection_file_from_another_folder(jupyter_dir,
                                                                         tmp_path):
    """`run --connection-file F` joins a kernel that jupyter_client started (its
    workspace elsewhere): the cell runs in that kernel, with its variables and
    its folder, and the folder run is called from needs no kernel of its own.
    Once that kernel is gone, run could not run the cell: status 2."""
    from sandpit_testing import start, stop
    kernel_ws, elsewhere = tmp_path / "kernel-ws", tmp_path / "elsewhere"
    kernel_ws.mkdir()
    elsewhere.mkdir()
    k = start("sandpit", cwd=str(kernel_ws))
    try:
        k.run("shared = 'set by jupyter_client'")
        conn = k.km.connection_file
        out, rc = run_json(elsewhere, "--connection-file", conn,
                           "import os\nprint(os.getcwd())\nshared")
        assert rc == 0 and out["status"] == "ok", out
        assert out["result"] == "'set by jupyter_client'"
        assert out["stdout"] == str(kernel_ws.resolve()) + "\n", "the kernel's own folder"
        assert not os.path.exists(runtime_files(elsewhere)[1]), \
            "no state file: the kernel is not the folder's"
        # its error is a failure of the cell, as with the workspace's kernel
        out, rc = run_json(elsewhere, "--connection-file", conn, "missing_name")
        assert rc == 1 and out["error"]["ename"] == "NameError"
        assert k.value("shared") == "'set by jupyter_client'", "the kernel lives on"
    finally:
        stop(k)
    p = sandpit("run", "--connection-file", conn, "1", cwd=elsewhere, check=2)
    assert "cannot open connection file %s" % conn in p.stderr, p.stderr


def test_outdir_is_where_the_charts_go(ws, tmp_path):
    """`--outdir D` (made with its parents, relative to where run is called)
    holds the chart's PNG, and `files` lists it there by its real path."""
    sandpit("start", cwd=ws, check=0)
    chart = "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()"
    out, rc = run_json(ws, "--outdir", "charts/today", chart)
    assert rc == 0 and len(out["files"]) == 1, out
    n = out["execution_count"]
    png = ws / "charts" / "today" / ("cell-%d-1.png" % n)
    assert out["files"] == [str(png.resolve())]
    assert open(png, "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert not (ws / "outputs").exists(), "the default folder is not used"

    beside = tmp_path / "beside"  # outside the workspace: the client writes it, not the cell
    out, rc = run_json(ws, "--outdir", str(beside), chart)
    assert rc == 0 and out["files"] == [str(beside.resolve() / ("cell-%d-1.png"
                                                                 % out["execution_count"]))]
    assert os.path.getsize(out["files"][0]) > 100


READ_OR_WRITE = r"""
import errno
def attempt(what, path):
    try:
        if what == "read":
            with open(path) as f:
                return f.read()
        with open(path, "w") as f:
            f.write("x")
        return "written"
    except OSError as e:
        return errno.errorcode[e.errno]
"""


def layer_active(ws, name):
    layers = json.loads(sandpit("status", "--json", cwd=ws, check=0).stdout)["layers"]
    return [x for x in layers if x["name"] == name][0]["state"] == "active"


def test_start_read_gives_a_folder_to_read_and_never_write(ws, tmp_path):
    """`start --read DIR` (relative to where start is called): a cell run with
    `sandpit run` reads a file in DIR and cannot write there, while a folder
    beside it that was not given stays unreadable."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "table.csv").write_text("a,b\n1,2\n")
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "notes.txt").write_text("not yours")
    sandpit("start", "--read", "../data", cwd=ws, check=0)
    status = json.loads(sandpit("status", "--json", cwd=ws, check=0).stdout)
    assert status["live"] is True
    run_json(ws, READ_OR_WRITE, check=0)

    def attempt(what, path):
        out, rc = run_json(ws, "attempt(%r, %r)" % (what, str(path)), check=0)
        return eval(out["result"])

    assert attempt("read", tmp_path / "data" / "table.csv") == "a,b\n1,2\n"
    if layer_active(ws, "landlock") or layer_active(ws, "mount-namespace"):
        assert attempt("write", tmp_path / "data" / "table.csv") in ("EACCES", "EROFS")
        assert attempt("write", tmp_path / "data" / "new.csv") in ("EACCES", "EROFS")
        assert (tmp_path / "data" / "table.csv").read_text() == "a,b\n1,2\n"
        assert not (tmp_path / "data" / "new.csv").exists()
    if layer_active(ws, "landlock"):
        assert attempt("read", tmp_path / "private" / "notes.txt") == "EACCES", \
            "only the folder given to --read is readable"


def test_start_venv_makes_its_packages_importable(ws, tmp_path):
    """`start --venv DIR`: a cell run with `sandpit run` imports the
    environment's packages, and cannot change them."""
    import sysconfig
    import venv
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False).create(str(env_dir))
    site = env_dir / "lib" / ("python" + sysconfig.get_python_version()) / "site-packages"
    (site / "envpkg.py").write_text("WHERE = 'the venv'\n")
    sandpit("start", "--venv", str(env_dir), cwd=ws, check=0)
    out, rc = run_json(ws, "import envpkg\nenvpkg.WHERE")
    assert rc == 0 and out["result"] == "'the venv'", out
    run_json(ws, READ_OR_WRITE, check=0)
    if layer_active(ws, "landlock") or layer_active(ws, "mount-namespace"):
        out, _ = run_json(ws, "attempt('write', %r)" % str(site / "envpkg.py"), check=0)
        assert eval(out["result"]) in ("EACCES", "EROFS")
        assert (site / "envpkg.py").read_text() == "WHERE = 'the venv'\n"


def test_a_code_file_is_never_read_through_a_link_or_a_fifo(tmp_path):
    """`run -f FILE` reads a file a cell may have written (one in the workspace): a
    link there is refused, not followed to a file the sandbox hides from cells,
    and a FIFO is refused at once rather than waited on. No kernel is needed:
    the code is read before the kernel is reached."""
    secret = tmp_path / "hidden-from-cells.txt"
    secret.write_text("print('what the sandbox hides')\n")
    link = tmp_path / "cell.py"
    link.symlink_to(secret)
    fifo = tmp_path / "cell.fifo"
    os.mkfifo(fifo)
    conn = str(tmp_path / "no-such-kernel.json")
    for path, words in ((link, "a symbolic link is in the way"),
                        (fifo, "not a regular file")):
        p = sandpit("run", "--connection-file", conn, "-f", str(path), cwd=tmp_path)
        assert p.returncode == 2, (p.stdout, p.stderr)
        assert "cannot read the code from %s: %s" % (path, words) in p.stderr, p.stderr

