"""Unit tests of the worker's Python runtime (kernel/python/sandpit) that need
no kernel: the IPython syntax translation, is_complete, inspection, completion
and the magics.

They import the runtime from kernel/python under this interpreter; where
IPython (a test dependency, with ipykernel) defines the expected answer, the
test asks IPython itself and compares.
"""

import builtins
import os
import re
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "kernel", "python"))

from sandpit import completion, inputs, inspection, link, magics, request, shell  # noqa: E402


@pytest.fixture
def sent():
    """Frames the runtime would send, and a clean builtins afterwards."""
    frames = []
    saved = builtins.__dict__.copy()
    link.set_sink(lambda obj, buffers: frames.append(obj))
    yield frames
    link.set_sink(None)
    builtins.__dict__.clear()
    builtins.__dict__.update(saved)


@pytest.fixture
def ns(sent, tmp_path, monkeypatch):
    """A user namespace set up as the worker's, in tmp_path as the workspace."""
    monkeypatch.chdir(tmp_path)
    user_ns = {"__builtins__": builtins, "__name__": "__main__"}
    shell.install(user_ns)
    exec("import os\n"
         "def f(aaa, bbb=2, *, ccc=3):\n"
         "    'doc of f'\n"
         "    return 1\n"
         "class C:\n"
         "    'class doc'\n"
         "    x = 1\n"
         "    def meth(self):\n"
         "        pass\n"
         "c = C()\n"
         "d = {'alpha': 1, 'beta': 2, 3: 4}\n", user_ns)
    return user_ns


@pytest.fixture
def execute_request():
    """Makes an execute_request the one being handled, as the runtime does;
    ends it after the test."""
    begun = []

    def begin(count=1):
        req = request.Request({"type": "request", "shell": "", "msg_type": "execute_request",
                               "execution_count": count, "header": {"msg_id": "test"}})
        begun.append((req, request.begin(req)))
        return req
    yield begin
    for req, token in reversed(begun):
        request.end(req, token)


def run_cell(user_ns, code):
    """Transforms and runs code as the runtime does, without its displayhook."""
    import linecache
    linecache.cache["<cell-1-1>"] = (len(code), None, code.splitlines(True), "<cell-1-1>")
    source = inputs.transform_cell(code)
    assert source.count("\n") == code.count("\n") or (
        source.count("\n") == code.count("\n") + 1 and not code.endswith("\n"))
    exec(compile(source, "<cell-1-1>", "exec"), user_ns)


# --- transform_cell ---------------------------------------------------------------------

TRANSFORMS = [
    ("%time f(x)", "get_ipython().run_line_magic('time', 'f(x)')"),
    ("%matplotlib inline", "get_ipython().run_line_magic('matplotlib', 'inline')"),
    ("x = %pwd", "x = get_ipython().run_line_magic('pwd', '')"),
    ("a, b = %who_ls", "a, b = get_ipython().run_line_magic('who_ls', '')"),
    ("x = !ls -l", "x = get_ipython().getoutput('ls -l')"),
    ("!ls", "get_ipython().system('ls')"),
    ("!!ls", "get_ipython().getoutput('ls')"),
    ("f?", "get_ipython().run_line_magic('pinfo', 'f')"),
    ("f??", "get_ipython().run_line_magic('pinfo2', 'f')"),
    ("?f", "get_ipython().run_line_magic('pinfo', 'f')"),
    ("??os.path", "get_ipython().run_line_magic('pinfo2', 'os.path')"),
    ("os.path.join?", "get_ipython().run_line_magic('pinfo', 'os.path.join')"),
    ("%time?", "get_ipython().run_line_magic('pinfo', '%time')"),
    ("%%time?", "get_ipython().run_line_magic('pinfo', '%%time')"),
    ("np.*lin*?", "get_ipython().run_line_magic('psearch', 'np.*lin*')"),
    ("x = f?", "get_ipython().run_line_magic('pinfo', 'f')"),
    ("%pwd;", "get_ipython().run_line_magic('pwd', '');"),
    ("if x:\n    %pwd\n    y = !ls",
     "if x:\n    get_ipython().run_line_magic('pwd', '')\n    y = get_ipython().getoutput('ls')"),
    ("%%time\nx = 1\ny = 2", "get_ipython().run_cell_magic('time', '', 'x = 1\\ny = 2\\n')\n\n"),
    ("%%writefile a.txt\nhello\n", "get_ipython().run_cell_magic('writefile', 'a.txt', "
     "'hello\\n')\n\n"),
    ("\n%%capture out\nprint(1)", "\nget_ipython().run_cell_magic('capture', 'out', "
     "'print(1)\\n')\n"),
    ("x = 1\n%%time", "x = 1\nget_ipython().run_line_magic('%time', '')"),
    ("%cd \\\n  sub\nx = 1", "get_ipython().run_line_magic('cd', ' sub')\n\nx = 1"),
    ("  x = 1\n  y = 2", "x = 1\ny = 2"),
    (">>> x = 1\n... y", "x = 1\ny"),
    ("In [1]: x = 1\n   ...: y", "x = 1\ny"),
    # not IPython syntax: left alone
    ("x = '%s' % y", "x = '%s' % y"),
    ("x != 1", "x != 1"),
    ("s = '''\n%pwd\n!ls\n'''", "s = '''\n%pwd\n!ls\n'''"),
    ("f(1,\n  %pwd)", "f(1,\n  %pwd)"),
    ("x = 1  # what?", "x = 1  # what?"),
    ("print('why?')", "print('why?')"),
    ("x = 1 \\\n    % 2", "x = 1 \\\n    % 2"),
]


