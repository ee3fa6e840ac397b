"""`sandpit serve` managing kernels: interrupt and restart, /api/sessions as
@jupyterlab/services uses it, the kernel limit raced by concurrent requests,
idle kernels culled, KERNEL_* variables and per-user workspaces, a kernel
that dies reported dead, /metrics, and SIGTERM."""

import concurrent.futures
import json
import os
import signal
import stat
import time

import pytest

from serve_helpers import Server, collect, execute, stdout_text, ws_connect
from sandpit_testing import SANDPIT

websocket = pytest.importorskip("websocket")


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


def run(ws, code):
    req = execute(code)
    ws.send(json.dumps(req))
    return collect(lambda: json.loads(ws.recv()), req["header"]["msg_id"])


def wait_for(pred, timeout=30):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("not within %s s" % timeout)


def test_interrupt_and_restart(server):
    kid = server.start_kernel()["id"]
    ws = ws_connect(server, kid)
    try:
        run(ws, "kept = 1")
        req = execute("import time\nprint('sleeping', flush=True)\ntime.sleep(60)")
        ws.send(json.dumps(req))
        for _ in range(50):
            m = json.loads(ws.recv())
            if m["msg_type"] == "stream":
                break
        assert server.call("GET", "/api/kernels/" + kid)[1]["execution_state"] == "busy"
        assert server.call("POST", "/api/kernels/%s/interrupt" % kid)[0] == 204
        msgs = collect(lambda: json.loads(ws.recv()), req["header"]["msg_id"])
        reply = [m for m in msgs if m["msg_type"] == "execute_reply"][0]
        assert reply["content"]["status"] == "error"
        assert reply["content"]["ename"] == "KeyboardInterrupt"
        assert "1\n" == stdout_text(run(ws, "print(kept)"))
        status, model = server.call("POST", "/api/kernels/%s/restart" % kid)
        assert status == 200 and model["id"] == kid
        msgs = run(ws, "print('kept' in dir())")
        assert stdout_text(msgs) == "False\n"
    finally:
        ws.close()
    server.call("DELETE", "/api/kernels/" + kid)


def test_sessions(server):
    status, s = server.call("POST", "/api/sessions", {
        "path": "work/a.ipynb", "name": "a.ipynb", "type": "notebook",
        "kernel": {"name": "sandpit"}})
    assert status == 201
    assert s["path"] == "work/a.ipynb" and s["type"] == "notebook"
    kid = s["kernel"]["id"]
    assert server.call("GET", "/api/kernels/" + kid)[0] == 200
    # The same path again: the same session.
    assert server.call("POST", "/api/sessions", {"path": "work/a.ipynb",
                                                 "kernel": {"name": "sandpit"}})[1]["id"] == s["id"]
    assert [x["id"] for x in server.call("GET", "/api/sessions")[1]] == [s["id"]]
    status, patched = server.call("PATCH", "/api/sessions/" + s["id"], {"path": "b.ipynb"})
    assert status == 200 and patched["path"] == "b.ipynb" and patched["kernel"]["id"] == kid
    assert server.call("GET", "/api/sessions/" + s["id"])[1]["path"] == "b.ipynb"
    assert server.call("GET", "/api/sessions/nope")[0] == 404
    assert server.call("DELETE", "/api/sessions/" + s["id"])[0] == 204
    assert server.call("GET", "/api/kernels/" + kid)[0] == 404
    assert server.call("GET", "/api/sessions")[1] == []


def test_the_kernel_limit_holds_against_a_race():
    s = Server("--max-kernels", "2")
    try:
        with concurrent.futures.ThreadPoolExecutor(20) as pool:
            results = list(pool.map(lambda _: s.call("POST", "/api/kernels", {}), range(20)))
        codes = sorted(r[0] for r in results)
        assert codes.count(201) == 2 and codes.count(403) == 18, codes
        assert all(set(r[1]) == {"reason", "message"} for r in results if r[0] == 403)
        assert len(s.call("GET", "/api/kernels")[1]) == 2
        # A place freed is a place taken again.
        kid = [r[1]["id"] for r in results if r[0] == 201][0]
        assert s.call("DELETE", "/api/kernels/" + kid)[0] == 204
        assert s.call("POST", "/api/kernels", {})[0] == 201
    finally:
        s.stop()


