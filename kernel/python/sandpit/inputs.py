"""Layer 4, inputs: IPython's syntax translated to Python; is a cell complete?

transform_cell() turns the IPython syntax that notebooks are full of into
plain Python calls on get_ipython(), as IPython's input transformers do:

    %time f(x)          get_ipython().run_line_magic('time', 'f(x)')
    %%writefile a.txt   get_ipython().run_cell_magic('writefile', 'a.txt', '...')
    x = %pwd            x = get_ipython().run_line_magic('pwd', '')
    !ls, x = !ls        get_ipython().system('ls'), x = get_ipython().getoutput('ls')
    obj?, obj??, ?obj   get_ipython().run_line_magic('pinfo', 'obj')  (pinfo2 for ??)
    exit, quit          get_ipython().autocall('exit')  (called, as IPython does)

plus IPython's clean-ups: a cell indented as a whole is dedented, and pasted
">>> " or "In [1]: " prompts are removed. The hard part is keeping line
numbers: the runtime shows tracebacks against the cell as typed, so every
source line gives exactly one line out. A cell magic's body becomes a string
argument on the magic's line, followed by as many empty lines as the body had
(the magic compiles the body itself, padded back to its real line numbers).

Only a line that starts a statement is looked at: a small lexer follows
strings, brackets and backslash continuations, so "%" in a format string or
"!" in "!=" is never touched. A cell without "%", "!", "?", "exit" or "quit"
and without leading white space is returned as it is, after five substring
scans; one where no line starts with an escape, ends with "?", has "= %" or
is only exit or quit goes after one regular expression more.

check_complete() answers is_complete_request as IPython's
TransformerManager.check_complete does.
"""

import re


class _Pattern:
    """A regular expression compiled when first used: most cells take the
    fast path of transform_cell() and need none, and compiling these six took
    some 2.5 ms of the first cell."""

    def __init__(self, pattern, flags=0):
        self._args = (pattern, flags)
        self._compiled = None

    def __getattr__(self, name):  # match, search, sub: the compiled pattern's
        if self._compiled is None:
            self._compiled = re.compile(*self._args)
        return getattr(self._compiled, name)


# A line that could hold IPython syntax: an escape first, a ? last, "= %"/"= !",
# or exit or quit alone.
_CANDIDATE_LINE = _Pattern(r"^[ \t]*[%!?]|\?[ \t]*(?:#.*)?$|=[ \t]*[%!]"
                           r"|^[ \t]*(?:exit|quit)[ \t]*;?[ \t]*(?:#.*)?$", re.M)
_AUTOCALL = _Pattern(r"^(exit|quit)[ \t]*;?$")
_PROMPT_CLASSIC = _Pattern(r"^(>>>|\.\.\.)( |$)")
_PROMPT_IPYTHON = _Pattern(r"^(In \[\d+\]: |\s*\.\.\.+: )")
_HELP_END = _Pattern(r"(%{0,2}[A-Za-z_*][\w*]*(?:\.[A-Za-z_*][\w*]*)*)(\?\??)$")
_ASSIGN = _Pattern(
    r"^([A-Za-z_][\w.]*(?:\[[^\]=]*\])?(?:\s*,\s*[A-Za-z_][\w.]*(?:\[[^\]=]*\])?)*)"
    r"\s*=\s*([%!])(.*)$")


class Lexer:
    """Follows strings, brackets and comments through a cell, line by line.

    feed(line) reads one physical line (without its line ending) and
    returns the offset where its comment starts (len(line) if none). Between
    lines, at_statement_start says whether the next line starts a statement.
    Offsets (string_start, brackets) count from the start of the cell: the
    caller adds each line's length, ending included, to base.
    """

    def __init__(self):
        self.quote = None         # the open string's quote, "'" or '"""' ...
        self.string_start = None  # offset of the open string's first character
        self.brackets = []        # offsets of the open brackets, innermost last
        self.continued = False    # the last line ended with a backslash
        self.base = 0             # offset of the line being fed, in the cell

    @property
    def at_statement_start(self):
        return self.quote is None and not self.brackets and not self.continued

    def feed(self, line, partial=False):
        """partial: line is only the part before a cursor, so an open string
        stays open."""
        n = len(line)
        i = 0
        comment = n
        escaped_eol = False
        while i < n:
            c = line[i]
            if self.quote is not None:
                if c == "\\":
                    if i + 1 >= n:
                        escaped_eol = True
                    i += 2
                    continue
                if line.startswith(self.quote, i):
                    i += len(self.quote)
                    self.quote = None
                    continue
                i += 1
                continue
            if c == "#":
                comment = i
                break
            if c == "'" or c == '"':
                self.quote = c * 3 if line.startswith(c * 3, i) else c
                self.string_start = self.base + i + len(self.quote)
                i += len(self.quote)
                continue
            if c in "([{":
                self.brackets.append((c, self.base + i))
            elif c in ")]}":
                if self.brackets:
                    self.brackets.pop()
            i += 1
        if partial:
            return comment
        if self.quote is not None and len(self.quote) == 1 and not escaped_eol:
            self.quote = None  # an unterminated string ends with its line
        self.continued = (self.quote is None and comment == n
                          and line.endswith("\\"))
        return comment


