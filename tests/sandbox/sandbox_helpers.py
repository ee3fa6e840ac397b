"""Helpers for the sandbox tests (issue #4).

Every test drives the real kernel through jupyter_client, as in tests/integration:
a cell attacks, the reply says how it failed, and the kernel must still answer
afterwards with the globals it had. A sentinel (a random string in a global) is
planted before the attack and read back after it.

Kernels with options come from module-scoped fixtures built on `boot()`, so that
the cases that cannot harm a kernel share one and the whole folder stays fast.
"""

import json
import os
import platform
import re
import subprocess
import uuid

from sandpit_testing import ASAN, SANDPIT, TIMEOUT, install_spec, start, stdout_of, stop

# The layers in the order the kernel and `sandpit check-sandbox` report them.
LAYERS = ["cgroup", "rlimits", "user-namespace", "network-namespace", "mount-namespace",
          "capabilities", "landlock", "seccomp"]
STATES = {"pending", "active", "unavailable", "disabled", "failed"}




def memory_limit_applies(k):
    """True if the kernel's worker runs under its memory limit. In an
    AddressSanitizer build, asserts that the report says the limit is not
    applied, and returns False."""
    k.run("pass")  # the worker is up: its report has reached the supervisor
    layers = k.request("kernel_info")["content"]["sandpit"]["layers"]
    rlimits = [layer for layer in layers if layer["name"] == "rlimits"][0]
    if not ASAN:
        assert "memory limit not applied" not in rlimits["detail"]
        return True
    assert "memory limit not applied: this is an AddressSanitizer build" in rlimits["detail"]
    assert k.run("import resource\n"
                 "print(resource.getrlimit(resource.RLIMIT_DATA)[0])") == "-1\n"
    return False


def boot(jupyter_dir, *options, cwd):
    """A kernel from a kernelspec with these kernel options, started in cwd."""
    name = install_spec(jupyter_dir, *options) if options else "sandpit"
    return start(name, cwd=str(cwd))


def plant(k):
    """Sets a global sentinel in the kernel; returns its value."""
    token = "sentinel-" + uuid.uuid4().hex
    k.run("_sandpit_sentinel = %r" % token)
    return token


def assert_intact(k, token):
    """The kernel answers, and the sentinel planted earlier is still there."""
    assert k.value("_sandpit_sentinel") == repr(token), "the kernel lost its globals"


def assert_lost(k):
    """The kernel answers with a new worker: earlier globals are gone."""
    assert k.run("print('alive')") == "alive\n"
    reply, _ = k.execute("_sandpit_sentinel")
    assert reply["content"]["ename"] == "NameError"


def expect_error(k, code, ename, timeout=TIMEOUT):
    """Runs a cell that must fail with ename; returns (evalue, outputs).
    Checks both the reply and the error published on iopub, which is what a
    notebook shows."""
    reply, outputs = k.execute(code, timeout=timeout)
    c = reply["content"]
    assert c["status"] == "error", (c, stdout_of(outputs))
    assert c["ename"] == ename, (c["ename"], c["evalue"])
    shown = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert shown and shown[-1]["ename"] == ename and shown[-1]["evalue"] == c["evalue"]
    return c["evalue"], outputs


def execute_with_metadata(k, code, metadata, timeout=TIMEOUT):
    """An execute_request with request metadata (jupyter_client 7.4's
    KernelClient.execute takes none); returns (reply, outputs)."""
    content = {"code": code, "silent": False, "store_history": True,
               "user_expressions": {}, "allow_stdin": False, "stop_on_error": True}
    msg = k.kc.session.msg("execute_request", content, metadata=metadata)
    k.kc.shell_channel.send(msg)
    msg_id = msg["header"]["msg_id"]
    reply = k.shell_reply(msg_id, timeout)
    return reply, k.iopub_until_idle(msg_id, timeout)


def kernel_info(k):
    return k.request("kernel_info")["content"]


def check_sandbox(*args, launcher=()):
    """`sandpit check-sandbox [args]`, run through launcher (a command that runs the
    one it is given) if any: {layer: (state, detail)}, in order."""
    p = subprocess.run([*launcher, SANDPIT, "check-sandbox", *args], capture_output=True,
                       text=True, timeout=TIMEOUT)
    assert p.returncode == 0, p.stderr
    layers = {}
    for line in p.stdout.splitlines()[1:]:
        m = re.fullmatch(r"sandbox: (\S+) +(\w+): (.*)", line)
        assert m, "not a layer line: %r" % line
        layers[m.group(1)] = (m.group(2), m.group(3))
    return layers


