"""Interactive features through jupyter_client, checked against ipykernel's
behaviour: complete_request, inspect_request, help pages (obj?, obj??,
help(obj)), IPython's magics and get_ipython(), refused shell escapes, and
the _ / _N / Out / In history names.

One kernel serves the module (state is shared: each test uses names of its
own); the expected values are what ipykernel 6.17 with IPython 8 answers,
except where a comment says why sandpit differs.
"""

import re

import pytest

from sandpit_testing import stdout_of

ANSI = re.compile(r"\x1b\[[0-9;]*m")

SETUP = """\
import os, collections
import numpy as np
def f(aaa, bbb=2, *, ccc=3):
    'doc of f'
    return 1
class C:
    'class doc'
    x = 1
    def meth(self):
        pass
c = C()
d = {'alpha': 1, 'beta': 2, 3: 4}
os.makedirs('sub', exist_ok=True)
with open('sub/data.csv', 'w') as fh:
    fh.write('a,b\\n')
"""


@pytest.fixture(scope="module")
def k(kernel):
    reply, outputs = kernel.execute(SETUP)
    assert reply["content"]["status"] == "ok", outputs
    return kernel


def plain(text):
    return ANSI.sub("", text)


def error_of(outputs):
    errors = [m["content"] for m in outputs if m["msg_type"] == "error"]
    assert len(errors) == 1, outputs
    return errors[0]


def result(k, code):
    """The text/plain of the execute_result of a cell that must succeed."""
    reply, outputs = k.execute(code)
    assert reply["content"]["status"] == "ok", outputs
    return result_of(outputs)


def result_of(outputs):
    results = [m["content"]["data"]["text/plain"] for m in outputs
               if m["msg_type"] == "execute_result"]
    assert len(results) == 1, outputs
    return results[0]


# --- complete_request ----------------------------------------------------------------------

# (code, cursor (None: the end), the text the matches replace, expected, exact?)
# jedi: the case holds only with jedi (the fallback completer has no answer).
COMPLETIONS = [
    ("pri", None, "pri", ["print"], False),
    ("x = pri\ny = 2", 7, "pri", ["print"], False),
    ("for i in ran", None, "ran", ["range"], False),
    ("get_ipy", None, "get_ipy", ["get_ipython"], True),
    ("os.path.jo", None, "jo", ["join"], True),
    ("  os.path.jo", None, "jo", ["join"], True),
    ("os.path.jo(x)", 10, "jo", ["join"], True),
    ("if True:\n    os.path.isd", None, "isd", ["isdir"], True),
    ("result = f(1) + os.getc", None, "getc", ["getcwd", "getcwdb"], True),
    ("np.lin", None, "lin", ["linalg", "linspace"], True),
    ("c.", None, "", ["meth", "x"], True),
    ("c.me", None, "me", ["meth"], True),
    ("C.x.bit_l", None, "bit_l", ["bit_length"], True),
    ("f(aa", None, "aa", ["aaa="], True),
    ("f(1, cc", None, "cc", ["ccc="], True),
    ("f(1,\n  cc", None, "cc", ["ccc="], True),
    ("np.linspace(sta", None, "sta", ["start="], False),
    ("d['", None, "", ["alpha", "beta"], True),
    ('d["a', None, "a", ["alpha"], True),
    ("print(len(d), d['b", None, "b", ["beta"], True),
    ("d[", None, "", ["'alpha'", "'beta'", "3"], False),
    ("import o", None, "o", ["os", "operator"], False),
    ("from os import pat", None, "pat", ["path", "pathsep"], False),
    ("from collections import Ord", None, "Ord", ["OrderedDict"], True),
    ("open('su", None, "su", ["sub/"], True),
    ("open('sub/", None, "sub/", ["sub/data.csv"], True),
    ('x = open("sub/da")', 16, "sub/da", ["sub/data.csv"], True),
    ("%ti", None, "%ti", ["%time", "%%time", "%timeit", "%%timeit"], True),
    ("x = 1\n%ti", None, "%ti", ["%time", "%timeit"], True),
    ("%%wr", None, "%%wr", ["%%writefile"], True),
    ("%lsm", None, "%lsm", ["%lsmagic"], True),
    ("%time os.path.jo", None, "jo", ["join"], True),
    ("%%time\nos.path.jo", None, "jo", ["join"], True),
    ("%cd su", None, "su", ["sub/"], True),
    ("%matplotlib in", None, "in", ["inline"], True),
    ("zzzqqq", None, "", [], True),
    ("x = 1  # os.pa", None, "", [], True),
    ("%%html\n<b", None, "", [], True),
]
# A module's dotted name is completed whole, as IPython does.
MODULES = [
    ("import json.deco", None, "json.deco", ["json.decoder"], True),
    ("from json.deco", None, "json.deco", ["json.decoder"], True),
    ("import os.pa", None, "os.pa", ["os.path"], True),
    ("import sys, json.enc", None, "json.enc", ["json.encoder"], True),
    ("from json import deco", None, "deco", ["decoder"], True),
]


