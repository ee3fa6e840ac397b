"""No trusted code opens, makes, renames or removes a file by path except
through tfile (sandbox/tfile.h), the one mechanism that never follows a link
in a folder the worker can write (issue 27: "no other code opens a
worker-writable path; a test reads the sources and fails if one does").

Every call below, in kernel/ and sandbox/, on a path is either in tfile.c or
in ALLOWED, each entry with why its path is not one the worker can write or
plant in. A new call fails this test: use tfile, or add an entry with its
reason (and expect it to be questioned)."""

import os
import re

from sandpit_testing import ROOT

CALLS = ("open", "open64", "openat", "openat64", "fopen", "freopen", "opendir", "creat",
         "rename", "renameat", "renameat2", "unlink", "unlinkat", "rmdir", "remove",
         "mkdir", "mkdirat", "mkdtemp", "mkstemp", "mkostemp", "symlink", "symlinkat",
         "link", "linkat", "chmod", "chown", "lchown", "truncate", "mkfifo", "mknod")
SYSCALLS = ("SYS_openat2", "SYS_renameat2", "SYS_open", "SYS_openat", "SYS_unlink",
            "SYS_unlinkat", "SYS_rename", "SYS_renameat")
CALL_RE = re.compile(r"(?<![\w.>])(%s)\s*\(" % "|".join(CALLS))
SYSCALL_RE = re.compile(r"\bsyscall\s*\(\s*(%s)\b" % "|".join(SYSCALLS))

