"""Layer 4, history: the %history magic, on the history the supervisor keeps.

The supervisor keeps the cells of every session in the user's database (out
of the worker's reach, and outliving it); link.history() asks it. The magic
reads its line as IPython's does, and prints what IPython prints:

    %history                   this session's inputs
    %history 1-4 6 ~1/ ~2/1-3  lines 1 to 4 and 6 of this session, the whole
                               previous session, lines 1 to 3 of the one before
    %history -n                with line numbers ("session/line" for others)
    %history -o  -p  -r  -t    with outputs, with >>> prompts, raw, translated
    %history -g PATTERN        every session searched (a glob, *PATTERN*); -u
                               shows each input once; with a range, its lines
                               that match
    %history -l [N]            the last N inputs of all sessions (10), not
                               counting this one
    %history -f FILE           into a new file of the workspace instead

sandpit keeps the input as it was typed: -r and -t give the same text.
"""

import fnmatch
import os
import re
import sys

from . import link
from . import magics

# IPython's syntax of a range: [~S/]A[-[~S/]B] or [~S/]A[:[~S/]B]; "-" takes B
# in, ":" leaves it out, "~S/" counts sessions back from this one.
_RANGE = re.compile(r"""((?P<startsess>~?\d+)/)?
                        (?P<start>\d+)?
                        ((?P<sep>[\-:])
                         ((?P<endsess>~?\d+)/)?
                         (?P<end>\d+))?
                        $""", re.VERBOSE)

_UNSET = object()


def ranges(text):
    """(session, start, stop) for each range in text, as IPython's
    extract_hist_ranges gives them: session 0 is this one and negative counts
    back; stop is the line after the last, None to the end of the session.
    A word that is not a range is skipped."""
    if not text.strip():
        yield (0, 1, None)
        return
    for word in text.split():
        m = _RANGE.match(word)
        if not m:
            continue
        start = m.group("start")
        if start:
            start = int(start)
            end = int(m.group("end")) if m.group("end") else start + 1
        elif m.group("startsess"):
            start, end = 1, None  # the whole session
        else:
            continue
        if m.group("sep") == "-" and end is not None:
            end += 1
        startsess = int((m.group("startsess") or "0").replace("~", "-"))
        endsess = int((m.group("endsess") or m.group("startsess") or "0").replace("~", "-"))
        if endsess < startsess:
            raise magics.UsageError("%%history: the range %s ends in a session before the "
                                    "one it starts in" % word)
        if endsess == startsess:
            yield (startsess, start, end)
            continue
        yield (startsess, start, None)
        for session in range(startsess + 1, endsess):
            yield (session, 1, None)
        yield (endsess, 1, end)


def _parser():
    # argparse (with gettext) is loaded by the first %history, not with the
    # other magics.
    import argparse

    class _Parser(argparse.ArgumentParser):
        def error(self, message):
            raise magics.UsageError("%%history: %s" % message)

    p = _Parser(prog="%history", add_help=False)
    p.add_argument("-n", dest="numbers", action="store_true")
    p.add_argument("-o", dest="output", action="store_true")
    p.add_argument("-p", dest="prompts", action="store_true")
    p.add_argument("-t", dest="raw", action="store_false")
    p.add_argument("-r", dest="raw", action="store_true")
    p.add_argument("-f", dest="filename")
    p.add_argument("-g", dest="pattern", nargs="*", default=None)
    p.add_argument("-l", dest="limit", type=int, nargs="?", default=_UNSET)
    p.add_argument("-u", dest="unique", action="store_true")
    p.add_argument("range", nargs="*")
    p.set_defaults(raw=False)
    return p


def _ask(query):
    try:
        return link.history(query)
    except link.HistoryError as e:
        raise magics.UsageError("%%history: %s" % e) from None


def _queries(args):
    """The queries that answer args, and whether line numbers are shown and
    which glob filters a range's lines."""
    range_pattern = None
    numbers = args.numbers
    common = {"raw": args.raw, "output": args.output}
    if args.pattern is not None and not args.range:
        pattern = "*%s*" % " ".join(args.pattern) if args.pattern else "*"
        limit = None if args.limit is _UNSET else args.limit
        return [dict(common, hist_access_type="search", pattern=pattern,
                     unique=args.unique, n=limit)], True, None, False
    if args.limit is not _UNSET:
        n = 10 if args.limit is None else args.limit
        if n < 0:
            raise magics.UsageError("%history: -l takes a number of lines, at least 0")
        # One more, and the latest (this very %history) left out, as IPython does.
        return [dict(common, hist_access_type="tail", n=n + 1)], numbers, None, True
    if args.pattern:
        range_pattern = "*%s*" % " ".join(args.pattern)
        numbers = True
    return ([dict(common, hist_access_type="range", session=s, start=a, stop=b or 0)
             for s, a, b in ranges(" ".join(args.range))], numbers, range_pattern, False)


def magic_history(shell, line, cell, where):
    import shlex
    try:
        words = shlex.split(line)
    except ValueError as e:
        raise magics.UsageError("%%history: %s" % e) from None
    args = _parser().parse_args(words)
    queries, numbers, range_pattern, drop_latest = _queries(args)
    out, close = sys.stdout, False
    if args.filename:
        path = os.path.expanduser(args.filename)
        if os.path.exists(path):
            raise magics.UsageError("%%history -f: %s exists already; remove it, or give "
                                    "another name" % args.filename)
        out, close = open(path, "w", encoding="utf-8"), True
    try:
        for query in queries:
            entries = _ask(query)
            current = entries.session
            if drop_latest:
                entries = entries[:-1]
            _print(entries, current, args, numbers, range_pattern, out)
    finally:
        if close:
            out.close()


def _print(entries, current, args, numbers, range_pattern, out):
    """Prints the entries as IPython's %history does."""
    for session, lineno, text in entries:
        output = None
        if args.output:
            text, output = text
        if range_pattern and not fnmatch.fnmatch(text, range_pattern):
            continue
        text = text.expandtabs(4).rstrip()
        multiline = "\n" in text
        if numbers:
            label = str(lineno) if session == current else "%s/%s" % (session, lineno)
            print("%s:%s" % (label.rjust(4), "\n" if multiline else " "), end="", file=out)
        if args.prompts:
            print(">>> ", end="", file=out)
            if multiline:
                text = "\n... ".join(text.splitlines()) + "\n..."
        print(text, file=out)
        if args.output and output:
            print(output, file=out)


def install(user_ns=None):
    """Registers %history and %hist with the magics (shell.load_magics calls
    it when it first loads them)."""
    magics.LINE["history"] = magic_history
    magics.LINE["hist"] = magic_history