def check_completion(k, code, cursor, replaced, expected, exact):
    cursor = len(code) if cursor is None else cursor
    reply = k.request("complete", code, cursor)["content"]
    assert reply["status"] == "ok"
    if exact:
        assert reply["matches"] == expected, (code, reply["matches"])
    else:
        assert set(expected) <= set(reply["matches"]), (code, reply["matches"])
    start = cursor - len(replaced) if expected else cursor
    assert (reply["cursor_start"], reply["cursor_end"]) == (start, cursor), code
    types = reply["metadata"]["_jupyter_types_experimental"]
    assert [t["text"] for t in types] == reply["matches"]
    for t in types:
        assert (t["start"], t["end"]) == (start, cursor)
        assert isinstance(t["type"], str) and isinstance(t["signature"], str)


@pytest.mark.parametrize("code, cursor, replaced, expected, exact", COMPLETIONS + MODULES)
def test_completion_with_jedi(k, code, cursor, replaced, expected, exact):
    check_completion(k, code, cursor, replaced, expected, exact)


@pytest.fixture
def without_jedi(k):
    k.run("%config Completer.use_jedi = False")
    yield k
    k.run("%config Completer.use_jedi = True")


def test_completion_without_jedi(without_jedi):
    for case in COMPLETIONS + MODULES:
        check_completion(without_jedi, *case)


def test_completion_types_and_signatures(k):
    reply = k.request("complete", "np.lin")["content"]
    types = {t["text"]: t for t in reply["metadata"]["_jupyter_types_experimental"]}
    assert types["linalg"]["type"] == "module" and types["linalg"]["signature"] == ""
    assert types["linspace"]["type"] == "function"
    assert types["linspace"]["signature"].startswith("(start, stop, num=50")


def test_jedi_is_imported_by_the_first_completion_only(fresh_kernel):
    code = "'jedi' in __import__('sys').modules"
    fresh_kernel.run("%matplotlib inline\n%time x = 1\nhelp(len)\nlen?")
    assert fresh_kernel.value(code) == "False"
    assert fresh_kernel.request("complete", "pri")["content"]["matches"]
    assert fresh_kernel.value(code) == "True"


# --- inspect_request ---------------------------------------------------------------------------

# (code, cursor, detail level, expected substrings of text/plain; [] for not found)
INSPECTIONS = [
    ("f", 1, 0, ["Signature: f(aaa, bbb=2, *, ccc=3)\nDocstring: doc of f\n",
                 "File:      Cell In[1]\n", "Type:      function\n"]),
    ("f", 1, 1, ["Signature: f(aaa, bbb=2, *, ccc=3)\nSource:   \ndef f(aaa, bbb=2, *, "
                 "ccc=3):\n    'doc of f'\n    return 1\n"]),
    ("f(1, 2", 6, 0, ["Signature: f(aaa, bbb=2, *, ccc=3)"]),
    ("x = f + 1", 5, 0, ["Signature: f(aaa, bbb=2, *, ccc=3)"]),
    ("x = 1\ny = os.path.join(a, b)\n", 22, 0, ["Signature: os.path.join(a, *p)"]),
    ("C", 1, 0, ["Init signature: C()\nDocstring:      class doc\n", "Type:           type\n",
                 "Subclasses:     \n"]),
    ("c", 1, 0, ["Type:        C\nString form: <__main__.C object at 0x",
                 "Docstring:   class doc\n"]),
    ("c.meth", 6, 0, ["Signature: c.meth()\nDocstring: <no docstring>\n",
                      "Type:      method\n"]),
    ("d", 1, 0, ["Type:        dict\nString form: {'alpha': 1, 'beta': 2, 3: 4}\n"
                 "Length:      3\nDocstring:  \ndict() -> new empty dictionary"]),
    ("len", 3, 1, ["Signature: len(obj, /)\nDocstring: Return the number of items in a "
                   "container.\nType:      builtin_function_or_method\n"]),
    ("print", 2, 0, ["Docstring:\nPrints the values to a stream"]),
    ("np.linspace", 11, 1, ["Signature:", "Source:", "def linspace("]),
    ("%time", 5, 0, ["Docstring:\nTime the execution of a Python statement"]),
    ("zzzz", 4, 0, []),
    ("1", 1, 0, []),
    ("", 0, 0, []),
]


