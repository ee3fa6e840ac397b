"""What a notebook user trips over (issue 28, items 2, 3, 5, 6 and 7), tried
the way users run it: a kernel from an installed kernelspec through
jupyter_client, and nbconvert --execute of a notebook.

- %autoreload 2 watches a module imported in the very cell that turned it on.
- A file refused by the sandbox says how to grant it (--read, --workspace), and
  a new file at the top of a home folder says what is refused and what to do.
- !cmd, %pip, %conda, %%bash, %system print their refusal on stderr, naming
  what works instead, and the notebook runs on.
- Completion of an expression with calls (df.groupby("x").ag) offers what
  ipykernel's jedi offers, without running the calls.
"""

import os
import subprocess
import sys
import time

import pytest

from sandpit_testing import install_spec, start, stop


def bump(path, text):
    """Writes text to path with a modification time surely later than before."""
    before = os.stat(path)
    path.write_text(text)
    os.utime(path, (before.st_atime + 10, before.st_mtime + 10))


def layers(k):
    k.run("pass")
    return {x["name"]: x["state"]
            for x in k.request("kernel_info")["content"]["sandpit"]["layers"]}


def refusal(k, code):
    """The error a cell raises: (ename, evalue, the last line shown)."""
    reply, outputs = k.execute(code)
    c = reply["content"]
    assert c["status"] == "error", c
    shown = [m["content"] for m in outputs if m["msg_type"] == "error"][-1]["traceback"][-1]
    return c["ename"], c["evalue"], shown


# --- item 2: %autoreload ----------------------------------------------------------------


def test_autoreload_watches_a_module_imported_in_the_same_cell(fresh_kernel, tmp_path):
    k = fresh_kernel
    mymod = tmp_path / "mymod.py"
    mymod.write_text("def f():\n    return 'old'\n")
    assert k.run("%load_ext autoreload\n%autoreload 2\nimport mymod\n"
                 "print(mymod.f())") == "old\n"
    bump(mymod, "def f():\n    return 'new'\n")
    assert k.run("print(mymod.f())") == "new\n"
    # and once more, from a name taken from it
    assert k.run("from mymod import f") == ""
    bump(mymod, "def f():\n    return 'newer'\n")
    assert k.run("print(f(), mymod.f())") == "newer newer\n"


# --- item 3: a file beside the notebook's folder ------------------------------------------


def test_a_refused_read_says_how_to_grant_it(jupyter_dir, tmp_path):
    project = tmp_path / "project"
    (project / "notebooks").mkdir(parents=True)
    (project / "data").mkdir()
    (project / "data" / "sales.csv").write_text("region,total\nnorth,3\n")
    data = project / "data"
    k = start("sandpit", cwd=str(project / "notebooks"))
    try:
        if layers(k)["landlock"] != "active":
            pytest.skip("no Landlock on this machine: nothing keeps a cell from reading "
                        "beside its workspace")
        how = ("to read %s too, start the kernel with --read %s (for a kernelspec: sandpit "
               "install --read %s), or with --workspace of a folder that holds it and the "
               "notebook" % (data, data, data))
        for code in ("open('../data/sales.csv').read()",
                     "import pandas as pd\npd.read_csv('../data/sales.csv')"):
            ename, evalue, shown = refusal(k, code)
            assert ename == "PermissionError"
            assert how in evalue and how in shown, evalue
        assert evalue.startswith("[Errno 13] Permission denied (outside the folders this "
                                 "kernel may read: its workspace, %s" % (project / "notebooks"))
    finally:
        stop(k)
    # and the way it names works
    k = start(install_spec(jupyter_dir, "--read", str(data)), cwd=str(project / "notebooks"))
    try:
        assert k.run("print(open('../data/sales.csv').read().split()[1])") == "north,3\n"
    finally:
        stop(k)


# --- item 5: a new file at the top of a home folder ------------------------------------------


def test_a_new_file_at_the_top_of_a_home_folder_says_what_to_do(jupyter_dir, tmp_path):
    home = tmp_path / "home"
    (home / "notebooks").mkdir(parents=True)
    (home / "kept.csv").write_text("a\n")
    (home / ".bashrc").write_text("# the user's\n")
    env = dict(os.environ, HOME=str(home))
    k = start("sandpit", cwd=str(home), env=env)
    try:
        if layers(k)["mount-namespace"] != "active":
            pytest.skip("no mount namespace on this machine: the top of a home workspace "
                        "stays writable (the report names it)")
        ename, evalue, shown = refusal(k, "open('out.csv', 'w').write('x')")
        assert ename == "OSError"
        why = ("[Errno 30] Read-only file system (nothing new can be made at the very top "
               "of a home folder, %s, no file and no folder, and nothing there renamed or "
               "removed (what is there stays writable): the sandbox keeps its top level "
               "read-only so that no dot-file can appear; write into a folder that is "
               "already there, or give the kernel a folder of its own with --workspace "
               "DIR)" % home)
        assert evalue.startswith(why) and why in shown, evalue
        assert "dot-files and dot-folders" not in evalue
        # a folder there, as the message says, and the files already there, work
        assert k.run("open('notebooks/out.csv', 'w').write('x')\n"
                     "open('kept.csv', 'a').write('b\\n')") == ""
        assert (home / "notebooks" / "out.csv").read_text() == "x"
        ename, evalue, shown = refusal(k, "import os\nos.mkdir('work')")
        assert "nothing new can be made at the very top of a home folder" in evalue
        # a dot-file there is hidden, and says so
        for code in ("open('.bash_profile', 'w')", "open('.bashrc', 'a')"):
            ename, evalue, shown = refusal(k, code)
            assert "(the sandbox hides the dot-files and dot-folders at the top of a home " \
                "folder, and no new one can be made there" in evalue, (code, evalue)
        assert not (home / ".bash_profile").exists()
        assert (home / ".bashrc").read_text() == "# the user's\n"
    finally:
        stop(k)