# (file, call, text on the call's line, why the path is not the worker's to write)
ALLOWED = [
    # The Jupyter runtime folder: the client commands' instance files and the
    # connection files they write. Every worker has it hidden (sandbox/home.c:
    # "every runtime folder Jupyter uses or used"), whatever its workspace.
    ("kernel/client/instance.c", "open", "open(in->lock_file", "runtime folder, hidden"),
    ("kernel/client/instance.c", "fopen", "fopen(path, \"r\")", "runtime folder, hidden"),
    ("kernel/client/instance.c", "unlink", "unlink(", "runtime folder, hidden"),
    ("kernel/client/launch.c", "open", "open(log_path", "the instance's log, runtime folder"),
    ("kernel/client/mcp.c", "unlink", "unlink(m.log)", "the mcp kernel's log, runtime folder"),
    ("kernel/client/launch.c", "fopen", "fopen(log_path", "the instance's log, runtime folder"),
    ("kernel/client/connfile.c", "open", "open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW",
     "the ipc sockets' folder, opened to remove the sockets: O_NOFOLLOW"),
    ("kernel/client/connfile.c", "unlink", "unlink(path)", "runtime folder, hidden"),
    ("kernel/client/connfile.c", "unlinkat", "unlinkat(fd, name, 0)",
     "the ipc sockets, on the folder's descriptor"),
    ("kernel/client/connfile.c", "rmdir", "rmdir(dir)", "runtime folder, hidden"),
    # Fixed system paths.
    ("kernel/client/launch.c", "open", "open(\"/dev/null\"", "/dev/null"),
    ("kernel/supervisor/worker_process.c", "open", "open(\"/dev/null\"", "/dev/null"),
    ("kernel/supervisor/worker_template.c", "open", "open(\"/dev/null\"", "/dev/null"),
    ("kernel/supervisor/proc_stat.c", "open", "open(path, O_RDONLY", "/proc/<pid>/stat"),
    ("kernel/client/status_all.c", "open", "open(path, O_RDONLY", "/proc/<pid>/cmdline"),
    ("sandbox/sandbox.c", "opendir", "opendir(\"/proc/self/task\")", "/proc"),
    ("sandbox/namespaces.c", "fopen", "fopen(path, \"re\")", "/proc/sys: a sysctl's value"),
    ("sandbox/cgroup.c", "open", "open(path", "cgroupfs (cgroup.procs), where no link or FIFO can be made"),
    # The kernel's own files, whole (sandbox/kfile.h), for the callers in KFILE_CALLERS
    # alone (a test below): /proc/self/{cgroup,mountinfo}, /proc/self/{uid,gid}_map and
    # setgroups, and cgroupfs (a group's limits, cgroup.kill).
    ("sandbox/kfile.c", "open", "open(path, O_RDONLY", "/proc/self and cgroupfs, read whole"),
    ("sandbox/kfile.c", "open", "open(path, O_WRONLY", "/proc/self's maps and cgroupfs"),
    ("sandbox/stop.c", "fopen", "fopen(path, \"re\")", "cgroupfs: a group's cgroup.procs"),
    ("sandbox/stop.c", "opendir", "opendir(\"/proc\")", "/proc"),
    ("sandbox/stop.c", "open", "open(path, O_RDONLY", "/proc/<pid>/stat"),
    ("sandbox/cgroup.c", "opendir", "opendir(base)", "cgroupfs"),
    ("sandbox/cgroup.c", "rmdir", "rmdir(", "cgroupfs"),
    ("sandbox/cgroup.c", "mkdir", "mkdir(path, 0755)", "cgroupfs"),
    # Kernelspecs and their scripts: written into Jupyter's data folders by
    # `sandpit install` / `gateway-spec` / `uninstall`, run by the user, never
    # by a worker; no worker can write there (the data folder's kernels/ is
    # read-only to it: sandbox/home.c).
    ("kernel/cmd/kernelspecs.c", "rmdir", "rmdir(dir)", "kernelspec, user's command"),
    # mkdir -p of a folder the user chose, or of the user's own folders
    # (Jupyter's data and runtime folders, the cache's parent); where a
    # worker-writable folder is involved, callers use tfile_mkdir.
    ("kernel/util/fsutil.c", "mkdir", "mkdir(buf, mode)", "user-chosen or the user's folders"),
    # The per-user folder of private folders (kernel/supervisor/tmpdir.c), made
    # and checked by tfile_private_dir: no worker can replace it (it is a mount
    # point in every worker's namespace, covered).
    ("kernel/supervisor/tmpdir.c", "mkdirat", "mkdirat(base, name, 0700)",
     "in the per-user folder's descriptor, hidden from workers"),
    # The gateway's private folder, in the per-user folder: hidden from workers.
    ("kernel/cmd/launcher.c", "unlink", "unlink(", "the gateway's private folder"),
    ("kernel/cmd/launcher.c", "rmdir", "rmdir(g->private_dir)", "the gateway's private folder"),
    # The history database, in Jupyter's data folder, hidden from workers
    # (the history's own module keeps it so).
    ("kernel/supervisor/history.c", "chmod", "chmod(path, 0600)", "the history's folder"),
    ("kernel/supervisor/history.c", "open", "open(dir, O_PATH | O_DIRECTORY",
     "the history's folder (one inside the workspace is refused); O_PATH"),
    # In the worker itself, setting up its own confinement: what it opens it
    # could open anyway, and none of these can block (O_PATH, O_NONBLOCK, a
    # folder the user chose).
    ("sandbox/landlock.c", "open", "open(path, O_PATH", "O_PATH never blocks nor reads"),
    ("sandbox/masks.c", "opendir", "opendir(home)",
     "the user's home folder, its top already bound read-only"),
    ("sandbox/home.c", "open", "open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK",
     "a home's top or a dot-folder there: read-only to cells; O_NOFOLLOW, O_NONBLOCK"),
    ("sandbox/home.c", "openat", "openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW",
     "the key-file search: relative to the folder above, O_NOFOLLOW, O_NONBLOCK"),
    # The walk to a protected path (sandbox/resolve.c) that makes what is
    # missing before the worker confines itself: from "/", one component at a
    # time on descriptors, O_NOFOLLOW, O_EXCL for what it makes.
    ("sandbox/resolve.c", "open", "open(\"/\", O_PATH | O_DIRECTORY", "the walk's start"),
    ("sandbox/resolve.c", "openat", "openat(w->fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW",
     "one component, O_NOFOLLOW"),
    ("sandbox/resolve.c", "openat", "openat(w->fd, name,", "one component, O_NOFOLLOW"),
    ("sandbox/resolve.c", "mkdirat", "mkdirat(w->fd, name, 0700)",
     "in the folder just opened"),
    ("sandbox/namespaces.c", "open", "open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK",
     "the hidden-path check: O_NONBLOCK, in the confined worker"),
    ("sandbox/private.c", "mkdir", "mkdir(at, 0700)", "in the tmpfs just mounted"),
]


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def calls():
    """(file, line number, call, line text) of every call in the trusted sources."""
    found = []
    for top in ("kernel", "sandbox"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in sorted(files):
                if not f.endswith(".c"):
                    continue
                rel = os.path.relpath(os.path.join(d, f), ROOT)
                if rel == "sandbox/tfile.c":
                    continue
                with open(os.path.join(ROOT, rel)) as fh:
                    lines = strip_comments(fh.read()).split("\n")
                for i, line in enumerate(lines, 1):
                    for m in list(CALL_RE.finditer(line)) + list(SYSCALL_RE.finditer(line)):
                        found.append((rel, i, m.group(1), line.strip()))
    return found


def allowed(rel, call, line):
    return [a for a in ALLOWED if a[0] == rel and a[1] == call and a[2] in line]


def test_no_trusted_code_opens_a_path_but_through_tfile():
    found = calls()
    assert found, "the scan found nothing: its patterns are broken"
    bad = ["%s:%d: %s" % (rel, n, line) for rel, n, call, line in found
           if not allowed(rel, call, line)]
    assert not bad, ("calls on a path outside tfile (use sandbox/tfile.h, or allow-list "
                     "with the reason):\n" + "\n".join(bad))


def test_every_allowed_call_is_still_there():
    found = calls()
    stale = [a for a in ALLOWED
             if not any(rel == a[0] and call == a[1] and a[2] in line
                        for rel, _, call, line in found)]
    assert not stale, stale


# The files that may call kfile (sandbox/kfile.h) and the kernel files they name:
# kfile opens by path, so it is for paths no worker can write, and a new caller
# fails here until it says which.
KFILE_CALLERS = {
    "sandbox/cgroup.c": "cgroupfs: the worker's group's files",
    "sandbox/cgroup_view.c": "/proc/self/cgroup, /proc/self/mountinfo, cgroupfs",
    "sandbox/cgroup_check.c": "cgroupfs: the limits of the group the worker is in",
    "sandbox/namespaces.c": "/proc/self/{uid,gid}_map and setgroups",
    "sandbox/stop.c": "cgroupfs: a group's cgroup.kill",
}
KFILE_RE = re.compile(r"\bkfile_\w+\s*\(")


def test_kfile_is_called_only_on_the_kernels_own_files():
    users = set()
    for top in ("kernel", "sandbox"):
        for d, _, files in os.walk(os.path.join(ROOT, top)):
            for f in files:
                rel = os.path.relpath(os.path.join(d, f), ROOT)
                if not f.endswith(".c") or rel == "sandbox/kfile.c":
                    continue
                with open(os.path.join(ROOT, rel)) as fh:
                    if KFILE_RE.search(strip_comments(fh.read())):
                        users.add(rel)
    assert users == set(KFILE_CALLERS), sorted(users ^ set(KFILE_CALLERS))


def test_the_scan_sees_a_call_on_a_path():
    """The patterns catch what they must, and leave tfile's own names alone."""
    text = 'x = tfile_open(fd, "a", 0); FILE *f = fopen(p, "w"); syscall(SYS_openat2, 1);'
    assert [m.group(1) for m in CALL_RE.finditer(text)] == ["fopen"]
    assert [m.group(1) for m in SYSCALL_RE.finditer(text)] == ["SYS_openat2"]
