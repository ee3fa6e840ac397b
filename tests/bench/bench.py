"""make bench: sandpit, ipykernel and a null kernel side by side, with ratios.

    make bench
    /usr/bin/python3 tests/bench/bench.py --sandpit build/sandpit \\
        --null-kernel build/bench-null-kernel --client build/bench-client

Three kernels are started from kernelspecs, as Jupyter starts them: sandpit;
ipykernel (Debian's, on /usr/bin/python3); and the null kernel
(tests/bench/null_kernel.c), which answers every cell at once with fixed
replies over sandpit's own protocol layer, so that the floor of each figure
is measured in the same run, on the same machine, in the same state, never
assumed. Most figures are taken by the C client (tests/bench/bench_client.c,
on sandpit's client library), so that they measure kernels rather than a
Python client (its round trips in turns, on the kernels running side by side,
so that the floor and the ratios come from the same minutes of the machine);
the round trip is also taken through jupyter_client and
through a bare pyzmq client, and restart through jupyter_client's
restart_kernel(), as users meet them.

It prints one table (each figure with the issue's target beside it, and
whether it is met), the machine (cores, CPU model, load average before and
after), and writes every raw number to a JSON file (--json, by default
build/bench.json). Medians of many cells or several starts: the machine may
be shared, so compare figures of one run, not of two. Nothing here asserts:
this is a measurement, not a test; --quick runs every step with tiny counts
(the tests use it so that this code cannot rot).
"""

import argparse
import hashlib
import hmac
import json
import os
import platform
import queue
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid

PYTHON = "/usr/bin/python3"
KERNELS = ("sandpit", "ipykernel", "null")
MiB = 1 << 20

# What the figures of large outputs send: 50 MB in one write of 100-byte lines,
# a 10 MB PNG (random bytes behind a PNG signature), 100,000 printed lines and
# 1,000 displays. Each is checked to the byte by the client.
WRITE_SETUP = 'import sys\ns = ("x" * 99 + "\\n") * {lines}'
WRITE_CODE = "sys.stdout.write(s)"
PNG_SETUP = ("import os\nfrom IPython.display import Image\n"
             "img = Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + os.urandom({size} - 8), format='png')")
PNG_CODE = "display(img)"
LINES_CODE = "for i in range({n}):\n    print(i)"
# Seconds a kernel is left idle before each in-place restart and crash that is
# held to the target; the same figures back to back are printed beside them.
IDLE_BEFORE_RESTART = 0.5
# Turns the C client's round trips are taken in, kernel after kernel.
ROUNDS = 4
DISPLAYS_CODE = "for i in range({n}):\n    display(i)"


class Counts:
    """How many cells, starts and bytes each figure takes."""

    def __init__(self, quick):
        self.cells = 20 if quick else 2000          # C round trips (ipykernel: half)
        self.py_cells = 10 if quick else 1000       # jupyter_client and pyzmq round trips
        self.starts = 1 if quick else 10            # ready, in-place restarts, crashes
        self.restarts = 1 if quick else 5           # restart_kernel(), per kernel
        self.many = 2 if quick else 10              # kernels started at once
        self.many_runs = 1 if quick else 3
        self.output_runs = 1 if quick else 3
        self.write_mb = 1 if quick else 50
        self.png_mb = 1 if quick else 10
        self.lines = 1000 if quick else 100000
        self.displays = 10 if quick else 1000
        self.interrupts = 1 if quick else 10


# --- kernelspecs and kernels ---------------------------------------------------------