@pytest.mark.parametrize("code, cursor, level, expected", INSPECTIONS)
def test_inspect(k, code, cursor, level, expected):
    reply = k.request("inspect", code, cursor, level)["content"]
    assert reply["status"] == "ok" and reply["metadata"] == {}
    if not expected:
        assert reply["found"] is False and reply["data"] == {}
        return
    assert reply["found"] is True and list(reply["data"]) == ["text/plain"]
    text = reply["data"]["text/plain"]
    assert "\x1b[0;31mType:" in text or "\x1b[0;31mDocstring:" in text  # IPython's colours
    for part in expected:
        assert part in plain(text), (part, plain(text))


# --- help pages --------------------------------------------------------------------------------


def page_of(reply):
    payload = reply["content"]["payload"]
    assert len(payload) == 1, payload
    assert set(payload[0]) == {"source", "data", "start"}
    assert payload[0]["source"] == "page" and payload[0]["start"] == 0
    assert list(payload[0]["data"]) == ["text/plain"]
    return payload[0]["data"]["text/plain"]


@pytest.mark.parametrize("code, level", [("f?", 0), ("?f", 0), ("f??", 1), ("??f", 1),
                                         ("x = 1\nf?", 0)])
def test_help_page_is_the_inspect_text(k, code, level):
    reply, outputs = k.execute(code)
    assert reply["content"]["status"] == "ok" and outputs == []
    inspected = k.request("inspect", "f", 1, level)["content"]["data"]["text/plain"]
    assert page_of(reply) == inspected


def test_help_function_prints(k):
    """help(obj) prints, as under ipykernel, so that a saved notebook, nbconvert
    and agents have it (obj? is the pager's)."""
    reply, outputs = k.execute("help(f)")
    assert reply["content"]["status"] == "ok" and reply["content"]["payload"] == []
    assert stdout_of(outputs) == ("Help on function f in module __main__:\n\n"
                                  "f(aaa, bbb=2, *, ccc=3)\n    doc of f\n\n")
    assert k.run("help('for')").startswith('The "for" statement\n')


def test_help_on_magics_and_unknown_names(k):
    reply, _ = k.execute("%timeit?")
    assert "Time a statement over many runs" in plain(page_of(reply))
    reply, outputs = k.execute("nosuchname?")
    assert reply["content"]["status"] == "ok" and reply["content"]["payload"] == []
    assert stdout_of(outputs) == "Object `nosuchname` not found.\n"


# --- magics ------------------------------------------------------------------------------------

TIME_OUTPUT = re.compile(r"CPU times: user \S+ [µnm]?s, sys: \S+ [µnm]?s, total: \S+ [µnm]?s\n"
                         r"Wall time: \S+ [µnm]?s\n")
TIMEIT_OUTPUT = r"\S+ [µnm]?s ± \S+ [µnm]?s per loop \(mean ± std\. dev\. of %s, %s each\)\n"


def test_matplotlib_magic(k):
    reply, outputs = k.execute("%matplotlib inline")
    assert reply["content"]["status"] == "ok" and outputs == []
    reply, outputs = k.execute("%matplotlib notebook")
    assert reply["content"]["status"] == "ok"
    assert "inline" in stdout_of(outputs, "stderr")
    reply, outputs = k.execute("get_ipython().run_line_magic('matplotlib', 'inline')")
    assert reply["content"]["status"] == "ok" and outputs == []


