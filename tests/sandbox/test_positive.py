"""What must keep working inside the sandbox (issue #4): the workspace, the
private temporary folder, threads, numpy, pandas and matplotlib, asyncio, and a
process signalling itself. One kernel for the module, in a workspace the test
can look into from outside."""

import base64
import os
from types import SimpleNamespace

import pytest

from sandbox_helpers import assert_intact, boot, kernel_info, plant, stop, stdout_of


@pytest.fixture(scope="module")
def box(jupyter_dir, tmp_path_factory):
    ws = tmp_path_factory.mktemp("ws")
    k = boot(jupyter_dir, cwd=ws)
    try:
        yield SimpleNamespace(k=k, ws=ws.resolve(), token=plant(k))
    finally:
        stop(k)


def test_getcwd_is_the_workspace(box):
    assert box.k.run("import os\nprint(os.getcwd())") == "%s\n" % box.ws
    assert_intact(box.k, box.token)


def test_files_in_the_workspace(box):
    out = box.k.run(
        "import os, shutil\n"
        "os.makedirs('data/sub', exist_ok=True)\n"
        "with open('data/sub/a.txt', 'w') as f:\n    f.write('first\\n')\n"
        "with open('data/sub/a.txt', 'a') as f:\n    f.write('second\\n')\n"
        "os.rename('data/sub/a.txt', 'data/b.txt')\n"
        "shutil.copy('data/b.txt', 'data/c.txt')\n"
        "os.symlink('b.txt', 'data/link.txt')\n"
        "os.chmod('data/c.txt', 0o600)\n"
        "os.truncate('data/c.txt', 6)\n"
        "print(sorted(os.listdir('data')), open('data/link.txt').read().split())")
    assert out == "['b.txt', 'c.txt', 'link.txt', 'sub'] ['first', 'second']\n"
    # the files are really there, with what the cell wrote
    assert (box.ws / "data" / "b.txt").read_text() == "first\nsecond\n"
    assert (box.ws / "data" / "c.txt").read_text() == "first\n"
    assert oct((box.ws / "data" / "c.txt").stat().st_mode & 0o777) == "0o600"
    # and what the user puts there, the cell reads
    (box.ws / "from_host.csv").write_text("x,y\n1,2\n")
    assert box.k.run("print(open('from_host.csv').read().split())") == \
        "['x,y', '1,2']\n"
    box.k.run("import shutil\nshutil.rmtree('data')\nos.remove('from_host.csv')")
    assert not (box.ws / "data").exists()
    assert_intact(box.k, box.token)


def test_the_workspace_option(jupyter_dir, tmp_path):
    """--workspace DIR: the code runs in DIR and may write there, and may not
    write in the folder the kernel was started in (Jupyter starts kernels in the
    notebook's folder)."""
    started, ws = tmp_path / "started-here", tmp_path / "the-workspace"
    started.mkdir()
    ws.mkdir()
    k = boot(jupyter_dir, "--workspace", str(ws), cwd=started)
    try:
        assert kernel_info(k)["sandpit"]["workspace"] == str(ws.resolve())
        assert k.run("import os\nprint(os.getcwd())") == "%s\n" % ws.resolve()
        k.run("with open('made.txt', 'w') as f:\n    f.write('in the workspace')")
        assert (ws / "made.txt").read_text() == "in the workspace"
        layers = {layer["name"]: layer["state"]
                  for layer in kernel_info(k)["sandpit"]["layers"]}
        target = started / "escaped.txt"
        reply, _ = k.execute("open(%r, 'w').write('x')" % str(target))
        c = reply["content"]
        why = " (outside the workspace: this kernel may write only in its workspace, %s, " \
            % ws.resolve()
        if layers["mount-namespace"] == "active":  # all but the workspace is read-only
            assert c["ename"] == "OSError", c
            assert c["evalue"].startswith("[Errno 30] Read-only file system" + why), c
        elif layers["landlock"] == "active":
            assert c["ename"] == "PermissionError", c
            assert c["evalue"].startswith("[Errno 13] Permission denied" + why), c
        else:
            pytest.skip("neither a mount namespace nor Landlock here, so nothing "
                        "keeps the code from writing where the kernel started")
        assert c["evalue"].endswith(": %r" % str(target)), c
        assert not target.exists()
        assert os.listdir(started) == []
    finally:
        stop(k)


def test_the_temporary_folder(box):
    out = box.k.run("import tempfile, os\n"
                    "with tempfile.NamedTemporaryFile('w+', suffix='.txt') as f:\n"
                    "    f.write('scratch')\n    f.flush()\n    f.seek(0)\n"
                    "    print(f.read(), f.name.startswith(tempfile.gettempdir()))\n"
                    "d = tempfile.mkdtemp()\nprint(os.path.isdir(d), d != os.getcwd())")
    assert out == "scratch True\nTrue True\n"
    assert_intact(box.k, box.token)


