"""make bench, the E2B API's part: `sandpit serve`'s code-interpreter routes
beside sandpit's own command-line client, on the same machine:

  - POST /execute of `1 + 1` on a warm context (request sent to the last
    NDJSON line, end_of_execution), median and p99, beside `sandpit run
    '1 + 1'` against a warm `sandpit start` (the process started to its exit);
  - context creation (POST /contexts) to the first result of POST /execute on
    it, median of several contexts;
  - N contexts (100 by default) open at once: their total PSS (and the
    server's own).

    /usr/bin/python3 tests/bench/bench_e2b.py --sandpit build/sandpit [--quick]

E2B_BENCH_CELLS (300), E2B_BENCH_STARTS (5), E2B_BENCH_CONTEXTS (100); --quick
sets them small. Nothing here asserts: this is a measurement; the raw numbers
go to --json (build/bench-e2b.json).
"""

import argparse
import http.client
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "gateway"))

from bench_gateway import median, p99, pss_kb, tree  # noqa: E402


def counts(quick):
    def env(name, full, small):
        return int(os.environ.get("E2B_BENCH_" + name, small if quick else full))
    return {"cells": env("CELLS", 300, 20), "starts": env("STARTS", 5, 2),
            "contexts": env("CONTEXTS", 100, 4)}


class E2B:
    """A client of the E2B routes on one keep-alive connection."""

    def __init__(self, port, token):
        self.port, self.token = port, token
        self.conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)

    def call(self, method, path, body=None):
        self.conn.request(method, path, body=None if body is None else json.dumps(body),
                          headers={"Authorization": "token " + self.token,
                                   "Content-Type": "application/json"})
        r = self.conn.getresponse()
        data = r.read()
        if r.status >= 300:
            raise RuntimeError("%s %s: %d %s" % (method, path, r.status, data[:200]))
        return json.loads(data) if data else None

    def execute(self, code, context_id):
        """The NDJSON lines of one POST /execute, read to end_of_execution."""
        self.conn.request("POST", "/execute",
                          body=json.dumps({"code": code, "context_id": context_id}),
                          headers={"Authorization": "token " + self.token,
                                   "Content-Type": "application/json"})
        r = self.conn.getresponse()
        if r.status != 200:
            raise RuntimeError("POST /execute: %d %s" % (r.status, r.read()[:200]))
        lines = []
        while True:
            line = r.readline()
            if not line:
                break
            lines.append(json.loads(line))
            if lines[-1].get("type") == "end_of_execution":
                break
        r.read()
        return lines


def result_text(lines):
    for line in lines:
        if line.get("type") == "result" and line.get("is_main_result"):
            return line.get("text")
    return None


def warm_execute(client, n):
    ctx = client.call("POST", "/contexts", {"language": "python"})["id"]
    assert result_text(client.execute("1 + 1", ctx)) == "2"
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        lines = client.execute("1 + 1", ctx)
        times.append(time.perf_counter() - t0)
        assert result_text(lines) == "2", lines
    client.call("DELETE", "/contexts/" + ctx)
    return times


def first_results(client, n):
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        ctx = client.call("POST", "/contexts", {"language": "python"})["id"]
        lines = client.execute("1 + 1", ctx)
        times.append(time.perf_counter() - t0)
        assert result_text(lines) == "2", lines
        client.call("DELETE", "/contexts/" + ctx)
    return times


def contexts_pss(client, server_pid, n):
    ids = []
    for _ in range(n):
        ctx = client.call("POST", "/contexts", {"language": "python"})["id"]
        assert result_text(client.execute("1 + 1", ctx)) == "2"
        ids.append(ctx)
    time.sleep(2)
    pids = tree(server_pid)
    r = {"contexts": len(ids), "server_pss_kb": pss_kb(server_pid),
         "contexts_pss_kb": sum(pss_kb(p) for p in pids if p != server_pid)}
    for ctx in ids:
        client.call("DELETE", "/contexts/" + ctx)
    return r


def sandpit_run(sandpit, n, root):
    ws = os.path.join(root, "run-ws")
    os.makedirs(ws)
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=os.path.join(root, "runtime"))
    subprocess.run([sandpit, "start"], cwd=ws, env=env, check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
    try:
        out = subprocess.run([sandpit, "run", "1 + 1"], cwd=ws, env=env, check=True,
                             capture_output=True, text=True, timeout=60).stdout
        assert out.strip() == "2", out
        times = []
        for _ in range(n):
            t0 = time.perf_counter()
            subprocess.run([sandpit, "run", "1 + 1"], cwd=ws, env=env, check=True,
                           stdout=subprocess.DEVNULL, timeout=60)
            times.append(time.perf_counter() - t0)
        return times
    finally:
        subprocess.run([sandpit, "stop"], cwd=ws, env=env, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def ms(x):
    return "-" if x is None else "%.2f ms" % (x * 1e3)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sandpit", required=True)
    ap.add_argument("--json")
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    c = counts(args.quick)
    from gateway_testing import SandpitServe
    root = tempfile.mkdtemp(prefix="sandpit-bench-e2b-")
    res = {"machine": platform.platform(), "cpus": os.cpu_count(), "counts": c}
    try:
        server = SandpitServe(root, "--max-kernels", str(c["contexts"] + 10))
        try:
            client = E2B(server.port, server.token)
            res["execute_s"] = warm_execute(client, c["cells"])
            res["first_result_s"] = first_results(client, c["starts"])
            res["pss"] = contexts_pss(client, server.proc.pid, c["contexts"])
        finally:
            server.stop()
        res["sandpit_run_s"] = sandpit_run(os.path.abspath(args.sandpit), c["cells"] // 3 or 1,
                                           root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    e, r = res["execute_s"], res["sandpit_run_s"]
    p = res["pss"]
    print()
    print("E2B API on sandpit serve (%s, %d CPUs)" % (res["machine"], res["cpus"]))
    print("%-52s %14s %14s" % ("", "median", "p99"))
    print("%-52s %14s %14s" % ("POST /execute `1 + 1`, warm context", ms(median(e)), ms(p99(e))))
    print("%-52s %14s %14s" % ("`sandpit run '1 + 1'`, warm kernel (whole process)",
                               ms(median(r)), ms(p99(r))))
    print("%-52s %14s" % ("  ratio, run / execute", "%.1fx" % (median(r) / median(e))))
    f = res["first_result_s"]
    print("%-52s %14s" % ("POST /contexts to the first result", ms(median(f))))
    print("%-52s %11.1f MB (%.1f MB each; the server %.1f MB)"
          % ("%d contexts open, their total PSS" % p["contexts"], p["contexts_pss_kb"] / 1024,
             p["contexts_pss_kb"] / 1024 / max(1, p["contexts"]), p["server_pss_kb"] / 1024))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(res, fh, indent=1)


if __name__ == "__main__":
    main()
