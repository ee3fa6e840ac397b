"""Soak: many mixed cells through one kernel, watching memory and descriptors.

    /usr/bin/python3 tests/soak/soak.py --sandpit build/sandpit [--cells 20000]
        [--every 5000]

Cells cycle through prints, results, errors, displays (new and updated),
stderr, and an interrupt of a sleeping cell; one cell in each thousand (the
500th) crashes the worker (os.abort), so that the supervisor recovers twenty
times in a full run.
Every cell's reply and output are checked, so a lost message fails the soak.

Every `every` cells it prints the supervisor's and the worker's memory (RSS and
PSS) and open descriptors. Growth is measured where it means something: the
supervisor from after a warm-up to the end; each worker over its own life,
between its warm-up after a crash and the cell before the next crash.

tests/soak/test_soak.py runs a short soak (1,000 cells) in `make test` and holds
the growth within bounds; `make soak` runs the full one.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

CRASH_EVERY = 1000
CRASH_AT = 499  # the crash comes mid-way, so that checkpoints see a worker at work
WARM_UP = 100  # cells after a start or a crash before memory is measured


def crashes(i):
    return i % CRASH_EVERY == CRASH_AT


def cell(i):
    """(code, check): check(reply content, outputs) raises if the cell went wrong."""
    kind = i % 10
    if crashes(i):
        return "import os\nos.abort()", lambda c, o: expect_error(c, "WorkerDied")
    if kind == 0:
        return "print('line', %d)" % i, lambda c, o: expect_stdout(o, "line %d\n" % i)
    if kind == 1:
        return "%d * 2" % i, lambda c, o: expect_result(o, str(i * 2))
    if kind == 2:
        return "1 / 0", lambda c, o: expect_error(c, "ZeroDivisionError")
    if kind == 3:
        return ("display({'text/plain': 'shown %d', 'text/html': '<b>%d</b>'}, raw=True)"
                % (i, i), lambda c, o: expect_display(o, "shown %d" % i))
    if kind == 4:
        return ("import sys\nsys.stderr.write('warn %d\\n')" % i,
                lambda c, o: expect_stdout(o, "warn %d\n" % i, "stderr"))
    if kind == 5:
        return ("x_%d = list(range(100))\nprint(len(x_%d))\ndel x_%d\nsum(range(%d))"
                % (i, i, i, i), lambda c, o: expect_result(o, str(sum(range(i)))))
    if kind == 6:
        return "INTERRUPT", lambda c, o: expect_error(c, "KeyboardInterrupt")
    if kind == 7:
        return ("h = display({'text/plain': 'v0'}, raw=True, display_id=True)\n"
                "h.update({'text/plain': 'v1'}, raw=True)",
                lambda c, o: expect_types(o, ["display_data", "update_display_data"]))
    if kind == 8:
        return "undefined_name_%d" % i, lambda c, o: expect_error(c, "NameError")
    return "{'a': %d, 'b': [1, 2, 3]}" % i, lambda c, o: expect_result(
        o, "{'a': %d, 'b': [1, 2, 3]}" % i)


def expect_error(content, ename):
    assert content["status"] == "error" and content["ename"] == ename, content


def expect_stdout(outputs, text, name="stdout"):
    got = "".join(m["content"]["text"] for m in outputs
                  if m["msg_type"] == "stream" and m["content"]["name"] == name)
    assert got.endswith(text), (got, text)


def expect_result(outputs, text):
    results = [m["content"]["data"]["text/plain"] for m in outputs
               if m["msg_type"] == "execute_result"]
    assert results == [text], (results, text)


def expect_display(outputs, text):
    shown = [m["content"]["data"]["text/plain"] for m in outputs
             if m["msg_type"] == "display_data"]
    assert shown == [text], shown


def expect_types(outputs, types):
    assert [m["msg_type"] for m in outputs] == types, [m["msg_type"] for m in outputs]


# --- what a process holds ---------------------------------------------------------------


def memory_kib(pid):
    """{"rss": KiB, "pss": KiB} from /proc/pid/smaps_rollup."""
    got = {}
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            key = line.split(":")[0].lower()
            if key in ("rss", "pss"):
                got[key] = int(line.split()[1])
    return got


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def child_comms(supervisor):
    """{pid: comm} of the supervisor's children."""
    path = "/proc/%d/task/%d/children" % (supervisor, supervisor)
    with open(path) as f:
        children = [int(p) for p in f.read().split()]
    out = {}
    for pid in children:
        try:
            with open("/proc/%d/comm" % pid) as f:
                out[pid] = f.read().strip()
        except OSError:
            pass
    return out


def snapshot(k):
    sup = k.km.provisioner.process.pid
    # The worker that runs the cells says who it is; another sandpit-worker, if
    # any, is the one started beforehand for the next crash.
    worker = int(k.value("__import__('os').getpid()"))
    # The next worker starts once the kernel has been idle 0.1 s, and while it
    # starts it holds descriptors of the supervisor's that a waiting one does
    # not: read once two readings 0.3 s apart agree (at most 20 tries).
    kids, fds = child_comms(sup), fd_count(sup)
    for _ in range(20):
        time.sleep(0.3)
        again, fds_again = child_comms(sup), fd_count(sup)
        if again == kids and fds_again == fds:
            break
        kids, fds = again, fds_again
    assert kids.get(worker) == "sandpit-worker", kids
    waiting = sum(1 for pid, comm in kids.items() if comm == "sandpit-worker" and pid != worker)
    assert waiting <= 1, kids
    # The worker template's control socket is the supervisor's from the first
    # crash on (the template starts when a worker is first replaced), and so is
    # the link of the worker waiting (forked from the template, it has no log
    # pipe: its lines come over the link): descriptors opened once each, not a
    # leak.
    template = "sandpit-tmpl" in kids.values()
    return {"supervisor": dict(memory_kib(sup), fds=fds - template - waiting),
            "worker": dict(memory_kib(worker), fds=fd_count(worker), pid=worker)}