def install_specs(prefix, sandpit, null_kernel):
    """sandpit's (by `sandpit install`), ipykernel's and the null kernel's
    kernelspecs, under prefix; returns {kernel: kernel.json path}."""
    kernels = os.path.join(prefix, "share", "jupyter", "kernels")
    specs = {}
    if sandpit:
        subprocess.run([sandpit, "install", "--prefix", prefix, "--name", "bench-sandpit"],
                       check=True, stdout=subprocess.DEVNULL)
        specs["sandpit"] = os.path.join(kernels, "bench-sandpit", "kernel.json")
    for name, argv in (("ipykernel", [PYTHON, "-m", "ipykernel_launcher"]),
                       ("null", [null_kernel])):
        folder = os.path.join(kernels, "bench-" + name)
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, "kernel.json"), "w") as f:
            json.dump({"argv": argv + ["-f", "{connection_file}"], "display_name": name,
                       "language": "python"}, f)
        specs[name] = os.path.join(folder, "kernel.json")
    return specs


def start(kernel):
    from jupyter_client.manager import KernelManager
    km = KernelManager(kernel_name="bench-" + kernel)
    km.start_kernel(stderr=subprocess.DEVNULL)  # the crashes it is put through are logged
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=120)
    iopub_ready(kc)
    return km, kc


def stop(km, kc):
    kc.stop_channels()
    km.shutdown_kernel(now=False)


