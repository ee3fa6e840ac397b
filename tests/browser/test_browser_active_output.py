"""Issue 27, finding 2, end to end: a sandboxed kernel's output must not run as
the notebook's page. In the classic Notebook in headless Chromium, cells of a
sandpit kernel display JavaScript, HTML with an event handler, SVG with one and
Markdown with raw HTML, each of which (run as the page) would start a kernel
named python3 through the server's API, with the page's session, and write a
file through the contents API. With the default options none of them starts a
kernel or writes a file; with --active-output on (the control, in the same
page) the same cells do, which shows the attack is real in this browser.
The tour's table and chart are checked by test_browser_tour.py."""

import json
import time
import urllib.error

import nbformat
import pytest

from sandpit_testing import install_spec

# What the output tries, as the page: the page's session cookie and its XSRF
# token go with the request. Single quotes only, and no '<' or '>': it is put
# in HTML attributes and in <script>.
ATTACK = ("(function () { var x = (document.cookie.match(/_xsrf=([^;]*)/) || [])[1] || '';"
          " var h = {'Content-Type': 'application/json', 'X-XSRFToken': x};"
          " fetch('/api/kernels', {method: 'POST', headers: h, credentials: 'include',"
          " body: JSON.stringify({name: 'python3'})});"
          " fetch('/api/contents/MARK.txt', {method: 'PUT', headers: h,"
          " credentials: 'include', body: JSON.stringify({type: 'file', format: 'text',"
          " content: 'written by output'})}); })()")

# name: a cell's code. Each writes a marker of its own name.
CELLS = {
    "javascript": "from IPython.display import display, Javascript\n"
                  "display(Javascript(%r))",
    "html": "from IPython.display import HTML\n"
            "HTML('<img src=\"nowhere.png\" onerror=\"%%s\">' %% %r)",
    "svg": "from IPython.display import SVG\n"
           "SVG('<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"10\" height=\"10\">'\n"
           "    '<image href=\"nowhere.png\" width=\"5\" height=\"5\" onerror=\"%%s\"/>'\n"
           "    '<script>%%s</script></svg>' %% (%r, %r))",
    "markdown": "from IPython.display import Markdown\n"
                "Markdown('# Results\\n\\n<img src=\"nowhere.png\" onerror=\"%%s\">' %% %r)",
}
WATCH = 10  # seconds that the server is watched for a kernel or a file


def code_of(name):
    attack = ATTACK.replace("MARK", "marker-" + name)
    return CELLS[name] % ((attack,) * CELLS[name].count("%r"))


def prepare(server, name, kernel):
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": kernel, "display_name": kernel, "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(code_of(c)) for c in CELLS]
    nbformat.write(nb, str(server.dir / name))


def others(server):
    # Notebook 6 answers 500 to a listing made while a kernel is starting (its
    # manager has no last_activity yet): ask again, a bounded number of times.
    for attempt in range(20):
        try:
            kernels = server.kernels()
            break
        except urllib.error.HTTPError as e:
            if e.code != 500 or attempt == 19:
                raise
            time.sleep(0.5)
    return [k for k in kernels if k["name"] != "sandpit"
            and not k["name"].startswith("sandpit-test-")]


def markers(server):
    return sorted(p.name for p in server.dir.glob("marker-*.txt"))


def run_every_cell(page, name):
    page.open(name)
    page.js("Jupyter.notebook.execute_all_cells();")
    page.wait_all_done()


@pytest.fixture
def python3_spec(notebook_server):
    specs = notebook_server.api("GET", "kernelspecs")["kernelspecs"]
    if "python3" not in specs:
        pytest.skip("no python3 (ipykernel) kernelspec on this machine's Jupyter path")


def test_active_output_starts_no_kernel_and_writes_nothing(page, notebook_server,
                                                           python3_spec):
    prepare(notebook_server, "active.ipynb", "sandpit")
    run_every_cell(page, "active.ipynb")
    assert page.kernel_info()["implementation"] == "sandpit"
    # The server, watched for a while: no other kernel, no file.
    deadline = time.monotonic() + WATCH
    while time.monotonic() < deadline:
        assert others(notebook_server) == [], others(notebook_server)
        assert markers(notebook_server) == []
        time.sleep(0.5)
    # Each output is in the page, inert: the JavaScript as a note, the HTML in
    # a frame without the page's origin, the SVG as a picture, the Markdown as
    # its text.
    texts = page.js("return Jupyter.notebook.get_cells().map(c =>"
                    " c.element[0].querySelector('.output_area') ?"
                    " c.element[0].querySelector('.output_area').innerText : null);")
    assert "--active-output on" in texts[0], texts
    frames = page.js("return Array.from(document.querySelectorAll('.output_area iframe'))"
                     ".map(f => f.getAttribute('sandbox'));")
    assert frames == ["allow-scripts"], frames
    svg_img = page.js("return Array.from(document.querySelectorAll('.output_area img'))"
                      ".map(i => i.src.slice(0, 26));")
    assert "data:image/svg+xml;base64," in svg_img, svg_img
    assert "# Results" in texts[3], texts