@pytest.mark.parametrize("code, expected", TRANSFORMS)
def test_transform_cell(code, expected):
    out = inputs.transform_cell(code)
    assert out == expected
    # one line out for each line in: tracebacks show the cell as typed
    assert out.count("\n") == code.count("\n")


def test_transform_of_plain_cells_is_identity_and_cheap():
    cell = "import numpy as np\nx = np.arange(10)\nfor i in x:\n    y = i * 2\nx.sum()\n" * 20
    assert inputs.transform_cell(cell) is cell
    started = time.perf_counter()
    for _ in range(2000):
        inputs.transform_cell(cell)
    per_call = (time.perf_counter() - started) / 2000
    assert per_call < 50e-6, per_call
    formatted = "x = '%d items' % n\nif a != b:\n    print(f'{a!r}')\n" * 30
    assert inputs.transform_cell(formatted) is formatted


def test_transformed_syntax_compiles():
    for code, _ in TRANSFORMS[:26]:
        compile(inputs.transform_cell(code), "<t>", "exec")


# --- is_complete ------------------------------------------------------------------------

COMPLETE_SAMPLES = [
    "x = 1", "x = (1,", "def f():", "def f():\n    return 1", "def f():\n    return 1\n",
    "def f():\n    return 1\n\n", "for i in range(3):\n    if i:\n", "x = [", "x = ]", "1)",
    "print('hi", "'''doc", "x = 1 \\", "%time x", "%%time\nx = 1", "%%time\nx = 1\n\n",
    "!ls", "f?", "x = %pwd", "if True:\n    %pwd", "if True:\n    %pwd\n", "await f()",
    "async def g():\n    await x", "x = 1\n  y = 2", "  x = 1\n  y = 2", ">>> x = 1",
    "class A:\n    pass\n", "x = {", "try:\n  pass\nexcept:", "lambda:", "return", "a b",
    "f(\n", "@dec", "@dec\n", "if x:\n    pass\nelse:", "x = '''a\nb'''", "", "   ",
    "# comment", "if True:\n\tx = 1", "def f():\n    x = 1\n    ", "%%bash\nls", "?",
    "x = 1\n%%time", "print(1)\n    ",
]


def test_check_complete_agrees_with_ipython():
    from IPython.core.inputtransformer2 import TransformerManager
    ipython = TransformerManager()
    for sample in COMPLETE_SAMPLES:
        status, indent = ipython.check_complete(sample)
        expected = (status, " " * indent if status == "incomplete" and indent else "")
        assert inputs.check_complete(sample) == expected, sample


# --- inspection ---------------------------------------------------------------------------


class _Base:
    """base doc"""

    @property
    def prop(self):
        "a property"
        return 1


class _Callable(_Base):
    def __init__(self, a, b=2):
        "init doc"

    def __call__(self, z):
        "call doc"


def _annotated(x: int, *args, y: "str" = "s", **kw) -> str:
    pass


def _long(aaaaaaaaaaaa=1, bbbbbbbbbbbbbbbb=2, cccccccccccccccc=3, dddddddddddddd=4, e=5):
    "a long signature"


