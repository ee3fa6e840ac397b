"""Stopping a worker ends every process it made (issue 27, finding 9).

Preloads run before the seccomp filter (pandas runs `uname -p` at import), so a
preload can fork, and its processes have no filter. Such a process must not
outlive its worker: when the worker is stopped (a shutdown, a restart in place,
a crash), every process of its cgroup is killed, or, where it has no cgroup,
every process of its tree, including those that left its process group and
session and those orphaned on the way (a double fork).

The preload lives in a folder the cell cannot write (given by --read and
PYTHONPATH). Its processes write their pid and start time into the workspace;
the test checks by both that each is gone, waiting a bounded time.
"""

import json
import os
import subprocess
import sys
import time

import pytest

from sandpit_testing import SANDPIT, TIMEOUT, install_spec, start, stop

FORKER = r'''
import os, time
LEAVE = False
def _spawn(tag, detach):
    pid = os.fork()
    if pid:
        if detach:
            os.waitpid(pid, 0)
        return
    try:
        if detach:  # its own session, then orphaned: a daemon
            os.setsid()
            if os.fork():
                os._exit(0)
        name = "escapee-%d-%s.json" % (os.getpid(), tag)
        if LEAVE:  # into the group above the worker's, in each hierarchy
            for line in open("/proc/self/cgroup"):
                ctl, path = line.strip().split(":", 2)[1:]
                for root in ("/sys/fs/cgroup/" + ctl.split(",")[0].replace("name=", ""),
                             "/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
                    try:
                        fd = os.open(root + os.path.dirname(path) + "/cgroup.procs",
                                     os.O_WRONLY)
                    except OSError:
                        continue
                    try:
                        os.write(fd, b"0")
                    except OSError:
                        pass
                    os.close(fd)
        fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.write(fd, b'{"pid": %d}' % os.getpid())
        os.close(fd)
        time.sleep(3600)
    finally:
        os._exit(0)
_spawn("child", False)
_spawn("daemon", True)
'''


def start_time(pid):
    """The process's start time (field 22 of its stat), or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except FileNotFoundError:
        return None


def escapees(ws):
    """The processes the preloads wrote down: [(file name, pid, start time)],
    the start time read as the file is found (the process's own /proc/self is
    not readable to it)."""
    found = []
    for name in sorted(os.listdir(ws)):
        if name.startswith("escapee-") and name.endswith(".json"):
            try:
                with open(os.path.join(ws, name)) as f:
                    d = json.load(f)
            except ValueError:
                continue  # being written
            found.append((name, d["pid"], start_time(d["pid"])))
    return found


def wait_for_escapees(ws, n):
    deadline = time.monotonic() + TIMEOUT
    while len(escapees(ws)) < n and time.monotonic() < deadline:
        time.sleep(0.05)
    found = escapees(ws)
    assert len(found) >= n, found
    return found


def alive(pid, start):
    """True if the process is still there (a zombie counts as gone: it runs
    nothing, and its parent, not the kernel, may be the one to reap it)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except FileNotFoundError:
        return False
    return fields[19] == start and fields[0] != "Z"


def assert_gone(found):
    deadline = time.monotonic() + TIMEOUT
    while any(alive(pid, start) for _, pid, start in found) and \
            time.monotonic() < deadline:
        time.sleep(0.05)
    left = [(name, pid) for name, pid, start in found if alive(pid, start)]
    for _, pid in left:  # do not leave them to the next test
        os.kill(pid, 9)
    assert not left, "outlived their worker: %r" % left


def spec(jupyter_dir, tmp_path, *options, leave=False):
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "forker.py").write_text(FORKER.replace("LEAVE = False", "LEAVE = %r" % leave))
    name = install_spec(jupyter_dir, "--preload", "forker", "--read", str(lib), *options)
    ws = tmp_path / "ws"
    ws.mkdir()
    env = dict(os.environ, PYTHONPATH=str(lib))
    return name, ws, env, lib


def assert_read_only(k, lib):
    reply, _ = k.execute("open(%r, 'w')" % str(lib / "forker.py"))
    assert reply["content"]["status"] == "error", "the cell can write its preload"


