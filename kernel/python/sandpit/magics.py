"""Layer 4, magics: IPython's magics that notebooks use, without IPython.

inputs.transform_cell() turns "%time f(x)" into
get_ipython().run_line_magic('time', 'f(x)') and a "%%capture" cell into
run_cell_magic('capture', '', body); shell.py's get_ipython() object calls
run_line() and run_cell() here. Each magic is a function
magic(shell, line, cell, where): cell is None for a line magic, and where is
(filename, first line number) of the Python code the magic runs, so that a
traceback from "%time f()" or from line 3 of a "%%time" cell points at the
cell as typed.

Magics that would start a process or reach the network (!cmd, %pip,
%conda, %%bash, %system, ...) print on stderr why they are refused and what
works instead, and the cell goes on, as ipykernel prints a failed command's
words; those that must give the cell a value (x = !cmd, %sx) raise
PermissionError. An unknown magic raises UsageError, shown in one line as
IPython shows it.

The outputs match IPython 8's: "%time" prints "CPU times: user 2 µs, sys:
1 µs, total: 3 µs" and "Wall time: 4.53 µs", "%timeit" prints "98 ns ± 3.36 ns
per loop (mean ± std. dev. of 7 runs, 10,000,000 loops each)", "%who",
"%whos", "%%writefile" and "%env" print what IPython prints.
"""

import ast
import builtins
import io
import math
import os
import re
import sys

from . import execution
from . import link
from . import request
from . import streams

class UsageError(Exception):
    """A magic was used wrongly, or does not exist (IPython's UsageError). It
    is shown as one line on stderr, "UsageError: ...", without a traceback."""

    def _render_traceback_(self):
        return []


LINE = {}   # name -> function(shell, line, cell, where)
CELL = {}

# Shell commands and package managers: what they would do needs a process
# (and, for package managers, the network), which the sandbox does not allow.
SHELL_LINE = {"system", "sx", "sc", "alias", "unalias", "rehashx", "ls", "ll", "lf", "lk",
              "ldir", "lx", "cat", "cp", "mv", "rm", "rmdir", "mkdir", "clear", "less",
              "more", "man", "killbgscripts", "edit", "ed", "pastebin", "qtconsole",
              "notebook"}
PACKAGE_LINE = {"pip", "conda", "mamba", "micromamba", "uv"}
SHELL_CELL = {"bash", "sh", "script", "system", "!", "sx", "perl", "ruby", "python",
              "python2", "python3", "pypy", "cmd", "powershell", "zsh"}
# Expression arguments are Python code, not text with $var in it.
NO_EXPAND = {"time", "timeit", "pinfo", "pinfo2", "psearch", "pdoc", "pdef", "psource",
             "capture", "config", "matplotlib"}


def line_magic(*names):
    def register(fn):
        for name in names:
            LINE[name] = fn
        return fn
    return register


def cell_magic(*names):
    def register(fn):
        for name in names:
            CELL[name] = fn
        return fn
    return register


def find(name, cell=False):
    """The function of a magic, or None."""
    return (CELL if cell else LINE).get(name)


def _shell_words(command):
    return ("shell commands are disabled in this kernel: %s would start a new process, "
            "which sandpit's sandbox does not allow (the cell's Python can do the file "
            "work: os, shutil, pathlib)" % command)


def refuse_shell(command):
    """For what must give a value (x = !cmd, %sx): raises."""
    raise PermissionError(_shell_words(command))


def say_refused(shell, text):
    """A refused command as ipykernel shows one that fails: its words on stderr,
    _exit_code set, and the cell (and a notebook run through nbconvert) goes on."""
    sys.stderr.write("%s\n" % text)
    try:
        shell.user_ns["_exit_code"] = 126
    except (AttributeError, TypeError):
        pass


def say_shell_refused(shell, command):
    say_refused(shell, _shell_words(command))


def say_command_refused(shell, cmd):
    """!cmd: a package manager's (!pip install) says what works instead."""
    words = cmd.split()
    if words and (os.path.basename(words[0]) in PACKAGE_LINE | {"pip3"} or
                  words[1:3] == ["-m", "pip"]):
        return _say_packages_refused(shell, "!" + cmd.strip())
    say_shell_refused(shell, "`!%s`" % cmd)


def _say_packages_refused(shell, command):
    say_refused(shell, (
        "package installation is disabled in this kernel: `%s` needs a shell and "
        "the network, which sandpit's sandbox does not allow. What works: install the "
        "packages into a virtual environment outside the kernel (/usr/bin/python3 -m venv "
        "DIR, then DIR/bin/pip install ...) and start the kernel with --venv DIR (for a "
        "kernelspec: sandpit install --venv DIR), or use the system's packages (on "
        "Debian: apt install python3-<name>)." % command))


# What gives a value to the cell is refused with an error; what only prints says so.
VALUE_LINE = {"sx", "sc"}


def _unknown(name, cell):
    """IPython's words for a magic that does not exist (%lsmagic lists those that do)."""
    if cell:
        other = " (But line magic `%%%s` exists, did you mean that instead?)" % name \
            if name in LINE else ""
        return UsageError("Cell magic `%%%%%s` not found%s." % (name, other))
    other = " (But cell magic `%%%%%s` exists, did you mean that instead?)" % name \
        if name in CELL else ""
    return UsageError("Line magic function `%%%s` not found%s." % (name, other))


def run_line(shell, name, line, where):
    if name.startswith("%"):
        raise UsageError("the cell magic `%%%s` must be on the first line of its cell"
                         % name)
    fn = LINE.get(name)
    if fn is None:
        if name in PACKAGE_LINE:
            return _say_packages_refused(shell, "%%%s %s" % (name, line.strip()))
        if name in SHELL_LINE:
            command = ("`%%%s %s`" % (name, line.strip()) if line.strip() else "`%%%s`"
                       % name)
            if name in VALUE_LINE:
                refuse_shell(command)
            return say_shell_refused(shell, command)
        raise _unknown(name, False)
    if name not in NO_EXPAND:
        line = expand(line, shell.user_ns)
    return fn(shell, line, None, where)


