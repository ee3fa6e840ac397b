"""The seccomp profile for the kernel's pod, kernelspec/seccomp/sandpit.json.

No container engine runs here, so the profile is checked in three ways: its form
(the OCI runtime specification's seccomp section, which Docker, Podman,
containerd and CRI-O read); against the code (no system call that sandbox/*.c
makes to confine the worker is denied, and the calls it denies are the ones
docs/scale.md names, with a reason each); and for real, with the filter a
runtime would build from it, made here with libseccomp as runc does, under
which `sandpit check-sandbox` must find the same layers as without it and a
kernel must run numpy, pandas and matplotlib.
"""

import glob
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile

import pytest

from sandpit_testing import ROOT, SANDPIT, install_spec, start, stop

PROFILE = os.path.join(ROOT, "kernelspec", "seccomp", "sandpit.json")
UNISTD = "/usr/include/x86_64-linux-gnu/asm/unistd_64.h"
# The last system call reviewed for the profile (Linux 6.1), as for the worker's
# filter (sandbox/POLICY.md): set_mempolicy_home_node.
LAST_REVIEWED = 450

ACTIONS = {"SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD",
           "SCMP_ACT_TRAP", "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW",
           "SCMP_ACT_LOG", "SCMP_ACT_NOTIFY"}
OPS = {"SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE",
       "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"}
ARCHES = {"SCMP_ARCH_X86", "SCMP_ARCH_X86_64", "SCMP_ARCH_X32", "SCMP_ARCH_ARM",
          "SCMP_ARCH_AARCH64", "SCMP_ARCH_MIPS", "SCMP_ARCH_MIPS64",
          "SCMP_ARCH_MIPS64N32", "SCMP_ARCH_MIPSEL", "SCMP_ARCH_MIPSEL64",
          "SCMP_ARCH_MIPSEL64N32", "SCMP_ARCH_PPC", "SCMP_ARCH_PPC64",
          "SCMP_ARCH_PPC64LE", "SCMP_ARCH_S390", "SCMP_ARCH_S390X", "SCMP_ARCH_PARISC",
          "SCMP_ARCH_PARISC64", "SCMP_ARCH_RISCV64"}

# What glibc (2.36, x86_64) asks of the kernel for the library functions the
# sandbox calls that are not system calls of the same name, with the arguments a
# rule of the profile may look at. A function missing here makes no call the
# profile could deny (string functions, malloc's brk and mmap are always allowed).
CLONE_CHILD = 0x01000000 | 0x00200000 | 17  # CLONE_CHILD_SETTID | CLEARTID | SIGCHLD
GLIBC = {
    "fork": [("clone", {0: CLONE_CHILD})],
    "fopen": [("openat", {})],
    "opendir": [("openat", {})],
    "fdopendir": [("fcntl", {}), ("newfstatat", {})],
    "readdir": [("getdents64", {})],
    "closedir": [("close", {})],
    "fclose": [("close", {})],
    "fgets": [("read", {})],
    "realpath": [("readlink", {}), ("newfstatat", {})],
    "waitpid": [("wait4", {})],
    "_exit": [("exit_group", {})],
    "setrlimit": [("prlimit64", {})],
    "getrlimit": [("prlimit64", {})],
    "stat": [("newfstatat", {})],
    "lstat": [("newfstatat", {})],
    "fstat": [("newfstatat", {})],
    "open": [("openat", {})],
    # the interface list, from netlink; the password database, from files or nscd
    "if_nameindex": [("socket", {0: socket.AF_NETLINK}), ("bind", {}), ("sendto", {}),
                     ("recvmsg", {})],
    "getpwuid": [("openat", {}), ("socket", {0: socket.AF_UNIX}), ("connect", {})],
}


def profile():
    with open(PROFILE) as f:
        return json.load(f)


def syscall_table():
    """{name: number} of this machine's system calls (x86_64)."""
    with open(UNISTD) as f:
        return {n: int(v) for n, v in re.findall(r"#define __NR_(\w+) (\d+)", f.read())}


def satisfied(arg, value):
    op, a, b = arg["op"], arg["value"], arg.get("valueTwo", 0)
    return {"SCMP_CMP_NE": value != a, "SCMP_CMP_LT": value < a, "SCMP_CMP_LE": value <= a,
            "SCMP_CMP_EQ": value == a, "SCMP_CMP_GE": value >= a, "SCMP_CMP_GT": value > a,
            "SCMP_CMP_MASKED_EQ": value & a == b}[op]


