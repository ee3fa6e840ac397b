"""What code and habits from IPython and ipykernel find in sandpit, through
jupyter_client (and nbclient where a notebook runs): the end of the client's
input, the debugger over stdin (%debug, %pdb, pdb.set_trace()), %xmode and
the colours of tracebacks, %reset, %precision, %prun, %save and %store,
get_ipython().kernel (session.send on iopub_socket, get_parent) and the
shell's object_inspect, sys.excepthook and showtraceback overrides, and rich
(%load_ext rich, rich.traceback.install()).

The expected behaviour is ipykernel 6.17's with IPython 8 (Debian 12's),
except where a comment says why sandpit differs. One kernel serves most of the
module; what changes a kernel for good (rich) has one of its own.
"""

import os
import queue
import re
import time

import pytest

from sandpit_testing import TIMEOUT, start, stdout_of, stop

ANSI = re.compile(r"\x1b\[[0-9;]*m")
EOF = "\x04"  # what jupyter_client answers when its own input has ended


def plain(text):
    return ANSI.sub("", text)


@pytest.fixture(scope="module")
def k(kernel):
    kernel.run("def f(x):\n    y = [x] * 3\n    return 1 / x\n")
    return kernel


def with_input(k, code, answers=()):
    """Runs code with stdin allowed and answers its input requests in turn,
    then with EOF, as jupyter_client does once its own input has ended.
    Returns (reply content, iopub outputs, prompts asked)."""
    answers = list(answers)
    msg_id = k.kc.execute(code, allow_stdin=True)
    prompts, reply = [], None
    deadline = time.monotonic() + TIMEOUT
    while reply is None:
        assert time.monotonic() < deadline, "no reply; prompts so far: %r" % prompts
        try:
            msg = k.kc.get_stdin_msg(timeout=0.05)
        except queue.Empty:
            pass
        else:
            assert msg["parent_header"]["msg_id"] == msg_id
            prompts.append(msg["content"]["prompt"])
            assert len(prompts) <= 20, "the cell keeps asking: %r" % prompts
            k.kc.input(answers.pop(0) if answers else EOF)
        try:
            reply = k.shell_reply(msg_id, timeout=0.05)
        except queue.Empty:
            pass
    return reply["content"], k.iopub_until_idle(msg_id), prompts


def errors_of(outputs):
    return [m["content"] for m in outputs if m["msg_type"] == "error"]


# --- the end of the client's input, and the debugger ---------------------------------------


def test_input_raises_eoferror_at_the_end_of_the_clients_input(k):
    content, outputs, prompts = with_input(
        k, "try:\n    input('name? ')\nexcept EOFError as e:\n    print('EOFError:', e)")
    assert content["status"] == "ok" and prompts == ["name? "]
    assert stdout_of(outputs) == "EOFError: EOF when reading a line\n"
    content, outputs, prompts = with_input(k, "import getpass\ngetpass.getpass('pw: ')")
    assert content["ename"] == "EOFError" and prompts == ["pw: "]


def test_pdb_set_trace_ends_at_the_end_of_input(k):
    """Not thousands of (Pdb) prompts: pdb reads EOF, quits, and the cell ends
    (silently, as under IPython: the user quit the debugger)."""
    content, outputs, prompts = with_input(
        k, "import pdb\npdb.set_trace()\nafter_the_trace = 1")
    assert prompts == ["(Pdb) "]
    assert content["status"] == "error" and content["ename"] == "BdbQuit"
    assert errors_of(outputs) == []
    content, outputs, prompts = with_input(
        k, "import pdb\nbp_seen = 41\npdb.set_trace()\nbp_seen += 1", ["p bp_seen", "c"])
    assert content["status"] == "ok" and prompts == ["(Pdb) "] * 2
    assert "41\n" in stdout_of(outputs)
    assert k.value("bp_seen") == "42"


