"""Other packages' folders: a virtual environment (--venv: its packages
importable, before the system's, and by --preload), folders to read (--read,
beside the workspace or inside it: read, never written) and PYTHONPATH
(importable, never written); and an import that fails because a folder on
sys.path is unreadable says so.

What the sandbox refuses is asserted where this machine has the layer that
refuses it (Landlock for reads, the mount namespace for writes inside the
workspace); what the options give is asserted everywhere."""

import os
import sysconfig
import venv

import pytest

from sandpit_testing import install_spec, start, stop

CHECK = r"""
import errno, os
def attempt(what, path):
    try:
        if what == "read":
            with open(path) as f:
                return f.read()
        with open(path, "w") as f:
            f.write("x")
        return "written"
    except OSError as e:
        return errno.errorcode[e.errno]
"""


def layer(k, name):
    k.run("pass")
    layers = k.request("kernel_info")["content"]["sandpit"]["layers"]
    return [x for x in layers if x["name"] == name][0]["state"] == "active"


@pytest.fixture(scope="module")
def folders(jupyter_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("folders")
    env_dir = root / "venv"
    venv.EnvBuilder(with_pip=False).create(str(env_dir))
    site = env_dir / "lib" / ("python" + sysconfig.get_python_version()) / "site-packages"
    (site / "venvpkg.py").write_text("WHERE = 'the venv'\n")
    (site / "extra.pth").write_text(str(root / "from-pth") + "\n")
    (root / "from-pth").mkdir()
    (root / "from-pth" / "pthmod.py").write_text("Y = 7\n")
    (root / "data").mkdir()
    (root / "data" / "table.csv").write_text("a,b\n1,2\n")
    ws = root / "ws"
    (ws / "reference").mkdir(parents=True)
    (ws / "reference" / "ref.txt").write_text("ref")
    (root / "lib").mkdir()
    (root / "lib" / "pathmod.py").write_text("X = 42\n")
    (root / "other").mkdir()
    (root / "other" / "elsewhere.py").write_text("")
    name = install_spec(jupyter_dir, "--venv", str(env_dir), "--read", str(root / "data"),
                        "--read", str(ws / "reference"), "--preload", "venvpkg")
    k = start(name, cwd=str(ws), env=dict(os.environ, PYTHONPATH=str(root / "lib")))
    k.run(CHECK)
    yield k, root, site
    stop(k)


def test_a_virtual_environment(folders):
    k, root, site = folders
    # preloaded before the sandbox locked, from the venv
    assert k.run("import sys\nprint('venvpkg' in sys.modules)") == "True\n"
    assert k.run("import venvpkg\nprint(venvpkg.WHERE)") == "the venv\n"
    # what its .pth files name (an editable install's source) is readable too
    assert k.run("import pthmod\nprint(pthmod.Y)") == "7\n"
    # before the system's packages, as in the venv's own Python
    out = k.run("print([p.endswith(('site-packages', 'dist-packages')) for p in sys.path]"
                ".index(True) == sys.path.index(%r))" % str(site))
    assert out == "True\n"
    if layer(k, "landlock"):
        assert k.run("print(attempt('write', %r))" % str(site / "planted.py")) in (
            "EACCES\n", "EROFS\n")


def test_folders_to_read_and_pythonpath(folders):
    k, root, site = folders
    assert k.run("print(attempt('read', %r))" % str(root / "data" / "table.csv")) == \
        "a,b\n1,2\n\n"
    assert k.run("print(attempt('read', 'reference/ref.txt'))") == "ref\n"
    assert k.run("import pathmod\nprint(pathmod.X)") == "42\n"
    if layer(k, "landlock"):
        for path in (root / "data" / "new.csv", root / "lib" / "planted.py"):
            assert k.run("print(attempt('write', %r))" % str(path)) in ("EACCES\n",
                                                                        "EROFS\n")
    if layer(k, "mount-namespace"):
        # inside the workspace, but read-only all the same
        assert k.run("print(attempt('write', 'reference/new.txt'))") == "EROFS\n"
        assert k.run("print(attempt('write', 'mine.txt'))") == "written\n"


def test_an_unreadable_folder_on_sys_path_is_named(folders):
    k, root, site = folders
    if not layer(k, "landlock"):
        return print("no Landlock here: every folder is readable")
    reply, _ = k.execute("sys.path.append(%r)\nimport elsewhere" % str(root / "other"))
    c = reply["content"]
    assert c["ename"] == "ModuleNotFoundError"
    text = "\n".join(c["traceback"])
    assert "%s on sys.path cannot be read in this kernel's sandbox" % (root / "other") \
        in text, text
    assert "--venv" in text and "--read" in text
    # once every folder on sys.path is readable, a missing module is just missing
    k.run("sys.path.remove(%r)" % str(root / "other"))
    reply, _ = k.execute("import no_such_module_anywhere")
    assert "cannot be read" not in "\n".join(reply["content"]["traceback"])
