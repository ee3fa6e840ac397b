"""The benchmark's own programs, exercised cheaply so that `make bench` cannot rot.

The null kernel must answer as a kernel does (busy, execute_input, reply,
idle), or the floor it gives would be the floor of something else; the C
client must run every cell it reports, and refuse a run in which output went
missing; bench.py must make its table and its JSON from them. No time is
asserted: the figures are `make bench`'s, these are only the checks that
they are taken the right way.
"""

import json
import os
import subprocess
import sys

import pytest

from sandpit_testing import SANDPIT, start, stop

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.path.dirname(SANDPIT)
CLIENT = os.path.join(BUILD, "bench-client")
NULL_KERNEL = os.path.join(BUILD, "bench-null-kernel")


def client(*args, check=True):
    r = subprocess.run([CLIENT, *map(str, args)], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=60)
    if check:
        assert r.returncode == 0, r.stderr
        return json.loads(r.stdout)
    return r


@pytest.fixture(scope="module")
def null_kernel(jupyter_dir):
    folder = jupyter_dir / "share" / "jupyter" / "kernels" / "bench-null-test"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [NULL_KERNEL, "-f", "{connection_file}"], "display_name": "null",
        "language": "python"}))
    k = start("bench-null-test")
    yield k
    stop(k)


def test_the_null_kernel_answers_as_a_kernel_does(null_kernel):
    info = null_kernel.request("kernel_info")
    assert info["content"]["status"] == "ok"
    assert info["content"]["protocol_version"].startswith("5.")
    counts = []
    for code in ("x = 1", "y = 2"):
        msg_id = null_kernel.kc.execute(code)
        reply = null_kernel.shell_reply(msg_id)
        outputs = null_kernel.iopub_until_idle(msg_id, keep_status=True)
        kinds = [(m["msg_type"], m["content"].get("execution_state")) for m in outputs]
        assert kinds == [("status", "busy"), ("execute_input", None), ("status", "idle")]
        assert outputs[1]["content"]["code"] == code
        assert reply["content"]["status"] == "ok"
        assert outputs[1]["content"]["execution_count"] == reply["content"]["execution_count"]
        counts.append(reply["content"]["execution_count"])
    assert counts[1] == counts[0] + 1


def test_the_client_runs_every_cell_it_times(null_kernel):
    before = null_kernel.execute("x")[0]["content"]["execution_count"]
    r = client("roundtrip", "-f", null_kernel.km.connection_file, "--cells", 5,
               "--warmup", 2, "--pid", null_kernel.km.provisioner.pid)
    assert len(r["times"]) == 5 and all(t > 0 for t in r["times"])
    after = null_kernel.execute("x")[0]["content"]["execution_count"]
    assert after == before + 5 + 2 + 1


def test_the_client_refuses_a_run_with_output_missing(kernel):
    conn = kernel.km.connection_file
    png = ("from IPython.display import Image\n"
           "img = Image(data=b'\\x89PNG\\r\\n\\x1a\\n' + bytes(992), format='png')")
    for setup, code, expect in (("pass", "print('x' * 999)", "stream:1000"),
                                ("pass", "display(1); display(2)", "displays:2"),
                                (png, "display(img)", "png:1000")):
        r = client("output", "-f", conn, "--setup", setup, "--code", code, "--expect", expect,
                   "--runs", 1)
        assert len(r["times"]) == 1
        kind, n = expect.split(":")
        r = client("output", "-f", conn, "--setup", setup, "--code", code,
                   "--expect", "%s:%d" % (kind, int(n) + 1), "--runs", 1, check=False)
        assert r.returncode == 1
        assert "%s: %s received, %d expected" % (kind, n, int(n) + 1) in r.stderr


def test_the_client_interrupts_restarts_and_crashes_sandpit(kernel):
    conn = kernel.km.connection_file
    assert len(client("interrupt", "-f", conn, "--runs", 1)["times"]) == 1
    crash = client("crash", "-f", conn, "--runs", 1)
    assert len(crash["times"]) == 1 and crash["reported"][0] <= crash["times"][0]
    restart = client("restart", "-f", conn, "--pid", kernel.km.provisioner.pid, "--runs", 1)
    assert len(restart["times"]) == 1
    r = client("pss", "--pid", kernel.km.provisioner.pid)
    assert len(r["processes"]) >= 2  # the supervisor and its worker
    assert r["total_kb"] == sum(p["pss_kb"] for p in r["processes"]) > 0


def test_bench_makes_its_table_and_json(tmp_path):
    out = tmp_path / "bench.json"
    r = subprocess.run([sys.executable, os.path.join(HERE, "bench.py"), "--quick",
                        "--kernels", "null", "--sandpit", SANDPIT, "--null-kernel",
                        NULL_KERNEL, "--client", CLIENT, "--json", str(out)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "| execute round trip `x = 1`, C client (median) | - | - |" in r.stdout
    assert "machine: %d cores" % os.cpu_count() in r.stdout
    data = json.loads(out.read_text())
    assert data["kernels"] == ["null"]
    rows = {row["figure"]: row for row in data["rows"]}
    assert rows["ready: process start to first execute_reply"]["values"]["null"] > 0
    assert len(data["raw"]["null"]["roundtrip_c"]["times"]) == data["counts"]["cells"]


def test_bench_e2b_makes_its_table_and_json(tmp_path):
    out = tmp_path / "bench-e2b.json"
    r = subprocess.run([sys.executable, os.path.join(HERE, "bench_e2b.py"), "--quick",
                        "--sandpit", SANDPIT, "--json", str(out)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert "POST /execute `1 + 1`, warm context" in r.stdout
    assert "contexts open, their total PSS" in r.stdout
    data = json.loads(out.read_text())
    c = data["counts"]
    assert len(data["execute_s"]) == c["cells"] and min(data["execute_s"]) > 0
    assert len(data["first_result_s"]) == c["starts"]
    assert len(data["sandpit_run_s"]) == max(1, c["cells"] // 3)
    assert data["pss"]["contexts"] == c["contexts"]
    # Each context is a kernel of its own: a supervisor and a worker at least.
    assert data["pss"]["contexts_pss_kb"] > c["contexts"] * 1024
