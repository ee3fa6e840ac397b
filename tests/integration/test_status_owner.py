"""Status busy and idle have one owner: a request's begin and end in
kernel/supervisor/shells.c publish them, and nothing else in the supervisor
does (issue 29). The unit tests (tests/unit/test_dispatch.c) hold every way a
request goes to one busy and one idle; this test keeps a new way from
publishing them on its own, past begin and end."""

import re
from pathlib import Path

from sandpit_testing import ROOT

CALL_RE = re.compile(r"\boutbox_(busy|idle)\s*\(")
# A function's first line: a name and its parameters at the start of a line.
FUNC_RE = re.compile(r"^[a-z][\w \*]*?\b(\w+)\s*\(")


def calls():
    """(file, function, line) of every call of outbox_busy and outbox_idle."""
    for path in sorted(Path(ROOT, "kernel").rglob("*.c")):
        func = None
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            m = FUNC_RE.match(line)
            if m:
                func = m.group(1)
            if CALL_RE.search(line) and not line.lstrip().startswith(("/*", "*")):
                yield str(path.relative_to(ROOT)), func, n


def test_only_a_requests_begin_and_end_publish_its_status():
    found = [c for c in calls() if c[0] != "kernel/supervisor/outbox.c"]
    assert {(f, fn) for f, fn, _ in found} == {
        ("kernel/supervisor/shells.c", "begin"),
        ("kernel/supervisor/shells.c", "end"),
    }, found
    assert len(found) == 2, found