def test_pdb_set_trace_shows_no_frame_of_the_runtime(k):
    """`where` lists the cell's frames only, `up` stops at the cell, and a
    `step` off the end of the cell ends the debugging, as at the end of a
    script: sandpit's own frames are never shown or stepped into."""
    code = "import pdb\ndef g():\n    pdb.set_trace()\n    return 5\nwhere_seen = g()"
    content, outputs, prompts = with_input(
        k, code, ["where", "up", "up", "up", "step", "step", "step", "step", "step"])
    out = stdout_of(outputs)
    assert content["status"] == "ok", (content, out, prompts)
    assert "<sandpit>" not in out and "sandpit/" not in out, out
    assert "Oldest frame" in out, out
    assert "-> where_seen = g()" in out
    assert prompts.count("(Pdb) ") <= 8, prompts
    assert k.value("where_seen") == "5"
    # breakpoint() goes the same way
    content, outputs, _ = with_input(k, "breakpoint()\nbp2 = 1", ["where", "c"])
    assert content["status"] == "ok" and "<sandpit>" not in stdout_of(outputs)


def test_debug_is_a_post_mortem_over_stdin(k):
    content, _, _ = with_input(k, "f(0)")
    assert content["ename"] == "ZeroDivisionError"
    content, outputs, prompts = with_input(k, "%debug", ["p x", "p y", "up", "q"])
    assert content["status"] == "ok" and prompts == ["(Pdb) "] * 4
    out = stdout_of(outputs)
    assert "-> return 1 / x" in out and "0\n[0, 0, 0]\n" in out and "-> f(0)" in out
    # a statement, run in the debugger from its start
    content, outputs, prompts = with_input(k, "%debug debugged = f(2)", ["c"])
    assert content["status"] == "ok" and prompts == ["(Pdb) "]
    assert k.value("debugged") == "0.5"
    # without stdin, it says why it cannot
    reply, outputs = k.execute("%debug", allow_stdin=False)
    assert "the debugger needs a client that takes input" in stdout_of(outputs, "stderr")


def test_pdb_magic_starts_the_debugger_on_each_error(k):
    assert k.run("%pdb on") == "Automatic pdb calling has been turned ON\n"
    try:
        content, outputs, prompts = with_input(k, "f(0)", ["p x"])
        assert content["ename"] == "ZeroDivisionError"
        assert prompts == ["(Pdb) "] * 2  # "p x", then EOF quits
        assert len(errors_of(outputs)) == 1 and "0\n" in stdout_of(outputs)
    finally:
        assert k.run("%pdb off") == "Automatic pdb calling has been turned OFF\n"
    content, _, prompts = with_input(k, "f(0)")
    assert content["ename"] == "ZeroDivisionError" and prompts == []


# --- tracebacks ----------------------------------------------------------------------------


def traceback_of(k, code="f(0)"):
    reply, outputs = k.execute(code)
    (error,) = errors_of(outputs)
    assert error["traceback"] == reply["content"]["traceback"]
    return error["traceback"]


def test_xmode_changes_the_layout(k):
    try:
        assert k.run("%xmode Plain") == "Exception reporting mode: Plain\n"
        text = plain("\n".join(traceback_of(k)))
        assert text.startswith("Traceback (most recent call last):\n")
        assert re.search(r"  Cell In\[\d+\], line 1\n    f\(0\)\n", text)
        assert re.search(r"  Cell In\[\d+\], line 3, in f\n    return 1 / x\n", text)
        assert text.endswith("\nZeroDivisionError: division by zero")
        assert "---->" not in text
        assert k.run("%xmode minimal") == "Exception reporting mode: Minimal\n"
        assert [plain(t) for t in traceback_of(k)] == ["ZeroDivisionError: division by zero"]
        assert k.run("%xmode Verbose") == "Exception reporting mode: Verbose\n"
        text = plain("\n".join(traceback_of(k)))
        assert "----> 3     return 1 / x\n        x = 0\n" in text
        assert k.run("%xmode") == "Exception reporting mode: Minimal\n"  # the next one
        reply, outputs = k.execute("%xmode Fancy")
        assert reply["content"]["ename"] == "UsageError"
        assert "Valid modes: Plain, Context, Verbose, Minimal" in stdout_of(outputs, "stderr")
    finally:
        assert k.run("%xmode Context") == "Exception reporting mode: Context\n"
    text = plain("\n".join(traceback_of(k)))
    assert "----> 3     return 1 / x\n" in text and "x = 0" not in text


def test_traceback_code_is_coloured_with_pygments(k):
    try:
        import pygments  # noqa: F401  (the kernel's Python is this one)
    except ImportError:
        pytest.skip("Pygments is not installed, so code lines stay plain")
    frame = [t for t in traceback_of(k) if "in f" in plain(t)][0]
    line = [ln for ln in frame.splitlines() if "def" in plain(ln)][0]
    # "def" as Pygments' terminal formatter colours a keyword
    assert re.search(r"\x1b\[38;5;\d+(;01)?mdef\x1b\[39(;00)?m", line), repr(line)