# What the worker can observe about its own confinement. Each entry is evidence
# for one layer that does not rely on the kernel's word for it.
EVIDENCE_CELL = r"""
import json as _j, os as _o, resource as _r
def _status(field):
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return line.split()[1]
def _open_errno(path, mode):
    try:
        with open(path, mode) as f:
            f.read() if mode == "r" else None
        return 0
    except OSError as e:
        return e.errno
print(_j.dumps({
    "core": _r.getrlimit(_r.RLIMIT_CORE),
    "nofile": _r.getrlimit(_r.RLIMIT_NOFILE),
    "ns": {n: _o.readlink("/proc/self/ns/" + n) for n in ("user", "net", "mnt")},
    "ifaces": sorted(l.split(":")[0].strip() for l in open("/proc/self/net/dev").readlines()[2:]),
    "caps": {f: int(_status(f), 16) for f in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
    "seccomp": int(_status("Seccomp")),
    "no_new_privs": int(_status("NoNewPrivs")),
    "cgroup": open("/proc/self/cgroup").read(),
    "read_outside": _open_errno(%(readable)r, "r"),
    "write_outside": _open_errno(%(writable)r, "w"),
}))
"""


def worker_evidence(k, readable, writable):
    """Runs EVIDENCE_CELL: readable is a world-readable file outside every path the
    worker is granted (only Landlock keeps root from reading it); writable is a new
    file in a folder outside the workspace (only the read-only mounts, or Landlock,
    keep root from making it)."""
    out = k.run(EVIDENCE_CELL % {"readable": str(readable), "writable": str(writable)})
    return json.loads(out)


def host_evidence():
    """The same observations for this (the test's) process."""
    def status(field):
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return line.split()[1]
    return {
        "ns": {n: os.readlink("/proc/self/ns/" + n) for n in ("user", "net", "mnt")},
        "caps": {f: int(status(f), 16)
                 for f in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb")},
    }


def assert_layer_evidence(layer, ev, host):
    """Asserts that what the worker observes agrees with the layer being active."""
    if layer == "cgroup":
        # a group of its own in the memory hierarchy (v1) or the unified one (v2)
        mine = [line.split(":", 2)[2] for line in ev["cgroup"].splitlines()
                if line.split(":")[1] in ("", "memory")
                or "memory" in line.split(":")[1].split(",")]
        assert any(path.rsplit("/", 1)[-1].startswith("sandpit-") for path in mine), \
            ev["cgroup"]
    elif layer == "rlimits":
        assert ev["core"] == [0, 0]
        assert ev["nofile"][0] == ev["nofile"][1] > 0
    elif layer == "user-namespace":
        assert ev["ns"]["user"] != host["ns"]["user"]
    elif layer == "network-namespace":
        assert ev["ns"]["net"] != host["ns"]["net"]
        assert ev["ifaces"] == ["lo"]
    elif layer == "mount-namespace":
        assert ev["ns"]["mnt"] != host["ns"]["mnt"]
        assert ev["write_outside"] == 30  # EROFS
    elif layer == "capabilities":
        assert all(v == 0 for v in ev["caps"].values()), ev["caps"]
    elif layer == "landlock":
        assert ev["read_outside"] == 13  # EACCES: as root, only Landlock says so
    elif layer == "seccomp":
        assert ev["seccomp"] == 2 and ev["no_new_privs"] == 1
    else:
        raise AssertionError("unknown layer %s" % layer)


# Syscall numbers for ctypes' syscall(), which calls the kernel with no libc wrapper
# in between (and no libc check that could fail first).
SYSCALLS = {
    "x86_64": {"execve": 59, "socket": 41, "fork": 57, "clone": 56, "ptrace": 101,
               "process_vm_readv": 310, "kill": 62, "setuid": 105, "unshare": 272,
               "mount": 165, "init_module": 175, "finit_module": 313,
               "delete_module": 176, "clone3": 435, "listmount": 458,
               "open_tree_attr": 467},
    "aarch64": {"execve": 221, "socket": 198, "clone": 220, "ptrace": 117,
                "process_vm_readv": 270, "kill": 129, "setuid": 146, "unshare": 97,
                "mount": 40, "init_module": 105, "finit_module": 273,
                "delete_module": 106, "clone3": 435, "listmount": 458,
                "open_tree_attr": 467},
}.get(platform.machine(), {})

SYSCALL_CELL = r"""
import ctypes, os
_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
ctypes.set_errno(0)
_r = _libc.syscall(*[ctypes.c_char_p(a.encode()) if isinstance(a, str) else ctypes.c_long(a)
                     for a in %(args)r])
if _r == 0 and %(forks)r:
    os._exit(0)  # the child of a fork that should not have happened
print(_r, ctypes.get_errno())
"""


def raw_syscall(k, name, *args, forks=False):
    """Calls syscall(name, *args) in the worker (ints, or str for a char *);
    returns (result, errno)."""
    args = [a if isinstance(a, str) else int(a) for a in (SYSCALLS[name], *args)]
    out = k.run(SYSCALL_CELL % {"args": args, "forks": forks})
    r, e = out.split()
    return int(r), int(e)


__all__ = ["LAYERS", "STATES", "SYSCALLS", "TIMEOUT", "assert_intact", "assert_lost",
           "assert_layer_evidence", "boot", "check_sandbox", "execute_with_metadata",
           "expect_error", "host_evidence", "kernel_info", "plant", "raw_syscall", "stop",
           "stdout_of", "worker_evidence"]