def restart_in_place(k):
    msg = k.kc.session.msg("shutdown_request", {"restart": True},
                           metadata={"sandpit": {"in_place": True}})
    k.kc.control_channel.send(msg)
    reply = k.kc.get_control_msg(timeout=TIMEOUT)
    assert reply["content"] == {"status": "ok", "restart": True}


def cgroup_state(k):
    k.run("pass")
    layers = k.request("kernel_info")["content"]["sandpit"]["layers"]
    return [layer for layer in layers if layer["name"] == "cgroup"][0]["state"]


def check_lifecycle(k, ws):
    """A restart in place, a crash and the shutdown each end the processes the
    preloads of the worker that goes had made, and the cell cannot see the
    preload's folder as writable."""
    first = wait_for_escapees(ws, 2)
    assert all(alive(pid, start) for _, pid, start in first)
    # a restart in place
    restart_in_place(k)
    assert k.run("print(1)") == "1\n"
    assert_gone(first)
    for name, _, _ in first:
        os.unlink(ws / name)
    # a crash: the worker dies first, and its processes are orphaned
    second = wait_for_escapees(ws, 2)
    assert all(alive(pid, start) for _, pid, start in second)
    k.execute("import os\nos.abort()")
    assert k.run("print(2)") == "2\n"
    assert_gone(second)
    for name, _, _ in second:
        os.unlink(ws / name)
    # the kernel's shutdown
    third = wait_for_escapees(ws, 2)
    stop(k)
    assert_gone(third)


# A process the preloads fork runs under the worker's Landlock and mount namespace
# (stage 1 comes before the preloads): it cannot move itself out of the group.
LEAVE_GROUP = r"""
import os
moved = []
for line in open("/proc/self/cgroup"):
    path = line.strip().split(":", 2)[2]
    controllers = line.split(":")[1].split(",")[0].replace("name=", "")
    for root in ("/sys/fs/cgroup/" + controllers, "/sys/fs/cgroup/unified",
                 "/sys/fs/cgroup"):
        target = root + os.path.dirname(path) + "/cgroup.procs"
        try:
            fd = os.open(target, os.O_WRONLY)  # never made: only an existing group's
        except OSError:
            continue
        try:
            os.write(fd, b"0")
            moved.append(target)
        except OSError:
            pass
        os.close(fd)
print(moved)
"""


def test_with_the_machines_cgroup(jupyter_dir, tmp_path):
    name, ws, env, lib = spec(jupyter_dir, tmp_path)
    k = start(name, cwd=str(ws), env=env)
    try:
        state = cgroup_state(k)
        assert_read_only(k, lib)
        if state == "active":
            assert k.run(LEAVE_GROUP) == "[]\n"
        check_lifecycle(k, ws)
    finally:
        if k.km.is_alive():
            stop(k)
        assert_gone(escapees(ws))
    if state != "active":
        pytest.skip("no cgroup on this machine (%s): the process tree's path was "
                    "tested instead" % state)


def test_without_a_sandbox(jupyter_dir, tmp_path):
    """--sandbox off: no cgroup, so the worker's process tree."""
    name, ws, env, _ = spec(jupyter_dir, tmp_path, "--sandbox", "off")
    k = start(name, cwd=str(ws), env=env)
    try:
        assert cgroup_state(k) == "disabled"
        check_lifecycle(k, ws)
    finally:
        if k.km.is_alive():
            stop(k)
        assert_gone(escapees(ws))


# Runs the kernel with an empty tmpfs over /sys/fs/cgroup, in a mount namespace of
# its own: a machine where no cgroup can be had, for real.
NO_CGROUP = r"""
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
CLONE_NEWNS, MS_REC, MS_PRIVATE = 0x20000, 0x4000, 0x40000
if libc.unshare(CLONE_NEWNS) != 0:
    sys.exit("unshare: %s" % os.strerror(ctypes.get_errno()))
if libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None) != 0 or \
        libc.mount(b"none", b"/sys/fs/cgroup", b"tmpfs", 0, b"mode=0555") != 0:
    sys.exit("mount: %s" % os.strerror(ctypes.get_errno()))
os.execv(sys.argv[1], sys.argv[1:])
"""