def _objects():
    import collections
    import functools
    import json
    import numpy as np
    return [(_annotated, "_annotated"), (_long, "_long"), (_Base, "_Base"),
            (_Base(), "b"), (_Callable, "_Callable"), (_Callable(1), "cc"),
            (_Base().prop, "b.prop"), (_Base.prop, "_Base.prop"), (print, "print"),
            (len, "len"), ({"a": 1}, "d"), ([1, 2], "l"), ("x" * 300, "s"), (1, "one"),
            (None, "None"), (np.arange(3), "a"), (np.linspace, "np.linspace"),
            (collections.OrderedDict, "collections.OrderedDict"),
            (functools.partial(_annotated, 1), "p"), (json, "json"), (dict, "dict"),
            (ValueError, "ValueError"), (str.join, "str.join"), (type, "type")]


@pytest.mark.parametrize("detail_level", [0, 1])
def test_inspection_text_is_ipythons(detail_level):
    from IPython.core.oinspect import Inspector
    ipython = Inspector()
    for obj, name in _objects():
        mine = inspection.strip_ansi(inspection.info_text(obj, name, detail_level))
        theirs = inspection.strip_ansi(
            ipython._get_info(obj, name, detail_level=detail_level)["text/plain"])
        assert mine == theirs, name


TOKENS = [("f(1, 2", 6), ("f", 1), ("x = f + 1", 5), ("os.path.join(a, b)", 10),
          ("os.path.join(a, b)", 14), ("x = 1\ny = os.pa", 12), ("print(len(x))", 8),
          ("print(len(x))", 11), ("a.b.c", 3), ("", 0), ("'abc", 2), ("f(x=1, y", 8),
          ("def f(x):\n    return g(x", 22), ("x", 0)]


@pytest.mark.parametrize("code, cursor", TOKENS)
def test_token_at_cursor_is_ipythons(code, cursor):
    from IPython.utils.tokenutil import token_at_cursor
    assert inspection.token_at_cursor(code, cursor) == token_at_cursor(code, cursor)


def test_inspect_reply(ns):
    reply = completion_free_inspect(ns, "f(1, ", 5, 0)
    assert reply["status"] == "ok" and reply["found"] is True and reply["metadata"] == {}
    text = inspection.strip_ansi(reply["data"]["text/plain"])
    assert text.startswith("Signature: f(aaa, bbb=2, *, ccc=3)\nDocstring: doc of f\n")
    assert "Type:      function" in text
    assert completion_free_inspect(ns, "nosuchname", 3, 0) == {
        "status": "ok", "found": False, "data": {}, "metadata": {}}
    magic = completion_free_inspect(ns, "%timeit", 4, 0)
    assert magic["found"] and "Time a statement" in magic["data"]["text/plain"]


def completion_free_inspect(user_ns, code, cursor, level):
    """inspect_reply content, with the magics found as the worker finds them."""
    return inspection.inspect(code, cursor, level, user_ns, shell.find_magic)


def test_pinfo_makes_a_page_and_help_prints(ns, capsys, execute_request):
    req = execute_request()
    run_cell(ns, "f?")
    pages = [p for p in req.payloads if p["source"] == "page"]
    assert len(pages) == 1 and pages[0]["start"] == 0
    assert "doc of f" in inspection.strip_ansi(pages[0]["data"]["text/plain"])
    run_cell(ns, "help(f)")
    assert capsys.readouterr().out.startswith("Help on function f in module __main__:")
    run_cell(ns, "nosuchthing?")
    assert capsys.readouterr().out == "Object `nosuchthing` not found.\n"
    assert len(req.payloads) == 1


def test_help_never_starts_a_pager(ns, monkeypatch, capsys, execute_request):
    import pydoc
    import subprocess

    def refuse(*args, **kwargs):
        raise AssertionError("help() tried to start a process")
    monkeypatch.setattr(subprocess, "Popen", refuse)
    monkeypatch.setattr(os, "system", refuse)
    monkeypatch.setattr(os, "popen", refuse)
    req = execute_request()
    for topic in (True, "for", "keywords", str.join, pydoc):
        builtins.help(topic)
        assert capsys.readouterr().out.strip(), topic
    assert req.payloads == []


# --- completion -----------------------------------------------------------------------------