def test_idle_kernels_are_culled():
    s = Server("--cull-idle-timeout", "1")
    try:
        kid = s.start_kernel()["id"]
        wait_for(lambda: s.call("GET", "/api/kernels/" + kid)[0] == 404, 30)
        status, metrics = s.request("GET", "/metrics")
        assert b"sandpit_kernels_culled_total 1" in metrics
    finally:
        s.stop()


def test_kernel_env_and_per_user_workspaces(tmp_path):
    base = str(tmp_path)
    s = Server("--workspaces", base, "--pass-env", "KERNEL_COLOUR")
    try:
        for bad in ["../x", "a/b", "", ".hidden"]:
            status, body = s.call("POST", "/api/kernels", {"env": {"KERNEL_USERNAME": bad}})
            assert status == 400, (bad, status, body)
        assert s.call("POST", "/api/kernels", {})[0] == 400
        kid = s.start_kernel(env={"KERNEL_USERNAME": "alice", "KERNEL_COLOUR": "blue",
                                  "PATH": "/nowhere", "LD_PRELOAD": "/tmp/x.so"})["id"]
        home = os.path.join(base, "alice")
        st = os.stat(home)
        assert stat.S_ISDIR(st.st_mode) and st.st_mode & 0o777 == 0o700
        ws = ws_connect(s, kid)
        try:
            out = stdout_text(run(ws, "import os\nprint(os.getcwd())\n"
                                      "print(os.environ.get('KERNEL_COLOUR'))\n"
                                      "print(os.environ.get('LD_PRELOAD'))"))
        finally:
            ws.close()
        cwd, colour, preload = out.splitlines()
        assert os.path.realpath(cwd) == os.path.realpath(home)
        assert colour == "blue" and preload == "None"
    finally:
        s.stop()


def kernel_pids(server):
    """The server's child processes (its kernels' supervisors)."""
    pids = []
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open("/proc/%s/stat" % name) as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == server.proc.pid:
                pids.append(int(name))
    return pids


def test_a_kernel_that_dies_is_reported_dead():
    s = Server()
    try:
        kid = s.start_kernel()["id"]
        ws = ws_connect(s, kid)
        pids = kernel_pids(s)
        assert len(pids) == 1
        os.kill(pids[0], signal.SIGKILL)
        # Its client is told, and disconnected.
        dead = False
        try:
            for _ in range(20):
                data = ws.recv()
                if not data:  # the close frame
                    break
                m = json.loads(data)
                dead |= m["msg_type"] == "status" and m["content"]["execution_state"] == "dead"
        except (websocket.WebSocketException, OSError):
            pass
        assert dead
        assert s.call("GET", "/api/kernels/" + kid)[1]["execution_state"] == "dead"
        assert s.call("POST", "/api/kernels/%s/interrupt" % kid)[0] == 409
        assert s.call("DELETE", "/api/kernels/" + kid)[0] == 204
        assert s.call("GET", "/api/kernels/" + kid)[0] == 404
        assert s.call("GET", "/api")[0] == 200
    finally:
        s.stop()


def mapped_libraries(pid):
    """The base names of the shared objects a process maps."""
    with open("/proc/%d/maps" % pid) as f:
        paths = {line.split()[-1] for line in f if "/" in line}
    return {os.path.basename(p).split(".so")[0] for p in paths if ".so" in p}


def test_the_gateway_is_its_own_program_and_its_kernels_are_sandpits():
    # `sandpit serve` runs sandpit-serve, beside sandpit, in the same process;
    # its kernels are sandpit's own program, which does not load the gateway's
    # HTTP and TLS libraries.
    s = Server()
    try:
        s.start_kernel()
        exe = os.path.realpath("/proc/%d/exe" % s.proc.pid)
        assert exe == os.path.join(os.path.dirname(os.path.realpath(SANDPIT)), "sandpit-serve")
        assert "libwebsockets" in mapped_libraries(s.proc.pid)
        pids = kernel_pids(s)
        assert len(pids) == 1
        assert os.path.realpath("/proc/%d/exe" % pids[0]) == os.path.realpath(SANDPIT)
        assert not {"libwebsockets", "libssl"} & mapped_libraries(pids[0])
    finally:
        s.stop()


