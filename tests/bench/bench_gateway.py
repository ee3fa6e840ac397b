"""make bench, the gateway's part: `sandpit serve` beside Debian's Jupyter
Server 1.23 with ipykernel, both driven by the same client (the gateway tests'
WebSocket client, tests/gateway/gateway_testing.py, over python3-websocket):

  - kernel creation (POST /api/kernels) to the first execute_reply over the
    kernel's WebSocket, median of several kernels;
  - the WebSocket round trip of `x = 1` (request sent to execute_reply),
    median and p99;
  - N idle kernels (200 by default): their total PSS and the server's own;
    then the p99 round trip while C clients (50) each run a cell a second.

    /usr/bin/python3 tests/bench/bench_gateway.py --sandpit build/sandpit [--quick]

The counts come from the environment, so that a quick run is possible:
GATEWAY_BENCH_STARTS (5), GATEWAY_BENCH_CELLS (500), GATEWAY_BENCH_KERNELS
(200), GATEWAY_BENCH_CLIENTS (50), GATEWAY_BENCH_SECONDS (30); --quick sets
them all small. Where the machine's free memory cannot hold as many
ipykernels (about 100 MB each), Jupyter Server gets fewer, and the table says
so. Nothing here asserts: this is a measurement; the JSON of every raw number
goes to --json (build/bench-gateway.json).

Jupyter Server 1.23 leaves Nagle's algorithm on for its WebSockets (tornado's
set_nodelay is never called), so its small replies can wait for the client's
delayed ACK (some 40 ms on Linux): its round trip here is what a client meets
on it, not ipykernel's own (`make bench`'s first table has that).
"""

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "gateway"))
PYTHON = "/usr/bin/python3"
IPYKERNEL_MB = 100  # what one idle ipykernel is allowed for, to fit the machine


def counts(quick):
    def env(name, full, small):
        return int(os.environ.get("GATEWAY_BENCH_" + name, small if quick else full))
    return {"starts": env("STARTS", 5, 2), "cells": env("CELLS", 500, 20),
            "kernels": env("KERNELS", 200, 4), "clients": env("CLIENTS", 50, 2),
            "seconds": env("SECONDS", 30, 3)}


