"""A machine that lacks some of the sandbox's layers (an older kernel without
Landlock, user namespaces turned off): the kernel still starts, reports exactly
which layers are active, never claims the others, and runs cells with what is
left.

The machine is made so for real, not simulated: the kernelspec starts sandpit
through a small launcher that installs a seccomp filter in which the calls
those layers need (landlock_create_ruleset, unshare) fail with ENOSYS, as on a
kernel that does not have them; the filter is inherited by the supervisor and
its workers.
"""

import ctypes
import json
import os
import subprocess
import sys

from sandbox_helpers import LAYERS, SANDPIT
from sandpit_testing import start, stop

LAUNCHER = r"""
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

MISSING = {"user-namespace", "network-namespace", "mount-namespace", "landlock"}


def degraded_spec(jupyter_dir, tmp_path):
    launcher = tmp_path / "degrade.py"
    launcher.write_text(LAUNCHER)
    folder = jupyter_dir / "share" / "jupyter" / "kernels" / "sandpit-degraded"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, str(launcher), os.path.realpath(SANDPIT), "kernel", "-f",
                 "{connection_file}"],
        "display_name": "sandpit on a degraded machine", "language": "python",
        "interrupt_mode": "message"}))
    return "sandpit-degraded", launcher


def test_kernel_on_a_machine_without_landlock_and_namespaces(jupyter_dir, tmp_path):
    name, launcher = degraded_spec(jupyter_dir, tmp_path)
    k = start(name, cwd=str(tmp_path))
    try:
        # the worker is up: its report has reached the supervisor (before, a
        # loaded machine could see the layers still "pending")
        assert k.run("print(6 * 7)") == "42\n"
        layers = {layer["name"]: layer
                  for layer in k.request("kernel_info")["content"]["sandpit"]["layers"]}
        assert set(layers) == set(LAYERS)
        for missing in MISSING:
            assert layers[missing]["state"] in ("unavailable", "failed"), layers[missing]
            assert layers[missing]["detail"], "a missing layer says why"
        # nothing can hide the connection file here (it is readable by the
        # worker's user): the report says so rather than refusing to run
        assert "cannot be hidden on this machine" in layers["mount-namespace"]["detail"]
        assert k.km.connection_file in layers["mount-namespace"]["detail"]
        # what the machine still gives is applied, and claimed
        assert layers["seccomp"]["state"] == "active"
        assert layers["capabilities"]["state"] == "active"
        assert layers["rlimits"]["state"] == "active"
        # what seccomp still refuses is refused
        reply, _ = k.execute("import socket\nsocket.socket(socket.AF_INET)")
        assert reply["content"]["ename"] == "PermissionError"
        reply, _ = k.execute("import os\nos.fork()")
        assert reply["content"]["ename"] == "PermissionError"
        # the report agrees with what the worker sees: no Landlock domain, and the
        # same network as the host (no namespace of its own)
        assert k.run("import os\nprint(os.readlink('/proc/self/ns/net') == "
                     "os.readlink('/proc/1/ns/net') if os.path.exists('/proc/1/ns/net') "
                     "else 'n/a')") in ("True\n", "n/a\n")
    finally:
        stop(k)
    # check-sandbox, run on the same degraded machine, says the same
    out = subprocess.run([sys.executable, str(launcher), SANDPIT, "check-sandbox"],
                         capture_output=True, text=True, timeout=60).stdout
    for missing in MISSING:
        line = [line for line in out.splitlines() if line.startswith("sandbox: " + missing)]
        assert line and (" unavailable" in line[0] or " failed" in line[0]), out
    assert [line for line in out.splitlines()
            if line.startswith("sandbox: seccomp") and " active" in line], out