PLAIN_CASES = [
    # (code, cursor or None for the end, expected matches (subset), cursor_start)
    ("os.path.jo", None, ["join"], 8),
    ("c.", None, ["meth", "x"], 2),
    ("c.me", None, ["meth"], 2),
    ("C.x.bit_l", None, ["bit_length"], 4),
    ("pri", None, ["print"], 0),
    ("x = pri\ny = 2", 7, ["print"], 4),
    ("f(aa", None, ["aaa="], 2),
    ("f(1,\n  cc", None, ["ccc="], 7),
    ("d['", None, ["alpha", "beta"], 3),
    ('d["a', None, ["alpha"], 3),
    ("d[", None, ["'alpha'", "'beta'", "3"], 2),
    ("import o", None, ["os", "operator"], 7),
    ("from os import pat", None, ["path", "pathsep"], 15),
    ("%ti", None, ["%time", "%%time", "%timeit", "%%timeit"], 0),
    ("x = 1\n%ti", None, ["%time", "%timeit"], 6),
    ("%time os.path.jo", None, ["join"], 14),
    ("%%time\nos.path.jo", None, ["join"], 15),
    ("%cd su", None, ["sub/"], 4),
    ("open('su", None, ["sub/"], 6),
    ("open('sub/", None, ["sub/data.csv"], 6),
]


@pytest.mark.parametrize("use_jedi", [False, True])
def test_completion(ns, tmp_path, use_jedi, monkeypatch):
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "data.csv").write_text("a,b\n")
    monkeypatch.setattr(completion, "_jedi", None if use_jedi else False)
    for code, cursor, expected, start in PLAIN_CASES:
        cursor = len(code) if cursor is None else cursor
        reply = completion.complete(code, cursor, ns)
        assert reply["status"] == "ok"
        assert set(expected) <= set(reply["matches"]), (code, reply["matches"])
        assert (reply["cursor_start"], reply["cursor_end"]) == (start, cursor), code
        types = reply["metadata"][completion.TYPES_KEY]
        assert [t["text"] for t in types] == reply["matches"]
        assert all(t["start"] == start and t["end"] == cursor for t in types)
    if not use_jedi:
        assert "jedi" not in completion.__dict__ or completion._jedi is False


def test_completion_hides_private_names_after_a_dot(ns):
    completion._jedi = False
    try:
        matches = completion.complete("c.", 2, ns)["matches"]
        assert matches and not any(m.startswith("_") for m in matches)
        assert "__class__" in completion.complete("c.__cl", 6, ns)["matches"]
    finally:
        completion._jedi = None


def test_completion_never_calls_properties(ns):
    exec("class P:\n"
         "    calls = 0\n"
         "    @property\n"
         "    def boom(self):\n"
         "        P.calls += 1\n"
         "        return self\n"
         "p = P()\n", ns)
    completion._jedi = False
    try:
        assert completion.complete("p.boom.", 7, ns)["matches"] == []
        assert "boom" in completion.complete("p.bo", 4, ns)["matches"]
    finally:
        completion._jedi = None
    assert ns["P"].calls == 0


def test_completion_on_a_cell_magic_line(ns):
    code = "%%timeit -n 1 os.path.jo\nx = 1\n"
    reply = completion.complete(code, 24, ns)
    assert reply["matches"] == ["join"] and reply["cursor_start"] == 22


def test_completion_with_nothing_to_offer(ns):
    for code in ("x = 1  # os.pa", "%%html\n<b", "zzzqqq", "!ls /us"):
        reply = completion.complete(code, len(code), ns)
        assert reply["matches"] == [] and reply["cursor_start"] == reply["cursor_end"] == \
            len(code)


# --- magics ----------------------------------------------------------------------------------


def test_time_prints_as_ipython_and_returns_the_value(ns, capsys):
    sh = shell.get_ipython()
    assert sh.run_line_magic("time", "sum(range(10))") == 45
    out = capsys.readouterr().out
    assert re.fullmatch(r"CPU times: user \S+ [µnm]?s, sys: \S+ [µnm]?s, total: \S+ [µnm]?s\n"
                        r"Wall time: \S+ [µnm]?s\n", out), out
    assert sh.run_cell_magic("time", "", "y = 2\ny * 3\n") == 6
    assert ns["y"] == 2
    with pytest.raises(magics.UsageError):
        sh.run_cell_magic("time", "x = 1", "y = 1\n")


