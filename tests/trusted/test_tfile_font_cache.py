"""matplotlib's font list, which a cell can write, does not cross workspaces
and is checked before it is kept (issue 27, finding 12): only a file named
fontlist-v<N>.json, of matplotlib's schema, whose fonts are matplotlib's own
or system fonts, is cached, for the next kernel of the same workspace only;
junk beside it stays behind."""

import glob
import json
import os

from sandpit_testing import start, stop

CACHE = lambda: os.path.join(os.environ["XDG_CACHE_HOME"], "sandpit", "matplotlib")


def entry(fname, name):
    return {"fname": fname, "name": name, "style": "normal", "variant": "normal",
            "weight": 400, "stretch": "normal", "size": "scalable", "__class__": "FontEntry"}


def font_list(ttf):
    return {"_version": 330, "_FontManager__default_weight": "normal", "default_size": None,
            "defaultFamily": {"ttf": "DejaVu Sans", "afm": "Helvetica"}, "afmlist": [],
            "ttflist": ttf, "__class__": "FontManager"}


def a_system_font():
    for f in glob.glob("/usr/share/fonts/**/*.ttf", recursive=True):
        if os.path.isfile(f) and not os.path.islink(f):
            return f
    return None


def plant(k, files):
    code = "import os\nd = os.environ['MPLCONFIGDIR']\nos.makedirs(d, exist_ok=True)\n"
    for name, text in files.items():
        code += f"open(os.path.join(d, {name!r}), 'w').write({text!r})\n"
    k.run(code)


def given(k):
    return json.loads(k.value(
        "__import__('json').dumps(sorted(__import__('os').listdir("
        "__import__('os').environ['MPLCONFIGDIR'])))").strip("'"))


def cached_files():
    return [os.path.relpath(p, CACHE()) for p in glob.glob(os.path.join(CACHE(), "**"),
                                                           recursive=True)
            if os.path.isfile(p)]


def test_a_planted_font_list_does_not_reach_another_workspace(jupyter_dir, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    other = a_system_font() or "fonts/ttf/cmr10.ttf"
    spoof = json.dumps(font_list([entry(other, "DejaVu Sans")]))
    files = {"fontlist-v330.json": spoof, "fontlist-v331.json.bak": "junk",
             "fontlist-junk.json": "x" * 1000}
    files.update({"fontlist-%d.json" % i: "junk" for i in range(30)})
    k = start("sandpit", cwd=str(a))
    try:
        plant(k, files)
    finally:
        stop(k)
    # Nothing but lists named fontlist-v<N>.json is kept, and never beside another
    # workspace's.
    assert all(os.path.basename(f) == "fontlist-v330.json" for f in cached_files()), \
        cached_files()
    k = start("sandpit", cwd=str(b))
    try:
        names = given(k)
        assert "fontlist-junk.json" not in names and "fontlist-0.json" not in names
        text = k.run("import os\np = os.environ['MPLCONFIGDIR'] + '/fontlist-v330.json'\n"
                     "print(open(p).read() if os.path.exists(p) else '')")
        assert "DejaVu Sans" not in text or other not in text, "a's list reached b"
    finally:
        stop(k)


def test_a_list_naming_a_font_in_the_workspace_is_not_kept(jupyter_dir, tmp_path):
    (tmp_path / "evil.ttf").write_bytes(b"\0" * 64)
    bad = json.dumps(font_list([entry(str(tmp_path / "evil.ttf"), "DejaVu Sans")]))
    k = start("sandpit", cwd=str(tmp_path))
    try:
        plant(k, {"fontlist-v990.json": bad, "fontlist-v991.json": "{not json"})
    finally:
        stop(k)
    assert not [f for f in cached_files() if "fontlist-v99" in f], cached_files()
    k = start("sandpit", cwd=str(tmp_path))
    try:
        assert not [n for n in given(k) if n.startswith("fontlist-v99")]
    finally:
        stop(k)
