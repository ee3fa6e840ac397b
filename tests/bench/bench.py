"""Side-by-side timings of sandpit and ipykernel, through jupyter_client.

    make bench        (or: /usr/bin/python3 tests/bench/bench.py --sandpit build/sandpit)

For each kernel: start-up (process start to the first kernel_info_reply),
the round trip of a trivial cell (execute_request sent to idle received),
through jupyter_client and through a bare ZeroMQ client,
a cell that prints 10,000 lines, and a restart through the kernel manager.
Prints medians and the ratio ipykernel/sandpit. Nothing here asserts a time:
this is a measurement, not a test.
"""

import argparse
import os
import shutil
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


def raw_round_trips(km, rounds):
    """Round trips of "1" measured with a bare ZeroMQ client (signing with
    hmac), so that jupyter_client's own overhead does not hide the kernel's."""
    import hashlib
    import hmac
    import json
    import uuid
    import zmq
    info = km.get_connection_info()
    ctx = zmq.Context.instance()
    shell = ctx.socket(zmq.DEALER)
    iopub = ctx.socket(zmq.SUB)
    for sock in (shell, iopub):
        sock.linger = 0
    iopub.setsockopt(zmq.SUBSCRIBE, b"")
    shell.connect("tcp://%s:%d" % (info["ip"], info["shell_port"]))
    iopub.connect("tcp://%s:%d" % (info["ip"], info["iopub_port"]))
    time.sleep(0.3)  # the subscription reaches the kernel
    session = uuid.uuid4().hex
    content = json.dumps({"code": "1", "silent": False, "store_history": True,
                          "user_expressions": {}, "allow_stdin": False}).encode()

    def once():
        msg_id = uuid.uuid4().hex
        header = json.dumps({"msg_id": msg_id, "session": session, "username": "bench",
                             "date": "", "msg_type": "execute_request",
                             "version": "5.3"}).encode()
        parts = [header, b"{}", b"{}", content]
        sig = hmac.new(info["key"], b"".join(parts), hashlib.sha256).hexdigest().encode()
        t0 = time.perf_counter()
        shell.send_multipart([b"<IDS|MSG>", sig] + parts)
        replied = idle = False
        while not (replied and idle):
            if not replied and shell.poll(0):
                shell.recv_multipart()
                replied = True
            elif iopub.poll(1):
                frames = iopub.recv_multipart()
                i = frames.index(b"<IDS|MSG>")
                if msg_id.encode() in frames[i + 3] and b'"idle"' in frames[i + 5]:
                    idle = True
        return time.perf_counter() - t0

    for _ in range(20):
        once()
    times = [once() for _ in range(rounds)]
    shell.close()
    iopub.close()
    return statistics.median(times)


def restart_times(km, kc, n):
    """Seconds of each of n restarts through jupyter_client's restart_kernel(),
    from the call to the new kernel's first kernel_info_reply. A kernel that
    exits on shutdown_request, as the spec says, is replaced at once; one that
    lingers is waited for (2.5 s) and then killed."""
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        km.restart_kernel()
        kc.wait_for_ready(timeout=60)
        times.append(time.perf_counter() - t0)
    return times


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
    raw = raw_round_trips(km, rounds)
    restarts = restart_times(km, kc, 3)
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    return {"start-up": statistics.median(starts),
            "execute round trip": statistics.median(trivial),
            "round trip, bare client": raw,
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
    try:
        results = {k: bench(k, args.rounds) for k in ("sandpit", "python3")}
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
    print("%-26s %12s %12s %8s" % ("", "sandpit", "ipykernel", "ratio"))
    for key in results["sandpit"]:
        s, i = results["sandpit"][key], results["python3"][key]
        print("%-26s %10.2f ms %10.2f ms %7.1fx" % (key, s * 1000, i * 1000, i / s))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