def test_without_a_cgroup(jupyter_dir, tmp_path):
    launcher = tmp_path / "no_cgroup.py"
    launcher.write_text(NO_CGROUP)
    probe = subprocess.run([sys.executable, str(launcher), "/bin/true"],
                           capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.skip("cannot hide the cgroups from a kernel here: " + probe.stderr.strip())
    name, ws, env, lib = spec(jupyter_dir, tmp_path)
    spec_file = jupyter_dir / "share" / "jupyter" / "kernels" / name / "kernel.json"
    kernel = json.loads(spec_file.read_text())
    kernel["argv"] = [sys.executable, str(launcher), os.path.realpath(SANDPIT),
                      *kernel["argv"][1:]]
    spec_file.write_text(json.dumps(kernel))
    k = start(name, cwd=str(ws), env=env)
    try:
        assert cgroup_state(k) in ("unavailable", "failed")
        assert_read_only(k, lib)
        check_lifecycle(k, ws)
    finally:
        if k.km.is_alive():
            stop(k)
        assert_gone(escapees(ws))


def test_after_the_kernel_was_killed(jupyter_dir, tmp_path):
    """A kernel killed outright (SIGKILL: nothing of it runs again) leaves its
    worker's group behind, with what the preloads forked; the next kernel removes
    stale groups, and ends their processes first."""
    name, ws, env, _ = spec(jupyter_dir, tmp_path)
    k = start(name, cwd=str(ws), env=env)
    try:
        if cgroup_state(k) != "active":
            pytest.skip("no cgroup on this machine: nothing is left to the next kernel")
        found = wait_for_escapees(ws, 2)
        os.kill(k.km.provisioner.process.pid, 9)
        k.km.provisioner.process.wait(timeout=TIMEOUT)
        assert all(alive(pid, start) for _, pid, start in found)
    finally:
        k.kc.stop_channels()
        k.km.cleanup_resources()
    other = tmp_path / "other"
    other.mkdir()
    k = start("sandpit", cwd=str(other))
    try:
        assert k.run("print(3)") == "3\n"
        assert_gone(found)
    finally:
        stop(k)


# The machine of tests/sandbox/test_degraded.py: no Landlock and no namespaces (the
# calls they need fail with ENOSYS, as on a kernel without them).
DEGRADE = r"""
import ctypes, errno, os, sys
lib = ctypes.CDLL("libseccomp.so.2")
lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_rule_add.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                 ctypes.c_uint]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
ctx = lib.seccomp_init(0x7fff0000)  # SCMP_ACT_ALLOW
for name in (b"landlock_create_ruleset", b"unshare"):
    nr = lib.seccomp_syscall_resolve_name(name)
    assert lib.seccomp_rule_add(ctx, 0x00050000 | errno.ENOSYS, nr, 0) == 0
assert lib.seccomp_load(ctx) == 0
os.execv(sys.argv[1], sys.argv[1:])
"""


def test_a_process_that_left_the_group(jupyter_dir, tmp_path):
    """Where nothing keeps /sys read-only (no Landlock, no mount namespace), a
    process the preloads forked can move out of the worker's group (as root, or
    into a group its user was delegated). It is still below the supervisor, a
    subreaper: it ends with the kernel."""
    name, ws, env, _ = spec(jupyter_dir, tmp_path, leave=True)
    launcher = tmp_path / "degrade.py"
    launcher.write_text(DEGRADE)
    spec_file = jupyter_dir / "share" / "jupyter" / "kernels" / name / "kernel.json"
    kernel = json.loads(spec_file.read_text())
    kernel["argv"] = [sys.executable, str(launcher), os.path.realpath(SANDPIT),
                      *kernel["argv"][1:]]
    spec_file.write_text(json.dumps(kernel))
    k = start(name, cwd=str(ws), env=env)
    try:
        if cgroup_state(k) != "active":
            pytest.skip("no cgroup on this machine: nothing to leave")
        found = wait_for_escapees(ws, 2)
        left = k.run(LEAVE_GROUP)
        if left == "[]\n":
            pytest.skip("this user cannot move a process between groups here")
    finally:
        stop(k)
    assert_gone(found)