def test_format_time_is_ipythons():
    from IPython.core.magics.execution import _format_time
    for t in (0.0, 1.234e-9, 4.53e-6, 0.01234, 0.5, 1.0, 59.9, 61.5, 3725.0, 90061.0):
        assert magics.format_time(t) == _format_time(t)


def test_timeit(ns, capsys):
    sh = shell.get_ipython()
    result = sh.run_line_magic("timeit", "-o -n 20 -r 3 sum(range(10))")
    out = capsys.readouterr().out
    # IPython's warning comes first when one run took over four times the fastest (a
    # busy machine): it is part of the format, not a failure.
    assert re.fullmatch(r"(The slowest run took \S+ times longer than the fastest\. This could "
                        r"mean that an intermediate result is being cached\.\n)?"
                        r"\S+ [µnm]?s ± \S+ [µnm]?s per loop \(mean ± std\. dev\. of 3 runs, "
                        r"20 loops each\)\n", out), out
    assert result.loops == 20 and result.repeat == 3 and len(result.all_runs) == 3
    assert repr(result).startswith("<TimeitResult : ")
    assert sh.run_cell_magic("timeit", "-q -n 2 -r 1 z = 5", "w = z + 1\n") is None
    assert capsys.readouterr().out == ""
    assert "w" not in ns  # timed code runs in a function, as in IPython


def test_who_and_whos(ns, capsys):
    sh = shell.get_ipython()
    ns["n"] = 3
    ns["s"] = "text"
    sh.run_line_magic("who", "")
    assert capsys.readouterr().out == "C\t c\t d\t f\t n\t os\t s\t \n"
    sh.run_line_magic("who", "int")
    assert capsys.readouterr().out == "n\t \n"
    sh.run_line_magic("whos", "int str")
    assert capsys.readouterr().out == (
        "Variable   Type    Data/Info\n"
        "----------------------------\n"
        "n          int     3\n"
        "s          str     text\n")
    assert sh.run_line_magic("who_ls", "dict") == ["d"]


def test_cd_goes_where_chdir_goes(ns, tmp_path, capsys):
    (tmp_path / "sub").mkdir()
    sh = shell.get_ipython()
    sh.run_line_magic("cd", "sub")
    assert os.getcwd() == str((tmp_path / "sub").resolve())
    assert capsys.readouterr().out == os.getcwd() + "\n"
    sh.run_line_magic("cd", "-q ..")
    assert os.getcwd() == str(tmp_path.resolve())
    sh.run_line_magic("cd", "-q /")
    assert os.getcwd() == "/"
    sh.run_line_magic("cd", "")
    assert os.getcwd() == str(tmp_path.resolve())
    sh.run_line_magic("cd", "-q nosuchfolder")
    assert "No such file or directory" in capsys.readouterr().out
    assert os.getcwd() == str(tmp_path.resolve())
    assert [str(p) for p in ns["_dh"]][-4:] == [str((tmp_path / "sub").resolve()),
                                                 str(tmp_path.resolve()), "/",
                                                 str(tmp_path.resolve())]


def test_env(ns, capsys, monkeypatch):
    monkeypatch.delenv("SANDPIT_TEST_VAR", raising=False)
    sh = shell.get_ipython()
    sh.run_line_magic("env", "SANDPIT_TEST_VAR=one two")
    assert capsys.readouterr().out == "env: SANDPIT_TEST_VAR=one two\n"
    assert sh.run_line_magic("env", "SANDPIT_TEST_VAR") == "one two"
    assert sh.run_line_magic("env", "")["SANDPIT_TEST_VAR"] == "one two"
    with pytest.raises(magics.UsageError, match="Environment does not have key"):
        sh.run_line_magic("env", "SANDPIT_NO_SUCH_VAR")


def test_writefile_and_variable_expansion(ns, tmp_path, capsys):
    ns["name"] = "out"
    run_cell(ns, "%%writefile {name}.txt\nhello\nworld")
    run_cell(ns, "%%writefile -a $name.txt\nmore")
    assert capsys.readouterr().out == "Writing out.txt\nAppending to out.txt\n"
    assert (tmp_path / "out.txt").read_text() == "hello\nworld\nmore\n"


