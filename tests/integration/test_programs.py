"""Three files installed side by side: `sandpit` (the supervisor, the commands),
`sandpit-serve` (the kernel gateway that `sandpit serve` runs, with the HTTP and
TLS libraries that no kernel loads) and `sandpit-worker.so` (the code of the
process that runs the cells), a library that Python's own program runs with, so that the
worker shares CPython's code with every other Python (under GCC's
AddressSanitizer and UBSan too; under ThreadSanitizer or clang's sanitizers the
worker is a program of its own, `sandpit-worker`, with CPython linked in). Each
loads only the libraries it uses, which is what makes each start sooner and
hold less: the supervisor no CPython, the worker no ZeroMQ, OpenSSL or SQLite
(and no libpython either where CPython is linked into Python's program). A
kernel whose worker is missing says so and stops, rather than serving a kernel
that can run nothing."""

import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig

import pytest

from sandpit_testing import SANDPIT, TIMEOUT, start, stop

WORKER = os.path.join(os.path.dirname(SANDPIT), "sandpit-worker.so")
# The Python sandpit is built with, by its real path: the worker's program.
PYTHON_PROGRAM = os.path.realpath(sys.executable)


def mapped(pid):
    """The real paths of the files a process maps."""
    with open("/proc/%d/maps" % pid) as f:
        return {os.path.realpath(line.split()[-1]) for line in f if "/" in line}


def libraries(pid):
    """The base names of the shared objects a process maps."""
    return {os.path.basename(path).split(".so")[0] for path in mapped(pid) if ".so" in path}


def worker_of(pid):
    """The kernel's worker: its child named sandpit-worker."""
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        kids = [int(c) for c in f.read().split()]
    workers = [c for c in kids if open("/proc/%d/comm" % c).read().strip() == "sandpit-worker"]
    assert len(workers) == 1, kids
    return workers[0]


@pytest.fixture(scope="module")
def k(jupyter_dir, tmp_path_factory):
    k = start("sandpit", cwd=str(tmp_path_factory.mktemp("ws")))
    yield k
    stop(k)


def test_the_worker_is_pythons_program_with_sandpits_library(k):
    assert k.value("6 * 7") == "42"
    pid = k.km.provisioner.process.pid
    worker = worker_of(pid)
    assert os.path.realpath("/proc/%d/exe" % pid) == os.path.realpath(SANDPIT)
    assert os.path.realpath("/proc/%d/exe" % worker) == PYTHON_PROGRAM
    assert os.path.realpath(WORKER) in mapped(worker)
    assert os.path.realpath(WORKER) not in mapped(pid)
    # The library exports only what replaces Python's main.
    symbols = subprocess.run(["nm", "-D", "--defined-only", WORKER], capture_output=True,
                             text=True, check=True).stdout.split()
    assert symbols[1::3] == ["T"] and symbols[2::3] == ["__libc_start_main"], symbols
    # What loaded it is not in the environment that the user's code sees.
    assert k.value("'LD_PRELOAD' in __import__('os').environ") == "False"


def test_each_process_loads_only_the_libraries_it_uses(k):
    assert k.value("1") == "1"
    pid = k.km.provisioner.process.pid
    supervisor, worker = libraries(pid), libraries(worker_of(pid))
    assert {"libzmq", "libcrypto", "libsqlite3"} <= supervisor
    assert "libpython3.11" not in supervisor
    # The gateway's HTTP and TLS libraries are sandpit-serve's alone.
    assert not {"libwebsockets", "libssl"} & supervisor
    assert not {"libzmq", "libcrypto", "libsqlite3", "libstdc++"} & worker
    # CPython is linked into the worker's program where Python has its static
    # library (Debian's does), and exported for the extension modules it loads;
    # elsewhere the worker loads libpython.
    static = os.path.join(sysconfig.get_config_var("LIBPL"),
                          "libpython%s.a" % sysconfig.get_python_version())
    if os.path.exists(static):
        print("CPython linked into Python's program, from", static)
        assert "libpython3.11" not in worker
        symbols = subprocess.run(["nm", "-D", "--defined-only", PYTHON_PROGRAM],
                                 capture_output=True, text=True, check=True).stdout.split()
        assert "Py_InitializeFromConfig" in symbols and "PyList_New" in symbols
    else:
        print("no static CPython here: the worker loads libpython")
        assert "libpython3.11" in worker


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def test_a_kernel_without_its_worker_program_says_so_and_stops(tmp_path):
    lone = tmp_path / "bin" / "sandpit"
    lone.parent.mkdir()
    shutil.copy(SANDPIT, lone)
    ports = free_ports(5)
    conn = tmp_path / "kernel.json"
    conn.write_text(json.dumps({
        "transport": "tcp", "ip": "127.0.0.1", "key": "k" * 32,
        "signature_scheme": "hmac-sha256", "shell_port": ports[0], "iopub_port": ports[1],
        "stdin_port": ports[2], "control_port": ports[3], "hb_port": ports[4]}))
    p = subprocess.run([str(lone), "kernel", "-f", str(conn)], cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=TIMEOUT)
    assert p.returncode == 1
    assert str(lone.parent / "sandpit-worker.so") in p.stderr
    assert "installed beside sandpit" in p.stderr


def test_serve_without_its_program_says_so(tmp_path):
    lone = tmp_path / "bin" / "sandpit"
    lone.parent.mkdir()
    shutil.copy(SANDPIT, lone)
    p = subprocess.run([str(lone), "serve", "--help"], capture_output=True, text=True,
                       timeout=TIMEOUT)
    assert p.returncode == 1
    assert str(lone.parent / "sandpit-serve") in p.stderr
    assert "installed beside sandpit" in p.stderr
