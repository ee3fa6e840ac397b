"""Issue #3, "Done when": the tour notebook (examples/tour.ipynb), opened in
Jupyter Notebook in a real browser and run with Cell > Run All, shows its
pandas table, its matplotlib chart and its display(HTML(...)) output, as it
would with ipykernel.

The notebook and garden.csv are copied (outputs cleared) into the server's
temporary folder, so the repository is not touched and nothing stale can be
read back: every output checked here was rendered by the page during the run.
Cells are found by their source, so that the tour may grow.
"""

import base64
import csv
import io
import os

import nbformat
from PIL import Image as PILImage
from selenium.webdriver.common.by import By

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples")
RUN_ALL = 60  # seconds for the whole tour to run

# For every code cell, in order: its source, tags, execution count, and for
# each of its output areas the classes naming what the page rendered there,
# the output prompt, and the text and HTML the page shows.
SUMMARY_JS = """
return Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code').map(c => ({
    source: c.get_text(),
    tags: (c.metadata && c.metadata.tags) || [],
    prompt: c.input_prompt_number,
    outputs: Array.from(c.element[0].querySelectorAll('.output_area')).map(a => {
        var sub = a.querySelector('.output_subarea');
        var prompt = a.querySelector('.output_prompt');
        return {
            kinds: sub ? Array.from(sub.classList).filter(k => k.startsWith('output_')
                                                          && k !== 'output_subarea') : [],
            prompt: prompt ? prompt.innerText.trim() : '',
            text: sub ? sub.innerText : '',
            html: sub ? sub.innerHTML : ''
        };
    })
}));
"""

# The rows of every <table> in a code cell's output areas, as the page shows them.
TABLES_JS = """
var cell = Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code')[arguments[0]];
return Array.from(cell.element[0].querySelectorAll('.output_area table')).map(t =>
    Array.from(t.rows).map(r => Array.from(r.cells).map(td => td.innerText.trim())));
"""


