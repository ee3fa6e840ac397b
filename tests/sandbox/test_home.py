"""A workspace that is a home folder (issue #9, hole 2).

Jupyter starts a kernel in the notebook's folder, often ~. Whatever the
workspace, a cell must never read another kernel's connection file or the
user's keys, and never write what runs outside the sandbox later: kernelspecs,
Jupyter and IPython configuration, shell start-up files, Python's start-up
modules. Ordinary files in the workspace stay readable and writable.

The home folder here is a temporary one shaped like a real one, and HOME points
at it. Where the machine has no mount namespace, nothing can keep a path inside
the workspace from being written: the report must say so, path by path.
"""

import json
import os

import pytest

from sandbox_helpers import kernel_info, stop
from sandpit_testing import start

KEY = "a0436f6c-1916-secret-key"


def make_home(root):
    """A home folder with what a Jupyter user has in one."""
    home = root / "home"
    files = {
        ".local/share/jupyter/runtime/kernel-1234.json": json.dumps(
            {"key": KEY, "shell_port": 5000, "ip": "127.0.0.1"}),
        ".local/share/jupyter/kernels/python3/kernel.json": json.dumps(
            {"argv": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"]}),
        ".local/lib/python3.11/site-packages/usercustomize.py": "",
        ".jupyter/jupyter_server_config.py": "c = get_config()\n",
        ".ipython/profile_default/startup/00-start.py": "",
        ".config/fish/config.fish": "",
        ".ssh/id_rsa": "-----BEGIN OPENSSH PRIVATE KEY-----\n" + KEY + "\n",
        ".gnupg/private-keys-v1.d/x.key": KEY,
        ".bashrc": "# bashrc\n",
        ".profile": "# profile\n",
        ".pythonrc": "",
        "notebooks/analysis.ipynb": "{}",
        "data.csv": "a,b\n1,2\n",
    }
    for name, text in files.items():
        path = home / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return home


CHECK = r"""
import errno, json, os
def attempt(what, path):
    try:
        if what == "read":
            with open(path) as f:
                f.read()
        elif what == "append":
            with open(path, "a") as f:
                f.write("# written by a cell\n")
        elif what == "create":
            with open(path, "x") as f:
                f.write("x")
        elif what == "mkdir":
            os.makedirs(path)
        elif what == "list":
            os.listdir(path)
        return "ok"
    except OSError as e:
        return errno.errorcode.get(e.errno, str(e.errno))
print(json.dumps({"%%s %%s" %% (w, p): attempt(w, p) for w, p in %r}))
"""


def attempts(k, pairs):
    return json.loads(k.run(CHECK % (pairs,)))


def layer(k, name):
    return [l for l in kernel_info(k)["sandpit"]["layers"] if l["name"] == name][0]


def mount_namespace(k):
    k.run("pass")
    return layer(k, "mount-namespace")


@pytest.fixture
def home_kernel(jupyter_dir, tmp_path):
    home = make_home(tmp_path)
    k = start("sandpit", cwd=str(home), env=dict(os.environ, HOME=str(home)))
    yield k, home
    stop(k)


SECRETS = [("read", ".local/share/jupyter/runtime/kernel-1234.json"),
           ("list", ".local/share/jupyter/runtime"),
           ("read", ".ssh/id_rsa"), ("list", ".ssh"),
           ("read", ".gnupg/private-keys-v1.d/x.key")]

NEVER_WRITTEN = [("append", ".local/share/jupyter/kernels/python3/kernel.json"),
                 ("mkdir", ".local/share/jupyter/kernels/sh"),
                 ("append", ".local/lib/python3.11/site-packages/usercustomize.py"),
                 ("create", ".local/lib/python3.11/site-packages/sitecustomize.py"),
                 ("append", ".jupyter/jupyter_server_config.py"),
                 ("create", ".jupyter/jupyter_notebook_config.py"),
                 ("append", ".ipython/profile_default/startup/00-start.py"),
                 ("create", ".ipython/profile_default/startup/01-evil.py"),
                 ("mkdir", ".config/autostart"),
                 ("append", ".bashrc"), ("append", ".profile"), ("append", ".pythonrc"),
                 # ones that do not exist yet must not be made either
                 ("create", ".bash_profile"), ("create", ".zshenv"),
                 ("mkdir", ".kube"), ("create", ".gitconfig")]

ORDINARY = [("read", "data.csv"), ("append", "data.csv"),
            ("read", "notebooks/analysis.ipynb"), ("create", "notebooks/new.txt"),
            ("mkdir", "notebooks/results/2024")]


def test_a_home_folder_as_workspace(home_kernel):
    k, home = home_kernel
    mnt = mount_namespace(k)
    if mnt["state"] != "active":
        # nothing can keep these out of reach here: the report must say so
        assert "the top of the home folder %s stays writable" % home in mnt["detail"]
        pytest.skip("no mount namespace here, nothing can hide the home folder's "
                    "secrets (the report says so): %s" % mnt["detail"])
    got = attempts(k, SECRETS + NEVER_WRITTEN + ORDINARY)
    for what, path in SECRETS:
        assert got["%s %s" % (what, path)] == "EACCES", (what, path, got)
    for what, path in NEVER_WRITTEN:
        assert got["%s %s" % (what, path)] in ("EROFS", "EACCES"), (what, path, got)
    for what, path in ORDINARY:
        assert got["%s %s" % (what, path)] == "ok", (what, path, got)
    # nothing of the user's setup changed on disk
    assert (home / ".bashrc").read_text() == "# bashrc\n"
    assert not (home / ".bash_profile").exists()
    assert "sh" not in os.listdir(home / ".local/share/jupyter/kernels")
    assert (home / "data.csv").read_text().endswith("# written by a cell\n")
    assert (home / "notebooks/new.txt").exists()
    # the report lists what was masked
    # (every dot-entry at the top is hidden: ~/.local with the runtime folder in it)
    assert "~/.ssh" in mnt["detail"] and "~/.local" in mnt["detail"]
    assert "top level and dot-files read-only: ~" in mnt["detail"], mnt["detail"]
    # no key reaches the cell through an error message or a listing
    reply, outputs = k.execute("import glob\nprint(glob.glob('.local/share/jupyter/"
                               "runtime/*'), glob.glob('.ssh/*'))")
    assert KEY not in json.dumps(reply["content"]) + json.dumps([m["content"] for m in outputs])


def test_files_at_the_top_of_the_home_folder_stay_writable(home_kernel):
    """What is at the top already can be written; a new name there cannot be made
    (it could be the next .bash_profile), so a cell writes into a folder."""
    k, home = home_kernel
    mnt = mount_namespace(k)
    if mnt["state"] != "active":
        pytest.skip("no mount namespace here, nothing makes the top of the home "
                    "folder read-only: %s" % mnt["detail"])
    got = attempts(k, [("append", "data.csv"), ("create", "new-at-the-top.csv"),
                       ("create", "notebooks/new.csv")])
    assert got == {"append data.csv": "ok", "create new-at-the-top.csv": "EROFS",
                   "create notebooks/new.csv": "ok"}


def test_jupyter_folders_inside_another_workspace(jupyter_dir, tmp_path):
    """A workspace that is not a home folder, but holds the folders Jupyter and
    Python are told to use (JUPYTER_*, IPYTHONDIR, PYTHONPATH)."""
    ws = tmp_path / "project"
    for d in ("jupyter-data/kernels/x", "jupyter-config", "runtime", "ipython", "lib",
              "work"):
        (ws / d).mkdir(parents=True)
    (ws / "runtime/kernel-99.json").write_text(json.dumps({"key": KEY}))
    (ws / "jupyter-data/kernels/x/kernel.json").write_text("{}")
    (ws / "lib/sitecustomize.py").write_text("")
    env = dict(os.environ, JUPYTER_DATA_DIR=str(ws / "jupyter-data"),
               JUPYTER_CONFIG_DIR=str(ws / "jupyter-config"),
               JUPYTER_RUNTIME_DIR=str(ws / "runtime"), IPYTHONDIR=str(ws / "ipython"),
               PYTHONPATH=str(ws / "lib"))
    k = start("sandpit", cwd=str(ws), env=env)
    try:
        mnt = mount_namespace(k)
        if mnt["state"] != "active":
            pytest.skip("no mount namespace here, nothing can hide a path: %s" % mnt["detail"])
        got = attempts(k, [("read", "runtime/kernel-99.json"),
                           ("append", "jupyter-data/kernels/x/kernel.json"),
                           ("create", "jupyter-config/jupyter_server_config.py"),
                           ("create", "ipython/startup.py"),
                           ("append", "lib/sitecustomize.py"),
                           ("create", "work/out.txt"), ("create", "top.txt")])
        assert got == {"read runtime/kernel-99.json": "EACCES",
                       "append jupyter-data/kernels/x/kernel.json": "EROFS",
                       "create jupyter-config/jupyter_server_config.py": "EROFS",
                       "create ipython/startup.py": "EROFS",
                       "append lib/sitecustomize.py": "EROFS",
                       "create work/out.txt": "ok", "create top.txt": "ok"}, got
        detail = mount_namespace(k)["detail"]
        assert "hidden: " in detail and "./runtime" in detail, detail
        for d in ("jupyter-data", "jupyter-config", "ipython", "lib/sitecustomize.py"):
            assert "./" + d in detail.split("read-only in the workspace (.): ")[1], \
                (d, detail)
    finally:
        stop(k)


def test_without_a_mount_namespace_the_report_says_so(jupyter_dir, tmp_path):
    """The degraded machine of test_degraded.py (no user namespaces, no Landlock):
    nothing can keep these paths out of reach, and the report names them."""
    from test_degraded import degraded_spec
    home = make_home(tmp_path)
    name, _ = degraded_spec(jupyter_dir, tmp_path)
    k = start(name, cwd=str(home), env=dict(os.environ, HOME=str(home)))
    try:
        mnt = mount_namespace(k)
        assert mnt["state"] in ("unavailable", "failed"), mnt
        assert "the top of the home folder %s stays writable" % home in mnt["detail"], mnt
        assert "%s/.ssh cannot be hidden on this machine" % home in mnt["detail"], mnt
    finally:
        stop(k)