def install_specs(prefix, sandpit):
    subprocess.run([sandpit, "install", "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    folder = os.path.join(prefix, "share", "jupyter", "kernels", "ipykernel")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "kernel.json"), "w") as f:
        json.dump({"argv": [PYTHON, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
                   "display_name": "ipykernel", "language": "python"}, f)


def median(xs):
    return statistics.median(xs) if xs else None


def p99(xs):
    if not xs:
        return None
    s = sorted(xs)
    return s[min(len(s) - 1, int(round(0.99 * (len(s) - 1))))]


def first_reply(server, name):
    """Seconds from POST /api/kernels to the first execute_reply on its WebSocket."""
    t0 = time.perf_counter()
    kid = server.ok("POST", "/api/kernels", {"name": name}, status=201)["id"]
    ws = server.ws(kid, timeout=120)
    try:
        deadline = time.monotonic() + 120
        while True:
            msg_id = ws.send("shell", "execute_request", {
                "code": "x = 1", "silent": False, "store_history": True,
                "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
            try:
                ws.reply(msg_id, timeout=10)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
        elapsed = time.perf_counter() - t0
    finally:
        ws.close()
    return kid, elapsed


def round_trips(ws, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        msg_id = ws.send("shell", "execute_request", {
            "code": "x = 1", "silent": False, "store_history": True,
            "user_expressions": {}, "allow_stdin": False, "stop_on_error": True})
        ws.reply(msg_id, timeout=60)
        times.append(time.perf_counter() - t0)
        ws.iopub_until_idle(msg_id, timeout=60)
    return times


def tree(pid):
    """pid and its descendants."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                fields = f.read().rsplit(")", 1)[1].split()
            children.setdefault(int(fields[1]), []).append(int(entry))
        except (OSError, IndexError, ValueError):
            continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(children.get(p, []))
    return out


def pss_kb(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def under_load(server, kids, clients, seconds):
    """Round trips of `x = 1` while `clients` clients (each on a kernel of
    its own) each run one a second."""
    times, errors, lock = [], [], threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(kid):
        try:
            ws = server.ws(kid, timeout=60)
        except Exception as e:
            errors.append(repr(e))
            return
        try:
            ws.wait_ready(60)
            while time.monotonic() < stop_at:
                started = time.monotonic()
                t = round_trips(ws, 1)[0]
                with lock:
                    times.append(t)
                time.sleep(max(0.0, 1.0 - (time.monotonic() - started)))
        except Exception as e:
            errors.append(repr(e))
        finally:
            ws.close()
    threads = [threading.Thread(target=client, args=(k,)) for k in kids[:clients]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(seconds + 180)
    return times, errors


def measure(server, name, c, kernels):
    r = {"kernels_asked": kernels}
    starts, made = [], []
    for _ in range(c["starts"]):
        kid, t = first_reply(server, name)
        starts.append(t)
        made.append(kid)
    r["create_to_first_reply_s"] = starts
    ws = server.ws(made[0], timeout=60)
    ws.wait_ready(60)
    round_trips(ws, 5)  # warm
    r["round_trip_s"] = round_trips(ws, c["cells"])
    ws.close()
    for kid in made:
        server.request("DELETE", "/api/kernels/" + kid)
    # Idle kernels: started, each answered a cell, then left alone.
    kids, r["start_errors"] = [], []
    t0 = time.perf_counter()
    for _ in range(kernels):
        try:
            kid, _ = first_reply(server, name)
            kids.append(kid)
        except Exception as e:  # counted, and shown in the table
            r["start_errors"].append(repr(e))
    r["start_all_s"] = time.perf_counter() - t0
    r["kernels_idle"] = len(kids)
    time.sleep(5)
    pids = tree(server.proc.pid)
    r["server_pss_kb"] = pss_kb(server.proc.pid)
    r["kernels_pss_kb"] = sum(pss_kb(p) for p in pids if p != server.proc.pid)
    r["processes"] = len(pids)
    times, errors = under_load(server, kids, c["clients"], c["seconds"])
    r["loaded_round_trip_s"] = times
    r["loaded_errors"] = errors
    r["loaded_clients"] = min(c["clients"], len(kids))
    for kid in kids:
        server.request("DELETE", "/api/kernels/" + kid)
    return r


def available_mb():
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) // 1024
    return 0


def ms(x):
    return "-" if x is None else "%.1f ms" % (x * 1000)


def mb(kb):
    return "%.0f MB" % (kb / 1024)


def table(res, c):
    s, j = res["sandpit"], res["jupyter"]
    rows = []

    def ratio(a, b):
        return "-" if not a or not b else "%.1fx" % (b / a)
    a, b = median(s["create_to_first_reply_s"]), median(j["create_to_first_reply_s"])
    rows.append(("creation to first execute_reply (median of %d)" % c["starts"],
                 ms(a), ms(b), ratio(a, b), "at least 10x faster"))
    a, b = median(s["round_trip_s"]), median(j["round_trip_s"])
    rows.append(("round trip of x = 1 (median of %d)" % c["cells"], ms(a), ms(b),
                 ratio(a, b), "at most a fifth"))
    a, b = p99(s["round_trip_s"]), p99(j["round_trip_s"])
    rows.append(("round trip of x = 1 (p99)", ms(a), ms(b), ratio(a, b), ""))
    rows.append(("idle kernels (asked for, failed to start)",
                 "%d (%d, %d)" % (s["kernels_idle"], s["kernels_asked"], len(s["start_errors"])),
                 "%d (%d, %d)" % (j["kernels_idle"], j["kernels_asked"], len(j["start_errors"])),
                 "", ""))
    rows.append(("their total PSS", mb(s["kernels_pss_kb"]), mb(j["kernels_pss_kb"]),
                 ratio(s["kernels_pss_kb"] / max(1, s["kernels_idle"]),
                       j["kernels_pss_kb"] / max(1, j["kernels_idle"])) + " per kernel", ""))
    rows.append(("per kernel", mb(s["kernels_pss_kb"] / max(1, s["kernels_idle"])),
                 mb(j["kernels_pss_kb"] / max(1, j["kernels_idle"])), "", ""))
    rows.append(("the server's PSS", mb(s["server_pss_kb"]), mb(j["server_pss_kb"]), "", ""))
    a, b = p99(s["loaded_round_trip_s"]), p99(j["loaded_round_trip_s"])
    rows.append(("p99 round trip, %d clients a cell a second for %d s"
                 % (c["clients"], c["seconds"]), ms(a), ms(b), ratio(a, b), ""))
    rows.append(("  cells / errors under load", "%d / %d" % (len(s["loaded_round_trip_s"]),
                                                            len(s["loaded_errors"])),
                 "%d / %d" % (len(j["loaded_round_trip_s"]), len(j["loaded_errors"])), "", ""))
    head = ("figure", "sandpit serve", "Jupyter Server", "ratio", "the issue's target")
    widths = [max(len(str(r[i])) for r in rows + [head]) for i in range(5)]
    lines = ["  ".join(str(x).ljust(w) for x, w in zip(head, widths))]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(str(x).ljust(w) for x, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sandpit", required=True)
    ap.add_argument("--json", default="build/bench-gateway.json")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    c = counts(args.quick)
    base = tempfile.mkdtemp(prefix="sandpit-bench-gateway-")
    os.environ["SANDPIT_BIN"] = os.path.abspath(args.sandpit)
    install_specs(base, args.sandpit)
    os.environ["JUPYTER_PATH"] = os.path.join(base, "share", "jupyter")
    os.environ["JUPYTER_DATA_DIR"] = os.path.join(base, "data")
    os.environ["XDG_CACHE_HOME"] = os.path.join(base, "cache")
    import gateway_testing as gt  # after SANDPIT_BIN: it reads it at import
    ipy_kernels = min(c["kernels"], max(1, (available_mb() - 2048) // IPYKERNEL_MB))
    res = {"counts": c, "machine": {"cores": os.cpu_count(), "load": os.getloadavg(),
                                    "platform": platform.platform()}}
    try:
        for key, cls, name, n, extra in (
                ("sandpit", gt.SandpitServe, "sandpit", c["kernels"],
                 ("--max-kernels", str(c["kernels"] + c["starts"] + 10))),
                ("jupyter", gt.JupyterServer, "ipykernel", ipy_kernels, ())):
            root = os.path.join(base, key)
            os.makedirs(root)
            server = cls(root, *extra)
            try:
                print("bench-gateway: %s, %d idle kernels..." % (key, n), flush=True)
                res[key] = measure(server, name, c, n)
            except Exception as e:
                res[key + "_failure"] = repr(e)
                print("bench-gateway: %s failed: %r\n%s" % (key, e, server.log()[-3000:]))
            finally:
                server.stop()
    finally:
        shutil.rmtree(base, ignore_errors=True)
    res["machine"]["load_after"] = os.getloadavg()
    os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
    with open(args.json, "w") as f:
        json.dump(res, f, indent=1)
    if "sandpit" in res and "jupyter" in res:
        print(table(res, c))
    else:
        print("bench-gateway: no table (a server's run failed); see %s" % args.json)
    print("machine: %d cores, load %s before, %s after; raw figures in %s"
          % (os.cpu_count(), "%.2f" % res["machine"]["load"][0],
             "%.2f" % res["machine"]["load_after"][0], args.json))


if __name__ == "__main__":
    main()