def action_for(p, name, args):
    """The action the profile takes on the call name(args) ({index: value}; an index a
    rule looks at but args does not give never matches), as a runtime applies it: the
    first matching rule's, or the default."""
    for rule in p["syscalls"]:
        if name in rule["names"] and all(a["index"] in args and
                                         satisfied(a, args[a["index"]])
                                         for a in rule.get("args") or []):
            return rule["action"], rule.get("errnoRet")
    return p["defaultAction"], p.get("defaultErrnoRet")


def allowed(p, name, args=None):
    return action_for(p, name, args or {})[0] == "SCMP_ACT_ALLOW"


def strip_c(text):
    """C code without its comments and with its literals emptied."""
    return re.sub(r'/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'',
                  lambda m: '""' if m.group().startswith('"') else " ", text, flags=re.S)


def clone_flags():
    """{CLONE_NEW...: value}, from the kernel's header."""
    with open("/usr/include/linux/sched.h") as f:
        return {n: int(v, 16) for n, v in
                re.findall(r"#define (CLONE_\w+)\s+0x([0-9a-fA-F]+)", f.read())}


def sandbox_calls():
    """[(system call, {arg: value}, where)] that sandbox/*.c makes: syscall(SYS_x),
    calls of functions named as system calls, and what the glibc functions it calls
    ask of the kernel (GLIBC). socket() gets the family the code names;
    unshare() all the namespace flags that namespaces.c names, together."""
    table = syscall_table()
    flags = clone_flags()
    calls = []
    for path in sorted(glob.glob(os.path.join(ROOT, "sandbox", "*.c"))):
        where = os.path.relpath(path, ROOT)
        with open(path) as f:
            code = strip_c(f.read())
        for name in re.findall(r"\bsyscall\(\s*SYS_(\w+)", code):
            calls.append((name, {}, where))
        for name in set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*\(", code)):
            if name in GLIBC:
                calls += [(n, a, where + " (" + name + ")") for n, a in GLIBC[name]]
            elif name == "socket":
                for family in re.findall(r"\bsocket\(\s*(AF_\w+)", code):
                    calls.append(("socket", {0: getattr(socket, family)}, where))
            elif name == "unshare":
                used = set(re.findall(r"\bCLONE_\w+", code))
                value = 0
                for flag in used:
                    value |= flags[flag]
                calls.append(("unshare", {0: value}, where + " " + "|".join(sorted(used))))
            elif name in table and name != "syscall":
                calls.append((name, {}, where))
    return calls


def denied_in_docs():
    """The calls docs/scale.md's seccomp table says are denied."""
    with open(os.path.join(ROOT, "docs", "scale.md")) as f:
        text = f.read()
    section = text.split("### The seccomp profile", 1)[1].split("\n## ", 1)[0]
    denied = set()
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[1] == "denied":
            assert cells[2], "a denial without a reason: %s" % line
            denied |= set(re.findall(r"`(\w+)`", cells[0]))
    return denied


def test_the_profile_is_an_oci_seccomp_profile():
    p = profile()
    assert set(p) <= {"defaultAction", "defaultErrnoRet", "architectures", "flags",
                      "syscalls"}, set(p)
    assert p["defaultAction"] == "SCMP_ACT_ERRNO" and p["defaultErrnoRet"] == 1
    assert set(p["architectures"]) <= ARCHES
    # native 64-bit only: 32-bit calls (int $0x80, x32) are the classic way round a
    # filter written for the native numbers
    assert "SCMP_ARCH_X86_64" in p["architectures"]
    assert not {"SCMP_ARCH_X86", "SCMP_ARCH_X32"} & set(p["architectures"])
    table = syscall_table()
    unconditional = set()
    for rule in p["syscalls"]:
        assert set(rule) <= {"names", "action", "errnoRet", "args", "comment"}, rule
        assert rule["names"] and all(isinstance(n, str) for n in rule["names"]), rule
        assert rule["action"] in ACTIONS, rule
        assert rule["action"] != p["defaultAction"] or \
            rule.get("errnoRet", 1) != p["defaultErrnoRet"], \
            "a rule the same as the default: some runtimes refuse it: %s" % rule
        for a in rule.get("args") or []:
            assert set(a) <= {"index", "value", "valueTwo", "op"}, a
            assert 0 <= a["index"] <= 5 and a["op"] in OPS, a
            assert 0 <= a["value"] < 1 << 64 and 0 <= a.get("valueTwo", 0) < 1 << 64, a
        # every name is a call of this architecture's (aarch64's are among them)
        assert set(rule["names"]) <= set(table), set(rule["names"]) - set(table)
        if not rule.get("args"):
            assert not unconditional & set(rule["names"]), "named twice: %s" % rule
            unconditional |= set(rule["names"])


def test_the_denied_calls_are_the_ones_the_docs_name():
    """Every call up to the last one reviewed is either allowed (perhaps on its
    arguments) or denied with a reason in docs/scale.md, and the two lists agree."""
    p = profile()
    named = set().union(*(rule["names"] for rule in p["syscalls"]))
    denied = denied_in_docs()
    reviewed = {n for n, v in syscall_table().items() if v <= LAST_REVIEWED}
    assert denied, "docs/scale.md lists no denied call"
    assert not denied & named, "denied in the docs, named in the profile: %s" % (
        denied & named)
    assert reviewed - denied <= named, "neither allowed nor denied with a reason: %s" % (
        reviewed - denied - named)
    assert denied <= reviewed, denied - reviewed
    # what a container runtime's default denies and sandpit does not need
    for name in ("kexec_load", "init_module", "finit_module", "delete_module", "reboot",
                 "swapon", "swapoff", "acct", "settimeofday", "clock_settime", "adjtimex",
                 "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "ptrace",
                 "open_by_handle_at", "userfaultfd", "setns"):
        assert not allowed(p, name), name


def test_what_the_sandbox_calls_to_confine_the_worker_is_allowed():
    p = profile()
    calls = sandbox_calls()
    names = {n for n, _, _ in calls}
    # the reading of the code found the calls the issue names, so it reads what it
    # should: namespaces, mounts, Landlock, the filter, capabilities, rlimits
    assert {"unshare", "mount", "mount_setattr", "landlock_create_ruleset",
            "landlock_add_rule", "landlock_restrict_self", "seccomp", "prctl", "capset",
            "prlimit64", "clone"} <= names, names
    refused = ["%s%s in %s: %s" % (n, a or "", w, action_for(p, n, a))
               for n, a, w in calls if not allowed(p, n, a)]
    print("calls: %s" % ", ".join(sorted(names)))
    assert not refused, "\n".join(refused)
    # the namespaces come from unshare, and only those: clone needs none
    f = clone_flags()
    worker = f["CLONE_NEWUSER"] | f["CLONE_NEWNS"] | f["CLONE_NEWNET"] | f["CLONE_NEWIPC"]
    assert allowed(p, "unshare", {0: worker})
    for other in ("CLONE_NEWPID", "CLONE_NEWUTS", "CLONE_NEWCGROUP", "CLONE_NEWTIME"):
        assert not allowed(p, "unshare", {0: f["CLONE_NEWUSER"] | f[other]}), other
    assert not allowed(p, "clone", {0: CLONE_CHILD | f["CLONE_NEWUSER"]})
    # glibc's threads and posix_spawn try clone3 first, then clone
    assert action_for(p, "clone3", {}) == ("SCMP_ACT_ERRNO", 38)
    assert allowed(p, "clone", {0: 0x003d0f00})  # pthread_create's flags


def test_the_pod_template_and_the_docs_name_the_profile(jupyter_dir):
    """The pod template, the docs, the Containerfile and the README point at the
    profile by names that exist: the file in this repository, and the node's path
    that Kubernetes resolves localhostProfile against."""
    assert os.path.isfile(PROFILE)
    name = install_spec(jupyter_dir, "--enterprise-gateway", "kubernetes", "--image",
                        "registry.example/sandpit:1.0")
    template = os.path.join(str(jupyter_dir), "share", "jupyter", "kernels", name,
                            "scripts", "kernel-pod.yaml.j2")
    with open(template) as f:
        pod = f.read()
    assert re.search(r"seccompProfile:\n\s+type: Localhost\n\s+localhostProfile: "
                     r"profiles/sandpit\.json\n", pod), pod
    assert "kernelspec/seccomp/sandpit.json" in pod
    texts = {}
    for path in ("docs/scale.md", "README.md", "Containerfile", "kernel/cmd/launcher_spec.c"):
        with open(os.path.join(ROOT, path)) as f:
            texts[path] = f.read()
    for path, text in texts.items():
        # every profile named is this one: in the repository, or on the node
        for ref in re.findall(r"localhostProfile\W+([\w./-]+)", text):
            assert ref == "profiles/sandpit.json", (path, ref)
        for ref in re.findall(r"[\w./-]*seccomp/[\w./-]+\.json", text):
            assert ref in ("kernelspec/seccomp/sandpit.json",
                           "/var/lib/kubelet/seccomp/profiles/sandpit.json",
                           "/usr/local/share/sandpit/seccomp/sandpit.json"), (path, ref)
        assert "kernelspec/seccomp/sandpit.json" in text, path
    # the image holds the file where the docs say
    assert re.search(r"^COPY kernelspec/seccomp/sandpit\.json "
                     r"/usr/local/share/sandpit/seccomp/sandpit\.json$",
                     texts["Containerfile"], re.M)
    assert "/var/lib/kubelet/seccomp/profiles/sandpit.json" in texts["docs/scale.md"]


# --- for real: the filter a runtime would build from the profile ---------------------

LAUNCHER = r"""
import ctypes, json, os, sys
lib = ctypes.CDLL("libseccomp.so.2")


class Cmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


lib.seccomp_init.restype = ctypes.c_void_p
lib.seccomp_init.argtypes = [ctypes.c_uint32]
lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                       ctypes.c_uint, ctypes.POINTER(Cmp)]
lib.seccomp_load.argtypes = [ctypes.c_void_p]
lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
OPS = {"SCMP_CMP_NE": 1, "SCMP_CMP_LT": 2, "SCMP_CMP_LE": 3, "SCMP_CMP_EQ": 4,
       "SCMP_CMP_GE": 5, "SCMP_CMP_GT": 6, "SCMP_CMP_MASKED_EQ": 7}


def action(name, errno):
    return {"SCMP_ACT_ALLOW": 0x7fff0000, "SCMP_ACT_ERRNO": 0x00050000 | (errno & 0xffff),
            "SCMP_ACT_KILL_PROCESS": 0x80000000, "SCMP_ACT_KILL_THREAD": 0,
            "SCMP_ACT_KILL": 0, "SCMP_ACT_TRAP": 0x00030000,
            "SCMP_ACT_LOG": 0x7ffc0000}[name]


# argv: the profile ("-": none), the uid to run as (-1: this one), the command. The
# profile is read first: the other user may not reach the clone it lies in.
profile = json.load(open(sys.argv[1])) if sys.argv[1] != "-" else None
if int(sys.argv[2]) >= 0:  # as a pod's user: not root, no capability
    os.setgroups([])
    os.setgid(int(sys.argv[2]))
    os.setuid(int(sys.argv[2]))
if profile is not None:
    # As runc does: the default action, then a rule per name (the conditions of one
    # rule together), then no_new_privs and the filter (libseccomp sets both on load).
    ctx = lib.seccomp_init(action(profile["defaultAction"],
                                  profile.get("defaultErrnoRet", 1)))
    for rule in profile["syscalls"]:
        act = action(rule["action"], rule.get("errnoRet", 1))
        args = rule.get("args") or []
        cmps = (Cmp * max(len(args), 1))(*[Cmp(a["index"], OPS[a["op"]], a["value"],
                                                a.get("valueTwo", 0)) for a in args])
        for name in rule["names"]:
            nr = lib.seccomp_syscall_resolve_name(name.encode())
            assert nr >= 0, name
            assert lib.seccomp_rule_add_array(ctx, act, nr, len(args), cmps) == 0, name
    assert lib.seccomp_load(ctx) == 0
os.execv(sys.argv[3], sys.argv[3:])
"""


@pytest.fixture
def launcher(tmp_path):
    """The command that runs [uid, command...] under the profile's filter."""
    path = tmp_path / "under_profile.py"
    path.write_text(LAUNCHER)
    return [sys.executable, str(path), PROFILE]


@pytest.fixture
def reachable_sandpit():
    """The binary and its worker, copied into a fresh folder of mode 0755 in /tmp: a
    pod's user cannot enter a clone in a folder of mode 0700 (mktemp -d's, /root)."""
    folder = tempfile.mkdtemp(prefix="sandpit-reachable-")
    try:
        os.chmod(folder, 0o755)
        here = os.path.dirname(os.path.realpath(SANDPIT))
        for name in ("sandpit", "sandpit-worker.so", "sandpit-worker"):
            if os.path.exists(os.path.join(here, name)):
                shutil.copy2(os.path.join(here, name), folder)
        yield os.path.join(folder, "sandpit")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def layers_of(command, sandpit=SANDPIT):
    """check-sandbox's report through command, in /tmp, with /tmp as the home folder
    (a pod's user may not see this test's folders)."""
    p = subprocess.run(command + [sandpit, "check-sandbox", "--memory", "256"],
                       capture_output=True, text=True, timeout=60, cwd="/tmp",
                       env=dict(os.environ, HOME="/tmp"))
    assert p.returncode == 0, p.stdout + p.stderr
    return {m.group(1): (m.group(2), m.group(3)) for m in
            re.finditer(r"^sandbox: (\S+) +(\w+): (.*)$", p.stdout, re.M)}


def test_check_sandbox_finds_the_same_layers_under_the_profile(launcher, reachable_sandpit):
    """As a pod's user would run it (not root, no capability, where this test runs
    as root): every layer the machine gives without the profile, it gives under it."""
    uid = "65534" if os.geteuid() == 0 else "-1"
    without = layers_of(launcher[:2] + ["-", uid], reachable_sandpit)
    under = layers_of(launcher + [uid], reachable_sandpit)
    for name, (state, detail) in under.items():
        print("%-18s %s: %s" % (name, state, detail))
    assert set(under) == set(without)
    assert {n: s for n, (s, _) in under.items()} == {n: s for n, (s, _) in without.items()}
    for name in ("user-namespace", "network-namespace", "mount-namespace", "landlock",
                 "seccomp", "capabilities", "rlimits"):
        if without[name][0] == "active":
            assert under[name][0] == "active", (name, under[name])
    # and the profile is in force there: what it denies is denied, even to root
    p = subprocess.run(launcher + ["-1", sys.executable, "-c",
                                   "import os\ntry:\n    os.chroot('/')\n"
                                   "except PermissionError:\n    print('refused')"],
                       capture_output=True, text=True, timeout=60)
    assert p.stdout == "refused\n", p.stdout + p.stderr


def test_a_kernel_runs_under_the_profile(jupyter_dir, launcher, tmp_path):
    """The supervisor and its worker under the profile's filter (the worker's own on
    top): cells with numpy, pandas and matplotlib run, a restart works."""
    name = install_spec(jupyter_dir)
    folder = jupyter_dir / "share" / "jupyter" / "kernels" / name
    with open(folder / "kernel.json") as f:
        spec = json.load(f)
    spec["argv"] = launcher + ["-1", os.path.realpath(SANDPIT)] + spec["argv"][1:]
    (folder / "kernel.json").write_text(json.dumps(spec))
    k = start(name, cwd=str(tmp_path))
    try:
        pid = k.km.provisioner.process.pid
        with open("/proc/%d/status" % pid) as f:
            assert "Seccomp:\t2" in f.read()  # the supervisor is under a filter
        reply, outputs = k.execute(
            "import numpy as np, pandas as pd, matplotlib.pyplot as plt\n"
            "df = pd.DataFrame({'x': np.arange(5)})\nplt.plot(df.x)\nplt.show()\n"
            "print(df.x.sum())")
        assert reply["content"]["status"] == "ok", reply["content"]
        assert [m for m in outputs if m["msg_type"] == "display_data"
                and "image/png" in m["content"]["data"]]
        layers = {layer["name"]: layer["state"]
                  for layer in k.request("kernel_info")["content"]["sandpit"]["layers"]}
        print(layers)
        for layer in ("user-namespace", "network-namespace", "mount-namespace",
                      "capabilities", "landlock", "seccomp"):
            assert layers[layer] == "active", layers
        # a new worker, made under the same filter
        reply, _ = k.execute("import os\nos._exit(3)")
        assert reply["content"]["ename"] == "WorkerDied"
        assert k.run("print(6 * 7)") == "42\n"
    finally:
        stop(k)