def run_cell(shell, name, line, cell, where):
    fn = CELL.get(name)
    if fn is None:
        if name in SHELL_CELL:
            return say_shell_refused(shell, "a `%%%%%s` cell" % name)
        if name in PACKAGE_LINE:
            return _say_packages_refused(shell, "%%%s %s" % (name, line.strip()))
        raise _unknown(name, True)
    if name not in NO_EXPAND:
        line = expand(line, shell.user_ns)
    return fn(shell, line, cell, where)


def expand(text, ns):
    """IPython's variable expansion of magic arguments: {expr} and $name are
    replaced by their values, $$ by $. On any failure the text is left as it is."""
    if "{" not in text and "$" not in text:
        return text
    try:
        def brace(m):
            return str(eval(m.group(1), ns))

        def dollar(m):
            if m.group(0) == "$$":
                return "$"
            return str(ns[m.group(1)]) if m.group(1) in ns else m.group(0)
        text = re.sub(r"\{([^{}]+)\}", brace, text)
        return re.sub(r"\$\$|\$([A-Za-z_]\w*)", dollar, text)
    except Exception:
        return text


# --- running code for a magic -----------------------------------------------------------


def parse(source, where):
    """The AST of source, IPython syntax included, with line numbers of the cell."""
    from . import inputs
    filename, first = where
    return execution.parse(inputs.transform_cell(source), filename, first)


def run_body(source, where, ns):
    """Runs the lines of a cell body; returns the value of its last expression."""
    filename = where[0]
    statements, last = execution.split_last(parse(source, where), source)
    if statements:
        execution.run(execution.compile_statements(statements, filename), ns)
    if last is not None:
        return execution.run(execution.compile_expression(last, filename), ns)
    return None


# --- timing -----------------------------------------------------------------------------


