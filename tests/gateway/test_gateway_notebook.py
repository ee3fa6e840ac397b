"""Jupyter Notebook 6.4 started with --gateway-url pointing at `sandpit serve`,
in headless Chromium (tests/browser's server, browser and page helpers): a
notebook with a pandas table and a matplotlib chart is opened and run; its
kernel is the gateway's (the gateway lists it, and its kernel_info is
sandpit's), the page shows a table element and a PNG image in the outputs,
and the screenshot taken then has both in view."""

import nbformat
import pytest

from browser.conftest import NotebookServer, browser, page  # noqa: F401 (fixtures)

from .gateway_testing import LIMIT

CELLS = [
    "import pandas as pd\n"
    "df = pd.DataFrame({'plant': ['fern', 'moss', 'ivy'], 'height_cm': [30, 2, 120]})\n"
    "df",
    "import matplotlib.pyplot as plt\n"
    "plt.figure(figsize=(4, 2.5))\n"
    "plt.bar(df['plant'], df['height_cm'])\n"
    "plt.show()",
]

OUTPUTS_JS = """
var code = Jupyter.notebook.get_cells().filter(c => c.cell_type === 'code');
var inView = e => { var r = e.getBoundingClientRect();
                    return r.width > 0 && r.height > 0 && r.top >= 0
                           && r.bottom <= window.innerHeight; };
var table = code[0].element[0].querySelector('.output_area table');
var img = code[1].element[0].querySelector('.output_area img');
return {table: !!table, rows: table ? table.querySelectorAll('tbody tr').length : 0,
        text: table ? table.innerText : '',
        img: img ? img.getAttribute('src').slice(0, 22) : null,
        img_width: img ? img.naturalWidth : 0,
        table_in_view: !!table && inView(table), img_in_view: !!img && inView(img)};
"""


@pytest.fixture(scope="module")
def notebook_server(serve, tmp_path_factory):
    """The classic Notebook with every kernel on the gateway (the name is the
    one tests/browser's page fixture asks for)."""
    server = NotebookServer(tmp_path_factory.mktemp("nbgateway"), (
        "--gateway-url=" + serve.url, "--GatewayClient.auth_token=" + serve.token,
        "--GatewayClient.request_timeout=%d" % LIMIT,
        "--GatewayClient.connect_timeout=%d" % LIMIT))
    yield server
    server.stop()


def test_table_and_chart_through_the_gateway(page, notebook_server, serve, tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "sandpit", "display_name": "sandpit",
                              "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nbformat.write(nb, str(notebook_server.dir / "garden.ipynb"))
    before = {k["id"] for k in serve.kernels()}
    page.open("garden.ipynb")
    assert page.kernel_info()["implementation"] == "sandpit"
    kernel_id = page.js("return Jupyter.notebook.kernel.id")
    assert kernel_id in {k["id"] for k in serve.kernels()} - before
    page.js("Jupyter.notebook.execute_all_cells();")
    page.wait_all_done(timeout=LIMIT)
    seen = page.js(OUTPUTS_JS)
    shot = tmp_path / "gateway-notebook.png"
    assert page.driver.save_screenshot(str(shot))
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert seen["table"] and seen["rows"] == 3, seen
    assert "fern" in seen["text"] and "120" in seen["text"], seen
    assert seen["img"] == "data:image/png;base64,", seen
    assert seen["img_width"] > 100, seen
    assert seen["table_in_view"] and seen["img_in_view"], seen
