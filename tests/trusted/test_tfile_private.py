"""Kernels' private folders (issue 27, finding 8) live in one folder of the
user's, TMPDIR/sandpit-user-<uid> (mode 0700), which every worker has hidden
but for its own temporary folder: a kernel whose workspace holds that folder
(one started in TMPDIR itself) cannot list or read another kernel's private
folder. Stale folders are removed on descriptors, never following a link, so
neither a planted link nor a folder swapped with a link (RENAME_EXCHANGE, in a
loop) makes the removal delete files outside."""

import ctypes
import os
import subprocess
import sys

import pytest

from sandpit_testing import private_base, start, stop

RENAME_EXCHANGE = 2


def dead_pid():
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


@pytest.fixture
def tmp_env(tmp_path):
    t = tmp_path / "t"
    t.mkdir()
    return t, dict(os.environ, TMPDIR=str(t))


def test_the_private_folder_is_safe_and_private(jupyter_dir, tmp_path, tmp_env):
    t, env = tmp_env
    a = start("sandpit", cwd=str(tmp_path), env=env)
    try:
        mine = a.run("import os\nd = os.environ['TMPDIR']\n"
                     "open(d + '/secret', 'w').write('the key of a')\nprint(d)").strip()
        base = private_base(str(t))
        b = start("sandpit", cwd=str(t), env=env)  # its workspace holds the base
        try:
            for what in (f"open({mine + '/secret'!r}).read()", f"os.listdir({mine!r})"):
                reply, _ = b.execute("import os\n" + what)
                c = reply["content"]
                assert c["status"] == "error", (what, c)
                assert c["ename"] in ("FileNotFoundError", "PermissionError"), c
            assert os.path.dirname(mine) == base
            st = os.lstat(base)
            assert st.st_uid == os.getuid() and st.st_mode & 0o777 == 0o700
            own = b.run("import os\nprint(os.environ['TMPDIR'])").strip()
            assert os.path.dirname(own) == base
            # b's own temporary folder works as before
            assert b.run("import tempfile\nwith tempfile.NamedTemporaryFile('w') as f:\n"
                         "    f.write('x'); f.flush(); print(open(f.name).read())") == "x\n"
            seen = b.run(f"import os\ntry:\n    print(sorted(os.listdir({base!r})))\n"
                         "except OSError as e:\n    print('error', e.errno)").strip()
            assert seen in (repr([os.path.basename(own)]), "error 13"), seen
            # nothing can be planted beside it either
            reply, _ = b.execute(f"os.mkdir({base + '/sandpit-1-planted'!r})")
            assert reply["content"]["status"] == "error"
        finally:
            stop(b)
    finally:
        stop(a)


def test_stale_folders_are_removed_without_following_links(jupyter_dir, tmp_path, tmp_env):
    t, env = tmp_env
    outside = tmp_path / "outside"
    outside.mkdir()
    for i in range(20):
        (outside / ("f%d" % i)).write_text("keep")
    base = private_base(str(t))
    os.makedirs(base, mode=0o700, exist_ok=True)
    pid = dead_pid()
    stale = os.path.join(base, "sandpit-%d-x" % pid)
    os.makedirs(os.path.join(stale, "deeper"))
    os.symlink(str(outside), os.path.join(stale, "to-outside"))
    os.symlink(str(outside), os.path.join(stale, "deeper", "to-outside"))
    os.symlink(str(outside / "f0"), os.path.join(stale, "to-file"))
    link = os.path.join(base, "sandpit-%d-y" % pid)
    os.symlink(str(outside), link)
    k = start("sandpit", cwd=str(tmp_path), env=env)
    stop(k)
    assert sorted(os.listdir(outside)) == sorted("f%d" % i for i in range(20))
    assert not os.path.lexists(stale)
    assert not os.path.lexists(link), "the link itself goes, not what it points to"


def test_a_swap_race_does_not_reach_outside(jupyter_dir, tmp_path, tmp_env):
    """A stale-looking folder and a link to an outside folder swapped in a loop
    while kernels start (and remove stale folders), in the per-user folder and in
    TMPDIR itself, where a cell of a kernel started there could plant it."""
    t, env = tmp_env
    outside = tmp_path / "outside"
    outside.mkdir()
    names = ["f%d" % i for i in range(200)]
    for n in names:
        (outside / n).write_text("keep")
    base = private_base(str(t))
    os.makedirs(base, mode=0o700, exist_ok=True)
    libc = ctypes.CDLL(None, use_errno=True)
    pid = dead_pid()
    swappers = []
    for where in (base, str(t)):
        d = os.path.join(where, "sandpit-%d-x" % pid)
        lnk = os.path.join(where, "sandpit-%d-l" % pid)
        os.makedirs(d)
        for n in names:
            open(os.path.join(d, n), "w").close()
        os.symlink(str(outside), lnk)
        child = os.fork()
        if child == 0:
            try:
                import signal
                signal.alarm(60)
                while True:
                    libc.renameat2(-100, d.encode(), -100, lnk.encode(), RENAME_EXCHANGE)
            finally:
                os._exit(0)
        swappers.append(child)
    try:
        for _ in range(10):
            k = start("sandpit", cwd=str(tmp_path), env=env)
            stop(k)
    finally:
        for child in swappers:
            os.kill(child, 9)
            os.waitpid(child, 0)
    assert sorted(os.listdir(outside)) == sorted(names)


def test_a_kernel_with_another_tmpdir_cannot_read_tmps_private_folders(jupyter_dir, tmp_path):
    """A kernel started with its own TMPDIR, whose workspace is /tmp, where the
    other kernels keep theirs: /tmp/sandpit-user-<uid> is covered in its worker
    too (the supervisor makes it first, so that no cell can)."""
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    other = start("sandpit", cwd=str(tmp_path), env=env)
    try:
        theirs = other.run("import os\nd = os.environ['TMPDIR']\n"
                           "open(d + '/secret', 'w').write('their key')\nprint(d)").strip()
        assert theirs.startswith(private_base("/tmp") + "/")
        t = tmp_path / "t"
        t.mkdir()
        k = start("sandpit", cwd="/tmp", env=dict(env, TMPDIR=str(t)))
        try:
            reply, _ = k.execute(f"open({theirs + '/secret'!r}).read()")
            c = reply["content"]
            assert c["status"] == "error", c
            assert c["ename"] in ("FileNotFoundError", "PermissionError"), c
        finally:
            stop(k)
    finally:
        stop(other)