def _split(code):
    """Lines of code as (text, ending) pairs."""
    out = []
    for raw in code.splitlines(True):
        text = raw.rstrip("\r\n")
        out.append((text, raw[len(text):]))
    return out


def _strip_prompts(lines):
    """Removes pasted >>> / ... or In [n]: / ...: prompts, as IPython does."""
    first = next((t for t, _ in lines if t.strip()), "")
    for pattern in (_PROMPT_CLASSIC, _PROMPT_IPYTHON):
        if pattern.match(first):
            return [(pattern.sub("", t, count=1), e) for t, e in lines]
    return lines


def _dedent_leading(lines):
    """A cell indented as a whole runs as if it were not (IPython's leading_indent)."""
    first = next((t for t, _ in lines if t.strip()), "")
    prefix = first[:len(first) - len(first.lstrip(" \t"))]
    if not prefix:
        return lines
    return [(t[len(prefix):] if t.startswith(prefix) else t, e) for t, e in lines]


def _call(method, *args):
    return "get_ipython().%s(%s)" % (method, ", ".join(repr(a) for a in args))


def _magic_call(content, assign=""):
    """The call for a line magic; content is what follows the % sign."""
    content = content.rstrip()
    quiet = content.endswith(";")
    if quiet:
        content = content[:-1].rstrip()
    name, _, args = content.partition(" ")
    return assign + _call("run_line_magic", name, args) + (";" if quiet else "")


def _help_call(target, marks):
    return _call("run_line_magic", "pinfo2" if marks == "??" else "pinfo", target)


def _transform_line(text, comment):
    """The Python for one line that starts a statement; None if it is Python already."""
    stripped = text.lstrip()
    indent = text[:len(text) - len(stripped)]
    code = text[:comment].rstrip()
    if code.endswith("?"):
        m = _HELP_END.search(code)
        if m:
            name = m.group(1)
            if "*" in name:
                return indent + _call("run_line_magic", "psearch", name)
            return indent + _help_call(name, m.group(2))
        if code.strip() in ("?", "??"):
            return indent + _call("run_line_magic", "pinfo", "")
    if stripped.startswith("%"):
        return indent + _magic_call(stripped[1:])
    m = _AUTOCALL.match(code.strip())
    if m:  # IPython calls exit and quit when a line is only their name
        return indent + _call("autocall", m.group(1)) + (";" if code.rstrip().endswith(";")
                                                          else "")
    if stripped.startswith("!!"):
        return indent + _call("getoutput", stripped[2:].rstrip())
    if stripped.startswith("!"):
        return indent + _call("system", stripped[1:].rstrip())
    if stripped.startswith("?"):
        marks = "??" if stripped.startswith("??") else "?"
        return indent + _help_call(stripped[len(marks):].strip(), marks)
    if "=" in code and ("%" in code or "!" in code):
        m = _ASSIGN.match(stripped)
        if m:
            lhs, escape, rest = m.groups()
            assign = lhs + " = "
            if escape == "%":
                return indent + _magic_call(rest, assign)
            return indent + assign + _call("getoutput", rest.strip())
    return None


def _cell_magic(lines, first):
    """A cell whose first line is %%name: the call, then empty lines."""
    text, ending = lines[first]
    name, _, args = text.strip()[2:].partition(" ")
    body = "".join(t + e for t, e in lines[first + 1:])
    if body and not body.endswith("\n"):
        body += "\n"
    out = [("", e) for _, e in lines[:first]]
    out.append((_call("run_cell_magic", name, args.strip(), body), ending))
    out += [("", e or "") for _, e in lines[first + 1:]]
    return "".join(t + e for t, e in out)


def transform_cell(code):
    """The Python source to run for a cell: the same number of lines, IPython
    syntax translated to calls on get_ipython()."""
    if ("%" not in code and "!" not in code and "?" not in code and "exit" not in code
            and "quit" not in code and not code[:1].isspace()
            and not code.startswith((">>>", "In ["))):
        return code
    if (_CANDIDATE_LINE.search(code) is None and not code[:1].isspace()
            and not code.startswith((">>>", "In ["))):
        return code
    lines = _dedent_leading(_strip_prompts(_split(code)))
    first = next((i for i, (t, _) in enumerate(lines) if t.strip()), None)
    if first is None:
        return code
    if lines[first][0].startswith("%%"):
        alone = not any(t.strip() for t, _ in lines[first + 1:])
        if not (alone and lines[first][0].rstrip().endswith("?")):  # %%time? is help
            return _cell_magic(lines, first)
    lexer = Lexer()
    out = []
    i = 0
    while i < len(lines):
        text, ending = lines[i]
        start = lexer.at_statement_start
        comment = lexer.feed(text)
        lexer.base += len(text) + len(ending)
        new = None
        if start and text.strip():
            new = _transform_line(text, comment)
        if new is not None and lexer.continued and text.lstrip().startswith(("%", "!")):
            # a magic or shell line continued with backslashes: join it, then pad
            joined, extra = text[:-1], []
            while lexer.continued and i + 1 < len(lines):
                i += 1
                nxt, nxt_end = lines[i]
                lexer.continued = nxt.endswith("\\")
                joined += " " + (nxt[:-1] if lexer.continued else nxt).strip()
                extra.append(("", nxt_end))
            new = _transform_line(joined, len(joined))
            out.append((new, ending))
            out += extra
            i += 1
            continue
        out.append((new if new is not None else text, ending))
        i += 1
    return "".join(t + e for t, e in out)