def test_with_active_output_on_the_same_cells_do_start_a_kernel(
        page, notebook_server, jupyter_dir, python3_spec):
    """The control: the attack works in this page when sandpit lets it."""
    spec = install_spec(jupyter_dir, "--active-output", "on")
    prepare(notebook_server, "control.ipynb", spec)
    run_every_cell(page, "control.ipynb")
    deadline = time.monotonic() + 30
    want = ["marker-%s.txt" % n for n in ("html", "javascript")]
    while time.monotonic() < deadline and not (
            others(notebook_server) and set(want) <= set(markers(notebook_server))):
        time.sleep(0.5)
    started = others(notebook_server)
    print("with --active-output on: kernels %s, files %s"
          % (json.dumps([k["name"] for k in started]), markers(notebook_server)))
    assert [k["name"] for k in started][:1] == ["python3"], started
    assert set(want) <= set(markers(notebook_server))
    for f in notebook_server.dir.glob("marker-*.txt"):
        f.unlink()


# Markup that a check by another parser than the browser's might read apart
# from it, each trying to set window.__ran in the page. What sandpit lets
# through unchanged must run nothing there; the rest it frames or withholds.
TRICKY = [
    "<img src=x onerror=__ran=1>",
    "<p title=\"<img src=x onerror=__ran=1>\">quoted</p>",
    "<p title='</p><img src=x onerror=__ran=1>'>quoted</p>",
    "<!-- <img src=x onerror=__ran=1> -->after",
    "<!--><img src=x onerror=__ran=1>-->",
    "<!---><img src=x onerror=__ran=1>-->",
    "<!-- --!><img src=x onerror=__ran=1>-->",
    "<!DOCTYPE x \"a><img src=x onerror=__ran=1>\">",
    "<?x a=\"><img src=x onerror=__ran=1>\"?>",
    "<![CDATA[><img src=x onerror=__ran=1>]]>",
    "<svg><![CDATA[><img src=x onerror=__ran=1>]]></svg>",
    "<svg><style><img src=x onerror=__ran=1></style></svg>",
    "<svg><style>a{}</style><title><img src=x onerror=__ran=1></title></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=__ran=1>",
    "<style><img src=x onerror=__ran=1></style>",
    "<noscript><p title=\"</noscript><img src=x onerror=__ran=1>\"></noscript>",
    "<textarea><img src=x onerror=__ran=1></textarea>",
    "<title><img src=x onerror=__ran=1></title>",
    "<scr<script>ipt>__ran=1</scr</script>ipt>",
    "<\x01img src=x onerror=__ran=1>",
    "<img src=x on\x01error=__ran=1>",
    "<img\x01src=x onerror=__ran=1>",
    "<img/src=x/onerror=__ran=1>",
    "<img src=\"x\"onerror=\"__ran=1\">",
    "<img src=x onerror\n=__ran=1>",
    "<div/onmouseover=__ran=1>x</div>",
    "</p><img src=x onerror=__ran=1>",
    "</ <img src=x onerror=__ran=1>",
    "<a href=\"x\" \"onfocus=__ran=1\" autofocus>x</a>",
    "<table><tr><td>a</td><img src=x onerror=__ran=1></tr></table>",
    "<table><caption><svg onload=__ran=1></svg></caption></table>",
    "<details open ontoggle=__ran=1>x</details>",
    "<svg><animate onbegin=__ran=1 attributeName=x dur=1s></svg>",
    "<svg><set onbegin=__ran=1 attributeName=x to=1></svg>",
    "<svg><image href=x onerror=__ran=1 /></svg>",
    "<svg><script>__ran=1</script></svg>",
    "<object data=\"javascript:__ran=1\"></object>",
    "<embed src=\"javascript:__ran=1\">",
    "<iframe src=\"javascript:parent.__ran=1\"></iframe>",
    "<iframe srcdoc=\"&lt;script&gt;parent.__ran=1&lt;/script&gt;\"></iframe>",
    "<base href=\"javascript:__ran=1//\"><a href=\"x\">x</a>",
    "<style>@import 'data:text/css,*{}';</style>",
    "<p>$\\href{javascript:__ran=1}{x}$</p>",
]


def test_tricky_markup_runs_nothing_in_the_page(page, notebook_server):
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "sandpit", "display_name": "sandpit",
                              "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(
        "for s in %r:\n    display({'text/html': s, 'text/plain': 'x'}, raw=True)" % TRICKY)]
    nbformat.write(nb, str(notebook_server.dir / "tricky.ipynb"))
    page.open("tricky.ipynb")
    page.js("Jupyter.notebook.execute_all_cells();")
    page.wait_all_done()
    shown = page.js("return document.querySelectorAll('.output_area').length")
    assert shown == len(TRICKY)
    # Handlers fire as the page lays them out and loads what they name: a few
    # seconds, watched in a bounded loop.
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        assert page.js("return typeof window.__ran") == "undefined"
        time.sleep(0.25)
    unchanged = page.js("return Array.from(document.querySelectorAll('.output_html'))"
                        ".filter(e => !e.querySelector('iframe[sandbox]')).length")
    print("%d of %d tricky outputs shown unchanged, none ran" % (unchanged, len(TRICKY)))
