"""`sandpit run` saves a cell's images without following anything the cell
planted (issue 27, finding 1): the user's own, unconfined process writes each
image to a fresh file and moves it into place, so a link at the temporary name
or at the final name, to the user's ~/.bashrc, leaves ~/.bashrc as it was, and
an existing file at the final name is not overwritten: the image goes to a
free name beside it."""

import base64
import json
import os
import subprocess

import pytest

from sandpit_testing import SANDPIT

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==")
SCRIPT = "echo the cell ran in your shell\n"
SVG = '<svg xmlns="http://www.w3.org/2000/svg"><!--\n' + SCRIPT + '--></svg>'
ORIGINAL = "# the user's own .bashrc\n"


@pytest.fixture
def home_ws(tmp_path):
    home = tmp_path / "home"
    ws = tmp_path / "ws"
    home.mkdir()
    ws.mkdir()
    (home / ".bashrc").write_text(ORIGINAL)
    env = dict(os.environ, HOME=str(home))
    started = subprocess.run([SANDPIT, "start", "--workspace", str(ws)], env=env,
                             capture_output=True, text=True, timeout=120)
    assert started.returncode == 0, started.stderr
    yield home, ws, env
    subprocess.run([SANDPIT, "stop", "--workspace", str(ws)], env=env,
                   capture_output=True, timeout=120)


def run(ws, env, code):
    p = subprocess.run([SANDPIT, "run", "--json", "--workspace", str(ws), code], env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode in (0, 1), p.stderr
    return json.loads(p.stdout)


def plant(target, extra=""):
    """A cell that links every name `sandpit run` could use, .tmp included, to
    target, then shows an SVG and a PNG."""
    return f"""
import os
os.makedirs('outputs', exist_ok=True)
for n in range(1, 6):
    for k in range(1, 4):
        for ext in ('png', 'svg'):
            for suffix in ('', '.tmp'):
                p = f'outputs/cell-{{n}}-{{k}}.{{ext}}{{suffix}}'
                if not os.path.lexists(p):
                    os.symlink({str(target)!r}, p)
{extra}
display({{'image/svg+xml': {SVG!r}, 'text/plain': 'svg'}}, raw=True)
display({{'image/png': {base64.b64encode(PNG).decode()!r}, 'text/plain': 'png'}}, raw=True)
"""


def files_of(out):
    return [f for o in out.get("outputs", []) for f in o.get("files", [])]


def test_a_planted_link_to_bashrc_is_not_followed(home_ws):
    home, ws, env = home_ws
    out = run(ws, env, plant(home / ".bashrc"))
    assert out["status"] == "ok", out
    assert (home / ".bashrc").read_text() == ORIGINAL
    files = files_of(out)
    assert len(files) == 2, out
    for f in files:
        assert os.path.dirname(f) == str(ws / "outputs")
        assert not os.path.islink(f), f
    svg, png = files
    assert open(svg).read() == SVG
    assert open(png, "rb").read() == PNG
    # The planted links are still there, untouched, and no stray file is left.
    assert os.path.islink(ws / "outputs" / "cell-1-1.svg")
    assert not [n for n in os.listdir(ws / "outputs") if n.startswith(".sandpit-")]


def test_an_existing_image_is_not_overwritten(home_ws):
    home, ws, env = home_ws
    keep = "#!/bin/sh\n# a file of the user's that happens to have that name\n"
    extra = "\n".join(f"open('outputs/cell-{n}-{k}.{e}', 'w').write({keep!r})"
                      for n in range(1, 6) for k in range(1, 4) for e in ("png", "svg"))
    code = "import os\nos.makedirs('outputs', exist_ok=True)\n" + extra + "\n" + plant(
        home / ".bashrc")
    out = run(ws, env, code)
    assert out["status"] == "ok", out
    files = files_of(out)
    assert len(files) == 2 and all("-2." in os.path.basename(f) for f in files), files
    assert open(ws / "outputs" / "cell-1-1.svg").read() == keep
    assert (home / ".bashrc").read_text() == ORIGINAL


def test_an_output_folder_that_is_a_link_is_refused(home_ws):
    """outputs/ itself a link to the home folder (which the cell cannot write):
    `sandpit run` writes nothing there, and says why."""
    home, ws, env = home_ws
    code = f"""
import os
os.symlink({str(home)!r}, 'outputs')
display({{'image/svg+xml': {SVG!r}, 'text/plain': 'svg'}}, raw=True)
"""
    p = subprocess.run([SANDPIT, "run", "--json", "--workspace", str(ws), code], env=env,
                       capture_output=True, text=True, timeout=120)
    assert sorted(os.listdir(home)) == [".bashrc"]
    assert (home / ".bashrc").read_text() == ORIGINAL
    assert "symbolic link" in p.stderr, p.stderr