def test_excepthook_and_showtraceback_overrides_are_honoured(k):
    k.run("import sys\n"
          "def hook(etype, value, tb):\n"
          "    print('hooked', etype.__name__, value, tb.tb_frame.f_code.co_name,\n"
          "          file=sys.stderr)\n"
          "sys.excepthook = hook")
    try:
        reply, outputs = k.execute("f(0)")
        assert reply["content"]["ename"] == "ZeroDivisionError"
        assert errors_of(outputs) == []
        assert stdout_of(outputs, "stderr") == "hooked ZeroDivisionError division by zero " \
                                               "<module>\n"
    finally:
        k.run("sys.excepthook = sys.__excepthook__")
    k.run("ip = get_ipython()\n"
          "ip._showtraceback = lambda etype, value, stb: print('mine', etype.__name__,\n"
          "                                                     len(stb) > 1)")
    try:
        reply, outputs = k.execute("f(0)")
        assert errors_of(outputs) == [] and stdout_of(outputs) == "mine ZeroDivisionError True\n"
    finally:
        k.run("del ip._showtraceback")
    assert len(errors_of(k.execute("f(0)")[1])) == 1


def test_rich_takes_effect(fresh_kernel):
    """rich.traceback.install() and %load_ext rich, as under ipykernel: errors
    through rich's traceback (a display), results through rich's pretty printer
    (a display, and no execute_result)."""
    k = fresh_kernel
    k.run("from rich.traceback import install\ninstall()\ndef g():\n    return 1 / 0")
    reply, outputs = k.execute("g()")
    assert reply["content"]["ename"] == "ZeroDivisionError"
    assert errors_of(outputs) == []
    (shown,) = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
    text = plain(shown["text/plain"])
    assert "Traceback (most recent call last)" in text and "in g" in text
    assert "ZeroDivisionError: division by zero" in text and "<pre" in shown["text/html"]
    k.run("%load_ext rich")
    reply, outputs = k.execute("{'a': [1, 2.5]}")
    assert [m["msg_type"] for m in outputs] == ["display_data"]
    data = outputs[0]["content"]["data"]
    assert plain(data["text/plain"]) == "{'a': [1, 2.5]}\n" and data["text/plain"] != \
        plain(data["text/plain"])


# --- the namespace -------------------------------------------------------------------------


def test_reset(k):
    k.run("reset_me = 1\nreset_keep = 2\nreset_n = 3\n%reset_selective -f ^reset_(me|n)$")
    assert k.value("[n for n in ('reset_me', 'reset_keep', 'reset_n') if n in globals()]") == \
        "['reset_keep']"
    reply, _ = k.execute("42")
    count = reply["content"]["execution_count"]
    assert k.run("%reset -f") == ""
    assert k.value("'reset_keep' in globals() or 'f' in globals()") == "False"
    assert k.value("Out") == "{}"
    assert k.value("len(In) > %d and In[%d]" % (count, count)) == "'42'"
    assert k.value("callable(get_ipython) and callable(exit)") == "True"
    assert k.run("%who") == "Interactive namespace is empty.\n"
    k.run("def f(x):\n    y = [x] * 3\n    return 1 / x\n")  # for the tests after this one


def test_precision(k):
    k.run("import numpy")  # imported before: its print precision follows
    try:
        assert k.value("get_ipython().run_line_magic('precision', '3')") == "'%.3f'"
        reply, outputs = k.execute("1.23456789")
        assert outputs[-1]["content"]["data"]["text/plain"] == "1.235"
        reply, outputs = k.execute("numpy.array([1.23456789])")
        assert outputs[-1]["content"]["data"]["text/plain"] == "array([1.235])"
        reply, outputs = k.execute("%precision %.2e\n12345.678")
        assert outputs[-1]["content"]["data"]["text/plain"] == "1.23e+04"
    finally:
        reply, outputs = k.execute("%precision")
    assert outputs[-1]["content"]["data"]["text/plain"] == "'%r'"
    reply, outputs = k.execute("1.23456789")
    assert outputs[-1]["content"]["data"]["text/plain"] == "1.23456789"