def test_time(k):
    reply, outputs = k.execute("%time sum(range(10))")
    assert TIME_OUTPUT.fullmatch(stdout_of(outputs))
    assert result_of(outputs) == "45"
    reply, outputs = k.execute("%time t_assigned = 5")
    assert TIME_OUTPUT.fullmatch(stdout_of(outputs))
    assert not [m for m in outputs if m["msg_type"] == "execute_result"]
    assert k.value("t_assigned") == "5"
    reply, outputs = k.execute("%%time\nt_y = 2\nt_y * 3")
    assert TIME_OUTPUT.fullmatch(stdout_of(outputs))
    assert result_of(outputs) == "6"
    reply, outputs = k.execute("%%time x = 1\ny = 1")
    assert reply["content"]["ename"] == "UsageError"
    assert stdout_of(outputs, "stderr") == \
        "UsageError: Can't use statement directly after '%%time'!\n"


def test_timeit(k):
    reply, outputs = k.execute("%timeit -n 10 -r 2 sum(range(10))")
    assert re.fullmatch(TIMEIT_OUTPUT % ("2 runs", "10 loops"), stdout_of(outputs))
    reply, outputs = k.execute("%%timeit -n 5 -r 1\nti_z = 1\n")
    assert re.fullmatch(TIMEIT_OUTPUT % ("1 run", "5 loops"), stdout_of(outputs))
    reply, outputs = k.execute("%timeit -o -q -n 1 -r 1 1 + 1")
    assert stdout_of(outputs) == ""
    assert result_of(outputs).startswith("<TimeitResult : ")


def test_who_and_whos(k):
    k.run("class WhoMarker:\n    def __str__(self):\n        return 'wm'\n"
          "who_a = WhoMarker(); who_b = WhoMarker()")
    assert k.run("%who WhoMarker") == "who_a\t who_b\t \n"
    assert k.run("%whos WhoMarker") == ("Variable   Type         Data/Info\n"
                                        "---------------------------------\n"
                                        "who_a      WhoMarker    wm\n"
                                        "who_b      WhoMarker    wm\n")
    assert result(k, "%who_ls WhoMarker") == "['who_a', 'who_b']"
    assert "In" not in result(k, "%who_ls") and "get_ipython" not in result(k, "%who_ls")


def test_pwd_and_cd(k):
    home = result(k, "%pwd")[1:-1]
    assert k.run("%cd sub") == home + "/sub\n"
    assert result(k, "%pwd") == repr(home + "/sub")
    assert k.run("%cd ..") == home + "\n"
    # %cd goes where os.chdir goes (files are written in the workspace only)
    assert k.run("%cd /usr") == "/usr\n"
    assert result(k, "import os\nos.chdir('/')\n%pwd") == repr("/")
    assert k.run("%cd") == home + "\n"
    assert k.run("%cd no_such_folder").startswith("[Errno 2] No such file or directory")


def test_env(k):
    assert k.run("%env SANDPIT_T=value one") == "env: SANDPIT_T=value one\n"
    assert result(k, "%env SANDPIT_T") == "'value one'"
    assert k.value("os.environ['SANDPIT_T']") == "'value one'"
    k.run("env_all = %env")
    assert k.value("type(env_all).__name__, env_all['SANDPIT_T']") == "('dict', 'value one')"


def test_writefile(k):
    assert k.run("%%writefile wf.txt\nhello\nworld") == "Writing wf.txt\n"
    assert k.run("%%writefile -a wf.txt\nmore") == "Appending to wf.txt\n"
    assert k.run("%%writefile wf.txt\nnew") == "Overwriting wf.txt\n"
    assert k.value("open('wf.txt').read()") == "'new\\n'"


def test_capture(k):
    reply, outputs = k.execute("%%capture cap\nprint('hidden')\ndisplay('shown later')\n7")
    assert reply["content"]["status"] == "ok" and outputs == []
    assert k.value("cap.stdout") == "'hidden\\n'"
    assert k.value("[o.data['text/plain'] for o in cap.outputs]") == \
        "[\"'shown later'\", '7']"
    reply, outputs = k.execute("cap.show()")
    assert stdout_of(outputs) == "hidden\n"
    assert [m["content"]["data"]["text/plain"] for m in outputs
            if m["msg_type"] == "display_data"] == ["'shown later'", "7"]