# --- the soak ----------------------------------------------------------------------------


def run_cell(k, i):
    code, check = cell(i)
    if code == "INTERRUPT":
        msg_id = k.kc.execute("import time\nprint('sleeping', flush=True)\ntime.sleep(30)")
        while True:  # the cell is running once it says so
            m = k.next_iopub(msg_id)
            if m["msg_type"] == "stream" and "sleeping" in m["content"]["text"]:
                break
        k.km.interrupt_kernel()
        reply = k.shell_reply(msg_id)
        outputs = k.iopub_until_idle(msg_id)
    else:
        reply, outputs = k.execute(code)
    check(reply["content"], outputs)
    if crashes(i):
        # The error reply comes before the new worker is forked: wait until it
        # answers, so that what is measured next is a worker, not its absence.
        k.run("pass")


SETTLE = 250  # cells before the supervisor's memory is measured: its heap settles


def soak(k, cells, every=0, out=sys.stdout, settle=SETTLE):
    """Runs the cells; returns a summary: the snapshots, and the growth of the
    supervisor (from cell `settle` to the end) and of each worker's life (from its
    WARM_UP-th cell to its last)."""
    first_sup = None
    lives = []  # each worker: its snapshot after warm-up, and before it crashed
    life_start = None
    age = 0  # cells the current worker has run
    checkpoints = []
    started = time.monotonic()
    for i in range(cells):
        run_cell(k, i)
        age = 0 if crashes(i) else age + 1
        if age == WARM_UP:
            life_start = snapshot(k)
        if i + 1 == settle:
            first_sup = snapshot(k)["supervisor"]
        if life_start and (crashes(i + 1) or i + 1 == cells):
            end = snapshot(k)
            assert end["worker"]["pid"] == life_start["worker"]["pid"]
            lives.append((life_start["worker"], end["worker"], age - WARM_UP))
            life_start = None
        if every and (i + 1) % every == 0:
            snap = snapshot(k)
            checkpoints.append((i + 1, snap))
            print("after %6d cells (%.0f cells/s): supervisor RSS %d kB, PSS %d kB, "
                  "%d fds; worker RSS %d kB, PSS %d kB, %d fds"
                  % (i + 1, (i + 1) / (time.monotonic() - started),
                     snap["supervisor"]["rss"], snap["supervisor"]["pss"],
                     snap["supervisor"]["fds"], snap["worker"]["rss"],
                     snap["worker"]["pss"], snap["worker"]["fds"]), file=out, flush=True)
    last = snapshot(k)["supervisor"]
    measured = cells - settle
    summary = {
        "cells": cells,
        "seconds": time.monotonic() - started,
        "supervisor": {"first": first_sup, "last": last,
                       "rss_per_1000": (last["rss"] - first_sup["rss"]) * 1000 / measured,
                       "pss_per_1000": (last["pss"] - first_sup["pss"]) * 1000 / measured},
        "workers": [{"cells": n, "fds": (a["fds"], b["fds"]),
                     "rss_per_1000": (b["rss"] - a["rss"]) * 1000 / n,
                     "pss_per_1000": (b["pss"] - a["pss"]) * 1000 / n}
                    for a, b, n in lives if n >= WARM_UP],
        "checkpoints": checkpoints,
    }
    return summary


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sandpit", required=True)
    ap.add_argument("--cells", type=int, default=20000)
    ap.add_argument("--every", type=int, default=5000)
    args = ap.parse_args()
    os.environ["SANDPIT_BIN"] = os.path.abspath(args.sandpit)
    from sandpit_testing import start, stop
    base = tempfile.mkdtemp(prefix="sandpit-soak-")
    try:
        subprocess.run([args.sandpit, "install", "--prefix", base], check=True,
                       stdout=subprocess.DEVNULL)
        os.environ["JUPYTER_PATH"] = os.path.join(base, "share", "jupyter")
        os.environ["JUPYTER_RUNTIME_DIR"] = os.path.join(base, "runtime")
        os.environ["JUPYTER_DATA_DIR"] = os.path.join(base, "data")  # the history's
        k = start("sandpit", cwd=base)
        try:
            s = soak(k, args.cells, args.every)
        finally:
            stop(k)
    finally:
        subprocess.run(["rm", "-rf", base])
    sup = s["supervisor"]
    print("%d cells in %.0f s (%d worker crashes recovered)"
          % (s["cells"], s["seconds"], sum(crashes(i) for i in range(s["cells"]))))
    print("supervisor: RSS %+.0f kB, PSS %+.0f kB per 1,000 cells; fds %d -> %d"
          % (sup["rss_per_1000"], sup["pss_per_1000"], sup["first"]["fds"],
             sup["last"]["fds"]))
    w = s["workers"]
    if w:
        print("worker: RSS %+.0f kB, PSS %+.0f kB per 1,000 cells (median of %d lives); "
              "fds %s"
              % (sorted(x["rss_per_1000"] for x in w)[len(w) // 2],
                 sorted(x["pss_per_1000"] for x in w)[len(w) // 2], len(w),
                 sorted(set(x["fds"] for x in w))))
    print(json.dumps({k: v for k, v in s.items() if k != "checkpoints"}))


if __name__ == "__main__":
    main()