def test_prun(k, tmp_path):
    out = k.run("%prun -s cumulative -l 4 sum(range(1000))")
    assert re.match(r" +\d+ function calls in [\d.]+ seconds\n", out), out
    assert "Ordered by: cumulative time" in out and "{built-in method builtins.sum}" in out
    assert "execution.py" not in out  # the table is the user's code, not the runtime's
    out = k.run("%%prun -q -T prun.txt\ntotal = sum(range(10))")
    assert out.startswith("\n*** Profile printout saved to text file 'prun.txt'.")
    assert k.value("total") == "45"
    assert k.value("'function calls' in open('prun.txt').read()") == "True"
    assert k.value("type(get_ipython().run_line_magic('prun', '-q -r len([])')).__name__") \
        == "'Stats'"
    # top-level await is profiled on the shell's loop, as the cell would run it
    out = k.run("%%prun -s cumulative\nimport asyncio\nawait asyncio.sleep(0)\nslept = 1")
    assert "tasks.py" in out and "(sleep)" in out, out
    assert "execution.py" not in out, out
    assert k.value("slept") == "1"


def test_save_writes_cells_to_the_workspace(k):
    counts = []
    for code in ("save_a = 1", "%time save_b = 2"):
        reply, _ = k.execute(code)
        counts.append(reply["content"]["execution_count"])
    out = k.run("%%save -f saved %d-%d" % tuple(counts))
    code = "save_a = 1\nget_ipython().run_line_magic('time', 'save_b = 2')\n"
    assert out == "The following commands were written to file `saved.py`:\n" + code
    workspace = k.value("get_ipython().workspace")[1:-1]
    with open(os.path.join(workspace, "saved.py"), encoding="utf-8") as fh:
        assert fh.read() == "# coding: utf-8\n" + code
    out = k.run("%%save -r -a saved.py %d" % counts[1])
    with open(os.path.join(workspace, "saved.py"), encoding="utf-8") as fh:
        assert fh.read() == "# coding: utf-8\n" + code + "%time save_b = 2\n"
    # an existing file is not overwritten unasked
    content, outputs, prompts = with_input(k, "%%save saved.py %d" % counts[0], ["n"])
    assert prompts == ["File `saved.py` exists. Overwrite (y/[N])? "]
    assert stdout_of(outputs) == "Operation cancelled.\n"
    reply, outputs = k.execute("%%save saved.py %d" % counts[0], allow_stdin=False)
    assert stdout_of(outputs).startswith("File `saved.py` exists. Use `%save -f saved.py")
    with open(os.path.join(workspace, "saved.py"), encoding="utf-8") as fh:
        assert fh.read().endswith("%time save_b = 2\n")
    reply, outputs = k.execute("%save nowhere.py 100000")
    assert reply["content"]["ename"] == "UsageError"


def test_store_keeps_variables_for_later_sessions(k):
    assert k.run("stored_list = [1, 2]\nstored_text = 'x'\n%store stored_list stored_text") \
        == "Stored 'stored_list' (list)\nStored 'stored_text' (str)\n"
    workspace = k.value("get_ipython().workspace")[1:-1]
    assert sorted(os.listdir(os.path.join(workspace, ".sandpit", "store"))) == \
        ["stored_list", "stored_text"]
    assert k.run("%store") == ("Stored variables and their in-db values:\n"
                               "stored_list -> [1, 2]\nstored_text -> 'x'\n")
    # a class of the notebook cannot be read back by another session
    out = k.run("class Local:\n    pass\nlocal = Local()\n%store local")
    assert out.startswith("Warning: local is defined in the notebook")
    later = start("sandpit", cwd=workspace)  # another kernel, on the same workspace
    try:
        assert later.run("%store -r\nprint(stored_list, stored_text)") == "[1, 2] x\n"
        later.run("%store -d stored_text")
        assert later.run("%store") == "Stored variables and their in-db values:\n" \
                                      "stored_list -> [1, 2]\n"
    finally:
        stop(later)
    k.run("%store -z")
    assert k.run("%store") == "Stored variables and their in-db values:\n"


# --- get_ipython().kernel and the shell ----------------------------------------------------


