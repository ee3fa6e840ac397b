"""Side-by-side timings of sandpit and ipykernel, through jupyter_client.

    make bench        (or: /usr/bin/python3 tests/bench/bench.py --sandpit build/sandpit)

For each kernel: start-up (process start to the first kernel_info_reply),
the round trip of a trivial cell (execute_request sent to idle received),
a cell that prints 10,000 lines, and a restart through the kernel manager.
Prints medians and the ratio ipykernel/sandpit. Nothing here asserts a time:
this is a measurement, not a test.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from jupyter_client.manager import KernelManager


def start(name):
    t0 = time.perf_counter()
    km = KernelManager(kernel_name=name)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=60)
    return km, kc, time.perf_counter() - t0


def run(kc, code):
    t0 = time.perf_counter()
    msg_id = kc.execute(code)
    while True:
        m = kc.get_iopub_msg(timeout=60)
        if (m["parent_header"].get("msg_id") == msg_id and m["msg_type"] == "status"
                and m["content"]["execution_state"] == "idle"):
            break
    kc.get_shell_msg(timeout=60)
    return time.perf_counter() - t0


def bench(name, rounds):
    starts = []
    for _ in range(3):
        km, kc, t = start(name)
        starts.append(t)
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    km, kc, _ = start(name)
    run(kc, "1")
    trivial = [run(kc, "1") for _ in range(rounds)]
    prints = [run(kc, "for i in range(10000):\n    print(i)") for _ in range(5)]
    restarts = []
    for _ in range(3):
        t0 = time.perf_counter()
        km.restart_kernel()
        kc.wait_for_ready(timeout=60)
        restarts.append(time.perf_counter() - t0)
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return {"start-up": statistics.median(starts),
            "execute round trip": statistics.median(trivial),
            "print 10,000 lines": statistics.median(prints),
            "restart (KernelManager)": statistics.median(restarts)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sandpit", default="build/sandpit")
    ap.add_argument("--rounds", type=int, default=200)
    args = ap.parse_args()
    prefix = tempfile.mkdtemp(prefix="sandpit-bench-")
    subprocess.run([args.sandpit, "install", "--prefix", prefix], check=True,
                   stdout=subprocess.DEVNULL)
    os.environ["JUPYTER_PATH"] = os.path.join(prefix, "share", "jupyter")
    results = {k: bench(k, args.rounds) for k in ("sandpit", "python3")}
    print("%-26s %12s %12s %8s" % ("", "sandpit", "ipykernel", "ratio"))
    for key in results["sandpit"]:
        s, i = results["sandpit"][key], results["python3"][key]
        print("%-26s %10.2f ms %10.2f ms %7.1fx" % (key, s * 1000, i * 1000, i / s))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