def test_display_cell_magics(ns, sent):
    cases = [("html", "text/html"), ("markdown", "text/markdown"),
             ("javascript", "application/javascript"), ("latex", "text/latex"),
             ("svg", "image/svg+xml")]
    for name, mime in cases:
        run_cell(ns, "%%" + name + "\n<b>x</b>")
    published = [f for f in sent if f.get("msg_type") == "display_data"]
    assert [list(f["content"]["data"]) for f in published] == [["text/plain", m]
                                                              for _, m in cases]
    assert published[0]["content"]["data"]["text/html"] == "<b>x</b>\n"


def test_capture(ns, sent, capsys):
    run_cell(ns, "%%capture cap\nprint('hidden')\ndisplay_me = 1\n2")
    assert capsys.readouterr().out == ""
    assert sent == []
    cap = ns["cap"]
    assert cap.stdout == "hidden\n" and cap.stderr == ""
    assert [o.data["text/plain"] for o in cap.outputs] == ["2"]
    cap.show()
    assert capsys.readouterr().out == "hidden\n"
    assert [f["content"]["data"]["text/plain"] for f in sent] == ["2"]
    with pytest.raises(ZeroDivisionError):
        run_cell(ns, "%%capture broken\nprint('before')\n1/0")
    assert ns["broken"].stdout == "before\n"
    assert sys.stdout is not ns["broken"]._stdout


def test_refused_and_unknown_magics(ns, capsys):
    for cell in ("x = !ls", "%sx ls"):
        with pytest.raises(PermissionError, match="shell commands are disabled in this "
                                                  "kernel"):
            run_cell(ns, cell)
    for cell, words in (("!ls", "shell commands are disabled in this kernel"),
                        ("%system ls", "shell commands are disabled in this kernel"),
                        ("%%bash\nls", "shell commands are disabled in this kernel"),
                        ("%pip install requests", "package installation is disabled"),
                        ("%conda install numpy", "package installation is disabled")):
        run_cell(ns, cell)
        assert capsys.readouterr().err.startswith(words), cell
        assert ns["_exit_code"] == 126
    with pytest.raises(magics.UsageError, match=r"^Line magic function `%nosuch` not "
                                                r"found\.$"):
        run_cell(ns, "%nosuch")
    with pytest.raises(magics.UsageError, match=r"^Cell magic `%%nosuch` not found\.$"):
        run_cell(ns, "%%nosuch\nx")
    with pytest.raises(magics.UsageError, match=r"^Cell magic `%%who` not found \(But line "
                                                r"magic `%who` exists"):
        run_cell(ns, "%%who\nx")


def test_tracebacks_point_at_the_cell(ns):
    import traceback
    for cell, line in (("x = 1\n%time 1/0", 2), ("%%time\nx = 1\n\n1/0", 4),
                       ("%%capture\nprint(1)\n1/0", 3)):
        with pytest.raises(ZeroDivisionError) as info:
            run_cell(ns, cell)
        frames = traceback.extract_tb(info.value.__traceback__)
        assert (frames[-1].filename, frames[-1].lineno) == ("<cell-1-1>", line), cell


def test_get_ipython(ns, sent, execute_request):
    sh = ns["get_ipython"]()
    assert sh is builtins.get_ipython() is shell.get_ipython()
    assert sh.user_ns is ns and "IPKernelApp" in sh.config
    sh.display_pub.publish({"text/plain": "pub"})
    assert sent[-1]["msg_type"] == "display_data"
    assert sent[-1]["content"] == {"data": {"text/plain": "pub"}, "metadata": {},
                                   "transient": {}}
    assert sh.magic("pwd") == os.getcwd()
    sh.register_magic_function(lambda line: "got " + line, "line", "mine")
    try:
        assert sh.run_line_magic("mine", "it") == "got it"
    finally:
        magics.LINE.pop("mine")
    ns["In"][:] = ["", "a = 1", "b = 2"]
    assert list(sh.history_manager.get_range()) == [(0, 1, "a = 1"), (0, 2, "b = 2")]
    with pytest.raises(NotImplementedError, match="Restart"):
        sh.kernel.do_shutdown(True)
    req = execute_request()
    sh.set_next_input("x = 1")
    assert req.payloads == [{"source": "set_next_input", "text": "x = 1",
                                 "replace": False}]