def test_kernel_session_publishes_on_iopub(k):
    reply, outputs = k.execute(
        "ip = get_ipython()\n"
        "session, iopub = ip.kernel.session, ip.kernel.iopub_socket\n"
        "content = {'data': {'text/plain': 'sent'}, 'metadata': {},\n"
        "           'transient': {'display_id': 'mine'}}\n"
        "session.send(iopub, 'display_data', content, parent=ip.parent_header)\n"
        "content['data'] = {'text/plain': 'updated'}\n"
        "session.send(iopub, 'update_display_data', content, ip.kernel.get_parent())\n"
        "session.send(iopub, 'stream', {'name': 'stdout', 'text': 'streamed\\n'});")
    msg_id = reply["parent_header"]["msg_id"]
    assert [(m["msg_type"], m["parent_header"]["msg_id"], m["content"]) for m in outputs] == [
        ("display_data", msg_id, {"data": {"text/plain": "sent"}, "metadata": {},
                                  "transient": {"display_id": "mine"}}),
        ("update_display_data", msg_id, {"data": {"text/plain": "updated"}, "metadata": {},
                                         "transient": {"display_id": "mine"}}),
        ("stream", msg_id, {"name": "stdout", "text": "streamed\n"})]
    assert k.value("ip.kernel.get_parent()['header']['msg_type']") == "'execute_request'"
    assert k.value("ip.kernel.shell is ip") == "True"
    reply, outputs = k.execute("session.send(iopub, 'status', {'execution_state': 'idle'})")
    assert reply["content"]["ename"] == "ValueError"
    assert "not 'status'" in reply["content"]["evalue"]


def test_object_inspect(k):
    info = k.run("print(sorted((k, v) for k, v in get_ipython().object_inspect('f').items()\n"
                 "             if k in ('found', 'name', 'type_name', 'definition')))")
    assert info == "[('definition', 'f(x)'), ('found', True), ('name', 'f'), " \
                   "('type_name', 'function')]\n"
    assert k.value("get_ipython().object_inspect('no_such_name')['found']") == "False"
    text = k.value("get_ipython().object_inspect_mime('len')['text/plain']")
    assert "Return the number of items in a container." in text
    reply, _ = k.execute("get_ipython().object_inspect_mime('no_such_name')")
    assert reply["content"]["ename"] == "KeyError"


# nbclient's test notebook update-display-id.ipynb (nbclient/tests/files): a
# display published through kernel.session with a display_id, updated by later
# ones; and what nbclient must make of it.
UPDATE_DISPLAY_ID = [
    "ip = get_ipython()\n"
    "from IPython.display import display\n"
    "def display_with_id(obj, display_id, update=False, execute_result=False):\n"
    "    iopub = ip.kernel.iopub_socket\n"
    "    session = get_ipython().kernel.session\n"
    "    data, md = ip.display_formatter.format(obj)\n"
    "    transient = {'display_id': str(display_id)}\n"
    "    content = {'data': data, 'metadata': md, 'transient': transient}\n"
    "    if execute_result:\n"
    "      msg_type = 'execute_result'\n"
    "      content['execution_count'] = ip.execution_count\n"
    "    else:\n"
    "      msg_type = 'update_display_data' if update else 'display_data'\n"
    "    session.send(iopub, msg_type, content, parent=ip.parent_header)\n",
    "display('above')\ndisplay_with_id(1, 'here')\ndisplay('below')",
    "display_with_id(2, 'here')\ndisplay_with_id(3, 'there')\ndisplay_with_id(4, 'here')",
    "display_with_id(5, 'there')\ndisplay_with_id(6, 'there', update=True)",
    "display_with_id(7, 'here')\ndisplay_with_id(8, 'here', update=True)\n"
    "display_with_id(9, 'result', execute_result=True)",
    "display_with_id(10, 'result', update=True)",
]
UPDATE_DISPLAY_ID_OUTPUTS = [
    [],
    [("display_data", "'above'"), ("display_data", "8"), ("display_data", "'below'")],
    [("display_data", "8"), ("display_data", "6"), ("display_data", "8")],
    [("display_data", "6")],
    [("display_data", "8"), ("execute_result", "10")],
    [],
]


def test_nbclients_update_display_id_notebook(jupyter_dir, tmp_path):
    import nbformat
    from nbclient import NotebookClient
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c)
                                         for c in UPDATE_DISPLAY_ID])
    NotebookClient(nb, kernel_name="sandpit", timeout=TIMEOUT,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    got = [[(o["output_type"], o["data"]["text/plain"]) for o in cell.outputs]
           for cell in nb.cells]
    assert got == UPDATE_DISPLAY_ID_OUTPUTS