def format_time(timespan, precision=3):
    """A duration as IPython shows it: "4.53 µs", "1.2 s", "1min 3s"."""
    if timespan >= 60.0:
        parts = [("d", 86400), ("h", 3600), ("min", 60), ("s", 1)]
        out, left = [], timespan
        for suffix, length in parts:
            value = int(left / length)
            if value > 0:
                left = left % length
                out.append("%s%s" % (value, suffix))
            if left < 1:
                break
        return " ".join(out)
    units = ["s", "ms", "\xb5s", "ns"]
    order = min(-int(math.floor(math.log10(timespan)) // 3), 3) if timespan > 0.0 else 3
    return "%.*g %s" % (precision, timespan * [1, 1e3, 1e6, 1e9][order], units[order])


def _cpu_clock():
    """A function giving (user, system) CPU seconds of the worker, to the
    microsecond where getrusage() is allowed."""
    try:
        import resource
        resource.getrusage(resource.RUSAGE_SELF)
    except (ImportError, OSError):
        import time
        return lambda: (time.process_time(), 0.0)

    def clock():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime, usage.ru_stime
    return clock


@line_magic("time")
@cell_magic("time")
def magic_time(shell, line, cell, where):
    """Time the execution of a Python statement or expression.

    %time statement         the CPU and wall-clock time of one run
    %%time                  the same for the whole cell

    The value of an expression (or of the cell's last expression) is the
    result, as without %time."""
    import time
    if cell is not None and line.strip():
        raise UsageError("Can't use statement directly after '%%time'!")
    source = cell if cell is not None else line
    filename = where[0]
    tree = parse(source, where)
    statements, last = execution.split_last(tree, source)
    if cell is None and len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        statements, last = [], tree.body[0]
    code = execution.compile_statements(statements, filename) if statements else None
    value_code = execution.compile_expression(last, filename) if last is not None else None
    cpu = _cpu_clock()
    wall0, cpu0 = time.time(), cpu()
    value = None
    if code is not None:
        execution.run(code, shell.user_ns)
    if value_code is not None:
        value = execution.run(value_code, shell.user_ns)
    cpu1, wall1 = cpu(), time.time()
    user, system = cpu1[0] - cpu0[0], cpu1[1] - cpu0[1]
    print("CPU times: user %s, sys: %s, total: %s"
          % (format_time(user), format_time(system), format_time(user + system)))
    print("Wall time: %s" % format_time(wall1 - wall0))
    return value


class TimeitResult:
    """What %timeit -o returns: loops, repeat, best, worst, all_runs, timings."""

    def __init__(self, loops, repeat, best, worst, all_runs, compile_time, precision):
        self.loops = loops
        self.repeat = repeat
        self.best = best
        self.worst = worst
        self.all_runs = all_runs
        self.compile_time = compile_time
        self._precision = precision
        self.timings = [dt / loops for dt in all_runs]

    @property
    def average(self):
        return math.fsum(self.timings) / len(self.timings)

    @property
    def stdev(self):
        mean = self.average
        return (math.fsum([(x - mean) ** 2 for x in self.timings]) / len(self.timings)) ** 0.5

    def __str__(self):
        return ("{mean} \xb1 {std} per loop (mean \xb1 std. dev. of {runs} run{rs}, "
                "{loops:,} loop{ls} each)").format(
            mean=format_time(self.average, self._precision),
            std=format_time(self.stdev, self._precision), runs=self.repeat,
            rs="" if self.repeat == 1 else "s", loops=self.loops,
            ls="" if self.loops == 1 else "s")

    def __repr__(self):
        return "<TimeitResult : " + str(self) + ">"


def _options(line, spec, multi=False):
    """Splits leading -x options off line; spec maps an option letter to
    True when it takes a value. Returns (options, rest). multi: the values
    of an option are a list, one for each time it is given."""
    opts = {}
    rest = line.lstrip()
    while rest.startswith("-"):
        m = re.match(r"-(\w)(\S*)\s*", rest)
        if not m or m.group(1) not in spec:
            break
        letter, attached = m.group(1), m.group(2)
        rest = rest[m.end():]
        if spec[letter]:
            if attached:
                value = attached
            else:
                value, _, rest = rest.partition(" ")
                rest = rest.lstrip()
            if multi:
                opts.setdefault(letter, []).append(value)
            else:
                opts[letter] = value
        else:
            opts[letter] = True
            if attached:
                rest = "-" + attached + " " + rest
    return opts, rest


_TIMEIT_TEMPLATE = ("def inner(_it, _timer):\n"
                    "    setup\n"
                    "    _t0 = _timer()\n"
                    "    for _i in _it:\n"
                    "        stmt\n"
                    "    _t1 = _timer()\n"
                    "    return _t1 - _t0\n")


@line_magic("timeit")
@cell_magic("timeit")
def magic_timeit(shell, line, cell, where):
    """Time a statement over many runs, as Python's timeit module does.

    %timeit [-n<N> -r<R> -p<P> -q -o -t -c] statement
    %%timeit [options] [setup statement]
    (the cell's body is timed)

    -n: runs of the statement per measurement (default: enough for 0.2 s)
    -r: measurements (default 7); -p: digits shown (default 3)
    -q: print nothing; -o: return a TimeitResult"""
    import gc
    import itertools
    import time
    opts, stmt = _options(line, {"n": True, "r": True, "p": True, "q": False, "o": False,
                                 "t": False, "c": False})
    if not stmt.strip() and cell is None:
        return None
    timer = time.perf_counter
    if "t" in opts:
        timer = time.time
    if "c" in opts:
        timer = time.process_time
    number = int(opts.get("n", 0))
    repeat = int(opts.get("r", 7))
    precision = int(opts.get("p", 3))
    filename, first = where
    if cell is None:
        setup_tree, stmt_tree = ast.parse("pass"), parse(stmt, where)
    else:
        setup_tree = parse(stmt, (filename, max(1, first - 1))) if stmt.strip() \
            else ast.parse("pass")
        stmt_tree = parse(cell, where)
    for tree in (setup_tree, stmt_tree):
        execution.compile_statements(tree.body, filename)  # errors as the code is written
    template = ast.parse(_TIMEIT_TEMPLATE)
    fn = template.body[0]
    loop = fn.body[2]
    loop.body = stmt_tree.body or [ast.Pass()]
    fn.body[0:1] = setup_tree.body or [ast.Pass()]
    ast.fix_missing_locations(template)
    t0 = time.perf_counter()
    code = compile(template, filename, "exec", dont_inherit=True)
    compile_time = time.perf_counter() - t0
    ns = {}
    exec(code, shell.user_ns, ns)
    inner = ns["inner"]

    def measure(n):
        it = itertools.repeat(None, n)
        was_enabled = gc.isenabled()
        gc.disable()
        try:
            return inner(it, timer)
        finally:
            if was_enabled:
                gc.enable()

    if number == 0:
        for index in range(10):
            number = 10 ** index
            if measure(number) >= 0.2:
                break
    all_runs = [measure(number) for _ in range(repeat)]
    best, worst = min(all_runs) / number, max(all_runs) / number
    result = TimeitResult(number, repeat, best, worst, all_runs, compile_time, precision)
    if "q" not in opts:
        if worst > 4 * best and best > 0 and worst > 1e-6:
            print("The slowest run took %0.2f times longer than the fastest. This could "
                  "mean that an intermediate result is being cached." % (worst / best))
        print(result)
        if compile_time > 0.1:
            print("Compiler time: %.2f s" % compile_time)
    return result if "o" in opts else None


# --- the namespace ------------------------------------------------------------------------


def who_ls(shell, types=()):
    hidden = shell.user_ns_hidden
    missing = object()
    out = [name for name in shell.user_ns
           if not name.startswith("_") and shell.user_ns[name] is not hidden.get(name, missing)]
    if types:
        out = [name for name in out if type(shell.user_ns[name]).__name__ in set(types)]
    return sorted(out)


@line_magic("who_ls")
def magic_who_ls(shell, line, cell, where):
    """The names of the variables you defined, sorted: %who_ls [type ...]"""
    return who_ls(shell, line.split())


@line_magic("who")
def magic_who(shell, line, cell, where):
    """Print the variables you defined: %who [type ...] (e.g. %who int str)"""
    names = who_ls(shell, line.split())
    if not names:
        print("No variables match your requested type." if line.strip()
              else "Interactive namespace is empty.")
        return
    count = 0
    for name in names:
        print(name + "\t", end=" ")
        count += 1
        if count > 8:
            count = 0
            print()
    print()


@line_magic("whos")
def magic_whos(shell, line, cell, where):
    """Like %who, with each variable's type and value."""
    names = who_ls(shell, line.split())
    if not names:
        print("No variables match your requested type." if line.strip()
              else "Interactive namespace is empty.")
        return
    values = [shell.user_ns[n] for n in names]
    ndarray = None
    if "numpy" in sys.modules:
        ndarray = getattr(sys.modules["numpy"], "ndarray", None)
    types = [type(v).__name__ for v in values]
    varwidth = max(max(map(len, names)), len("Variable")) + 3
    typewidth = max(max(map(len, types)), len("Type")) + 3
    print("Variable".ljust(varwidth) + "Type".ljust(typewidth) + " Data/Info\n"
          + "-" * (varwidth + typewidth + len("Data/Info") + 1))
    for name, value, tname in zip(names, values, types):
        print("{0:<{1}}{2:<{3}}".format(name, varwidth, tname, typewidth), end=" ")
        if tname in ("dict", "list", "tuple"):
            print("n=" + str(len(value)))
        elif ndarray is not None and isinstance(value, ndarray):
            shape = str(value.shape).replace(",", "").replace(" ", "x")[1:-1]
            nbytes = value.size * value.itemsize
            text = "%s: %s elems, type `%s`, %s bytes" % (shape, value.size, value.dtype,
                                                          nbytes)
            if nbytes < 100000:
                print(text)
            elif nbytes < 1048576:
                print(text, "(%s kb)" % (nbytes / 1024,))
            else:
                print(text, "(%s Mb)" % (nbytes / 1048576,))
        else:
            try:
                text = str(value)
            except Exception:
                text = "<object with id %d (str() failed)>" % id(value)
            text = text.replace("\n", "\\n")
            print(text if len(text) < 50 else text[:25] + "<...>" + text[-25:])


def _ask_yes_no(prompt):
    """The client's answer to a y/n question (no answer, or no stdin: no)."""
    while True:
        answer = streams.input(prompt).strip().lower()
        if answer in ("y", "yes"):
            return True
        if answer in ("", "n", "no"):
            return False


def _confirmed(opts, prompt="Once deleted, variables cannot be recovered. Proceed (y/[n])? "):
    """-f, or the client's yes; a client that takes no input counts as yes, as
    in IPython."""
    if "f" in opts:
        return True
    try:
        return _ask_yes_no(prompt)
    except streams.StdinNotImplementedError:
        return True
    except EOFError:
        return False


@line_magic("reset")
def magic_reset(shell, line, cell, where):
    """Remove the names you defined: %reset [-f] [-s] [in|out|dhist|array]

    -f   do not ask for confirmation
    -s   "soft": remove your variables only, keep the output history (Out)
    in, out, dhist, array: clear only the input history, the output history
    (Out, _N), the folder history (_dh), or the numpy arrays."""
    opts, rest = _options(line, {"f": False, "s": False})
    targets = rest.split()
    for target in targets:
        if target not in ("in", "out", "dhist", "array"):
            raise UsageError("%%reset: unknown part %r (in, out, dhist or array)" % target)
    if not _confirmed(opts):
        print("Nothing done.")
        return
    ns = shell.user_ns
    if not targets:
        if "s" in opts:
            for name in who_ls(shell):
                del ns[name]
        else:
            shell.reset(new_session=False)
        return
    if "in" in targets:
        ins = ns.get("In")
        if isinstance(ins, list):
            ins[:] = [""] * len(ins)
        for name in [n for n in ns if re.fullmatch(r"_i(\d+|i{0,2})", n)]:
            ns[name] = ""
    if "out" in targets:
        out = ns.get("Out")
        if isinstance(out, dict):
            out.clear()
        for name in [n for n in ns if re.fullmatch(r"_\d+", n)]:
            del ns[name]
        for name in ("_", "__", "___"):
            ns[name] = ""
        execution.install(ns)
    if "dhist" in targets and isinstance(ns.get("_dh"), list):
        del ns["_dh"][:]
    if "array" in targets and "numpy" in sys.modules:
        ndarray = sys.modules["numpy"].ndarray
        for name in who_ls(shell):
            if isinstance(ns[name], ndarray):
                del ns[name]


@line_magic("reset_selective")
def magic_reset_selective(shell, line, cell, where):
    """Remove the variables whose names match a regular expression:
    %reset_selective [-f] regex"""
    opts, rest = _options(line, {"f": False})
    if not rest.strip():
        raise UsageError("%reset_selective needs a regular expression: %reset_selective "
                         "[-f] regex")
    try:
        pattern = re.compile(rest.strip())
    except re.error as e:
        raise UsageError("%%reset_selective: %s" % e) from None
    if not _confirmed(opts):
        print("Nothing done.")
        return
    for name in who_ls(shell):
        if pattern.search(name):
            del shell.user_ns[name]


@line_magic("precision")
def magic_precision(shell, line, cell, where):
    """How floats are shown: %precision 3 (digits), %precision %.2e (a format);
    %precision alone: as Python shows them. numpy's print precision follows."""
    from . import pretty
    arg = line.strip()
    numpy = sys.modules.get("numpy")
    if not arg:
        fmt = "%r"
        pretty.set_float_format(None)
        if numpy is not None:
            numpy.set_printoptions(precision=8)
        return fmt
    if "%" in arg:
        fmt = arg
        try:
            pretty.set_float_format(fmt)
        except (TypeError, ValueError) as e:
            raise UsageError("%%precision: %r is not a format for floats (%s)" % (fmt, e)) \
                from None
        return fmt
    try:
        digits = int(arg)
        if digits < 0:
            raise ValueError
    except ValueError:
        raise UsageError("%%precision takes a number of digits or a format, not %r" % arg) \
            from None
    fmt = "%%.%if" % digits
    pretty.set_float_format(fmt)
    if numpy is not None:
        numpy.set_printoptions(precision=digits)
    return fmt


# --- errors and the debugger --------------------------------------------------------------------


@line_magic("xmode")
def magic_xmode(shell, line, cell, where):
    """How tracebacks are laid out: %xmode Plain|Context|Verbose|Minimal
    (%xmode alone: the next one)."""
    from . import tracebacks
    name = line.strip()
    if not name:
        modes = tracebacks.MODES
        name = modes[(modes.index(tracebacks.mode()) + 1) % len(modes)]
    try:
        print("Exception reporting mode: %s" % tracebacks.set_mode(name))
    except ValueError as e:
        raise UsageError("%%xmode: %s" % e) from None


@line_magic("pdb")
def magic_pdb(shell, line, cell, where):
    """Start the debugger on every error: %pdb on|off (%pdb alone toggles).
    The debugger asks for its commands on the client's stdin."""
    from . import debugger
    arg = line.strip().lower()
    if arg in ("on", "1", "true"):
        on = True
    elif arg in ("off", "0", "false"):
        on = False
    elif not arg:
        on = not debugger.automatic()
    else:
        raise UsageError("%%pdb takes on or off, not %r" % line.strip())
    debugger.set_automatic(on)
    print("Automatic pdb calling has been turned %s" % ("ON" if on else "OFF"))


@line_magic("debug")
@cell_magic("debug")
def magic_debug(shell, line, cell, where):
    """The debugger: %debug on the last error (post-mortem), or %debug statement
    (and a %%debug cell) run from its start in the debugger. It asks for its
    commands on the client's stdin."""
    from . import debugger
    source = cell if cell is not None else line
    if not source.strip():
        debugger.post_mortem(getattr(sys, "last_traceback", None))
        return None
    if not debugger._can_ask():
        print("%debug: the debugger needs a client that takes input, and the one that "
              "sent this cell does not (allow_stdin is false)", file=sys.stderr)
        return None
    import pdb
    code = execution.compile_statements(parse(source, where).body, where[0])
    pdb.Pdb(nosigint=True, readrc=False).run(code, shell.user_ns)
    return None


# --- profiling ------------------------------------------------------------------------------


@line_magic("prun")
@cell_magic("prun")
def magic_prun(shell, line, cell, where):
    """Run a statement under the profiler (cProfile) and print its table:
    %prun [-s key] [-l limit] [-r] [-q] [-T file] [-D file] statement
    %%prun [options] (the cell is profiled)

    -s   sort by key (default "time"; cumulative, calls, name, ...; repeatable)
    -l   print only limit rows (a number), or the rows matching a regex
    -r   return the pstats.Stats;  -q  print nothing
    -T   also write the table to file;  -D  dump the raw stats to file"""
    import cProfile
    import pstats
    opts, stmt = _options(line, {"s": True, "l": True, "r": False, "q": False, "T": True,
                                 "D": True}, multi=True)
    source = cell if cell is not None else stmt
    if not source.strip():
        raise UsageError("%prun needs a statement to profile")
    filename = where[0]
    statements, last = execution.split_last(parse(source, where), source)
    code = execution.compile_statements(statements + ([last] if last else []), filename)
    profiler = cProfile.Profile()
    execution.run(code, shell.user_ns, profiler)
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out).strip_dirs()
    stats.sort_stats(*(opts.get("s") or ["time"]))
    limits = []
    for limit in opts.get("l") or []:
        try:
            limits.append(float(limit) if "." in limit else int(limit))
        except ValueError:
            limits.append(limit)
    stats.print_stats(*limits)
    text = out.getvalue().rstrip("\n") + "\n"
    if "q" not in opts:
        print(text, end="")
    if opts.get("T"):
        path = _unquote(opts["T"][-1])
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
        print("\n*** Profile printout saved to text file %r." % path)
    if opts.get("D"):
        path = _unquote(opts["D"][-1])
        stats.dump_stats(path)
        print("\n*** Profile stats marshalled to file %r." % path)
    return stats if "r" in opts else None


# --- %store and %save ---------------------------------------------------------------------------


@line_magic("store")
def magic_store(shell, line, cell, where):
    """Keep variables across sessions, in the workspace (.sandpit/store):

    %store            list what is stored
    %store a b        store a and b
    %store -r [a b]   read back every stored variable (or a and b)
    %store -d a       forget a;   %store -z   forget them all
    %store a >file    write str(a) to file (>> appends)"""
    from . import storage
    opts, rest = _options(line, {"r": False, "d": False, "z": False})
    ws = shell.workspace
    names = rest.split()
    if "z" in opts:
        for name in storage.stored(ws):
            storage.delete(ws, name)
        return None
    if "d" in opts:
        if not names:
            raise UsageError("You must provide the variable to forget")
        for name in names:
            try:
                storage.delete(ws, name)
            except (KeyError, ValueError):
                raise UsageError("Can't delete variable '%s'" % name) from None
        return None
    if "r" in opts:
        for name in names or storage.stored(ws):
            try:
                shell.user_ns[name] = storage.load(ws, name)
            except (KeyError, ValueError):
                print("no stored variable %s" % name)
            except Exception as e:
                print("Unable to restore variable '%s', ignoring (%s: %s)"
                      % (name, type(e).__name__, e))
        return None
    if not names:
        listed = storage.stored(ws)
        print("Stored variables and their in-db values:")
        width = max([len(n) for n in listed] + [0])
        for name in listed:
            try:
                text = repr(storage.load(ws, name))
            except Exception as e:
                text = "<unavailable, %s>" % type(e).__name__
            print("%-*s -> %s" % (width, name, text[:50]))
        return None
    m = re.match(r"^(\w+)\s*(>>?)\s*(.+)$", rest.strip())
    if m:
        name, mode, path = m.groups()
        if name not in shell.user_ns:
            raise UsageError("Unknown variable '%s'" % name)
        path = _unquote(path)
        with open(path, "a" if mode == ">>" else "w", encoding="utf-8") as f:
            f.write(str(shell.user_ns[name]))
            f.write("\n")
        print("Writing '%s' (%s) to file '%s'." % (name, type(shell.user_ns[name]).__name__,
                                                  path))
        return None
    for name in names:
        if name not in shell.user_ns:
            raise UsageError("Unknown variable '%s'" % name)
        value = shell.user_ns[name]
        try:
            storage.store(ws, name, value)
        except ValueError as e:
            print("Warning: %s" % e)
            continue
        print("Stored '%s' (%s)" % (name, type(value).__name__))
    return None


@line_magic("save")
def magic_save(shell, line, cell, where):
    """Write the inputs of cells to a file: %save [-r] [-f] [-a] filename 1-3 5 ...

    The cells are numbered as in In; a name holding a string saves that
    string. .py is added to a name without it (.ipy with -r).
    -r  the cells as typed (IPython syntax kept); otherwise as Python runs them
    -f  overwrite without asking;  -a  append"""
    from . import inputs
    from . import storage
    opts, rest = _options(line, {"r": False, "f": False, "a": False})
    args = rest.split()
    if len(args) < 2:
        raise UsageError("%save needs a file name and what to save: %save [-r] [-f] [-a] "
                         "filename 1-3 5 ...")
    filename, spec = _unquote(args[0]), " ".join(args[1:])
    raw = "r" in opts
    if not filename.endswith((".py", ".ipy")):
        filename += ".ipy" if raw else ".py"
    if len(args) == 2 and isinstance(shell.user_ns.get(spec), str):
        code = shell.user_ns[spec]
    else:
        ins = shell.user_ns.get("In")
        ins = ins if isinstance(ins, list) else [""]
        try:
            numbers = storage.cell_numbers(spec, len(ins))
        except ValueError as e:
            raise UsageError("%%save: %s" % e) from None
        cells = [ins[n] if raw else inputs.transform_cell(ins[n]) for n in numbers]
        code = "\n".join(c.rstrip("\n") for c in cells)
    exists = os.path.isfile(filename)
    if exists and "f" not in opts and "a" not in opts:
        try:
            overwrite = _ask_yes_no("File `%s` exists. Overwrite (y/[N])? " % filename)
        except streams.StdinNotImplementedError:
            print("File `%s` exists. Use `%%save -f %s` to force overwrite"
                  % (filename, line.strip()))
            return None
        except EOFError:
            overwrite = False
        if not overwrite:
            print("Operation cancelled.")
            return None
    with open(filename, "a" if "a" in opts else "w", encoding="utf-8") as f:
        if not exists or "a" not in opts:
            f.write("# coding: utf-8\n")
        f.write(code if code.endswith("\n") else code + "\n")
    print("The following commands were written to file `%s`:" % filename)
    print(code)
    return None


# --- the file system and the environment ------------------------------------------------------


def _unquote(text):
    import shlex
    text = text.strip()
    try:
        parts = shlex.split(text)
    except ValueError:
        return text
    return " ".join(parts) if parts else ""


@line_magic("pwd")
def magic_pwd(shell, line, cell, where):
    """The current working folder."""
    return os.getcwd()


@line_magic("cd")
def magic_cd(shell, line, cell, where):
    """Change the working folder, as os.chdir() does.

    %cd folder     relative to the current folder, or absolute
    %cd            the workspace itself
    %cd -          the previous folder
    -q             do not print the new folder

    Files can be written only in the workspace and the temporary folder:
    elsewhere, the working folder is for reading."""
    opts, rest = _options(line, {"q": False})
    target = _unquote(rest)
    dh = shell.user_ns.get("_dh")
    if not target:
        target = shell.workspace
    elif target == "-":
        if not isinstance(dh, list) or len(dh) < 2:
            print("cd -: no previous folder")
            return
        target = str(dh[-2])
    path = os.path.realpath(os.path.join(os.getcwd(), os.path.expanduser(target)))
    try:
        os.chdir(path)
    except OSError as e:
        from . import guard
        guard.reword(e)
        print(e)
        print(os.getcwd())
        return
    if isinstance(dh, list):
        import pathlib
        dh.append(pathlib.Path(os.getcwd()))
    if "q" not in opts:
        print(os.getcwd())


@line_magic("env")
def magic_env(shell, line, cell, where):
    """Read or set environment variables.

    %env           all of them, as a dict
    %env VAR       the value of VAR
    %env VAR=value, %env VAR value    set VAR"""
    line = line.strip()
    if not line:
        return dict(os.environ)
    if "=" in line or " " in line:
        var, _, value = line.partition("=" if "=" in line else " ")
        var, value = var.strip(), value.strip()
        if not var or re.search(r"\s", var):
            raise UsageError("Invalid environment variable name: %r" % var)
        os.environ[var] = value
        print("env: %s=%s" % (var, value))
        return None
    try:
        return os.environ[line]
    except KeyError:
        raise UsageError("Environment does not have key: %s" % line) from None


@cell_magic("writefile", "file")
def magic_writefile(shell, line, cell, where):
    """Write the cell's body to a file: %%writefile [-a] filename
    (-a appends to the file)."""
    opts, rest = _options(line, {"a": False})
    if rest.startswith("--append"):
        opts["a"] = True
        rest = rest[len("--append"):]
    filename = _unquote(rest)
    if not filename:
        raise UsageError("%%writefile needs a file name: %%writefile [-a] filename")
    exists = os.path.exists(filename)
    if "a" in opts:
        print("Appending to %s" % filename)
    else:
        print("%s %s" % ("Overwriting" if exists else "Writing", filename))
    with open(filename, "a" if "a" in opts else "w", encoding="utf-8") as f:
        f.write(cell)


@line_magic("run")
def magic_run(shell, line, cell, where):
    """Run a Python file of the workspace: %run [-i] file.py [args]

    The file runs as __main__ with sys.argv set to its name and args; its
    variables then join yours. -i runs it in your namespace instead."""
    import shlex
    opts, rest = _options(line, {"i": False})
    try:
        args = shlex.split(rest)
    except ValueError as e:
        raise UsageError("%%run: %s" % e) from None
    if not args:
        raise UsageError("%run needs a file name: %run [-i] file.py [args]")
    path = args[0]
    if not os.path.exists(path) and os.path.exists(path + ".py"):
        path += ".py"
    if path.endswith(".ipynb"):
        raise UsageError("%run cannot run notebooks in sandpit; run .py files")
    with open(path, encoding="utf-8") as f:
        source = f.read()
    from . import inputs
    if path.endswith(".ipy"):
        source = inputs.transform_cell(source)
    full = os.path.abspath(path)
    code = compile(source, full, "exec", dont_inherit=True)
    if "i" in opts:
        ns = shell.user_ns
    else:
        ns = {"__name__": "__main__", "__file__": full, "__builtins__": builtins}
    saved = sys.argv
    sys.argv = args
    try:
        exec(code, ns)
    finally:
        sys.argv = saved
        if "i" not in opts:
            shell.user_ns.update((k, v) for k, v in ns.items() if not k.startswith("__"))


# --- matplotlib, extensions, configuration -------------------------------------------------

_BACKENDS = ["inline", "agg", "svg", "pdf", "ps", "widget", "ipympl", "notebook", "nbagg",
             "qt", "qt5", "qt6", "tk", "gtk3", "gtk4", "wx", "osx", "auto"]


@line_magic("matplotlib")
def magic_matplotlib(shell, line, cell, where):
    """Set up matplotlib: %matplotlib inline (the default in sandpit)

    Figures are shown below the cell that draws them. Other backends are
    accepted and also give inline figures: there is no display for windows
    in sandpit, and no widgets."""
    opts, rest = _options(line, {"l": False})
    if "l" in opts or rest.strip() == "--list":
        print("Available matplotlib backends: %s" % _BACKENDS)
        return
    backend = rest.strip()
    if "matplotlib" in sys.modules:
        _switch_to_inline()
    if backend and backend != "inline":
        print("sandpit shows matplotlib figures inline: the %r backend is not available, "
              "so inline is used" % backend, file=sys.stderr)


def _switch_to_inline():
    import importlib.util
    name = "module://sandpit.mpl_backend"
    try:
        if importlib.util.find_spec("sandpit.mpl_backend") is None:
            return
        mpl = sys.modules["matplotlib"]
        if mpl.get_backend() != name:
            if "matplotlib.pyplot" in sys.modules:
                sys.modules["matplotlib.pyplot"].switch_backend(name)
            else:
                mpl.use(name)
    except Exception as e:
        link.log("warning", "%%matplotlib could not switch to the inline backend: %r"
                    % (e,))


# Extensions that need IPython's own machinery and are accepted as no-ops.
ACCEPTED_EXTENSIONS = {"storemagic"}
# IPython's extensions that sandpit has its own version of.
OWN_EXTENSIONS = {"autoreload": "sandpit.autoreload"}


@line_magic("load_ext", "reload_ext")
def magic_load_ext(shell, line, cell, where):
    """Load an IPython extension: %load_ext module

    autoreload is sandpit's own (see %autoreload). Other modules get their
    load_ipython_extension(get_ipython()) called."""
    name = line.strip()
    if not name:
        raise UsageError("Missing module name.")
    if name in ACCEPTED_EXTENSIONS:
        return None
    import importlib
    module = importlib.import_module(OWN_EXTENSIONS.get(name, name))
    load = getattr(module, "load_ipython_extension", None)
    if load is None:
        raise UsageError("the module %s is not an IPython extension (it has no "
                         "load_ipython_extension function)" % name)
    load(shell)
    return None


@line_magic("unload_ext")
def magic_unload_ext(shell, line, cell, where):
    """Unload an IPython extension: %unload_ext module"""
    name = line.strip()
    module = sys.modules.get(OWN_EXTENSIONS.get(name, name))
    unload = getattr(module, "unload_ipython_extension", None)
    if unload is not None:
        unload(shell)


@line_magic("autoreload")
def magic_autoreload(shell, line, cell, where, name="autoreload"):
    """Reload changed modules of the workspace: %autoreload 2 before each cell,
    1 only those named by %aimport, 0 never; %autoreload alone: now."""
    from . import autoreload
    try:
        return getattr(autoreload, "magic_" + name)(shell, line)
    except ValueError as e:
        raise UsageError(str(e)) from None


@line_magic("aimport")
def magic_aimport(shell, line, cell, where):
    """Mark modules for %autoreload 1: %aimport mod[, mod2]; -mod excludes one."""
    return magic_autoreload(shell, line, cell, where, "aimport")


@line_magic("config")
def magic_config(shell, line, cell, where):
    """Set an IPython option: %config Class.option = value

    InlineBackend options (figure_format, ...) go to sandpit's figures and
    Completer.use_jedi to its completion; others are kept but have no effect."""
    line = line.strip()
    if not line:
        print("Available objects for config:\n    InlineBackend\n    IPCompleter")
        return
    m = re.match(r"^([A-Za-z_]\w*)\.([A-Za-z_]\w*)\s*=\s*(.+)$", line)
    if not m:
        if re.match(r"^[A-Za-z_]\w*$", line):
            return dict(shell.config.get(line, {}))
        raise UsageError("%%config takes Class.option = value, not %r" % line)
    cls, option, expr = m.groups()
    try:
        value = ast.literal_eval(expr)
    except (ValueError, SyntaxError):
        value = eval(expr, shell.user_ns)
    shell.config.setdefault(cls, {})[option] = value
    if cls == "InlineBackend" and _configure_figures(option, value):
        return None
    if not (cls in ("Completer", "IPCompleter") and option == "use_jedi"):
        print("sandpit has no IPython option %s.%s: it is kept in get_ipython().config "
              "but has no effect" % (cls, option), file=sys.stderr)
    return None


def _configure_figures(option, value):
    """Passes an InlineBackend option to sandpit's figures; False if it has no
    such option."""
    import inspect
    from . import figures
    configure = getattr(figures, "configure", None)
    if configure is None:
        return False
    if option == "figure_formats" and isinstance(value, (set, list, tuple)):
        known = list(getattr(figures, "FIGURE_FORMATS", ())) or sorted(value)
        chosen = [f for f in known if f in value]
        option, value = "figure_format", (chosen or sorted(value))[0]
    if option not in inspect.signature(configure).parameters:
        return False
    try:
        configure(**{option: value})
    except (TypeError, ValueError) as e:
        raise UsageError("InlineBackend.%s: %s" % (option, e)) from None
    return True


# --- help ----------------------------------------------------------------------------------


@line_magic("pinfo")
def magic_pinfo(shell, line, cell, where):
    """What an object is: obj? or %pinfo obj"""
    from . import inspection
    inspection.pinfo(line, 0, shell.user_ns, find)


@line_magic("pinfo2")
def magic_pinfo2(shell, line, cell, where):
    """What an object is, with its source: obj?? or %pinfo2 obj"""
    from . import inspection
    inspection.pinfo(line, 1, shell.user_ns, find)


@line_magic("psearch")
def magic_psearch(shell, line, cell, where):
    """Names that match a wildcard pattern: %psearch np.*lin* (or np.*lin*?)"""
    from . import inspection
    inspection.psearch(line.strip(), shell.user_ns)


def _page_part(shell, line, part):
    from . import inspection
    found = inspection.find_object(line.strip(), shell.user_ns, find)
    if not found.get("found"):
        print("Object `%s` not found." % line.strip())
        return
    obj = found["obj"]
    if part == "doc":
        text = inspection.getdoc(obj)
    elif part == "source":
        text = inspection.getsource(obj, line.strip())
    else:
        text = inspection._getdef(obj, line.strip().split(".")[-1])
    if not text:
        print("No %s found for %s" % ({"doc": "documentation", "source": "source",
                                        "def": "definition header"}[part], line.strip()))
        return
    inspection.page(text)


@line_magic("pdoc")
def magic_pdoc(shell, line, cell, where):
    """The docstring of an object: %pdoc obj"""
    _page_part(shell, line, "doc")


@line_magic("pdef")
def magic_pdef(shell, line, cell, where):
    """The call signature of an object: %pdef obj"""
    _page_part(shell, line, "def")


@line_magic("psource")
def magic_psource(shell, line, cell, where):
    """The source of an object: %psource obj"""
    _page_part(shell, line, "source")


class MagicListing:
    """What %lsmagic returns."""

    def __repr__(self):
        line = "  ".join("%" + n for n in sorted(LINE, key=str.lower))
        cell = "  ".join("%%" + n for n in sorted(CELL, key=str.lower))
        refused = "  ".join(["!cmd"] + ["%" + n for n in sorted(PACKAGE_LINE)]
                            + ["%%" + n for n in sorted(SHELL_CELL - {"!"})])
        return ("Available line magics:\n%s\n\nAvailable cell magics:\n%s\n\n"
                "Disabled in this kernel (no shell, no network):\n%s\n\n"
                "The %% prefix is needed for line magics." % (line, cell, refused))


@line_magic("lsmagic")
def magic_lsmagic(shell, line, cell, where):
    """List the magics sandpit supports."""
    return MagicListing()


@line_magic("magic")
def magic_magic(shell, line, cell, where):
    """What the magics do."""
    from . import inspection
    parts = []
    for kind, table in (("%", LINE), ("%%", CELL)):
        seen = set()
        for name in sorted(table, key=str.lower):
            fn = table[name]
            if fn in seen:
                continue
            seen.add(fn)
            doc = inspection.getdoc(fn) or ""
            parts.append(kind + name + ":\n    " + doc.replace("\n", "\n    "))
    inspection.page("\n\n".join(parts))


# --- rich output from cell magics ------------------------------------------------------------


def _publish(mime, text, plain, metadata=None):
    request.publish("display_data", {"data": {"text/plain": plain, mime: text},
                                     "metadata": metadata or {}, "transient": {}})


@cell_magic("html", "HTML")
def magic_html(shell, line, cell, where):
    """Show the cell as HTML: %%html [--isolated]"""
    isolated = "--isolated" in line.split() or "-i" in line.split()
    _publish("text/html", cell, "<IPython.core.display.HTML object>",
             {"text/html": {"isolated": True}} if isolated else None)


@cell_magic("markdown")
def magic_markdown(shell, line, cell, where):
    """Show the cell as Markdown."""
    _publish("text/markdown", cell, "<IPython.core.display.Markdown object>")


@cell_magic("javascript", "js")
def magic_javascript(shell, line, cell, where):
    """Run the cell as JavaScript in the notebook (where the client allows it)."""
    _publish("application/javascript", cell, "<IPython.core.display.Javascript object>")


@cell_magic("latex")
def magic_latex(shell, line, cell, where):
    """Show the cell as LaTeX (rendered by the client's MathJax)."""
    _publish("text/latex", cell, "<IPython.core.display.Latex object>")


@cell_magic("svg", "SVG")
def magic_svg(shell, line, cell, where):
    """Show the cell as an SVG image."""
    _publish("image/svg+xml", cell.strip(), "<IPython.core.display.SVG object>")


# --- %%capture -------------------------------------------------------------------------------


class RichOutput:
    """One captured display: data and metadata, as display_data carries them."""

    def __init__(self, data, metadata=None, transient=None, update=False):
        self.data = data
        self.metadata = metadata or {}
        self.transient = transient or {}
        self.update = update

    def display(self):
        request.publish("update_display_data" if self.update else "display_data",
                        {"data": self.data, "metadata": self.metadata,
                         "transient": self.transient})

    def _repr_mimebundle_(self, include=None, exclude=None):
        return self.data, self.metadata

    def __repr__(self):
        return self.data.get("text/plain", "<RichOutput>")


class CapturedIO:
    """What %%capture stores: stdout, stderr and outputs; show() (or calling
    it) shows them."""

    def __init__(self, stdout, stderr, outputs=None):
        self._stdout = stdout
        self._stderr = stderr
        self.outputs = outputs if outputs is not None else []

    def __str__(self):
        return self.stdout

    @property
    def stdout(self):
        return self._stdout.getvalue() if self._stdout is not None else ""

    @property
    def stderr(self):
        return self._stderr.getvalue() if self._stderr is not None else ""

    def show(self):
        if self.stdout:
            sys.stdout.write(self.stdout)
        if self.stderr:
            sys.stderr.write(self.stderr)
        for output in self.outputs:
            output.display()

    __call__ = show


class Capture(request.CaptureTarget):
    """Captures what this context writes to stdout and stderr, and the displays
    it publishes, for the block. The worker's streams ask the context's capture
    target (sandpit.request), so what a subshell or another request writes
    meanwhile is not captured, and nothing process-wide is swapped. A stream
    that is not the worker's (in tests of the runtime, or one that the cell
    replaced) is swapped for the block instead."""

    def __init__(self, stdout=True, stderr=True, display=True):
        self.io = CapturedIO(io.StringIO() if stdout else None,
                             io.StringIO() if stderr else None)
        self._display = display
        self._buffers = {1: self.io._stdout, 2: self.io._stderr}
        self._active = False

    def __enter__(self):
        self._swapped = {}
        for fd, name in ((1, "stdout"), (2, "stderr")):
            if self._buffers[fd] is not None \
                    and not isinstance(getattr(sys, name), streams.OutStream):
                self._swapped[name] = getattr(sys, name)
                setattr(sys, name, self._buffers[fd])
        self._token = request.begin_capture(self)
        self._active = True
        return self.io

    def __exit__(self, *exc):
        self._active = False
        request.end_capture(self._token)
        for name, stream in self._swapped.items():
            setattr(sys, name, stream)
        return False

    def write(self, fd, data):
        buffer = self._buffers.get(fd) if self._active else None
        if buffer is None:
            return False
        if not isinstance(data, str):
            data = bytes(data).decode("utf-8", "replace")
        buffer.write(data)
        return True

    def take(self, frame, buffers):
        if not (self._active and self._display):
            return False
        kind = frame.get("msg_type")
        content = frame.get("content") or {}
        if kind in ("display_data", "update_display_data"):
            self.io.outputs.append(RichOutput(content.get("data", {}),
                                              content.get("metadata"),
                                              content.get("transient"),
                                              kind == "update_display_data"))
            return True
        if kind == "clear_output":
            self.io.outputs.clear()
            return True
        return False


@cell_magic("capture")
def magic_capture(shell, line, cell, where):
    """Run the cell, capturing stdout, stderr and displays:
    %%capture [--no-stdout] [--no-stderr] [--no-display] [name]

    With a name, the captured output is kept in that variable: name.stdout,
    name.stderr, name.outputs, and name.show() to show it."""
    args = line.split()
    name = next((a for a in args if not a.startswith("-")), None)
    capture = Capture("--no-stdout" not in args, "--no-stderr" not in args,
                      "--no-display" not in args)
    try:
        with capture as captured:
            value = run_body(cell, where, shell.user_ns)
            if value is not None and capture._display:
                from . import display
                data, metadata = display.format_object(value)
                captured.outputs.append(RichOutput(data, metadata))
            try:
                from . import figures
                figures.show_open_figures()
            except Exception as e:
                link.log("warning", "could not show the figures of a %%%%capture cell: "
                            "%r" % (e,))
    finally:
        if name:
            shell.user_ns[name] = capture.io
