"""What a new user meets first: a kernelspec that names a workspace above the
notebook's folder, a binary copied without its worker, and the limits that
`sandpit status` shows."""

import json
import os
import shutil
import subprocess

import pytest

from sandpit_testing import SANDPIT, install_spec, start, stop

LIMIT = 90


def kernel_json(jupyter_dir, name):
    with open(jupyter_dir / "share" / "jupyter" / "kernels" / name / "kernel.json") as f:
        return json.load(f)


# --- --workspace and the working folder ---------------------------------------------


def test_a_workspace_of_the_project_keeps_the_notebooks_folder(jupyter_dir, tmp_path):
    """`sandpit install --workspace .` in project/, a notebook in project/notebooks:
    the kernelspec names project/ by its absolute path, and the code runs in the
    notebook's folder (open("sales.csv") beside it works, and so does importing a
    module there), as in ipykernel, with the whole project readable and writable."""
    project = tmp_path / "project"
    notebooks = project / "notebooks"
    notebooks.mkdir(parents=True)
    (notebooks / "sales.csv").write_text("region,total\nnorth,3\n")
    (notebooks / "helpers.py").write_text("WHERE = 'beside the notebook'\n")
    (project / "data").mkdir()
    (project / "data" / "prices.csv").write_text("x\n1\n")
    name = "sandpit-test-ws-" + os.urandom(4).hex()
    p = subprocess.run([SANDPIT, "install", "--prefix", str(jupyter_dir), "--name", name,
                        "--workspace", "."], cwd=str(project), capture_output=True,
                       text=True, timeout=LIMIT)
    assert p.returncode == 0, p.stderr
    argv = kernel_json(jupyter_dir, name)["argv"]
    ws = argv[argv.index("--workspace") + 1]
    assert ws == str(project), argv  # absolute, not "."
    k = start(name, cwd=str(notebooks))
    try:
        out = k.run("import os\nprint(os.getcwd())\n"
                    "print(open('sales.csv').read().splitlines()[1])\n"
                    "print(open('../data/prices.csv').read().splitlines()[1])\n"
                    "open('out.csv', 'w').write('ok')\n"
                    "open('../data/more.csv', 'w').write('ok')\n"
                    "import helpers\nprint(helpers.WHERE)")
        assert out.splitlines() == [str(notebooks.resolve()), "north,3", "1",
                                    "beside the notebook"], out
        assert (notebooks / "out.csv").read_text() == "ok"
        assert (project / "data" / "more.csv").read_text() == "ok"
        # each new worker starts in the same folder (exec'd, then from the template)
        for _ in range(3):
            reply, _ = k.execute("import os\nos._exit(3)")
            assert reply["content"]["ename"] == "WorkerDied"
            assert k.run("import os\nprint(os.getcwd())") == str(notebooks.resolve()) + "\n"
    finally:
        stop(k)


def test_a_kernel_started_outside_its_workspace_runs_in_the_workspace(jupyter_dir,
                                                                      tmp_path):
    """Where the client's folder lies outside the workspace, the code runs in the
    workspace, as before."""
    ws = tmp_path / "ws"
    elsewhere = tmp_path / "elsewhere"
    ws.mkdir()
    elsewhere.mkdir()
    name = install_spec(jupyter_dir, "--workspace", str(ws))
    k = start(name, cwd=str(elsewhere))
    try:
        assert k.run("import os\nprint(os.getcwd())") == str(ws.resolve()) + "\n"
    finally:
        stop(k)


def test_a_started_kernel_runs_in_its_workspace(jupyter_dir, tmp_path):
    """`sandpit start --workspace DIR` given in a folder inside DIR: the kernel is the
    workspace's, and its cells run there, as they did."""
    ws = tmp_path / "ws"
    (ws / "sub").mkdir(parents=True)

    def sandpit(*args, cwd):
        return subprocess.run([SANDPIT, *args], cwd=str(cwd), capture_output=True,
                              text=True, timeout=LIMIT)

    try:
        p = sandpit("start", "--workspace", str(ws), cwd=ws / "sub")
        assert p.returncode == 0, p.stderr
        p = sandpit("run", "import os\nprint(os.getcwd())", cwd=ws)
        assert (p.returncode, p.stdout) == (0, str(ws.resolve()) + "\n"), p.stderr
    finally:
        sandpit("stop", cwd=ws)


# --- a binary without its worker ------------------------------------------------------


@pytest.fixture
def lone_binary(tmp_path):
    """build/sandpit copied alone into a folder: no worker beside it."""
    folder = tmp_path / "bin"
    folder.mkdir()
    shutil.copy2(os.path.realpath(SANDPIT), folder / "sandpit")
    return folder


def test_install_refuses_a_binary_without_its_worker(lone_binary, tmp_path):
    prefix = tmp_path / "prefix"
    p = subprocess.run([str(lone_binary / "sandpit"), "install", "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=LIMIT)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert str(lone_binary / "sandpit-worker") in p.stderr, p.stderr
    assert "cannot be run" in p.stderr and "beside" in p.stderr, p.stderr
    assert not prefix.exists(), "no kernelspec that cannot start"
    # the same binary with its worker beside it installs
    here = os.path.dirname(os.path.realpath(SANDPIT))
    for worker in ("sandpit-worker.so", "sandpit-worker"):
        if os.path.exists(os.path.join(here, worker)):
            shutil.copy2(os.path.join(here, worker), lone_binary / worker)
    p = subprocess.run([str(lone_binary / "sandpit"), "install", "--prefix", str(prefix)],
                       capture_output=True, text=True, timeout=LIMIT)
    assert p.returncode == 0, p.stderr
    assert (prefix / "share" / "jupyter" / "kernels" / "sandpit" / "kernel.json").exists()


def test_check_sandbox_says_the_worker_cannot_start(lone_binary):
    p = subprocess.run([str(lone_binary / "sandpit"), "check-sandbox"], capture_output=True,
                       text=True, timeout=LIMIT)
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert "the worker cannot start" in p.stdout, p.stdout
    assert str(lone_binary / "sandpit-worker") in p.stdout, p.stdout
    assert " active" not in p.stdout, "no layer is in force without a worker"


# --- sandpit status ---------------------------------------------------------------------


def test_status_prints_limits_as_integers(jupyter_dir, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()

    def sandpit(*args):
        return subprocess.run([SANDPIT, *args], cwd=str(ws), capture_output=True,
                              text=True, timeout=LIMIT)

    try:
        assert sandpit("start", "--profile", "agent").returncode == 0
        p = sandpit("status")
        assert p.returncode == 0, p.stderr
        assert "images per cell  16777216 bytes" in p.stdout, p.stdout
        assert "output per cell  1000000 bytes" in p.stdout, p.stdout
        assert "memory           2048 MiB" in p.stdout, p.stdout
        assert "e+" not in p.stdout, p.stdout
    finally:
        sandpit("stop")