def test_threads(box):
    out = box.k.run(
        "import threading, concurrent.futures\n"
        "def work(n):\n    return sum(i * i for i in range(n))\n"
        "with concurrent.futures.ThreadPoolExecutor(8) as ex:\n"
        "    results = list(ex.map(work, range(1000, 1016)))\n"
        "seen = []\nlock = threading.Lock()\n"
        "def add(i):\n    with lock:\n        seen.append(i)\n"
        "ts = [threading.Thread(target=add, args=(i,)) for i in range(32)]\n"
        "[t.start() for t in ts]\n[t.join() for t in ts]\n"
        "print(results == [work(n) for n in range(1000, 1016)], sorted(seen) == list(range(32)))")
    assert out == "True True\n"
    # a thread that prints after the cell has ended still reaches the client
    assert box.k.run("import threading, time\n"
                     "t = threading.Thread(target=lambda: print('from a thread'))\n"
                     "t.start()\nt.join()") == "from a thread\n"
    assert_intact(box.k, box.token)


def test_numpy(box):
    out = box.k.run("import numpy as np\n"
                    "a = np.random.default_rng(0).random((300, 300))\n"
                    "inv = np.linalg.inv(a)\n"
                    "print(np.allclose(a @ inv, np.eye(300)), np.arange(10).sum())")
    assert out == "True 45\n"
    assert_intact(box.k, box.token)


def test_pandas(box):
    out = box.k.run("import pandas as pd\n"
                    "df = pd.DataFrame({'g': list('abab'), 'v': [1, 2, 3, 4]})\n"
                    "df.groupby('g').v.sum().to_csv('sums.csv')\n"
                    "back = pd.read_csv('sums.csv')\n"
                    "print(back.to_dict('list'))")
    assert out == "{'g': ['a', 'b'], 'v': [4, 6]}\n"
    assert (box.ws / "sums.csv").read_text() == "g,v\na,4\nb,6\n"
    reply, outputs = box.k.execute("df")
    data = [m["content"]["data"] for m in outputs if m["msg_type"] == "execute_result"]
    assert data and "text/html" in data[0]
    assert_intact(box.k, box.token)


def test_matplotlib(box):
    reply, outputs = box.k.execute(
        "import matplotlib.pyplot as plt\n"
        "fig, ax = plt.subplots()\nax.plot([1, 2, 3], [1, 4, 9])\nax.set_title('squares')\n"
        "fig.savefig('chart.png')\nplt.show()")
    assert reply["content"]["status"] == "ok", reply["content"]
    pngs = [m["content"]["data"]["image/png"] for m in outputs
            if m["msg_type"] == "display_data" and "image/png" in m["content"]["data"]]
    assert len(pngs) == 1
    assert base64.b64decode(pngs[0]).startswith(b"\x89PNG\r\n\x1a\n")
    assert (box.ws / "chart.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    assert_intact(box.k, box.token)


def test_asyncio_and_signals_to_itself(box):
    """asyncio's loop needs a socketpair (top-level await in a cell); a process may
    signal itself (os.kill(os.getpid()), signal.raise_signal)."""
    out = box.k.run("import asyncio\n"
                    "async def twice(x):\n    await asyncio.sleep(0.01)\n    return 2 * x\n"
                    "print(await asyncio.gather(twice(1), twice(2)))")
    assert out == "[2, 4]\n"
    out = box.k.run("import os, signal\n"
                    "got = []\n"
                    "old = signal.signal(signal.SIGUSR1, lambda *a: got.append('usr1'))\n"
                    "os.kill(os.getpid(), signal.SIGUSR1)\n"
                    "signal.raise_signal(signal.SIGUSR1)\n"
                    "signal.signal(signal.SIGUSR1, old)\n"
                    "print(got)")
    assert out == "['usr1', 'usr1']\n"
    assert_intact(box.k, box.token)


def test_reading_the_system_python_and_its_data(box):
    out = box.k.run("import sys, zoneinfo, json, ssl, locale\n"
                    "print(sys.executable, sys.prefix)\n"
                    "print(zoneinfo.ZoneInfo('Europe/London').key)\n"
                    "print(bool(ssl.create_default_context().get_ca_certs() is not None))\n"
                    "print(os.cpu_count() >= 1)")
    lines = out.splitlines()
    assert lines[0] == "/usr/bin/python3 /usr"
    assert lines[1:] == ["Europe/London", "True", "True"]
    assert_intact(box.k, box.token)


def test_output_of_a_normal_cell(box):
    reply, outputs = box.k.execute("print('hello')\n6 * 7")
    assert stdout_of(outputs) == "hello\n"
    results = [m["content"]["data"]["text/plain"] for m in outputs
               if m["msg_type"] == "execute_result"]
    assert results == ["42"]
    assert os.path.isdir(box.ws)