def test_sigterm_stops_the_kernels_and_the_server():
    s = Server()
    for _ in range(3):
        s.start_kernel()
    pids = kernel_pids(s)
    assert len(pids) == 3
    t0 = time.monotonic()
    assert s.stop(timeout=30) == 0
    assert time.monotonic() - t0 < 30
    for pid in pids:
        assert not os.path.exists("/proc/%d" % pid) or \
            open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0] == "Z"


def test_metrics_count_cells_and_time_limits():
    s = Server("--timeout", "1")
    try:
        kid = s.start_kernel()["id"]
        ws = ws_connect(s, kid)
        try:
            run(ws, "print(1)")
            msgs = run(ws, "import time\ntime.sleep(30)")
            reply = [m for m in msgs if m["msg_type"] == "execute_reply"][0]
            assert reply["content"]["ename"] == "TimeoutError"
        finally:
            ws.close()
        status, raw = s.request("GET", "/metrics")
        text = raw.decode()
        assert status == 200
        assert "sandpit_cells_total 2" in text
        assert "sandpit_cells_timed_out_total 1" in text
        assert 'sandpit_kernels{state="idle"} 1' in text
        assert "sandpit_http_request_seconds_count" in text
        assert s.request("GET", "/metrics", token=False)[0] == 401
    finally:
        s.stop()


def slow_venv(tmp_path, seconds):
    """A virtual environment whose module slowstart takes seconds to import:
    with --preload slowstart, each kernel takes that long to start."""
    import sys
    site = tmp_path / "venv" / "lib" / ("python%d.%d" % sys.version_info[:2]) / "site-packages"
    site.mkdir(parents=True)
    (site / "slowstart.py").write_text("import time\ntime.sleep(%d)\n" % seconds)
    (tmp_path / "venv" / "pyvenv.cfg").write_text("home = /usr/bin\n")
    return str(tmp_path / "venv")


def test_the_server_serves_while_a_kernel_starts(tmp_path):
    s = Server("--venv", slow_venv(tmp_path, 3), "--preload", "slowstart")
    try:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            first = s.start_kernel()["id"]  # waits for the slow start
            pending = pool.submit(s.call, "POST", "/api/kernels", {})
            # Meanwhile: the kernel is listed as starting, and the first one runs cells.
            starting = wait_for(lambda: [k for k in s.call("GET", "/api/kernels")[1]
                                         if k["execution_state"] == "starting"], 10)
            assert len(starting) == 1 and not pending.done()
            ws = ws_connect(s, first)
            try:
                assert stdout_text(run(ws, "print('meanwhile')")) == "meanwhile\n"
            finally:
                ws.close()
            assert not pending.done()
            assert s.call("POST", "/api/kernels/%s/interrupt" % starting[0]["id"])[0] == 409
            status, model = pending.result(60)
            assert status == 201 and model["id"] == starting[0]["id"]
            assert model["execution_state"] == "idle"
            # A kernel deleted while it starts: its request is answered, it is gone.
            pending = pool.submit(s.call, "POST", "/api/kernels", {})
            starting = wait_for(lambda: [k for k in s.call("GET", "/api/kernels")[1]
                                         if k["execution_state"] == "starting"], 10)
            assert s.call("DELETE", "/api/kernels/" + starting[0]["id"])[0] == 204
            status, body = pending.result(60)
            assert status == 500 and "shut down" in body["message"]
            assert s.call("GET", "/api/kernels/" + starting[0]["id"])[0] == 404
            assert len(s.call("GET", "/api/kernels")[1]) == 2
    finally:
        s.stop()


def test_a_session_waits_for_its_kernel_without_stopping_the_server(tmp_path):
    s = Server("--venv", slow_venv(tmp_path, 3), "--preload", "slowstart")
    try:
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pending = pool.submit(s.call, "POST", "/api/sessions",
                                  {"path": "n.ipynb", "type": "notebook",
                                   "kernel": {"name": "sandpit"}})
            listed = wait_for(lambda: s.call("GET", "/api/sessions")[1], 10)
            assert listed[0]["kernel"]["execution_state"] == "starting"
            assert not pending.done()
            status, session = pending.result(60)
            assert status == 201 and session["id"] == listed[0]["id"]
            assert session["kernel"]["execution_state"] == "idle"
            assert s.call("DELETE", "/api/sessions/" + session["id"])[0] == 204
    finally:
        s.stop()
