"""Reading cells: whether a cell is complete, as IPython decides it.

check_complete() answers is_complete_request: "complete" (run it),
"incomplete" with the indent of the next line (a console waits for more),
"invalid" (it will not compile whatever follows). A compound statement stays
incomplete until a blank line ends it, as at IPython's prompt.
"""

import codeop
import warnings


def transform_cell(code):
    """The Python source to run for a cell (IPython syntax is translated here)."""
    return code


def _indent_of(line):
    return len(line) - len(line.lstrip(" \t"))


def check_complete(source):
    """Returns (status, indent) with indent a string of spaces."""
    if not source.strip():
        return "complete", ""
    lines = source.splitlines()
    first = source.lstrip()
    if first[:1] in ("%", "!", "?") or source.rstrip().endswith("?"):
        # magics, shell escapes and help requests are one-liners unless a cell magic
        if not first.startswith("%%"):
            return "complete", ""
        return ("complete", "") if source.endswith("\n") else ("incomplete", "")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            code = codeop.compile_command(source, "<cell>", "exec")
        except (SyntaxError, OverflowError, ValueError, TypeError):
            return "invalid", ""
    last = lines[-1] if lines else ""
    if code is None:
        if last.rstrip().endswith(":"):
            return "incomplete", " " * (_indent_of(last) + 4)
        return "incomplete", " " * _indent_of(last) if _indent_of(last) else ""
    if source.endswith("\n"):
        return "complete", ""
    if _indent_of(last) > 0 and len(lines) > 1:
        return "incomplete", " " * _indent_of(last)
    return "complete", ""
