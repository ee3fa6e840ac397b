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

from sandpit_testing import stdout_of


def bump(path, text):
    """Writes text to path with a modification time surely later than before."""
    before = os.stat(path)
    path.write_text(text)
    os.utime(path, (before.st_atime + 10, before.st_mtime + 10))


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