@pytest.mark.parametrize("magic, mime", [("html", "text/html"), ("HTML", "text/html"),
                                         ("markdown", "text/markdown"),
                                         ("javascript", "application/javascript"),
                                         ("latex", "text/latex"),
                                         ("svg", "image/svg+xml")])
def test_display_cell_magics(k, magic, mime):
    body = "<svg></svg>" if magic == "svg" else "<b>x</b>"
    reply, outputs = k.execute("%%" + magic + "\n" + body)
    assert reply["content"]["status"] == "ok"
    assert [m["msg_type"] for m in outputs] == ["display_data"]
    data = outputs[0]["content"]["data"]
    if mime == "application/javascript":
        # Withheld by default, and said so (tests/trusted/test_active_output.py).
        assert set(data) == {"text/plain"} and "--active-output on" in data["text/plain"]
        return
    assert set(data) == {"text/plain", mime}
    assert data[mime].strip() == body


def test_accepted_magics(k):
    for cell in ("%load_ext storemagic", "%config InlineBackend.figure_format = 'png'"):
        reply, outputs = k.execute(cell)
        assert reply["content"]["status"] == "ok" and outputs == [], cell


def test_run_merges_the_scripts_variables(fresh_kernel, tmp_path):
    k = fresh_kernel
    (tmp_path / "script.py").write_text(
        "import sys\nargs = sys.argv[1:]\nname = __name__\nsees_mine = 'mine' in dir()\n"
        "def helper():\n    return 'from the script'\nprint('ran', args)\n")
    (tmp_path / "bump.py").write_text("counter += 1\nsees_mine = 'mine' in dir()\n")
    k.run("mine = 'kept'\ncounter = 41\nimport sys\nargv = list(sys.argv)")
    assert k.run("%run script.py one 'two words'") == "ran ['one', 'two words']\n"
    # its variables join the user's; it ran as __main__, apart from the user's
    assert k.value("args, name, helper(), sees_mine, mine") == \
        "(['one', 'two words'], '__main__', 'from the script', False, 'kept')"
    assert k.value("sys.argv == argv") == "True"  # given back
    # -i: in the user's namespace
    k.run("%run -i bump")
    assert k.value("counter, sees_mine") == "(42, True)"
    reply, _ = k.execute("%run no_such_script.py")
    assert reply["content"]["ename"] == "FileNotFoundError"


# Each version a different size: a change within the file system's timestamp
# granularity is seen all the same.
HELPERS = """\
def f():
    return %(n)d
class C:
    def m(self):
        return 'version %(n)d'
"""


def test_autoreload_reloads_changed_modules_of_the_workspace(fresh_kernel, tmp_path):
    """As IPython's %autoreload 2: a module of the workspace changed on disk is
    reloaded before the next cell, and what was taken from it before (a function
    imported by name, an instance of its class) runs the new code."""
    k = fresh_kernel
    helpers = tmp_path / "helpers.py"
    helpers.write_text(HELPERS % {"n": 1})
    assert k.run("%load_ext autoreload\n%autoreload 2") == ""
    assert k.run("import helpers\nfrom helpers import f\nc = helpers.C()\n"
                 "print(helpers.f(), f(), c.m())") == "1 1 version 1\n"
    helpers.write_text(HELPERS % {"n": 22})
    assert k.run("print(helpers.f(), f(), c.m())") == "22 22 version 22\n"
    # a module that no longer compiles: said, and the last version goes on working
    helpers.write_text("def f(:\n")
    reply, outputs = k.execute("print(f())")
    assert stdout_of(outputs) == "22\n"
    assert stdout_of(outputs, "stderr").startswith("[autoreload of helpers failed: ")
    assert "SyntaxError" in stdout_of(outputs, "stderr")
    # off: nothing is reloaded; %autoreload alone reloads now
    assert k.run("%autoreload 0") == ""
    helpers.write_text(HELPERS % {"n": 333})
    assert k.run("print(helpers.f(), f(), c.m())") == "22 22 version 22\n"
    assert k.run("%autoreload\nprint(helpers.f(), f(), c.m())") == "333 333 version 333\n"