def test_install_sets_up_ipythons_names(ns):
    for name, value in (("_", ""), ("__", ""), ("___", ""), ("_i", ""), ("_ii", ""),
                        ("_iii", ""), ("In", [""]), ("Out", {})):
        assert ns[name] == value, name
    assert ns["_ih"] is ns["In"] and ns["_oh"] is ns["Out"]
    assert [str(p) for p in ns["_dh"]] == [os.getcwd()]
    assert magics.who_ls(shell.get_ipython()) == ["C", "c", "d", "f", "os"]


def test_config_inline_backend(ns, capsys, monkeypatch):
    from sandpit import figures
    calls = []

    def configure(figure_format=None, dpi=None):
        calls.append((figure_format, dpi))
    monkeypatch.setattr(figures, "configure", configure)
    sh = shell.get_ipython()
    sh.run_line_magic("config", "InlineBackend.figure_format = 'retina'")
    sh.run_line_magic("config", "InlineBackend.figure_formats = {'svg'}")
    assert calls == [("retina", None), ("svg", None)]
    assert capsys.readouterr().err == ""
    sh.run_line_magic("config", "InlineBackend.rc = {}")
    assert "has no IPython option InlineBackend.rc" in capsys.readouterr().err


def test_config_use_jedi(ns, capsys):
    sh = shell.get_ipython()
    assert completion.use_jedi()
    sh.run_line_magic("config", "Completer.use_jedi = False")
    assert not completion.use_jedi()
    sh.run_line_magic("config", "InteractiveShell.ast_node_interactivity = 'all'")
    assert "has no IPython option" in capsys.readouterr().err
    assert sh.config["InteractiveShell"] == {"ast_node_interactivity": "all"}


def test_plain_completion_evaluates_no_calls(ns):
    exec("calls = []\n"
         "def g():\n"
         "    calls.append(1)\n"
         "    return c\n", ns)
    completion._jedi = False
    try:
        for code in ("g().", "g().me", "g()[0].x", "(c).me", "'abc'.up", "x = 1."):
            assert completion.complete(code, len(code), ns)["matches"] == [], code
    finally:
        completion._jedi = None
    assert ns["calls"] == []


def test_a_traceback_without_the_modules_to_lay_it_out(monkeypatch):
    """With no memory to import traceback and linecache (a MemoryError's), the
    traceback is laid out from the frames alone: each frame, the cell's as
    "Cell In[n]", and the exception."""
    from sandpit import execution, tracebacks
    code = "def f():\n    raise MemoryError('no more')\nf()\n"
    execution.register_source("<cell-7-1>", code)
    try:
        exec(compile(code, "<cell-7-1>", "exec"), {})
    except MemoryError as e:
        exc = e
    monkeypatch.setitem(sys.modules, "traceback", None)  # its import now fails
    tb = tracebacks.format_traceback(exc)
    assert tb[0] == "Traceback (most recent call last):\n"
    assert "  Cell In[7], line 3\n" in tb and "  Cell In[7], line 2\n" in tb
    assert tb[-1] == "MemoryError: no more\n"
    assert tracebacks.bare_traceback(exc) == tb


def test_linecache_imported_late_gets_the_cells_sources():
    from sandpit import execution, import_hooks
    execution.register_source("<cell-8-1>", "a = 1\nb = 2")

    class FakeLinecache:
        cache = {"<cell-8-1>": "kept"}  # an entry linecache has wins
    execution.register_source("<cell-9-1>", "c = 3")
    import_hooks.patch_linecache(FakeLinecache)
    assert FakeLinecache.cache["<cell-9-1>"] == (5, None, ["c = 3\n"], "<cell-9-1>")
    assert FakeLinecache.cache["<cell-8-1>"] == "kept"


def test_a_cell_registered_while_another_thread_imports_linecache(monkeypatch):
    """A subshell's cell may be registered while the main shell's cell is
    importing linecache: the module is in sys.modules, half made, without its
    cache yet. The cell is kept for the hook, which runs once the module is
    whole, rather than failing the cell."""
    import types
    from sandpit import execution, import_hooks
    half = types.ModuleType("linecache")  # as it is before "cache = {}" has run
    monkeypatch.setitem(sys.modules, "linecache", half)
    execution.register_source("<cell-10-1>", "d = 4")
    half.cache = {}  # the rest of the module's body, then the hook
    import_hooks.patch_linecache(half)
    assert half.cache["<cell-10-1>"] == (5, None, ["d = 4\n"], "<cell-10-1>")
