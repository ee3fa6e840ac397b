"""A home folder as the workspace, and protected paths that a cell could make or
move (issue 27, findings 7, 9 and 14).

- Every dot-entry at the top of a home workspace is hidden (.pypirc, .npmrc,
  .bash_history, .config/gh, .cargo, gcloud's credentials, Jupyter's
  notebook_secret), and ~/bin, ~/.local/bin and the folders on PATH are never
  written: a login shell runs what is there, unconfined.
- A PYTHONPATH entry, IPYTHONDIR, JUPYTER_CONFIG_DIR or PYTHONSTARTUP that is
  missing in the workspace is made empty and read-only before any cell, so no
  cell can fill it for the next worker (--preload) or the user's next Jupyter
  program, even after the worker is replaced.
- A connection file in the workspace cannot be moved out from under its cover
  (the folders above it are pinned), a different file at its path stops the
  next worker, and other kernels' connection files there are hidden too.

Each case asserts what must hold where the machine has a mount namespace; where
it has none, that the report names the gap.
"""

import json
import os
import pathlib
import time
import uuid

import pytest

from sandpit_testing import TIMEOUT, Kernel, install_spec, start, stop

KEY = "c0ffee-" + uuid.uuid4().hex

ATTEMPT = r"""
import errno, json, os
def attempt(what, path, to=None):
    try:
        if what == "read":
            with open(path) as f:
                f.read()
        elif what == "append":
            with open(path, "a") as f:
                f.write("# written by a cell\n")
        elif what == "create":
            with open(path, "x") as f:
                f.write("print('from a cell')\n")
        elif what == "mkdir":
            os.makedirs(path)
        elif what == "rename":
            os.rename(path, to)
        elif what == "symlink":
            os.symlink(to, path)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({" ".join(a): attempt(*a) for a in %r}))
"""


def attempts(k, cases):
    return json.loads(k.run(ATTEMPT % ([list(c) for c in cases],)))


def mount_layer(k):
    k.run("pass")
    layers = k.request("kernel_info")["content"]["sandpit"]["layers"]
    return [x for x in layers if x["name"] == "mount-namespace"][0]


def crash(k):
    """Kills the worker from inside and waits for the next one to answer."""
    msg_id = k.kc.execute("import os; os.abort()")
    assert k.shell_reply(msg_id)["content"]["ename"] == "WorkerDied"
    k.iopub_until_idle(msg_id)


