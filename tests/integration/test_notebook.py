"""The tour notebook (examples/tour.ipynb), executed with nbclient as
`jupyter nbconvert --execute` and `make demo` execute it, saved, and read
back: what a user opening the saved notebook would see.

It runs in a copy next to its CSV file in a temporary folder, so that the
kernel's workspace is not the repository."""

import base64
import io
import os
import shutil

import nbformat
from nbclient import NotebookClient
from PIL import Image as PILImage

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(HERE)), "examples")


def outputs_of(nb):
    """The outputs of the code cells, one list per cell."""
    return [cell.outputs for cell in nb.cells if cell.cell_type == "code"]


def test_tour_notebook_executes_with_table_chart_and_html(jupyter_dir, tmp_path):
    for name in ("tour.ipynb", "garden.csv"):
        shutil.copy(os.path.join(EXAMPLES, name), tmp_path / name)
    nb = nbformat.read(tmp_path / "tour.ipynb", as_version=4)
    assert nb.metadata.kernelspec.name == "sandpit"
    NotebookClient(nb, timeout=60, kernel_name="sandpit",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    nbformat.write(nb, tmp_path / "executed.ipynb")
    saved = nbformat.read(tmp_path / "executed.ipynb", as_version=4)
    nbformat.validate(saved)
    cells = outputs_of(saved)
    counts = [c.execution_count for c in saved.cells if c.cell_type == "code"]
    assert counts == list(range(1, len(counts) + 1))

    flat = [o for outs in cells for o in outs]
    # State across cells, a result, and an error that did not stop the notebook.
    results = [o.data["text/plain"] for o in flat if o.output_type == "execute_result"]
    assert "'Hello from the sandpit: visit number 1'" in results
    assert "(1, ['beans', 'tomatoes'])" in results
    errors = [o for o in flat if o.output_type == "error"]
    assert [e.ename for e in errors] == ["ZeroDivisionError"]

    # The table from the CSV, as HTML.
    tables = [o.data["text/html"] for o in flat
              if o.output_type == "execute_result" and "text/html" in o.data]
    assert any('class="dataframe"' in t and "<td>August</td>" in t and "<td>7.9</td>" in t
               for t in tables)

    # The chart, as a real PNG whose metadata gives its size.
    charts = [o for o in flat if "image/png" in o.get("data", {})]
    assert len(charts) == 1
    raw = base64.b64decode(charts[0].data["image/png"])
    with PILImage.open(io.BytesIO(raw)) as img:
        img.load()
        assert img.format == "PNG"
        width, height = img.size
    assert charts[0].metadata["image/png"] == {"width": width, "height": height}
    assert 500 <= width <= 720 and 250 <= height <= 370  # 7 x 3.5 inches at 100 dpi, tight

    # display(HTML(...)), and a display updated in place.
    html = [o.data["text/html"] for o in flat
            if o.output_type == "display_data" and "text/html" in o.data]
    assert any("Best crop: <b>tomatoes_kg</b>" in h for h in html)
    updated = [o for o in flat if o.output_type == "display_data"
               and "text/markdown" in o.data and "Weighed" in o.data["text/markdown"]]
    assert updated[0].data["text/markdown"] == "Weighed: **51.3 kg** in all."

    # A refusal by the sandbox, with words that say what and why, and the
    # kernel carrying on with its variables.
    texts = [o.text for o in flat if o.output_type == "stream"]
    assert any(t.startswith("Refused: starting programs is disabled in this kernel's sandbox")
               for t in texts)
    assert "Still here after the refusal: visit number 1\n" in texts