def read_garden():
    with open(os.path.join(EXAMPLES, "garden.csv"), newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def prepare(server, name, kernelspec=None):
    """Copies the tour (without outputs) and its CSV into the server's folder."""
    nb = nbformat.read(os.path.join(EXAMPLES, "tour.ipynb"), as_version=4)
    assert nb.metadata.kernelspec.name == "sandpit"
    if kernelspec:
        nb.metadata.kernelspec = kernelspec
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(nb, str(server.dir / name))
    with open(os.path.join(EXAMPLES, "garden.csv"), "rb") as src:
        (server.dir / "garden.csv").write_bytes(src.read())
    return nb


def run_all_from_menu(page):
    """Cell > Run All, with the mouse; waits until every code cell has run."""
    page.driver.find_element(By.ID, "celllink").click()
    page.wait("the Cell menu to open",
              lambda d: d.find_element(By.ID, "run_all_cells").is_displayed())
    page.driver.find_element(By.CSS_SELECTOR, "#run_all_cells > a").click()
    page.wait_all_done(timeout=RUN_ALL)
    return page.js(SUMMARY_JS)


def find(cells, text):
    """The index of the one code cell whose source contains text."""
    found = [i for i, c in enumerate(cells) if text in c["source"]]
    assert len(found) == 1, "one code cell with %r in the tour" % text
    return found[0]


def kinds(cell):
    return [o["kinds"] for o in cell["outputs"]]


def test_tour_in_the_browser_shows_table_chart_and_html(page, notebook_server):
    nb = prepare(notebook_server, "tour.ipynb")
    n_code = sum(1 for c in nb.cells if c.cell_type == "code")
    page.open("tour.ipynb")

    # The page's kernel is sandpit, not ipykernel.
    info = page.kernel_info()
    assert info["implementation"] == "sandpit", info
    assert "sandpit" in info["banner"]
    kernels = notebook_server.kernels()
    assert [k["name"] for k in kernels] == ["sandpit"], kernels
    assert page.driver.find_element(By.CSS_SELECTOR, ".kernel_indicator_name").text \
        == "Python 3 (sandpit)"
    assert page.js("return document.querySelectorAll('.output_area').length") == 0

    cells = run_all_from_menu(page)
    assert len(cells) == n_code
    # Every cell ran once, in order, although one of them raised; the only
    # errors are those of cells tagged raises-exception.
    assert [c["prompt"] for c in cells] == list(range(1, n_code + 1))
    for c in cells:
        raised = ["output_error"] in [[k for k in ks if k == "output_error"] for ks in kinds(c)]
        assert raised == ("raises-exception" in c["tags"]), c

    # State across cells, and the caught error.
    visit = cells[find(cells, "visits += 1")]
    assert kinds(visit) == [["output_text", "output_result"]]
    assert visit["outputs"][0]["prompt"] == "Out[%d]:" % visit["prompt"]
    assert visit["outputs"][0]["text"].strip() == "'Hello from the sandpit: visit number 1'"
    error = cells[find(cells, 'shares["beans"]')]
    assert kinds(error) == [["output_text", "output_error"]]
    assert "ZeroDivisionError" in error["outputs"][0]["text"]
    assert "division by zero" in error["outputs"][0]["text"]
    after = cells[find(cells, "visits, sorted(shares)")]
    assert after["outputs"][0]["text"].strip() == "(1, ['beans', 'tomatoes'])"

    # The pandas table: an HTML <table> in the cell's output area, holding the CSV.
    header, rows = read_garden()
    at = find(cells, "pd.read_csv")
    table_cell = cells[at]
    assert kinds(table_cell) == [["output_html", "output_result"]]
    assert table_cell["outputs"][0]["prompt"] == "Out[%d]:" % table_cell["prompt"]
    assert 'class="dataframe"' in table_cell["outputs"][0]["html"]
    tables = page.js(TABLES_JS, at)
    assert len(tables) == 1
    assert page.cell_element(at).find_element(By.CSS_SELECTOR, ".output_area table") \
        .is_displayed()
    shown = tables[0]
    assert shown[0] == [""] + header
    assert len(shown) == 1 + len(rows)
    for i, (got, want) in enumerate(zip(shown[1:], rows)):
        assert got[0] == str(i)
        assert got[1] == want[0]
        assert [float(x) for x in got[2:]] == [float(x) for x in want[1:]], (got, want)

    # The matplotlib chart: one PNG <img>, decoded and laid out by the browser.
    at = find(cells, "plt.show()")
    assert kinds(cells[at]) == [["output_png"]]
    cell = page.cell_element(at)
    imgs = cell.find_elements(By.CSS_SELECTOR, ".output_area img")
    assert len(imgs) == 1
    img = imgs[0]
    src = img.get_attribute("src")
    assert src.startswith("data:image/png;base64,")
    page.wait("the chart to be decoded",
              lambda d: d.execute_script("return arguments[0].complete"
                                         " && arguments[0].naturalWidth > 0", img))
    natural = page.js("return [arguments[0].naturalWidth, arguments[0].naturalHeight]", img)
    with PILImage.open(io.BytesIO(base64.b64decode(src.split(",", 1)[1]))) as png:
        assert png.format == "PNG"
        assert list(png.size) == natural
        # Not a blank image: the bars are drawn in several colours.
        assert len(png.convert("RGB").getcolors(1 << 24)) > 10
    assert natural[0] > 300 and natural[1] > 150  # figsize=(7, 3.5)
    assert img.is_displayed() and img.size["width"] > 0 and img.size["height"] > 0

    # display(HTML(...)): the best crop, worked out here from the CSV.
    totals = {name: sum(float(r[j]) for r in rows) for j, name in enumerate(header[1:], 1)}
    best = max(totals, key=totals.get)
    at = find(cells, "display(HTML(")
    html_cell = cells[at]
    assert kinds(html_cell) == [["output_html"]]
    assert html_cell["outputs"][0]["prompt"] == ""  # display data, not a result
    assert html_cell["outputs"][0]["text"].strip() == \
        "Best crop: %s, %.1f kg" % (best, totals[best])
    cell = page.cell_element(at)
    assert [b.text for b in cell.find_elements(By.CSS_SELECTOR, ".output_html p b")] == [best]
    span = cell.find_element(By.CSS_SELECTOR, ".output_html p span")
    assert span.text == "%.1f kg" % totals[best]
    assert span.value_of_css_property("color") in ("rgba(42, 125, 42, 1)", "rgb(42, 125, 42)")

    # The updated Markdown display shows its last state only, rendered.
    md = cells[find(cells, "display_id=True")]
    assert kinds(md) == [["output_markdown"]]
    assert md["outputs"][0]["text"].strip() == "Weighed: %.1f kg in all." % sum(totals.values())
    assert "<strong>" in md["outputs"][0]["html"]


def test_tour_table_chart_and_html_as_with_ipykernel(page, notebook_server):
    """The same three outputs, run in the same page under sandpit and under
    ipykernel (the server's python3 kernel): the page shows the same thing."""
    seen = {}
    for name, spec in (("sandpit", None),
                       ("python3", {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                    "language": "python"})):
        prepare(notebook_server, "tour-%s.ipynb" % name, spec)
        page.open("tour-%s.ipynb" % name)
        want = "ipython" if name == "python3" else "sandpit"
        assert page.kernel_info()["implementation"] == want
        cells = run_all_from_menu(page)
        shown = {}
        for what in ("pd.read_csv", "plt.show()", "display(HTML("):
            at = find(cells, what)
            outputs = [{k: o[k] for k in ("kinds", "prompt", "text")}
                       for o in cells[at]["outputs"]]
            shown[what] = (outputs, page.js(TABLES_JS, at))
        img = page.cell_element(find(cells, "plt.show()")).find_element(
            By.CSS_SELECTOR, ".output_area img")
        page.wait("the chart to be decoded",
                  lambda d: d.execute_script("return arguments[0].complete"
                                             " && arguments[0].naturalWidth > 0", img))
        shown["chart src"] = img.get_attribute("src")[:len("data:image/png;base64,")]
        seen[name] = shown
        page.leave()
    assert seen["sandpit"] == seen["python3"]
