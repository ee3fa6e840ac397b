"""Issue #5, "Done when": in a new notebook opened in Jupyter Notebook in a
real browser, `import ipywidgets as w; s = w.IntSlider(value=3); s` renders a
slider (the classic notebook's jupyter-js-widgets, ipywidgets 6); moving it
as a user does (arrow keys on its handle, then a drag with the mouse) changes
the kernel-side value, which a later cell prints; a change made in the kernel
moves the slider in the page.

The front end also opens a comm of its own: on every kernel connection it
asks for the 'jupyter.widget.version' target to check versions. On the first
connection ipywidgets is not imported yet, so the kernel has no such target
and the first widget displayed writes "Widget Javascript not detected" on
stderr: ipykernel does exactly the same with Debian's ipywidgets 6. After
Kernel > Reconnect the check goes through the kernel's ipywidgets and the
warning is gone, which is checked here too.
"""

import nbformat
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys

CELLS = [
    "import ipywidgets as w; s = w.IntSlider(value=3); s",
    "print(s.value)",
    "print(get_ipython().kernel.implementation)",
    "s.value = 10",
    "print(w.Widget._version_validated)",
    "t = w.IntSlider(value=5); t",
]
SLIDER, PRINT, IMPLEMENTATION, SET, VALIDATED, SECOND = range(len(CELLS))

# The state the page's widget manager holds for the widget a cell shows.
MODEL_JS = """
var done = arguments[arguments.length - 1];
var cell = Jupyter.notebook.get_cell(arguments[0]);
var views = cell.output_area.outputs.filter(
    o => o.data && o.data['application/vnd.jupyter.widget-view+json']);
if (views.length !== 1) { done(null); return; }
var id = views[0].data['application/vnd.jupyter.widget-view+json'].model_id;
Jupyter.WidgetManager._managers[0].get_model(id).then(m => done({
    id: id, name: m.get('_model_name'), value: m.get('value'),
    pending: m.pending_msgs || 0, buffered: !!m.msg_buffer
}), e => done({error: String(e)}));
"""


def new_notebook(server, name):
    nb = nbformat.v4.new_notebook()
    nb.metadata.kernelspec = {"name": "sandpit", "display_name": "Python 3 (sandpit)",
                              "language": "python"}
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nbformat.write(nb, str(server.dir / name))


def stream(cell, name="stdout"):
    outs = cell.find_elements(By.CSS_SELECTOR, ".output_area .output_" + name)
    return "".join(o.text for o in outs).strip()


def printed(page, index):
    """Runs the cell and returns the text of its stdout in the page."""
    return stream(page.run_cell(index))


def model(page, index=SLIDER):
    return page.driver.execute_async_script(MODEL_JS, index)


def wait_synced(page, value):
    """Waits until the page's model holds value and has no message for the
    kernel left to send (the front end holds them back while one is unanswered)."""
    page.wait("the slider's model to hold %r with nothing left to send" % value,
              lambda d: (lambda m: bool(m) and m.get("value") == value and not m["pending"]
                         and not m["buffered"])(model(page)))


def click_menu(page, menu, item):
    page.driver.find_element(By.ID, menu).click()
    page.wait("the %s item of the menu" % item,
              lambda d: d.find_element(By.ID, item).is_displayed())
    page.driver.find_element(By.CSS_SELECTOR, "#%s > a" % item).click()


def test_int_slider_in_the_browser(page, notebook_server):
    new_notebook(notebook_server, "widgets.ipynb")
    page.open("widgets.ipynb")
    info = page.kernel_info()
    assert info["implementation"] == "sandpit", info
    assert [k["name"] for k in notebook_server.kernels()] == ["sandpit"]
    assert printed(page, IMPLEMENTATION) == "sandpit"

    # The slider renders, showing 3.
    out = page.run_cell(SLIDER)
    page.wait("the slider to render",
              lambda d: out.find_elements(By.CSS_SELECTOR, ".widget-slider .ui-slider-handle"))
    readout = out.find_element(By.CSS_SELECTOR, ".widget-slider .widget-readout")
    page.wait("the readout to show 3", lambda d: readout.text.strip() == "3")
    m = model(page)
    assert m["name"] == "IntSliderModel" and m["value"] == 3, m
    handle = out.find_element(By.CSS_SELECTOR, ".widget-slider .ui-slider-handle")
    assert handle.is_displayed()

    # Four presses of the right arrow key on the focused handle: 3 -> 7.
    handle.click()
    for _ in range(4):
        handle.send_keys(Keys.ARROW_RIGHT)
    page.wait("the readout to show 7", lambda d: readout.text.strip() == "7")
    wait_synced(page, 7)
    assert printed(page, PRINT) == "7"

    # A drag with the mouse far past the right end: the maximum, 100.
    track = out.find_element(By.CSS_SELECTOR, ".widget-slider .ui-slider")
    ActionChains(page.driver).click_and_hold(handle) \
        .move_by_offset(track.size["width"] // 2, 0) \
        .move_by_offset(track.size["width"] * 2, 0).release().perform()
    page.wait("the readout to show 100", lambda d: readout.text.strip() == "100")
    wait_synced(page, 100)
    assert printed(page, PRINT) == "100"

    # The kernel sets the value: the page's slider follows.
    page.run_cell(SET)
    page.wait("the readout to show 10", lambda d: readout.text.strip() == "10")
    assert model(page)["value"] == 10
    assert printed(page, PRINT) == "10"

    # Kernel > Reconnect: the front end opens its version comm again, now
    # answered by the kernel's ipywidgets; a widget shown after that comes
    # without the warning.
    since = len(page.console())
    click_menu(page, "kernellink", "reconnect_kernel")
    # (The front end gives up after 3 s; a "Could not cross validate" seen
    # now may still be the first connection's, so only the answer counts.)
    verdict = page.wait_console("the front end's widget version check to pass",
                                "Widget backend and frontend versions are compatible",
                                "Widget backend and frontend versions are not compatible",
                                since=since, timeout=10)
    assert verdict == "Widget backend and frontend versions are compatible"
    assert printed(page, VALIDATED) == "True"
    second = page.run_cell(SECOND)
    page.wait("the second slider to show 5", lambda d: [
        r.text.strip() for r in second.find_elements(By.CSS_SELECTOR, ".widget-readout")]
        == ["5"])
    assert stream(second, "stderr") == ""
    assert model(page, SECOND)["value"] == 5