def test_autoreload_explicit_and_aimport(fresh_kernel, tmp_path):
    k = fresh_kernel
    for name in ("first", "second"):
        (tmp_path / (name + ".py")).write_text("v = 1\n")
    assert k.run("%autoreload 1\n%aimport first, second\n%aimport -second\n"
                 "print(first.v, second.v)") == "1 1\n"
    assert k.run("%aimport") == "Modules to reload:\nfirst\n\nModules to skip:\nsecond\n"
    for name in ("first", "second"):
        (tmp_path / (name + ".py")).write_text("v = 22\n")
    assert k.run("print(first.v, second.v)") == "22 1\n"
    # modules outside the workspace are not watched, and the magic says why
    out = k.run("%aimport json")
    assert out.startswith("sandpit reloads only modules in the workspace: json ("), out
    reply, _ = k.execute("%autoreload sometimes")
    assert reply["content"]["ename"] == "UsageError"


def test_lsmagic_and_unknown_magics(k):
    listing = result(k, "%lsmagic")
    assert "Available line magics:" in listing and "%timeit" in listing
    assert "%%writefile" in listing and "%pip" in listing
    # as IPython says it: one line on stderr, no traceback, no list
    for cell, line in (("%nosuch 1", "Line magic function `%nosuch` not found."),
                       ("%%nosuch\nx", "Cell magic `%%nosuch` not found.")):
        reply, outputs = k.execute(cell)
        c = reply["content"]
        assert (c["status"], c["ename"], c["evalue"]) == ("error", "UsageError", line)
        assert [(m["msg_type"], m["content"]) for m in outputs] == \
            [("stream", {"name": "stderr", "text": "UsageError: %s\n" % line})]


def test_magic_tracebacks_show_the_cell(k):
    reply, outputs = k.execute("x_tb = 1\n%time 1/0")
    err = error_of(outputs)
    assert err["ename"] == "ZeroDivisionError"
    text = plain("\n".join(err["traceback"]))
    assert "----> 2 %time 1/0" in text
    reply, outputs = k.execute("%%time\nx_tb = 1\n\nx_tb / 0")
    text = plain("\n".join(error_of(outputs)["traceback"]))
    assert "----> 4 x_tb / 0" in text


# --- shell escapes ---------------------------------------------------------------------------


@pytest.mark.parametrize("cell, message", [
    ("!ls", "shell commands are disabled in this kernel: `!ls` would start a new process"),
    ("%system ls", "shell commands are disabled in this kernel"),
    ("%%bash\nls", "shell commands are disabled in this kernel: a `%%bash` cell"),
    ("%%sh\nls", "shell commands are disabled in this kernel: a `%%sh` cell"),
    ("%pip install requests", "package installation is disabled in this kernel: "
                              "`%pip install requests` needs a shell and the network"),
    ("%conda install numpy", "package installation is disabled in this kernel"),
])
def test_shell_escapes_are_refused_on_stderr(k, cell, message):
    """As ipykernel shows a command that fails: its words on stderr, and the cell
    (and the notebook) goes on."""
    line = "\n" not in cell  # a line goes on to the next line of its cell
    reply, outputs = k.execute(cell + "\nprint('after')" if line else cell)
    assert reply["content"]["status"] == "ok", reply["content"]
    assert stdout_of(outputs, "stderr").startswith(message)
    assert stdout_of(outputs) == ("after\n" if line else "")
    assert k.value("_exit_code") == "126"


def test_shell_escapes_that_give_a_value_raise(k):
    for cell in ("files = !ls", "files = %sx ls"):
        reply, outputs = k.execute(cell)
        err = error_of(outputs)
        assert reply["content"]["status"] == "error"
        assert err["ename"] == "PermissionError"
        assert err["evalue"].startswith("shell commands are disabled in this kernel")


# --- get_ipython() ------------------------------------------------------------------------------


