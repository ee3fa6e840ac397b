"""Memory that RLIMIT_DATA does not count, and tasks that RLIMIT_NPROC does not
bind for root (issue #9, hole 1): the worker runs in a cgroup of its own.

Under a small --memory, an anonymous shared mapping written in full, a
MAP_SHARED mapping of a file in the workspace and a tmpfs filled from a cell, each
a little larger than the worker's group may hold (sized from the limit, not from
the machine), all fail (MemoryError, or the worker stopped and the cell told so)
or stay within the limit; the kernel lives on. Threads beyond the task limit are
refused, even as root. The group is gone once its worker has ended.

Where the machine gives no cgroup (cgroup v2 without delegation, v1 without
root), the report must say so and that the memory limit covers private memory
only; what can still be closed there (anonymous shared mappings, a temporary
folder on tmpfs) must be. Each test prints which case applies.
"""

import os
import shutil
import time

import pytest

from sandbox_helpers import ASAN, TIMEOUT, boot, kernel_info, plant, assert_intact, stop

MEMORY_MIB = 256
# The group's limit: the memory asked for, plus an eighth and at least 64 MiB more
# for what RLIMIT_DATA leaves out (the interpreter's files, page tables, buffers).
GROUP_MIB = MEMORY_MIB + max(MEMORY_MIB // 8, 64)
# What each test makes a cell hold: more than the group's limit by itself, the
# interpreter's own memory aside, and no more, so that the test means the same on a
# machine that could not give gigabytes.
OVER_BYTES = (GROUP_MIB + 128) << 20


def layer(k, name):
    for l in kernel_info(k)["sandpit"]["layers"]:
        if l["name"] == name:
            return l
    raise AssertionError("no layer %s" % name)


def own_groups():
    """{controller: folder} of this process's groups ("v2" for the unified one)."""
    return cgroup_dirs_of(os.getpid())


def machine_gives_cgroups():
    """Whether a kernel started from here can have a group of its own for its worker,
    judged from outside the kernel: cgroup v1 with a memory hierarchy whose group of
    ours is writable (root, usually), or cgroup v2 where ours is the root group. A v2
    group shared with this test process cannot hand controllers down."""
    dirs = own_groups()
    if "memory" in dirs:
        return os.access(dirs["memory"], os.W_OK) and \
            ("pids" not in dirs or os.access(dirs["pids"], os.W_OK))
    if "v2" in dirs:
        try:
            with open(os.path.join(dirs["v2"], "cgroup.controllers")) as f:
                has_memory = "memory" in f.read().split()
        except OSError:
            return False
        with open("/proc/self/cgroup") as f:
            at_root = any(line.strip() == "0::/" for line in f)
        return has_memory and at_root and os.access(dirs["v2"], os.W_OK)
    return False


def cgroup_memory(k):
    """True if the worker's cgroup counts shared memory, which it must where the
    machine gives cgroups; otherwise checks that the report says the limit covers
    private memory only, and returns False."""
    k.run("pass")  # the worker's report has reached the supervisor
    cg = layer(k, "cgroup")
    if machine_gives_cgroups() and not ASAN:
        assert cg["state"] == "active", cg
    if cg["state"] == "active":
        assert "memory %d MiB" % GROUP_MIB in cg["detail"], cg
        print("cgroup: %s" % cg["detail"])
        return True
    assert cg["state"] == "unavailable", cg
    assert cg["detail"], "an unavailable layer says why"
    if ASAN:
        assert "AddressSanitizer" in cg["detail"], cg
    else:
        assert "covers private memory only" in cg["detail"], cg
    print("no cgroup here (%s): the fallbacks are checked" % cg["detail"])
    return False


def worker_lost_to_memory(reply):
    c = reply["content"]
    return c["status"] == "error" and c["ename"] == "WorkerDied" and \
        "ran out of memory" in c["evalue"]


@pytest.fixture(scope="module")
def small(jupyter_dir, tmp_path_factory):
    k = boot(jupyter_dir, "--memory", str(MEMORY_MIB), cwd=tmp_path_factory.mktemp("mem"))
    yield k
    stop(k)


# 1 MiB at a time, so that the cell itself needs little private memory.
FILL_MAPPING = """
import mmap
chunk = b"x" * (1 << 20)
{open}
for off in range(0, {size}, 1 << 20):
    m[off:off + (1 << 20)] = chunk
print("written")
"""


def test_a_shared_anonymous_mapping_above_the_limit(small):
    if ASAN:
        cgroup_memory(small)
        pytest.skip("no memory limit in an AddressSanitizer build (the report says so)")
    counted = cgroup_memory(small)
    token = plant(small)
    code = FILL_MAPPING.format(open="m = mmap.mmap(-1, %d)" % OVER_BYTES, size=OVER_BYTES)
    reply, _ = small.execute(code, timeout=120)
    c = reply["content"]
    if counted:
        assert c["status"] == "error", "%d MiB of shared memory under a %d MiB limit" % \
            (OVER_BYTES >> 20, GROUP_MIB)
        assert c["ename"] in ("MemoryError", "WorkerDied"), c
        if c["ename"] == "WorkerDied":
            assert worker_lost_to_memory(reply), c["evalue"]
    else:
        # without a group to count it, the mapping itself is refused
        assert c["status"] == "error" and c["ename"] == "PermissionError", c
        assert_intact(small, token)
    assert small.run("print('alive')") == "alive\n"


def test_a_large_shared_mapping_of_a_file_in_the_workspace(small):
    """Dirty pages of a shared file mapping are page cache: with a group they are
    written back or the cell fails, and the worker never holds more than its limit."""
    if ASAN:
        cgroup_memory(small)
        pytest.skip("no memory limit in an AddressSanitizer build (the report says so)")
    counted = cgroup_memory(small)
    # The worker's resident set may exceed its group's charge by pages it shares but
    # another group was charged for (the interpreter's own files): at most what it
    # held before the mapping.
    code = """
for line in open("/proc/self/status"):
    if line.startswith("VmRSS:"):
        print("before", (int(line.split()[1]) >> 10) + 1)
""" + FILL_MAPPING.format(
        open="f = open('shared.bin', 'w+b')\nf.truncate(%d)\n"
             "m = mmap.mmap(f.fileno(), %d)" % (OVER_BYTES, OVER_BYTES),
        size=OVER_BYTES) + """
m.flush()
for line in open("/proc/self/status"):
    if line.startswith("VmHWM:"):
        print("peak", int(line.split()[1]) >> 10)
"""
    reply, outputs = small.execute(code, timeout=180)
    c = reply["content"]
    try:
        if c["status"] == "ok":
            text = "".join(m["content"]["text"] for m in outputs
                           if m["msg_type"] == "stream")
            peak = int(text.split("peak")[1])
            before = int(text.split("before")[1].split()[0])
            print("worker peak: %d MiB (%d MiB before the mapping)" % (peak, before))
            if counted:
                assert peak <= GROUP_MIB + before, \
                    "the worker held %d MiB under a %d MiB group" % (peak, GROUP_MIB)
            else:
                # cgroup_memory checked that the report names the gap
                print("no cgroup: the page cache of a file on disk is left to the "
                      "kernel's reclaim, as for any process")
        else:
            assert c["ename"] in ("MemoryError", "WorkerDied"), c
            if c["ename"] == "WorkerDied":
                assert worker_lost_to_memory(reply), c["evalue"]
    finally:
        small.execute("import os\ntry:\n    m.close(); f.close()\nexcept NameError:\n"
                      "    pass\nos.remove('shared.bin')")
    assert small.run("print('alive')") == "alive\n"


@pytest.fixture
def shm_folder():
    """A folder on tmpfs (/dev/shm), removed afterwards; where there is none with
    room for what the tests write, the tests that use it are skipped."""
    if not os.path.isdir("/dev/shm") or os.statvfs("/dev/shm").f_bavail * \
            os.statvfs("/dev/shm").f_frsize < OVER_BYTES + (64 << 20):
        pytest.skip("no /dev/shm with %d MiB free on this machine" %
                    ((OVER_BYTES >> 20) + 64))
    path = "/dev/shm/sandpit-test-%d-%d" % (os.getpid(), time.monotonic_ns())
    os.mkdir(path)
    yield path
    shutil.rmtree(path, ignore_errors=True)


FILL_FILE = """
import os
chunk = b"x" * (1 << 20)
with open(os.path.join({folder}, "fill.bin"), "wb") as f:
    for i in range(%d):  # MiB
        f.write(chunk)
print("filled")
""" % (OVER_BYTES >> 20)


@pytest.mark.parametrize("where", ["workspace", "tmpdir"])
def test_filling_a_tmpfs(jupyter_dir, shm_folder, where):
    """A workspace on tmpfs, or a private temporary folder on tmpfs (TMPDIR in
    memory, as on many distributions): what a cell writes there is memory."""
    if where == "workspace":
        os.mkdir(os.path.join(shm_folder, "ws"))
        k = boot(jupyter_dir, "--memory", str(MEMORY_MIB), cwd=os.path.join(shm_folder, "ws"))
        folder = "os.getcwd()"
    else:
        from sandpit_testing import install_spec, start
        name = install_spec(jupyter_dir, "--memory", str(MEMORY_MIB))
        env = dict(os.environ, TMPDIR=shm_folder)
        k = start(name, cwd=str(jupyter_dir), env=env)
        folder = "__import__('tempfile').gettempdir()"
    try:
        if ASAN:
            cgroup_memory(k)
            pytest.skip("no memory limit in an AddressSanitizer build (the report says so)")
        counted = cgroup_memory(k)
        if where == "tmpdir":
            assert k.run("import tempfile\nprint(tempfile.gettempdir())").startswith(
                shm_folder)
        reply, _ = k.execute(FILL_FILE.format(folder=folder), timeout=120)
        c = reply["content"]
        if counted or where == "tmpdir":
            assert c["status"] == "error", "%d MiB written to tmpfs under a %d MiB " \
                "limit" % (OVER_BYTES >> 20, GROUP_MIB)
            if c["ename"] == "WorkerDied":
                assert worker_lost_to_memory(reply), c["evalue"]
            else:
                # the private tmpfs of a machine without cgroups is full
                assert c["ename"] in ("OSError", "MemoryError"), c
        else:
            print("no cgroup, workspace on tmpfs: the report names the gap")
            assert "is on tmpfs" in layer(k, "mount-namespace")["detail"]
        assert k.run("print('alive')") == "alive\n"
    finally:
        stop(k)


THREADS = """
import threading
threading.stack_size(65536)
release = threading.Event()
started, error = [], None
try:
    for i in range({n}):
        t = threading.Thread(target=release.wait)
        t.start()
        started.append(t)
except RuntimeError as e:
    error = e
release.set()
for t in started:
    t.join()
print(len(started), repr(error))
"""


def test_threads_beyond_the_task_limit_are_refused(small):
    """1024 tasks, threads included; the kernel exempts root from RLIMIT_NPROC, not
    from the cgroup's pids.max."""
    k = small
    k.run("pass")
    cg, rl = layer(k, "cgroup")["detail"], layer(k, "rlimits")["detail"]
    out = k.run(THREADS.format(n=3000), timeout=120).split(" ", 1)
    count, error = int(out[0]), out[1]
    print("threads started: %d, then %s" % (count, error.strip()))
    if "tasks 1024" not in cg and "tasks 1024" not in rl:
        # root without a cgroup: nothing binds it, and the report must say so
        assert not machine_gives_cgroups(), "a cgroup could limit the tasks here"
        assert "tasks not limited" in rl, (cg, rl)
        pytest.skip("no task limit on this machine (root without a cgroup; the "
                    "report says so): %s" % rl)
    assert count < 1024, count
    assert "can't start new thread" in error
    # the limit is on tasks alive: once they have ended, threads start again
    assert k.run(THREADS.format(n=50)).startswith("50 None")


def cgroup_dirs_of(pid):
    """{controller: folder} of a process's own groups, from outside."""
    dirs = {}
    mounts = {}
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            sep = fields.index("-")
            fstype, opts = fields[sep + 1], fields[sep + 3]
            if fstype == "cgroup2":
                mounts["v2"] = (fields[3], fields[4])
            elif fstype == "cgroup":
                for c in opts.split(","):
                    mounts[c] = (fields[3], fields[4])
    with open("/proc/%d/cgroup" % pid) as f:
        for line in f:
            _, ctls, path = line.rstrip("\n").split(":", 2)
            for c in (ctls.split(",") if ctls else ["v2"]):
                if c in mounts:
                    root, mnt = mounts[c]
                    rel = path[len(root):] if root != "/" and path.startswith(root) \
                        else path
                    dirs[c] = mnt + rel.rstrip("/")
    return dirs


def test_the_group_is_gone_after_the_worker_ends(jupyter_dir, tmp_path):
    k = boot(jupyter_dir, "--memory", str(MEMORY_MIB), cwd=tmp_path)
    kernel_pid = k.km.provisioner.process.pid
    try:
        k.run("pass")
        if not machine_gives_cgroups():
            pytest.skip("no cgroup here, none to see go: %s" % layer(k, "cgroup")["detail"])
        worker = int(k.run("import os\nprint(os.getpid())"))
        dirs = cgroup_dirs_of(worker)
        own = {c: d for c, d in dirs.items()
               if os.path.basename(d).startswith("sandpit-%d-" % kernel_pid)}
        print("the worker's groups: %s" % own)
        assert "memory" in own or "v2" in own, dirs
        assert all(os.path.isdir(d) for d in own.values())
        # the supervisor's own groups are not the worker's
        assert not any(d in own.values() for d in cgroup_dirs_of(kernel_pid).values())
        # the worker dies; the next one has a group of its own, the old one is gone
        reply, _ = k.execute("import os\nos._exit(3)")
        assert reply["content"]["ename"] == "WorkerDied"
        second = int(k.run("import os\nprint(os.getpid())"))
        assert second != worker
        deadline = time.monotonic() + TIMEOUT
        while any(os.path.isdir(d) for d in own.values()) and time.monotonic() < deadline:
            k.run("pass")  # the supervisor reaps on its loop; wait on its answers
        assert not any(os.path.isdir(d) for d in own.values()), own
        new = {c: d for c, d in cgroup_dirs_of(second).items()
               if os.path.basename(d).startswith("sandpit-%d-" % kernel_pid)}
        assert new and set(new.values()).isdisjoint(own.values())
    finally:
        stop(k)
    # and none is left once the kernel has ended (stop waits for its process)
    assert not any(os.path.isdir(d) for d in new.values()), new


# --- a machine without cgroups ----------------------------------------------------------

NO_CGROUPS = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
def check(rc, what):
    if rc != 0:
        raise OSError(ctypes.get_errno(), what)
check(libc.unshare(0x00020000), "unshare(CLONE_NEWNS)")
check(libc.mount(None, b"/", None, 0x4000 | (1 << 18), None), "make mounts private")
check(libc.mount(b"none", b"/sys/fs/cgroup", b"tmpfs", 0, b"size=4k"), "cover the cgroups")
os.execv(sys.argv[1], sys.argv[1:])
"""


def without_cgroups_launcher(tmp_path):
    """The command that runs the one it is given on a machine with no cgroup
    filesystem: for real, a launcher that covers /sys/fs/cgroup with an empty tmpfs
    in a mount namespace of its own (which needs root); () where this machine gives
    no cgroups anyway; None where they cannot be taken away."""
    import sys
    if not machine_gives_cgroups():
        print("this machine gives no cgroups: the kernel runs as it is")
        return ()
    if os.geteuid() != 0:
        return None
    launcher = tmp_path / "no_cgroups.py"
    launcher.write_text(NO_CGROUPS)
    return (sys.executable, str(launcher))


def start_without_cgroups(jupyter_dir, tmp_path, env, *options):
    """A kernel with --memory and options on a machine with no cgroup filesystem
    (without_cgroups_launcher), or None."""
    import json
    from sandbox_helpers import SANDPIT
    from sandpit_testing import install_spec, start
    launcher = without_cgroups_launcher(tmp_path)
    if launcher is None:
        return None
    if not launcher:
        return start(install_spec(jupyter_dir, "--memory", str(MEMORY_MIB), *options),
                     cwd=str(tmp_path), env=env)
    folder = jupyter_dir / "share" / "jupyter" / "kernels" / "sandpit-no-cgroups"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [*launcher, os.path.realpath(SANDPIT), "kernel", "-f",
                 "{connection_file}", "--memory", str(MEMORY_MIB), *options],
        "display_name": "sandpit without cgroups", "language": "python",
        "interrupt_mode": "message"}))
    return start("sandpit-no-cgroups", cwd=str(tmp_path), env=env)


def test_without_cgroups_what_can_be_closed_is(jupyter_dir, tmp_path, shm_folder):
    """The report says the limit covers private memory only; anonymous shared
    mappings are refused; a temporary folder on tmpfs becomes a small private one;
    numpy, pandas and matplotlib still work."""
    k = start_without_cgroups(jupyter_dir, tmp_path, dict(os.environ, TMPDIR=shm_folder))
    if k is None:
        pytest.skip(NO_CGROUPS_TAKEN)
    try:
        k.run("pass")
        cg = layer(k, "cgroup")
        assert cg["state"] == "unavailable", cg
        if ASAN:
            pytest.skip("no memory limit in an AddressSanitizer build (the report says so)")
        assert "covers private memory only" in cg["detail"], cg
        assert "shared anonymous memory refused" in layer(k, "seccomp")["detail"]
        assert "small private tmpfs" in layer(k, "mount-namespace")["detail"]
        token = plant(k)
        reply, _ = k.execute("import mmap\nm = mmap.mmap(-1, %d)" % OVER_BYTES)
        assert reply["content"]["ename"] == "PermissionError", reply["content"]
        # in words, as the other refusals are, not a bare "[Errno 1]"
        assert "shared memory is refused in this kernel's sandbox" in \
            reply["content"]["evalue"], reply["content"]
        assert "flags=mmap.MAP_PRIVATE" in reply["content"]["evalue"]
        # the words are for that refusal only: another EPERM keeps its own
        reply, _ = k.execute("import mmap, os\nm = mmap.mmap(-1, 4096, flags=mmap.MAP_PRIVATE)"
                             "\nos.setuid(12345)")
        assert reply["content"]["ename"] == "PermissionError", reply["content"]
        assert "shared memory" not in reply["content"]["evalue"], reply["content"]
        assert k.run("import mmap\nm = mmap.mmap(-1, 1 << 20, flags=mmap.MAP_PRIVATE)\n"
                     "m[:5] = b'hello'\nprint(m[:5].decode())") == "hello\n"
        # the private temporary folder is a quarter of the limit: full, not the machine
        reply, _ = k.execute(FILL_FILE.format(folder="__import__('tempfile').gettempdir()"))
        assert reply["content"]["ename"] == "OSError", reply["content"]
        assert "No space left on device" in reply["content"]["evalue"]
        assert not any("fill.bin" in files for _, _, files in os.walk(shm_folder)), \
            "the cell wrote into the host's tmpfs"
        assert_intact(k, token)
        reply, outputs = k.execute(
            "import numpy as np, pandas as pd, matplotlib.pyplot as plt\n"
            "df = pd.DataFrame({'x': np.arange(5)})\nplt.plot(df.x)\nplt.show()\n"
            "print(df.x.sum())")
        assert reply["content"]["status"] == "ok", reply["content"]
        assert [m for m in outputs if m["msg_type"] == "display_data"
                and "image/png" in m["content"]["data"]]
    finally:
        stop(k)


CPU_CAP_UNENFORCED = "the CPU cap (--cpus 0.5) is not enforced on this machine"
NO_CGROUPS_TAKEN = "cgroups cannot be taken away here without root"


def test_without_cgroups_the_cpu_cap_is_said_not_to_be_enforced(jupyter_dir, tmp_path):
    """--cpus needs a cgroup: without one, the kernel_info report and check-sandbox
    say that the cap is not enforced, as they say what the memory limit covers."""
    from sandbox_helpers import check_sandbox
    k = start_without_cgroups(jupyter_dir, tmp_path, dict(os.environ), "--cpus", "0.5")
    if k is None:
        pytest.skip(NO_CGROUPS_TAKEN)
    try:
        k.run("pass")
        cg = layer(k, "cgroup")
        print("cgroup: %s" % cg["detail"])
        assert cg["state"] == "unavailable", cg
        assert CPU_CAP_UNENFORCED in cg["detail"], cg
        assert "CPU 0.5" not in cg["detail"], cg
    finally:
        stop(k)
    state, detail = check_sandbox("--cpus", "0.5", "--memory", str(MEMORY_MIB),
                                  launcher=without_cgroups_launcher(tmp_path))["cgroup"]
    assert state == "unavailable" and CPU_CAP_UNENFORCED in detail, detail
    # without --cpus there is no cap to speak of
    state, detail = check_sandbox("--memory", str(MEMORY_MIB),
                                  launcher=without_cgroups_launcher(tmp_path))["cgroup"]
    assert "CPU cap" not in detail, detail


SYSV = r"""
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
shmid = libc.shmget(0, %d, 0o1600)  # IPC_PRIVATE, IPC_CREAT | 0600
print(shmid, ctypes.get_errno())
"""


def test_sysv_shared_memory_stays_with_the_worker(jupyter_dir, tmp_path):
    """A SysV segment outlives the process that made it, and root could attach any
    other process's: the worker has an IPC namespace of its own (or, without one and
    without a cgroup, shmget is refused)."""
    size = 1234567  # a size to know the segment by
    k = boot(jupyter_dir, "--memory", str(MEMORY_MIB), cwd=tmp_path)
    try:
        k.run("pass")
        user = layer(k, "user-namespace")["detail"]
        shmid, err = (int(x) for x in k.run(SYSV % size).split())
        with open("/proc/sysvipc/shm") as f:
            sizes = [line.split()[3] for line in f.readlines()[1:]]
        if "an IPC namespace of its own" not in user:
            assert shmid == -1 or str(size) not in sizes
            pytest.skip("no IPC namespace here, the segment cannot be one of the "
                        "worker's own (%s)" % user)
        assert shmid >= 0, err
        assert str(size) not in sizes, "the worker's segment is in the host's namespace"
    finally:
        stop(k)


def test_cpus_caps_the_workers_cpu_time(jupyter_dir, tmp_path):
    """--cpus 0.5: the worker's group may use half a CPU, as seen from outside."""
    k = boot(jupyter_dir, "--cpus", "0.5", cwd=tmp_path)
    try:
        k.run("pass")
        cg = layer(k, "cgroup")
        if not machine_gives_cgroups():
            assert cg["state"] != "active" and CPU_CAP_UNENFORCED in cg["detail"], cg
            pytest.skip("no cgroup here, nothing caps the CPU time (the report says "
                        "so): %s" % cg["detail"])
        assert cg["state"] == "active" and "CPU 0.5" in cg["detail"], cg
        dirs = cgroup_dirs_of(int(k.run("import os\nprint(os.getpid())")))
        if "cpu" in dirs:
            with open(os.path.join(dirs["cpu"], "cpu.cfs_quota_us")) as f:
                quota = int(f.read())
            with open(os.path.join(dirs["cpu"], "cpu.cfs_period_us")) as f:
                period = int(f.read())
        else:
            with open(os.path.join(dirs["v2"], "cpu.max")) as f:
                quota, period = (int(x) for x in f.read().split())
        assert quota * 2 == period, (quota, period)
    finally:
        stop(k)