def cell(kc, code, timeout=120):
    """Runs code through jupyter_client: the seconds from execute to having its
    reply and its status idle."""
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    replied = idle = False
    while not idle:
        m = kc.get_iopub_msg(timeout=timeout)
        idle = (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle")
    while not replied:
        m = kc.get_shell_msg(timeout=timeout)
        replied = m["parent_header"].get("msg_id") == msg_id
    return time.perf_counter() - t0


def reply_time(kc, code, timeout=120):
    """Runs code through jupyter_client: the seconds from execute to its reply
    (its iopub messages are not waited for)."""
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    while kc.get_shell_msg(timeout=timeout)["parent_header"].get("msg_id") != msg_id:
        pass
    return time.perf_counter() - t0


def iopub_ready(kc, timeout=120):
    """Asks kernel_info until iopub brings a message parented to one of the
    requests: after a restart, jupyter_client's SUB socket joins the new
    process late, and a cell's idle sent before it has joined is lost."""
    deadline = time.monotonic() + timeout
    sent = set()
    while time.monotonic() < deadline:
        sent.add(kc.kernel_info())
        try:
            while True:
                m = kc.get_iopub_msg(timeout=0.2)
                if m["parent_header"].get("msg_id") in sent:
                    return
        except queue.Empty:
            pass
    raise RuntimeError("iopub does not answer")


def drain_iopub(kc):
    """Reads what jupyter_client's iopub socket holds. The C client's and pyzmq's
    cells also reach this subscriber; one that has stopped reading fills its
    queue, and from then on libzmq holds up to a high-water mark of messages
    for it in the kernel's process: the large outputs would then measure that
    queue (released only when the subscriber reads or goes), not the kernel."""
    try:
        while True:
            kc.get_iopub_msg(timeout=0.2)
    except queue.Empty:
        pass


def bench_client(client, *args):
    """Runs a command of the C client; its JSON."""
    out = subprocess.run([client, *map(str, args)], check=True, stdout=subprocess.PIPE,
                         text=True)
    return json.loads(out.stdout)


# --- the figures of one running kernel ---------------------------------------------------


def pyzmq_round_trips(km, n):
    """Round trips of a cell through a bare pyzmq client signing with hmac:
    jupyter_client's own overhead left out."""
    import zmq
    info = km.get_connection_info()
    ctx = zmq.Context.instance()
    shell, iopub = ctx.socket(zmq.DEALER), ctx.socket(zmq.SUB)
    for sock in (shell, iopub):
        sock.linger = 0
    iopub.setsockopt(zmq.SUBSCRIBE, b"")
    shell.connect("tcp://%s:%d" % (info["ip"], info["shell_port"]))
    iopub.connect("tcp://%s:%d" % (info["ip"], info["iopub_port"]))
    session = uuid.uuid4().hex
    key = info["key"]

    def send(msg_type, content):
        msg_id = uuid.uuid4().hex
        header = json.dumps({"msg_id": msg_id, "session": session, "username": "bench",
                             "date": "", "msg_type": msg_type, "version": "5.3"}).encode()
        parts = [header, b"{}", b"{}", json.dumps(content).encode()]
        sig = hmac.new(key, b"".join(parts), hashlib.sha256).hexdigest().encode()
        shell.send_multipart([b"<IDS|MSG>", sig] + parts)
        return msg_id.encode()

    def wait(msg_id, deadline):
        replied = idle = False
        while not (replied and idle) and time.monotonic() < deadline:
            if not replied and shell.poll(0):
                replied = msg_id in shell.recv_multipart()[3]
            elif iopub.poll(1):
                frames = iopub.recv_multipart()
                i = frames.index(b"<IDS|MSG>")
                idle = idle or (msg_id in frames[i + 3] and b'"idle"' in frames[i + 5])
        return replied and idle

    # The subscription takes a moment to reach the kernel: ask until iopub answers.
    deadline = time.monotonic() + 60
    while not wait(send("kernel_info_request", {}), min(deadline, time.monotonic() + 0.2)):
        if time.monotonic() > deadline:
            raise RuntimeError("no answer on iopub")
    content = {"code": "x = 1", "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": False}
    times = []
    for i in range(n + 20):
        t0 = time.perf_counter()
        if not wait(send("execute_request", content), time.monotonic() + 120):
            raise RuntimeError("a cell got no answer")
        if i >= 20:
            times.append(time.perf_counter() - t0)
    shell.close()
    iopub.close()
    return times


def pss(client, pid):
    return bench_client(client, "pss", "--pid", pid)


def running_figures(kernel, client, counts):
    """Every figure taken on one running kernel (started by jupyter_client)."""
    r = {}
    km, kc = start(kernel)
    try:
        cell(kc, "x = 1")
        pid = km.provisioner.pid
        conn = km.connection_file
        r["idle_pss"] = pss(client, pid)
        for _ in range(20):
            cell(kc, "x = 1")
        r["roundtrip_jupyter_client"] = [cell(kc, "x = 1") for _ in range(counts.py_cells)]
        r["roundtrip_pyzmq"] = pyzmq_round_trips(km, counts.py_cells)
        drain_iopub(kc)
        if kernel != "null":
            write = counts.write_mb * MiB // 100
            png = counts.png_mb * MiB
            lines = sum(len(str(i)) + 1 for i in range(counts.lines))
            for key, setup, code, expect in (
                    ("write", WRITE_SETUP.format(lines=write), WRITE_CODE,
                     "stream:%d" % (write * 100)),
                    ("png", PNG_SETUP.format(size=png), PNG_CODE, "png:%d" % png)):
                r[key] = bench_client(client, "output", "-f", conn, "--setup", setup,
                                      "--code", code, "--expect", expect,
                                      "--runs", counts.output_runs)
            # The supervisor's memory right after the large outputs, and once idle.
            r["pss_after_outputs"] = pss(client, pid)
            time.sleep(1.0)
            r["pss_after_outputs_1s"] = pss(client, pid)
            r["lines"] = bench_client(client, "output", "-f", conn, "--setup", "pass",
                                      "--code", LINES_CODE.format(n=counts.lines),
                                      "--expect", "stream:%d" % lines,
                                      "--runs", counts.output_runs + 2)
            r["displays"] = bench_client(client, "output", "-f", conn, "--setup", "pass",
                                         "--code", DISPLAYS_CODE.format(n=counts.displays),
                                         "--expect", "displays:%d" % counts.displays,
                                         "--runs", counts.output_runs + 2)
            r["interrupt"] = bench_client(client, "interrupt", "-f", conn,
                                          "--runs", counts.interrupts)
        if kernel == "sandpit":
            # After half a second idle, as between an agent's tasks (the next worker
            # is started once one is ready, and waits), and back to back.
            for key, pause in (("", IDLE_BEFORE_RESTART), ("_back_to_back", 0)):
                r["crash" + key] = bench_client(client, "crash", "-f", conn, "--runs",
                                                counts.starts, "--pause", pause)
                r["restart_in_place" + key] = bench_client(
                    client, "restart", "-f", conn, "--pid", pid, "--runs", counts.starts,
                    "--pause", pause)
        if kernel != "null":
            restarts = []
            for _ in range(counts.restarts):
                t0 = time.perf_counter()
                km.restart_kernel()
                restarts.append(time.perf_counter() - t0 + reply_time(kc, "x = 1"))
                iopub_ready(kc)  # before the next restart, or the next figure
            r["restart_jupyter_client"] = restarts
    finally:
        stop(km, kc)
    return r


def jupyter_server_restarts(kernel, counts, timeout=120):
    """Restarts through Jupyter Server's REST API, as a hosted notebook's restart
    button makes them: a server on 127.0.0.1 with a token, the kernel made by
    POST /api/kernels; each figure is the seconds from POST
    /api/kernels/{id}/restart to the reply of a cell sent over a new WebSocket
    (/api/kernels/{id}/channels)."""
    import secrets
    import socket
    import urllib.error
    import urllib.request
    import websocket
    token = secrets.token_hex(16)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = "http://127.0.0.1:%d/" % port
    root = tempfile.mkdtemp(prefix="sandpit-bench-server-")
    server = subprocess.Popen(
        [PYTHON, "-m", "jupyter_server", "--ServerApp.ip=127.0.0.1",
         "--ServerApp.port=%d" % port, "--ServerApp.port_retries=0",
         "--ServerApp.token=" + token, "--ServerApp.open_browser=False",
         "--ServerApp.root_dir=" + root]
        + (["--ServerApp.allow_root=True"] if os.geteuid() == 0 else []),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def rest(method, path, body=None):
        req = urllib.request.Request(url + path, method=method,
                                     data=None if body is None else json.dumps(body).encode(),
                                     headers={"Authorization": "token " + token})
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read()
            return json.loads(text) if text else None

    def cell_reply(kid, code):
        ws = websocket.create_connection("ws://127.0.0.1:%d/api/kernels/%s/channels?token=%s"
                                         % (port, kid, token), timeout=timeout)
        try:
            msg_id = uuid.uuid4().hex
            ws.send(json.dumps({
                "header": {"msg_id": msg_id, "msg_type": "execute_request", "username": "bench",
                           "session": uuid.uuid4().hex, "version": "5.3", "date": ""},
                "parent_header": {}, "metadata": {}, "channel": "shell", "buffers": [],
                "content": {"code": code, "silent": False, "store_history": True,
                            "user_expressions": {}, "allow_stdin": False}}))
            while True:
                raw = ws.recv()
                m = json.loads(raw) if isinstance(raw, str) else {}
                if m.get("channel") == "shell" and m["parent_header"].get("msg_id") == msg_id:
                    if m["content"]["status"] != "ok":
                        raise RuntimeError("%s: %r failed after a restart" % (kernel, code))
                    return
        finally:
            ws.close()

    times = []
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                rest("GET", "api/status")
                break
            except (urllib.error.URLError, ConnectionError):
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("Jupyter Server did not start")
                time.sleep(0.1)
        kid = rest("POST", "api/kernels", {"name": "bench-" + kernel})["id"]
        cell_reply(kid, "x = 1")
        for _ in range(counts.restarts):
            t0 = time.perf_counter()
            rest("POST", "api/kernels/%s/restart" % kid, {})
            cell_reply(kid, "x = 1")
            times.append(time.perf_counter() - t0)
        rest("DELETE", "api/kernels/" + kid)
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        shutil.rmtree(root, ignore_errors=True)
    return times


def alternating_round_trips(kernels, client, counts):
    """The C client's round trips, taken in turns on the kernels running side
    by side (a slice of each kernel's cells, then the next kernel's, ROUNDS
    times), so that a change in the machine's speed during the run (another
    tenant of the host, the CPU's clock) falls on every kernel alike rather
    than on whichever ran then: the floor and the ratios come from the same
    minutes. Idle, the others take no CPU from the one measured."""
    started = {}
    merged = {k: {"times": [], "cpu_s": 0.0, "switches": 0} for k in kernels}
    try:
        for k in kernels:
            started[k] = start(k)
            cell(started[k][1], "x = 1")
        for _ in range(ROUNDS):
            for k in kernels:
                km = started[k][0]
                cells = counts.cells if k != "ipykernel" else max(counts.cells // 2, 1)
                r = bench_client(client, "roundtrip", "-f", km.connection_file,
                                 "--pid", km.provisioner.pid,
                                 "--cells", max(cells // ROUNDS, 1), "--warmup", 50)
                for key in merged[k]:
                    merged[k][key] += r[key]
    finally:
        for km, kc in started.values():
            stop(km, kc)
    return merged


def all_figures(kernel, spec, client, counts):
    r = running_figures(kernel, client, counts)
    if kernel != "null":
        r["restart_jupyter_server"] = jupyter_server_restarts(kernel, counts)
    r["ready"] = bench_client(client, "ready", "--spec", spec, "--runs", counts.starts)
    r["many"] = bench_client(client, "many", "--spec", spec, "--kernels", counts.many,
                             "--runs", counts.many_runs)
    return r


# --- the table ---------------------------------------------------------------------------------


def median(xs):
    return statistics.median(xs) if xs else None


def p99(xs):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]


def get(results, kernel, *path):
    """results[kernel][path...], or None where that figure was not taken."""
    v = results.get(kernel)
    for key in path:
        if not isinstance(v, dict) or key not in v:
            return None
        v = v[key]
    return v


def supervisor_kb(p):
    return p["processes"][0]["pss_kb"] if p and p.get("processes") else None


def faster(slow, fast):
    return slow / fast if slow and fast else None


class Row:
    """One figure: its value for each kernel (seconds or kB), a ratio, the
    target and whether it is met (None: cannot say, a kernel was left out)."""

    def __init__(self, name, unit, values, ratio=None, target="", met=None):
        self.name, self.unit, self.values = name, unit, values
        self.ratio, self.target, self.met = ratio, target, met

    def cell(self, kernel):
        v = self.values.get(kernel)
        if v is None:
            return "-"
        if self.unit == "s":
            return "%.2f ms" % (v * 1e3) if v < 1 else "%.2f s" % v
        if self.unit == "kB":
            return "%.1f MB" % (v / 1024)
        return "%.1f" % v

    def as_json(self):
        return {"figure": self.name, "unit": self.unit, "values": self.values,
                "ratio": self.ratio, "target": self.target, "met": self.met}


def rows_of(results):
    rows = []

    def s(*path):
        return get(results, "sandpit", *path)

    def timed(key, field="times", stat=median):
        """stat of the list results[kernel][key][field], for each kernel."""
        return {k: stat(get(results, k, key, field) or []) for k in KERNELS}

    def speedup_row(name, values, need, fmt="%.1fx faster"):
        x = faster(values.get("ipykernel"), values.get("sandpit"))
        rows.append(Row(name, "s", values, fmt % x if x else None,
                        "at least %gx faster than ipykernel" % need,
                        None if x is None else x >= need))
        return x

    # Round trips.
    rt = timed("roundtrip_c")
    over_floor = faster(rt["sandpit"], rt["null"])
    x = faster(rt["ipykernel"], rt["sandpit"])
    met = None if x is None or over_floor is None else (x >= 13 and over_floor <= 1.6)
    rows.append(Row("execute round trip `x = 1`, C client (median)", "s", rt,
                    " ".join(t for t in (x and "%.1fx faster" % x,
                                         over_floor and "%.2fx the floor" % over_floor) if t)
                    or None,
                    "at most 1.6x the floor, at least 13x faster than ipykernel", met))
    for name, key in (("same, jupyter_client", "roundtrip_jupyter_client"),
                      ("same, pyzmq client", "roundtrip_pyzmq")):
        speedup_row(name, {k: median(get(results, k, key) or []) for k in KERNELS}, 6)
    tail = timed("roundtrip_c", stat=p99)
    tail_ratio = faster(tail["sandpit"], rt["sandpit"])
    rows.append(Row("p99 round trip, C client", "s", tail,
                    tail_ratio and "%.1fx the median" % tail_ratio, "at most 3x the median",
                    None if tail_ratio is None else tail_ratio <= 3))
    for name, field, scale, unit in (("kernel CPU per cell (all its processes)", "cpu_s", 1,
                                      "s"),
                                     ("context switches per cell", "switches", 1, "n")):
        values = {}
        for k in KERNELS:
            r = get(results, k, "roundtrip_c")
            values[k] = r[field] * scale / len(r["times"]) if r else None
        rows.append(Row(name, unit, values))
    # Starting and restarting.
    ready = timed("ready", "ready")
    speedup_row("ready: process start to first execute_reply", ready, 8)
    rows.append(Row("start to first kernel_info_reply", "s", timed("ready", "kernel_info"),
                    target="(sandpit answers it before its worker runs)"))
    restart = {k: median(get(results, k, "restart_jupyter_client") or []) for k in KERNELS}
    speedup_row("restart, jupyter_client restart_kernel() to a cell's reply", restart, 8)
    speedup_row("restart, Jupyter Server REST to a cell's reply",
                {k: median(get(results, k, "restart_jupyter_server") or []) for k in KERNELS}, 8)
    for name, key in (("in-place worker restart (sandpit's clients) to a cell's reply",
                       "restart_in_place"),
                      ("crash recovery: os.abort() to the next cell's reply", "crash")):
        v = median(s(key, "times") or [])
        x = faster(restart["ipykernel"], v)
        rows.append(Row(name + ", after %g s idle" % IDLE_BEFORE_RESTART, "s", {"sandpit": v},
                        x and "%.0fx faster than ipykernel's restart" % x,
                        "at least 40x faster than ipykernel's restart",
                        None if x is None else x >= 40))
        v = median(s(key + "_back_to_back", "times") or [])
        x = faster(restart["ipykernel"], v)
        rows.append(Row("same, back to back", "s", {"sandpit": v},
                        x and "%.0fx faster than ipykernel's restart" % x))
    # Memory.
    idle = {k: get(results, k, "idle_pss", "total_kb") for k in KERNELS}
    q = faster(idle["ipykernel"], idle["sandpit"])
    rows.append(Row("idle PSS, supervisor + worker", "kB", idle, q and "1/%.1f of ipykernel" % q,
                    "at most 1/4 of ipykernel", None if q is None else q >= 4))
    sup_idle = supervisor_kb(s("idle_pss"))
    after, after_1s = supervisor_kb(s("pss_after_outputs")), supervisor_kb(s("pss_after_outputs_1s"))
    rows.append(Row("supervisor PSS: idle / after the large outputs", "kB",
                    {"sandpit": after}, sup_idle and "idle %.1f MB" % (sup_idle / 1024)))
    grown = after_1s - sup_idle if after_1s is not None and sup_idle is not None else None
    rows.append(Row("supervisor PSS a second after going idle", "kB", {"sandpit": after_1s},
                    grown is not None and "%+.1f MB over idle" % (grown / 1024) or None,
                    "within 2 MB of idle", None if grown is None else grown <= 2048))
    # Output.
    for name, key, need in (("50 MB in one write, every byte", "write", 2),
                            ("10 MB image/png display, every byte", "png", 2),
                            ("100,000 printed lines", "lines", 5),
                            ("1,000 display_data", "displays", 10)):
        speedup_row(name, timed(key), need)
    many_ready = timed("many", "all_ready")
    speedup_row("10 kernels started at once, until each answered a cell", many_ready, 5)
    many_pss = {k: median(get(results, k, "many", "total_pss_kb") or []) for k in KERNELS}
    q = faster(many_pss["ipykernel"], many_pss["sandpit"])
    rows.append(Row("same, their total PSS", "kB", many_pss, q and "1/%.1f of ipykernel" % q,
                    "at most 1/4 of ipykernel", None if q is None else q >= 4))
    intr = timed("interrupt")
    rows.append(Row("interrupt of `while True: pass` until its reply", "s", intr,
                    target="under 50 ms",
                    met=None if intr["sandpit"] is None else intr["sandpit"] < 0.05))
    return rows


def machine():
    model = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"cores": os.cpu_count(), "cpu": model, "kernel": platform.release(),
            "python": platform.python_version(), "load_before": os.getloadavg()}


def table(rows, mach, kernels, quick):
    head = ("figure", "sandpit", "ipykernel", "null kernel", "ratio", "target", "met")
    lines = [[r.name, r.cell("sandpit"), r.cell("ipykernel"), r.cell("null"), r.ratio or "",
              r.target, {True: "yes", False: "NO", None: ""}[r.met]] for r in rows]
    out = ["| " + " | ".join(head) + " |", "|" + "|".join(" --- " for _ in head) + "|"]
    out += ["| " + " | ".join(line) + " |" for line in lines]
    met = sum(r.met is True for r in rows)
    judged = sum(r.met is not None for r in rows)
    out.append("")
    out.append("machine: %d cores, %s, Linux %s; load average %s before, %s after"
               % (mach["cores"], mach["cpu"], mach["kernel"],
                  " ".join("%.2f" % x for x in mach["load_before"]),
                  " ".join("%.2f" % x for x in mach["load_after"])))
    out.append("targets met: %d of %d%s%s" % (
        met, judged, "" if set(kernels) == set(KERNELS)
        else " (kernels measured: %s)" % ", ".join(kernels),
        " (--quick: tiny counts, these are not figures)" if quick else ""))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sandpit", default="build/sandpit")
    ap.add_argument("--null-kernel", default="build/bench-null-kernel")
    ap.add_argument("--client", default="build/bench-client")
    ap.add_argument("--json", default="build/bench.json", help="where the raw numbers go")
    ap.add_argument("--kernels", default=",".join(KERNELS),
                    help="which of sandpit, ipykernel, null to measure (default: all)")
    ap.add_argument("--quick", action="store_true", help="tiny counts: checks, not figures")
    args = ap.parse_args()
    kernels = [k for k in args.kernels.split(",") if k]
    if any(k not in KERNELS for k in kernels):
        ap.error("--kernels takes sandpit, ipykernel and null")
    counts = Counts(args.quick)
    client = os.path.abspath(args.client)
    mach = machine()
    prefix = tempfile.mkdtemp(prefix="sandpit-bench-")
    saved = {k: os.environ.get(k) for k in ("JUPYTER_PATH", "JUPYTER_RUNTIME_DIR")}
    results = {}
    try:
        specs = install_specs(prefix, os.path.abspath(args.sandpit) if "sandpit" in kernels
                              else None, os.path.abspath(args.null_kernel))
        os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
        os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(prefix, "runtime")
        print("bench: round trips, in turns ...", file=sys.stderr, flush=True)
        round_trips = alternating_round_trips(kernels, client, counts)
        for k in kernels:
            print("bench: %s ..." % k, file=sys.stderr, flush=True)
            results[k] = all_figures(k, specs[k], client, counts)
            results[k]["roundtrip_c"] = round_trips[k]
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        shutil.rmtree(prefix, ignore_errors=True)
    mach["load_after"] = os.getloadavg()
    rows = rows_of(results)
    text = table(rows, mach, kernels, args.quick)
    print(text)
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w") as f:
            json.dump({"machine": mach, "counts": vars(counts), "kernels": kernels,
                       "rows": [r.as_json() for r in rows], "raw": results}, f, indent=1)
        print("raw numbers: %s" % args.json)


if __name__ == "__main__":
    main()