# --- is_complete ---------------------------------------------------------------------


def _last_indent(lines):
    m = re.match(r"^[ \t]+", lines[-1])
    return len(m.group(0).replace("\t", " " * 4)) if m else 0


def _tokens_by_line(lines):
    """Tokens grouped by logical line (IPython's make_tokens_by_line)."""
    import tokenize
    by_line = [[]]
    depth = 0
    try:
        for tok in tokenize.generate_tokens(iter(lines).__next__):
            by_line[-1].append(tok)
            if tok.type == tokenize.NEWLINE or (tok.type == tokenize.NL and depth <= 0):
                by_line.append([])
            elif tok.string in ("(", "[", "{"):
                depth += 1
            elif tok.string in (")", "]", "}") and depth > 0:
                depth -= 1
    except (tokenize.TokenError, SyntaxError):
        pass  # the cell ends inside a string or brackets
    if not by_line[-1]:
        by_line.pop()
    return by_line


def _sunken(tokens):
    depth = 0
    for tok in tokens:
        if tok.string in ("(", "[", "{"):
            depth += 1
        elif tok.string in (")", "]", "}"):
            depth -= 1
            if depth < 0:
                return True
    return False


def _command_compiler():
    """codeop's compiler with top-level await allowed, as in a cell."""
    import ast
    import codeop
    cc = codeop.CommandCompiler()
    cc.compiler.flags |= ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    return cc


def check_complete(source):
    """Returns (status, indent): status "complete", "incomplete" (indent is the
    next line's indentation, a string of spaces) or "invalid" (indent "")."""
    status, spaces = _check_complete(source)
    return status, " " * spaces if status == "incomplete" and spaces else ""


def _check_complete(cell):
    import tokenize
    import warnings
    ends_with_newline = False
    for ch in reversed(cell):
        if ch == "\n":
            ends_with_newline = True
            break
        if ch.strip():
            break
    if not ends_with_newline:
        cell += "\n"
    lines = cell.splitlines(True)
    if not lines or not cell.strip():
        return "complete", None
    cleaned = _dedent_leading(_strip_prompts(_split(cell)))
    body = [t for t, _ in cleaned if t.strip()]
    if body and body[0].startswith("%%"):
        # a cell magic ends with an empty line, whatever its body
        return ("incomplete", _last_indent(lines)) if lines[-1].strip() else ("complete", None)
    try:
        lines = transform_cell(cell).splitlines(True)
    except Exception:
        return "invalid", None
    if not lines:
        return "complete", None
    by_line = _tokens_by_line(lines)
    if len(lines) == 1 and by_line and _sunken(by_line[0]):
        return "invalid", None
    if not by_line:
        return "incomplete", _last_indent(lines)
    if by_line[-1][-1].type != tokenize.ENDMARKER:
        return "incomplete", _last_indent(lines)  # inside a string or brackets
    ends = {tokenize.NEWLINE, tokenize.COMMENT, tokenize.ENDMARKER}
    last_line = None
    if len(by_line) > 1 and {t.type for t in by_line[-1]} in (
            {tokenize.DEDENT, tokenize.ENDMARKER}, {tokenize.ENDMARKER}):
        last_line = by_line.pop()
    while by_line[-1] and by_line[-1][-1].type in ends:
        by_line[-1].pop()
    if not by_line[-1]:
        return "incomplete", _last_indent(lines)
    if by_line[-1][-1].string == ":":
        ix = 0
        while by_line[-1][ix].type in (tokenize.INDENT, tokenize.DEDENT):
            ix += 1
        return "incomplete", by_line[-1][ix].start[1] + 4
    if by_line[-1][0].line.endswith("\\"):
        return "incomplete", None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", SyntaxWarning)
            compiled = _command_compiler()("".join(lines), "<cell>", "exec")
    except (SyntaxError, OverflowError, ValueError, TypeError, MemoryError, SyntaxWarning):
        return "invalid", None
    if compiled is None:
        return "incomplete", _last_indent(lines)
    if last_line and last_line[0].type == tokenize.DEDENT:
        if ends_with_newline:
            return "complete", None
        return "incomplete", _last_indent(lines)
    return "complete", None