def test_get_ipython(k):
    assert k.value("get_ipython().run_line_magic('pwd', '') == os.getcwd()") == "True"
    assert k.value("get_ipython().magic('pwd') == os.getcwd()") == "True"
    assert TIME_OUTPUT.fullmatch(k.run("get_ipython().run_cell_magic('time', '', 'q = 1')"))
    assert k.value("get_ipython().user_ns is globals()") == "True"
    assert k.value("'IPKernelApp' in get_ipython().config") == "True"
    assert k.value("get_ipython().kernel.implementation") == "'sandpit'"
    reply, outputs = k.execute("get_ipython().display_pub.publish({'text/plain': 'pub'})")
    assert [(m["msg_type"], m["content"]["data"]) for m in outputs] == \
        [("display_data", {"text/plain": "pub"})]
    k.run("hist_marker = 1")
    assert k.value("list(get_ipython().history_manager.get_tail(1))[-1][2]") == \
        "'hist_marker = 1'"
    assert k.value("get_ipython().history_manager.input_hist_raw is In") == "True"
    reply, _ = k.execute("get_ipython().set_next_input('x = 1')")
    assert reply["content"]["payload"] == [{"source": "set_next_input", "text": "x = 1",
                                            "replace": False}]


# --- _, __, ___, _N, Out, In -------------------------------------------------------------------


def count_of(reply):
    return reply["content"]["execution_count"]


def test_output_history(k):
    counts = []
    for value in ("10", "20", "30"):
        reply, _ = k.execute(value)
        counts.append(count_of(reply))
    assert k.value("(_, __, ___)") == "(30, 20, 10)"
    a, b, c = counts
    assert k.value("(_%d, _%d, Out[%d])" % (a, b, c)) == "(10, 20, 30)"
    reply, outputs = k.execute("40;")
    assert outputs == [] and k.value("%d in Out" % count_of(reply)) == "False"
    k.execute("None")
    assert k.value("_") == "30"
    assert k.value("_oh is Out and _ih is In and isinstance(Out, dict)") == "True"


def test_input_history(k):
    reply, _ = k.execute("in_marker = 'm'")
    n = count_of(reply)
    assert k.value("In[%d]" % n) == "\"in_marker = 'm'\""
    assert k.value("_i%d" % n) == "\"in_marker = 'm'\""
    assert k.value("In[0]") == "''"
    assert k.value("type(_dh).__name__, type(_dh[0]).__name__") == "('list', 'PosixPath')"


def test_underscore_i_is_the_previous_input(k):
    reply, _ = k.execute("prev_marker = 1")
    reply, outputs = k.execute("_i")
    assert result_of(outputs) == "'prev_marker = 1'"


def test_silent_cells_leave_underscore(k):
    k.execute("'before silent'")
    k.execute("'silent value'", silent=True)
    reply, outputs = k.execute("_")
    assert result_of(outputs) == "'before silent'"


def test_user_assigned_underscore_is_kept(k):
    k.run("_ = 'mine'")
    k.execute("77")
    reply, outputs = k.execute("_")
    assert result_of(outputs) == "'mine'"


def test_the_import_bootstrap_leaves_the_namespace_alone(fresh_kernel):
    names = "[n for n in ('sys', 'importlib', '_sandpit', '_EmbeddedFinder') if n in globals()]"
    assert fresh_kernel.value(names) == "[]"
    # the user's own importlib, deleted, breaks nothing of the kernel's
    fresh_kernel.run("import importlib\ndel importlib")
    reply, outputs = fresh_kernel.execute("%pwd")
    assert reply["content"]["status"] == "ok", outputs


# --- is_complete ---------------------------------------------------------------------------------


@pytest.mark.parametrize("code, status, indent", [
    ("%time x", "complete", None), ("f?", "complete", None), ("!ls", "complete", None),
    ("%%time\nx = 1", "incomplete", ""), ("%%time\nx = 1\n\n", "complete", None),
    ("if True:", "incomplete", "    "), ("if True:\n    %pwd", "incomplete", "    "),
    ("x = (", "incomplete", ""), ("x = )", "invalid", None), ("x = 1", "complete", None),
])
def test_is_complete(k, code, status, indent):
    reply = k.request("is_complete", code)["content"]
    assert reply["status"] == status
    assert reply.get("indent") == indent