# --- item 6: !pip install in a notebook run ---------------------------------------------------


def test_nbconvert_runs_a_notebook_through_its_pip_install(jupyter_dir, tmp_path):
    import nbformat
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "sandpit", "display_name": "sandpit",
                                 "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell("!pip install -q x"),
                nbformat.v4.new_code_cell("%pip install -q x\n%conda install y"),
                nbformat.v4.new_code_cell("%%bash\necho hi"),
                nbformat.v4.new_code_cell("print('the notebook ran on')")]
    nbformat.write(nb, tmp_path / "setup.ipynb")
    done = subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "notebook", "--execute",
         "--ExecutePreprocessor.kernel_name=sandpit", "--ExecutePreprocessor.timeout=60",
         "--output", "ran.ipynb", str(tmp_path / "setup.ipynb")],
        cwd=str(tmp_path), capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    ran = nbformat.read(tmp_path / "ran.ipynb", as_version=4)
    outs = [cell.outputs for cell in ran.cells]
    assert all(o.output_type == "stream" for cell in outs for o in cell), outs
    pip = "".join(o.text for o in outs[0] if o.name == "stderr")
    assert pip.startswith("package installation is disabled in this kernel: `!pip install "
                          "-q x` needs a shell and the network")
    assert "start the kernel with --venv DIR" in pip and "system's packages" in pip
    packages = "".join(o.text for o in outs[1] if o.name == "stderr")
    assert packages.startswith("package installation is disabled in this kernel: "
                               "`%pip install -q x` needs a shell and the network")
    assert "start the kernel with --venv DIR" in packages and "system's packages" in packages
    assert "`%conda install y`" in packages
    assert "a `%%bash` cell" in "".join(o.text for o in outs[2])
    assert [o.text for o in outs[3]] == ["the notebook ran on\n"]


# --- item 7: completion of chained calls -----------------------------------------------------


def complete(k, code):
    reply = k.request("complete", code, len(code), timeout=60)["content"]
    assert reply["status"] == "ok", reply
    return reply


def test_completion_of_a_chained_call_offers_what_jedi_infers(fresh_kernel):
    """jedi reads pandas' source the first time, which may take longer than one
    request waits: it goes on meanwhile, and a later Tab gets the answer."""
    k = fresh_kernel
    k.run("import pandas as pd\ndf = pd.DataFrame({'x': [1, 1, 2], 'y': [3, 4, 5]})")
    code = 'df.groupby("x").ag'
    deadline = time.monotonic() + 120
    for attempt in range(100):
        reply = complete(k, code)
        if reply["matches"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert reply["matches"] == ["agg", "aggregate"], reply
    assert (reply["cursor_start"], reply["cursor_end"]) == (len(code) - 2, len(code))
    # plain completions work as before, and the kernel is still itself
    assert {"agg", "aggregate"} <= set(complete(k, "df.ag")["matches"])
    assert "print" in complete(k, "pri")["matches"]
    assert k.run("print(df.groupby('x').agg('sum').y.tolist())") == "[7, 5]\n"


def test_completion_runs_no_call_and_no_property(fresh_kernel):
    k = fresh_kernel
    k.run("calls = []\n"
          "class P:\n"
          "    @property\n"
          "    def boom(self):\n"
          "        calls.append('property')\n"
          "        return self\n"
          "    def me(self):\n"
          "        calls.append('call')\n"
          "        return self\n"
          "p = P()\n")
    for code in ("p.boom.", "p.boom.me", "p.bo", "p.me().bo", "p.me().me().", "P().boom.",
                 "[p][0].boom.me", "p.boom.me().boom."):
        complete(k, code)
    time.sleep(1)  # a jedi still reading in its thread would have run them by now
    complete(k, "p.bo")
    assert k.run("print(calls)") == "[]\n"
    assert "boom" in complete(k, "p.bo")["matches"]


def test_a_completion_stopped_by_its_limit_leaves_no_thread_behind(kernel_with):
    """jedi runs in a thread of its own: when the request's limit stops a __dir__
    that loops, jedi's thread stops too, rather than spinning on."""
    k = kernel_with("--introspection-timeout", "1")
    k.run("class Spins:\n"
          "    def __dir__(self):\n"
          "        while True:\n"
          "            pass\n"
          "spins = Spins()\n")
    reply = k.request("complete", "spins.", 6, timeout=60)["content"]
    assert (reply["status"], reply["ename"]) == ("error", "TimeoutError"), reply
    code = "import threading\nprint([t.name for t in threading.enumerate()])"
    deadline = time.monotonic() + 30
    for attempt in range(60):
        names = k.run(code)
        if "sandpit-completion" not in names or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert "sandpit-completion" not in names
    assert k.run("print('the kernel answers')") == "the kernel answers\n"