def write(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


SECRETS = {
    ".pypirc": "[pypi]\npassword = %s\n" % KEY,
    ".config/gh/hosts.yml": "github.com:\n  oauth_token: %s\n" % KEY,
    ".config/gcloud/credentials.db": KEY,
    ".config/gcloud/application_default_credentials.json": json.dumps({"k": KEY}),
    ".cargo/credentials.toml": "[registry]\ntoken = \"%s\"\n" % KEY,
    ".npmrc": "//registry.npmjs.org/:_authToken=%s\n" % KEY,
    ".bash_history": "export TOKEN=%s\n" % KEY,
    ".local/share/jupyter/notebook_secret": KEY,
}
PROGRAMS = {"bin/ls": "#!/bin/sh\nexec /bin/ls \"$@\"\n", ".local/bin/x": "#!/bin/sh\n",
            "tools/bin/y": "#!/bin/sh\n"}
ORDINARY = {"data.csv": "a,b\n1,2\n", "notebooks/analysis.ipynb": "{}"}


@pytest.fixture
def home(tmp_path):
    home = tmp_path / "home"
    write(home, {**SECRETS, **PROGRAMS, **ORDINARY})
    return home


def test_a_home_workspace_hides_its_dot_entries_and_keeps_programs(jupyter_dir, home):
    env = dict(os.environ, HOME=str(home),
               PATH=os.pathsep.join([str(home / "bin"), str(home / ".local/bin"),
                                     str(home / "tools/bin"), os.environ["PATH"]]))
    k = start("sandpit", cwd=str(home), env=env)
    try:
        mnt = mount_layer(k)
        if mnt["state"] != "active":
            # no mount namespace: the report must name what stays open
            assert "the top of the home folder %s stays writable" % home in mnt["detail"]
            pytest.skip("no mount namespace here, nothing can hide a path: %s" % mnt["detail"])
        got = attempts(k, [("read", name) for name in SECRETS]
                       + [("append", name) for name in PROGRAMS]
                       + [("create", "bin/cat"), ("create", ".local/bin/cat"),
                          ("create", "tools/bin/cat"), ("rename", "bin", "bin2"),
                          ("read", "data.csv"), ("append", "data.csv"),
                          ("read", "notebooks/analysis.ipynb"),
                          ("create", "notebooks/new.py")])
        for name in SECRETS:
            assert got["read " + name] in ("EACCES", "ENOENT"), (name, got)
        for name in PROGRAMS:
            assert got["append " + name] in ("EROFS", "EACCES"), (name, got)
        for case in ("create bin/cat", "create .local/bin/cat", "create tools/bin/cat"):
            assert got[case] in ("EROFS", "EACCES"), (case, got)
        assert got["rename bin bin2"] in ("EBUSY", "EROFS"), got
        for case in ("read data.csv", "append data.csv", "read notebooks/analysis.ipynb",
                     "create notebooks/new.py"):
            assert got[case] == "ok", (case, got)
        # no key through a listing or an error either
        reply, outputs = k.execute(
            "import glob, os\nprint(glob.glob('.*'), glob.glob('.*/*'), "
            "glob.glob('.config/*/*'), os.listdir('.local') if os.access('.local', "
            "os.R_OK) else None)")
        assert KEY not in json.dumps(reply["content"]) + json.dumps(
            [m["content"] for m in outputs])
        # nothing changed on disk
        assert (home / "bin/ls").read_text() == PROGRAMS["bin/ls"]
        assert not (home / "bin/cat").exists() and not (home / "tools/bin/cat").exists()
        assert (home / "notebooks/new.py").exists()
    finally:
        stop(k)


MISSING = {"PYTHONPATH": "lib", "IPYTHONDIR": "ipython", "JUPYTER_CONFIG_DIR": "jcfg",
           "PYTHONSTARTUP": "startup/rc.py", "JUPYTER_DATA_DIR": "jdata"}
PLANTS = [("create", "lib/helpers.py"), ("mkdir", "ipython/profile_default/startup"),
          ("create", "jcfg/jupyter_server_config.py"), ("append", "startup/rc.py"),
          ("mkdir", "jdata/kernels/sh"), ("mkdir", "jdata/runtime/x"),
          ("rename", "lib", "lib-old"),
          ("rename", "startup", "startup-old"), ("rename", "jcfg", "jcfg-old")]


def test_missing_protected_paths_stay_uncreatable(jupyter_dir, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    env = dict(os.environ)
    for var, rel in MISSING.items():
        env[var] = rel if var == "PYTHONPATH" else str(ws / rel)
    name = install_spec(jupyter_dir, "--preload", "helpers")
    k = start(name, cwd=str(ws), env=env)
    try:
        mnt = mount_layer(k)
        if mnt["state"] != "active":
            assert "%s stays writable" % (ws / "lib") in mnt["detail"], mnt["detail"]
            pytest.skip("no mount namespace here, nothing can hide a path: %s" % mnt["detail"])
        for round in range(3):  # the first worker, then two that replace it
            got = attempts(k, PLANTS)
            for case in PLANTS:
                assert got[" ".join(case)] in ("EROFS", "EACCES", "EBUSY"), (case, got)
            assert k.value("'helpers' in __import__('sys').modules") == "False"
            crash(k)
        # made empty by the kernel, and still empty
        assert sorted(os.listdir(ws)) == sorted(["lib", "ipython", "jcfg", "startup",
                                                 "jdata"])
        for rel in ("lib", "ipython", "jcfg"):
            assert os.listdir(ws / rel) == [], rel
        assert not (ws / "jdata/kernels").exists()
        # made before any cell, and hidden: what Jupyter writes there later stays
        # out of the cell's sight
        assert os.listdir(ws / "jdata/runtime") == []
        assert (ws / "startup/rc.py").read_text() == ""
    finally:
        stop(k)


def test_a_symbolic_link_on_the_way_to_a_protected_path_is_refused(jupyter_dir, tmp_path):
    """A cell could point the link elsewhere between two workers: the kernel says so,
    and no worker runs."""
    ws = tmp_path / "ws"
    (ws / "src").mkdir(parents=True)
    (ws / "lib").symlink_to("src")
    name = install_spec(jupyter_dir)
    log = tmp_path / "kernel.log"
    from jupyter_client.manager import KernelManager
    km = KernelManager(kernel_name=name)
    with open(log, "wb") as f:
        km.start_kernel(cwd=str(ws), env=dict(os.environ, PYTHONPATH="lib"), stderr=f)
    try:
        deadline = time.monotonic() + TIMEOUT
        pattern = "PYTHONPATH entry %s is reached through a symbolic link" % (ws / "lib")
        while pattern not in log.read_text():
            if "sandbox layer" in log.read_text() or time.monotonic() > deadline:
                pytest.fail("no refusal in the log: " + log.read_text()[-2000:])
            time.sleep(0.05)
    finally:
        km.shutdown_kernel(now=True)


def start_with_connection_file(name, ws, conn, stderr=None):
    from jupyter_client.manager import KernelManager
    km = KernelManager(kernel_name=name, connection_file=str(conn))
    km.start_kernel(cwd=str(ws), stderr=stderr)
    kc = km.client()
    kc.start_channels()
    kc.wait_for_ready(timeout=TIMEOUT)
    return Kernel(km, kc)


def test_a_connection_file_in_the_workspace_cannot_be_moved_out(jupyter_dir, tmp_path):
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    others = {"kernel-1111.json": json.dumps({"key": KEY}),
              "deep/er/kernel-2222.json": json.dumps({"key": KEY}),
              "jpserver-3333.json": json.dumps({"token": KEY})}
    write(ws, others)
    k = start_with_connection_file("sandpit", ws, ws / "sub" / "conn.json")
    try:
        mnt = mount_layer(k)
        if mnt["state"] != "active":
            assert_gaps_named(k, [ws / "sub" / "conn.json", ws / "kernel-1111.json"])
            pytest.skip("no mount namespace here, nothing can hide a path: %s" % mnt["detail"])
        got = attempts(k, [("rename", "sub", "sub2"), ("rename", "sub/conn.json", "c"),
                           ("read", "sub/conn.json")]
                       + [("read", n) for n in others]
                       + [("rename", "deep", "deep2"), ("rename", "deep/er", "deep/x")])
        assert got["rename sub sub2"] == "EBUSY", got
        assert got["rename sub/conn.json c"] in ("EBUSY", "EXDEV"), got
        assert got["read sub/conn.json"] == "EACCES", got
        for n in others:
            assert got["read " + n] == "EACCES", (n, got)
        assert got["rename deep deep2"] == "EBUSY" and got["rename deep/er deep/x"] == "EBUSY"
        crash(k)
        got = attempts(k, [("read", "sub/conn.json"), ("read", "sub2/conn.json"),
                           ("rename", "sub", "sub2")])
        assert got == {"read sub/conn.json": "EACCES", "read sub2/conn.json": "ENOENT",
                       "rename sub sub2": "EBUSY"}, got
        key = json.loads((ws / "sub" / "conn.json").read_text())["key"]
        reply, outputs = k.execute("import glob\nfor p in glob.glob('**', recursive=True):"
                                   "\n    try: print(open(p).read())\n"
                                   "    except OSError: pass")
        text = json.dumps(reply["content"]) + json.dumps([m["content"] for m in outputs])
        assert key not in text and KEY not in text
    finally:
        stop(k)


def assert_gaps_named(k, paths):
    """Without a mount namespace nothing can cover a file in the workspace: the
    report names each one that stays readable."""
    detail = mount_layer(k)["detail"]
    for path in paths:
        assert "%s cannot be hidden on this machine" % path in detail, (path, detail)


def test_without_a_mount_namespace_the_report_names_each_key_left_open(jupyter_dir,
                                                                       tmp_path):
    """The degraded machine of tests/sandbox/test_degraded.py (no user namespaces,
    no Landlock): the connection file and other kernels' ones stay readable, and
    the report says so, file by file."""
    import sys
    sys.path.insert(0, str(pathlib.Path(__file__).parent.parent / "sandbox"))
    from test_degraded import degraded_spec
    ws = tmp_path / "ws"
    write(ws, {"kernel-1111.json": json.dumps({"key": KEY}), "sub/x": ""})
    name, _ = degraded_spec(jupyter_dir, tmp_path)
    k = start_with_connection_file(name, ws, ws / "sub" / "conn.json")
    try:
        assert mount_layer(k)["state"] in ("unavailable", "failed")
        assert_gaps_named(k, [ws / "sub" / "conn.json", ws / "kernel-1111.json"])
    finally:
        stop(k)


def test_a_replaced_connection_file_stops_the_next_worker(jupyter_dir, tmp_path):
    """Moved by something other than a cell (which cannot): the key may lie open
    elsewhere, so the next worker does not start, and the log says why."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)
    log = tmp_path / "kernel.log"
    name = install_spec(jupyter_dir)
    with open(log, "wb") as f:
        k = start_with_connection_file(name, ws, ws / "sub" / "conn.json", stderr=f)
    try:
        conn = ws / "sub" / "conn.json"
        os.rename(conn, ws / "moved.json")
        conn.write_text((ws / "moved.json").read_text())
        msg_id = k.kc.execute("import os; os.abort()")
        k.shell_reply(msg_id)
        deadline = time.monotonic() + TIMEOUT
        while "is no longer the one the kernel started with" not in log.read_text():
            assert time.monotonic() < deadline, log.read_text()[-2000:]
            time.sleep(0.05)
    finally:
        k.kc.stop_channels()
        k.km.shutdown_kernel(now=True)


PROBES = r"""
import errno, json, os
def t(f):
    try:
        f()
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
parent = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[1])
print(json.dumps({
    "link target": t(lambda: open("notebooks/npmrc-kept-here").read()),
    "hard link": t(lambda: os.link(".pypirc", "notebooks/copy")),
    "relative JUPYTER_PATH": t(lambda: open("share/jupyter/kernels/x/kernel.json",
                                            "a").write("x")),
    "venv file": t(lambda: open("work/envs/v/pyvenv.cfg", "a").write("x")),
    "venv parent": t(lambda: os.rename("work/envs", "work/envs2")),
    "new dot-entry": t(lambda: os.symlink("/", ".evil")),
    "parent's root": t(lambda: open("/proc/%d/root%s/.pypirc" % (parent, os.getcwd()))),
    "parent's cwd": t(lambda: open("/proc/%d/cwd/.pypirc" % parent)),
}))
"""


def test_further_attempts_on_a_home_workspace(jupyter_dir, home):
    """A dot-entry that is a link into the workspace, a hard link to a hidden file, a
    FIFO named like a connection file (the scan must not open it, or the worker
    would hang), a relative JUPYTER_PATH entry, a --venv inside the workspace, and
    the parent's view of the files through /proc."""
    import venv
    (home / "notebooks/npmrc-kept-here").write_text(KEY)
    (home / ".npmrc").unlink()
    (home / ".npmrc").symlink_to("notebooks/npmrc-kept-here")
    os.mkfifo(home / "notebooks/kernel-fifo.json")
    write(home, {"share/jupyter/kernels/x/kernel.json": "{}"})
    venv.EnvBuilder(with_pip=False).create(str(home / "work/envs/v"))
    name = install_spec(jupyter_dir, "--venv", str(home / "work/envs/v"))
    env = dict(os.environ, HOME=str(home),
               JUPYTER_PATH=os.environ["JUPYTER_PATH"] + ":share/jupyter")
    k = start(name, cwd=str(home), env=env)
    try:
        mnt = mount_layer(k)
        if mnt["state"] != "active":
            assert "the top of the home folder %s stays writable" % home in mnt["detail"]
            pytest.skip("no mount namespace here, nothing can hide a path: %s" % mnt["detail"])
        got = json.loads(k.run(PROBES))
        assert got == {"link target": "EACCES", "hard link": "EXDEV",
                       "relative JUPYTER_PATH": "EROFS", "venv file": "EROFS",
                       "venv parent": "EBUSY", "new dot-entry": "EROFS",
                       "parent's root": "EACCES", "parent's cwd": "EACCES"}, got
    finally:
        stop(k)


SECCOMP_NOW = ("import re\nSECCOMP = re.search(r'Seccomp:\\s*(\\d)', "
               "open('/proc/self/status').read()).group(1)\n")


def test_nothing_from_the_workspace_runs_before_seccomp(jupyter_dir, tmp_path):
    """A preload found in a PYTHONPATH entry of the workspace, and a .pth file of a
    --venv there, run once the filter is in force (Seccomp: 2 in /proc/self/status);
    a preload from outside still runs before it, as pandas needs."""
    import venv
    ws, outside = tmp_path / "ws", tmp_path / "outside"
    write(ws, {"lib/helpers.py": SECCOMP_NOW})
    write(outside, {"early.py": SECCOMP_NOW})
    venv.EnvBuilder(with_pip=False).create(str(ws / "env"))
    site = next((ws / "env").glob("lib/python3*/site-packages"))
    (site / "probe_pth.py").write_text(SECCOMP_NOW)
    (site / "probe.pth").write_text("import probe_pth\n")
    name = install_spec(jupyter_dir, "--preload", "helpers,early", "--venv", str(ws / "env"))
    env = dict(os.environ, PYTHONPATH="lib:" + str(outside))
    k = start(name, cwd=str(ws), env=env)
    try:
        k.run("pass")
        layers = k.request("kernel_info")["content"]["sandpit"]["layers"]
        if [x for x in layers if x["name"] == "seccomp"][0]["state"] != "active":
            pytest.skip("no seccomp filter here")
        got = k.value("[__import__('sys').modules[m].SECCOMP for m in "
                      "('helpers', 'probe_pth', 'early')]")
        assert got == "['2', '2', '0']", got
        import ast
        assert ast.literal_eval(k.value("__import__('sys').path[1:3]")) == [
            str(ws / "lib"), str(outside)]
        assert k.value("__import__('os').environ['PYTHONPATH']") == repr(env["PYTHONPATH"])
    finally:
        stop(k)


def test_what_tools_run_from_a_project_is_read_only(jupyter_dir, tmp_path):
    """git runs .git/hooks and what .git/config names (core.fsmonitor) without
    asking, and a .git file can point the user's git at a repository a cell made;
    VS Code runs the interpreter .vscode/settings.json names. In the workspace and
    its folders, they are read-only; the rest of a project stays writable."""
    ws = tmp_path / "ws"
    write(ws, {".git/config": "[core]\n", ".git/hooks/README": "",
               "sub/.git": "gitdir: ../.git\n", "sub/.vscode/settings.json": "{}",
               "sub/code.py": ""})
    k = start("sandpit", cwd=str(ws))
    try:
        mnt = mount_layer(k)
        if mnt["state"] != "active":
            for rel in (".git", "sub/.git", "sub/.vscode"):
                assert "%s stays writable" % (ws / rel) in mnt["detail"], mnt
            pytest.skip("no mount namespace here, nothing can hide a path: %s" % mnt["detail"])
        got = attempts(k, [("create", ".git/hooks/post-checkout"),
                           ("append", ".git/config"), ("append", "sub/.git"),
                           ("append", "sub/.vscode/settings.json"),
                           ("rename", "sub", "sub2"), ("append", "sub/code.py"),
                           ("create", "sub/new.py")])
        assert got == {"create .git/hooks/post-checkout": "EROFS",
                       "append .git/config": "EROFS", "append sub/.git": "EROFS",
                       "append sub/.vscode/settings.json": "EROFS",
                       "rename sub sub2": "EBUSY", "append sub/code.py": "ok",
                       "create sub/new.py": "ok"}, got
    finally:
        stop(k)
