"""A FIFO where trusted code opens a file does not hang it (issue 27, finding
10): the worker's cover for hidden files is made under a fresh name in the
temporary folder, whatever the cell left there, and `sandpit mcp`'s
workspace_read refuses a FIFO at once and goes on answering."""

import json
import os
import stat
import subprocess

import pytest

from sandpit_testing import SANDPIT, start, stop

CRASHES = {
    "exit": "os._exit(1)",
    "segfault": "import ctypes\nctypes.string_at(0)",
}


@pytest.mark.parametrize("crash", sorted(CRASHES))
def test_a_fifo_at_the_cover_name_and_a_crash_leave_the_kernel_answering(
        jupyter_dir, tmp_path, crash):
    k = start("sandpit", cwd=str(tmp_path))
    try:
        tmp = k.run("import os\nprint(os.environ['TMPDIR'])").strip()
        assert tmp and os.path.isabs(tmp)
        code = ("import os\n"
                "d = os.environ['TMPDIR']\n"
                "os.mkfifo(d + '/.sandpit-hidden')\n"
                "os.symlink('/nonexistent/x', d + '/.sandpit-hidden.tmp')\n"
                + CRASHES[crash])
        reply, _ = k.execute(code, timeout=60)
        assert reply["content"]["ename"] == "WorkerDied", reply["content"]
        # The next worker starts (it covers the connection file on the way) and
        # answers; so does the one after it.
        assert k.run("print('alive')", timeout=60) == "alive\n"
        # What the cell planted is left as it was: never opened, never followed.
        assert stat.S_ISFIFO(os.lstat(tmp + "/.sandpit-hidden").st_mode)
        reply, _ = k.execute("import os\nos._exit(2)", timeout=60)
        assert reply["content"]["ename"] == "WorkerDied"
        assert k.run("print(6 * 7)", timeout=60) == "42\n"
    finally:
        stop(k)


def call(i, name, **arguments):
    return {"jsonrpc": "2.0", "id": i, "method": "tools/call",
            "params": {"name": name, "arguments": arguments}}


def text_of(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def test_workspace_read_of_a_fifo_is_refused_and_the_server_goes_on(jupyter_dir, tmp_path):
    (tmp_path / "notes.txt").write_text("some notes\n")
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        call(2, "python_exec", code="import os\nos.mkfifo('results.csv')\n"
                                    "os.symlink('notes.txt', 'link.txt')\nprint('made')"),
        call(3, "workspace_read", path="results.csv"),
        call(4, "workspace_read", path="notes.txt"),
        call(5, "workspace_list"),
        call(6, "workspace_read", path="link.txt"),
        call(7, "python_exec", code="print('after')"),
    ]
    text = "".join(json.dumps(x) + "\n" for x in lines)
    proc = subprocess.run([SANDPIT, "mcp", "--workspace", str(tmp_path)], input=text,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    by_id = {r.get("id"): r for r in map(json.loads, proc.stdout.splitlines())}
    assert text_of(by_id[2]["result"]) == "[stdout]\nmade\n"
    fifo = by_id[3]["result"]
    assert fifo["isError"] and "not a regular file" in text_of(fifo), fifo
    assert text_of(by_id[4]["result"]) == "some notes\n"
    assert "results.csv  (other)" in text_of(by_id[5]["result"]), by_id[5]
    assert by_id[6]["result"]["isError"] and "symbolic link" in text_of(by_id[6]["result"])
    assert text_of(by_id[7]["result"]) == "[stdout]\nafter\n"


def test_a_fifo_pth_in_a_venv_in_the_workspace_does_not_hang_the_next_worker(
        jupyter_dir, tmp_path):
    """The worker reads a --venv's .pth files before it confines itself; a venv in
    the workspace is the code's to write (unless it is made read-only), so a FIFO
    there must not hang every later worker."""
    import sysconfig
    import venv
    from sandpit_testing import install_spec
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=False).create(str(env_dir))
    site = env_dir / "lib" / ("python" + sysconfig.get_python_version()) / "site-packages"
    name = install_spec(jupyter_dir, "--venv", str(env_dir))
    k = start(name, cwd=str(tmp_path))
    try:
        reply, _ = k.execute(f"import os\ntry:\n    os.mkfifo({str(site / 'evil.pth')!r})\n"
                             "except OSError:\n    print('read-only')\nelse:\n"
                             "    os._exit(1)", timeout=60)
        if reply["content"]["status"] == "ok":
            pytest.skip("the venv is read-only to the code here: no FIFO to plant")
        assert reply["content"]["ename"] == "WorkerDied", reply["content"]
        assert k.run("print('alive')", timeout=60) == "alive\n"
    finally:
        stop(k)
