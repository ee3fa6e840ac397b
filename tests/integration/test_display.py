"""Rich output end to end: MIME bundles from the _repr_ protocol, display()
and its display ids, IPython.display, matplotlib charts, pandas tables.

Each test runs cells in the real kernel through jupyter_client and checks the
messages a notebook would get: their types, their order, and their content.
Images are decoded with Pillow and checked for their format and size, not
only for the presence of a key. Most tests share one kernel; the figure
options, preloading and the check that a plain cell imports nothing get
kernels of their own."""

import base64
import io
import os
import time

import pytest
from PIL import Image as PILImage

from sandpit_testing import ASAN, start, stdout_of, stop

SVG_TEXT = '<svg xmlns="http://www.w3.org/2000/svg" width="8" height="6"></svg>'


def _pil_bytes(fmt, size=(3, 2), color="red"):
    buf = io.BytesIO()
    PILImage.new("RGB", size, color).save(buf, fmt)
    return buf.getvalue()


def decode_image(b64, fmt="PNG"):
    """Decodes base64 image data; checks it is a whole, valid image of fmt.
    Returns (bytes, (width, height))."""
    raw = base64.b64decode(b64.rstrip("\n"), validate=True)  # IPython's Image ends in \n
    with PILImage.open(io.BytesIO(raw)) as img:
        assert img.format == fmt
        img.verify()
    with PILImage.open(io.BytesIO(raw)) as img:
        img.load()  # decodes every pixel: a truncated image fails here
        return raw, img.size


def of_type(outputs, *types):
    return [m for m in outputs if m["msg_type"] in types]


def kinds(outputs):
    return [m["msg_type"] for m in outputs]


def result_of(outputs):
    (res,) = of_type(outputs, "execute_result")
    return res["content"]


def ok(kernel, code):
    reply, outputs = kernel.execute(code)
    assert reply["content"]["status"] == "ok", reply["content"]
    return outputs


def images(outputs):
    """(content, (width, height)) of each display_data carrying a PNG."""
    found = []
    for m in of_type(outputs, "display_data", "execute_result"):
        data = m["content"]["data"]
        if "image/png" in data:
            found.append((m["content"], decode_image(data["image/png"])[1]))
    return found


# --- MIME bundles --------------------------------------------------------------------


def test_each_repr_method_gives_its_mime_type(kernel_with):
    # Every type as the code made it: JavaScript is withheld by default
    # (tests/trusted/test_active_output.py), so this kernel lets it through.
    kernel = kernel_with("--active-output", "on")
    png, jpeg = _pil_bytes("PNG"), _pil_bytes("JPEG")
    code = f"""
class Everything:
    def _repr_html_(self): return '<b>html</b>'
    def _repr_markdown_(self): return '**md**'
    def _repr_latex_(self): return r'$\\alpha$'
    def _repr_svg_(self): return {SVG_TEXT!r}
    def _repr_png_(self): return {png!r}
    def _repr_jpeg_(self): return {jpeg!r}
    def _repr_pdf_(self): return b'%PDF-1.4 not really'
    def _repr_json_(self): return {{'a': [1, 2]}}
    def _repr_javascript_(self): return 'console.log(1)'
    def __repr__(self): return 'Everything()'
Everything()
"""
    data = result_of(ok(kernel, code))["data"]
    assert data["text/plain"] == "Everything()"
    assert data["text/html"] == "<b>html</b>"
    assert data["text/markdown"] == "**md**"
    assert data["text/latex"] == "$\\alpha$"
    assert data["image/svg+xml"] == SVG_TEXT
    assert data["application/json"] == {"a": [1, 2]}
    assert data["application/javascript"] == "console.log(1)"
    assert decode_image(data["image/png"]) == (png, (3, 2))
    assert decode_image(data["image/jpeg"], "JPEG")[1] == (3, 2)
    assert base64.b64decode(data["application/pdf"]) == b"%PDF-1.4 not really"
    # IPython's order: text/plain first, then the formats in a fixed order.
    assert list(data) == ["text/plain", "text/html", "text/markdown", "image/svg+xml",
                          "image/png", "application/pdf", "image/jpeg", "text/latex",
                          "application/json", "application/javascript"]


def test_repr_may_return_data_and_metadata(kernel):
    code = """
class Sized:
    def _repr_html_(self): return '<p>x</p>', {'isolated': True}
    def _repr_json_(self): return {'k': 1}, {'expanded': True}
    def _repr_latex_(self): return None
Sized()
"""
    content = result_of(ok(kernel, code))
    assert content["data"]["text/html"] == "<p>x</p>"
    assert content["data"]["application/json"] == {"k": 1}
    assert "text/latex" not in content["data"]
    assert content["metadata"] == {"text/html": {"isolated": True},
                                   "application/json": {"expanded": True}}


def test_mimebundle_with_metadata_and_other_reprs(kernel):
    code = """
class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return ({'text/html': '<i>bundle</i>', 'application/vnd.custom+json': {'x': 1}},
                {'text/html': {'isolated': True}})
    def _repr_html_(self): return 'never used: the bundle has text/html'
    def _repr_markdown_(self): return '*markdown*'
    def __repr__(self): return 'Bundle()'
b = Bundle()
b
"""
    content = result_of(ok(kernel, code))
    assert content["data"] == {"text/html": "<i>bundle</i>",
                               "application/vnd.custom+json": {"x": 1},
                               "text/plain": "Bundle()", "text/markdown": "*markdown*"}
    assert content["metadata"] == {"text/html": {"isolated": True}}
    # display() with include / exclude filters the bundle and the other formats.
    outputs = ok(kernel, "display(b, include=['text/html', 'text/plain'])\n"
                         "display(b, exclude=['text/html'])")
    first, second = [m["content"] for m in of_type(outputs, "display_data")]
    assert first["data"] == {"text/html": "<i>bundle</i>", "text/plain": "Bundle()"}
    assert first["metadata"] == {"text/html": {"isolated": True}}
    assert set(second["data"]) == {"application/vnd.custom+json", "text/plain",
                                   "text/markdown"}
    assert second["metadata"] == {}


def test_raising_repr_is_reported_and_the_rest_still_goes_out(kernel):
    code = """
class Fragile:
    def _repr_html_(self):
        raise ValueError('html is broken')
    def _repr_markdown_(self): return '*still here*'
    def __repr__(self): return 'Fragile()'
print('before')
Fragile()
"""
    reply, outputs = kernel.execute(code)
    assert reply["content"]["status"] == "ok"
    assert kinds(outputs) == ["stream", "stream", "execute_result"]
    assert stdout_of(outputs) == "before\n"
    err = stdout_of(outputs, "stderr")
    assert "text/html" in err and "Fragile" in err
    assert "ValueError: html is broken" in err
    assert "raise ValueError('html is broken')" in err  # the user's line, in a traceback
    assert "<sandpit>" not in err  # the runtime's own frames are left out
    assert result_of(outputs)["data"] == {"text/plain": "Fragile()",
                                          "text/markdown": "*still here*"}


def test_wrong_type_is_left_out_with_a_warning(kernel):
    outputs = ok(kernel, "class Odd:\n    def _repr_html_(self): return 42\nOdd()")
    assert "FormatterWarning" in stdout_of(outputs, "stderr")
    assert set(result_of(outputs)["data"]) == {"text/plain"}


def test_text_plain_is_laid_out_as_in_ipython(kernel):
    from IPython.lib.pretty import pretty  # what ipykernel would send
    exprs = ["list(range(40))", "{'k%d' % i: 'v' * i for i in range(12)}",
             "{'a': list(range(30)), 'b': (1,)}", "set(range(30))", "list(range(1200))"]
    for expr in exprs:
        assert kernel.value(expr) == pretty(eval(expr)), expr
    ok(kernel, "class Plain: pass\ndef f(x, y=2): pass")
    assert kernel.value("Plain") == "__main__.Plain"
    assert kernel.value("f") == "<function __main__.f(x, y=2)>"
    assert kernel.value("Plain()").startswith("<__main__.Plain at 0x")
    code = ("class Custom:\n    def _repr_pretty_(self, p, cycle):\n"
            "        with p.group(2, 'C(', ')'):\n            p.text('pretty')\nCustom()")
    assert result_of(ok(kernel, code))["data"]["text/plain"] == "C(pretty)"


# --- display() ---------------------------------------------------------------------------


def test_display_needs_no_import_and_keeps_the_order(kernel):
    outputs = ok(kernel, "print('one')\n"
                         "display(1, 'two', metadata={'tag': 1})\n"
                         "print('three')")
    assert kinds(outputs) == ["stream", "display_data", "display_data", "stream"]
    first, second = outputs[1]["content"], outputs[2]["content"]
    assert first == {"data": {"text/plain": "1"}, "metadata": {"tag": 1}, "transient": {}}
    assert second["data"] == {"text/plain": "'two'"}
    assert [m["content"]["text"] for m in of_type(outputs, "stream")] == ["one\n", "three\n"]


def test_display_raw_bundle(kernel):
    outputs = ok(kernel, "display({'text/html': '<b>raw</b>', 'text/plain': 'raw'}, raw=True,"
                         " metadata={'text/html': {'isolated': True}})")
    (content,) = [m["content"] for m in of_type(outputs, "display_data")]
    assert content["data"] == {"text/html": "<b>raw</b>", "text/plain": "raw"}
    assert content["metadata"] == {"text/html": {"isolated": True}}


def test_display_ids_update_and_clear_output(kernel):
    outputs = ok(kernel, "h = display('first', display_id=True)\nh")
    shown = of_type(outputs, "display_data")[0]["content"]
    display_id = shown["transient"]["display_id"]
    assert len(display_id) == 32 and int(display_id, 16) >= 0
    assert shown["data"] == {"text/plain": "'first'"}
    handle = result_of(outputs)["data"]["text/plain"]
    assert handle == "<DisplayHandle display_id=%s>" % display_id

    outputs = ok(kernel, "h.update('second')")
    assert kinds(outputs) == ["update_display_data"]
    assert outputs[0]["content"] == {"data": {"text/plain": "'second'"}, "metadata": {},
                                     "transient": {"display_id": display_id}}

    outputs = ok(kernel, "from sandpit.display import update_display\n"
                         "display('named', display_id='progress')\n"
                         "update_display('done', display_id='progress')\n"
                         "h.display('again')")
    assert kinds(outputs) == ["display_data", "update_display_data", "display_data"]
    assert outputs[0]["content"]["transient"] == {"display_id": "progress"}
    assert outputs[1]["content"]["data"] == {"text/plain": "'done'"}
    assert outputs[1]["content"]["transient"] == {"display_id": "progress"}
    assert outputs[2]["content"]["transient"] == {"display_id": display_id}

    outputs = ok(kernel, "from sandpit.display import clear_output\n"
                         "print('gone soon')\nclear_output(wait=True)\nprint('kept')\n"
                         "clear_output()")
    assert kinds(outputs) == ["stream", "clear_output", "stream", "clear_output"]
    assert outputs[1]["content"] == {"wait": True}
    assert outputs[3]["content"] == {"wait": False}

    reply, outputs = kernel.execute("update_display('x', display_id=None)")
    assert reply["content"]["ename"] == "TypeError"


def test_ipython_display_protocol(kernel):
    code = """
class SelfShowing:
    def _ipython_display_(self):
        display({'text/html': '<em>by itself</em>'}, raw=True)
display(SelfShowing())
"""
    outputs = ok(kernel, code)
    (content,) = [m["content"] for m in of_type(outputs, "display_data")]
    assert content["data"] == {"text/html": "<em>by itself</em>"}


def test_ipythons_image_encodes_with_the_workers_base64(kernel):
    # IPython.core.display's b2a_base64 is the worker's: the same bytes as
    # binascii's, for every length of the last group and with either newline.
    assert kernel.value(
        "__import__('IPython.core.display').core.display.b2a_base64.__module__") == \
        "'_sandpit'"
    out = kernel.run(
        "import binascii, os, IPython.core.display as d\n"
        "same = [d.b2a_base64(x, newline=nl) == binascii.b2a_base64(x, newline=nl)\n"
        "        for x in [os.urandom(n) for n in range(70)] + [os.urandom(100001),\n"
        "                  bytearray(b'ab'), memoryview(b'abcd')]\n"
        "        for nl in (True, False)]\n"
        "errors = []\n"
        "for f in (d.b2a_base64, binascii.b2a_base64):\n"
        "    try:\n"
        "        f('text')\n"
        "    except TypeError as e:\n"
        "        errors.append(type(e).__name__)\n"
        "print(len(same), all(same), errors)")
    assert out == "146 True ['TypeError', 'TypeError']\n"
    # An Image of a file name that is not one says so, as under ipykernel.
    reply, _ = kernel.execute("from IPython.display import Image\n"
                              "Image(data='no-such.png', format='png')._repr_png_()")
    assert reply["content"]["ename"] == "FileNotFoundError"
    # What the client gets is the image's bytes.
    png = _pil_bytes("PNG", (5, 3))
    outputs = ok(kernel, "display(Image(data=%r))" % (png,))
    (content,) = [m["content"] for m in of_type(outputs, "display_data")]
    assert base64.b64decode(content["data"]["image/png"]) == png


def test_ipython_display_module_publishes_like_ipykernel(kernel):
    code = """
from IPython.display import (display, HTML, Markdown, Image, SVG, JSON, Latex, Math,
                             Javascript, clear_output, update_display)
import IPython.display, IPython.core.display_functions
display(HTML('<p>html</p>'), Markdown('# md'), Latex('$x^2$'), Math('x^2'),
        JSON({'a': 1}), SVG(%r), Javascript('1 + 1'))
h = display(Image(data=%r, width=40), display_id='img')
update_display(HTML('<p>updated</p>'), display_id='img')
clear_output(wait=True)
print(type(h).__module__, IPython.display.display.__module__)
""" % (SVG_TEXT, _pil_bytes("PNG", (6, 4)))
    outputs = ok(kernel, code)
    assert kinds(outputs) == ["display_data"] * 8 + ["update_display_data", "clear_output",
                                                     "stream"]
    data = [m["content"]["data"] for m in outputs[:8]]
    assert data[0] == {"text/plain": "<IPython.core.display.HTML object>",
                       "text/html": "<p>html</p>"}
    assert data[1]["text/markdown"] == "# md"
    assert data[2]["text/latex"] == "$x^2$"
    assert data[3]["text/latex"] == "$\\displaystyle x^2$"
    assert data[4]["application/json"] == {"a": 1}
    assert outputs[4]["content"]["metadata"] == {"application/json": {"expanded": False,
                                                                      "root": "root"}}
    svg = data[5]["image/svg+xml"]
    assert svg.startswith("<svg") and 'width="8"' in svg
    # JavaScript is withheld, and said so (tests/trusted/test_active_output.py).
    assert "application/javascript" not in data[6]
    assert "--active-output on" in data[6]["text/plain"]
    assert decode_image(data[7]["image/png"])[1] == (6, 4)
    assert outputs[7]["content"]["metadata"] == {"image/png": {"width": 40}}
    assert outputs[7]["content"]["transient"] == {"display_id": "img"}
    assert outputs[8]["content"]["data"]["text/html"] == "<p>updated</p>"
    assert outputs[8]["content"]["transient"] == {"display_id": "img"}
    assert outputs[9]["content"] == {"wait": True}
    # IPython's functions are sandpit's: nothing prints instead of publishing.
    assert outputs[10]["content"]["text"] == "sandpit.display sandpit.display\n"


def test_sandpit_display_objects_without_ipython(kernel):
    png = _pil_bytes("PNG", (10, 8))
    code = """
from sandpit.display import HTML, Markdown, SVG, JSON, Image, Latex, Pretty
with open('pixel.png', 'wb') as f:
    f.write(%r)
display(HTML('<b>x</b>'), Markdown('*y*'), SVG(%r), JSON([1, 2], expanded=True),
        Image(filename='pixel.png'), Image(data=open('pixel.png', 'rb').read(), retina=True),
        Latex('$z$'), Pretty('just text'))
""" % (png, SVG_TEXT)
    outputs = ok(kernel, code)
    contents = [m["content"] for m in of_type(outputs, "display_data")]
    assert [sorted(c["data"]) for c in contents] == [
        ["text/html", "text/plain"], ["text/markdown", "text/plain"],
        ["image/svg+xml", "text/plain"], ["application/json", "text/plain"],
        ["image/png", "text/plain"], ["image/png", "text/plain"],
        ["text/latex", "text/plain"], ["text/plain"]]
    assert contents[0]["data"]["text/plain"] == "<sandpit.display.HTML object>"
    assert contents[3]["metadata"] == {"application/json": {"expanded": True, "root": "root"}}
    assert decode_image(contents[4]["data"]["image/png"]) == (png, (10, 8))
    assert contents[5]["metadata"] == {"image/png": {"width": 5, "height": 4}}
    assert contents[7]["data"]["text/plain"] == "just text"


# --- pandas -----------------------------------------------------------------------------


def test_pandas_tables(kernel):
    outputs = ok(kernel, "import pandas as pd\n"
                         "df = pd.DataFrame({'city': ['Leeds', 'York'],\n"
                         "                   'rain_mm': [66.1, 52.4]})\n"
                         "df")
    data = result_of(outputs)["data"]
    assert set(data) == {"text/plain", "text/html"}
    assert data["text/plain"] == "    city  rain_mm\n0  Leeds     66.1\n1   York     52.4"
    assert '<table border="1" class="dataframe">' in data["text/html"]
    assert "<td>Leeds</td>" in data["text/html"] and "<td>52.4</td>" in data["text/html"]

    outputs = ok(kernel, "display(df)\ndf.rain_mm")
    (shown,) = of_type(outputs, "display_data")
    assert shown["content"]["data"] == data
    series = result_of(outputs)["data"]
    assert series["text/plain"] == "0    66.1\n1    52.4\nName: rain_mm, dtype: float64"
    assert "<th>rain_mm</th>" in series["text/html"] and "<td>66.1</td>" in series["text/html"]

    # As in ipykernel, a wide frame shows at most 20 columns, not an 80-column screen's worth.
    html = result_of(ok(kernel, "pd.DataFrame([range(30)])"))["data"]["text/html"]
    assert html.count("<td>") == 21 and "<td>...</td>" in html  # 20 values and "..."


# --- matplotlib ---------------------------------------------------------------------------

# A figure whose tight bounding box is known: an axes filling a 2 x 1 inch
# figure, nothing outside it; tight adds 0.1 inch of padding on each side.
FIXED = ("def fixed(w=2, h=1):\n"
         "    fig = plt.figure(figsize=(w, h), dpi=100)\n"
         "    ax = fig.add_axes([0, 0, 1, 1])\n"
         "    ax.plot([0, 1], [0, 1])\n"
         "    ax.set_axis_off()\n"
         "    return fig\n")


@pytest.fixture(scope="module")
def plotting(kernel):
    ok(kernel, "import matplotlib.pyplot as plt\n" + FIXED)
    return kernel


def test_plt_show_publishes_a_png_between_the_prints(plotting):
    outputs = ok(plotting, "print('before')\nplt.plot([1, 3, 2])\nplt.show()\nprint('after')")
    assert kinds(outputs) == ["stream", "display_data", "stream"]
    content = outputs[1]["content"]
    assert content["data"]["text/plain"] == "<Figure size 640x480 with 1 Axes>"
    raw, (w, h) = decode_image(content["data"]["image/png"])
    assert content["metadata"] == {"image/png": {"width": w, "height": h}}
    # 6.4 x 4.8 inches at 100 dpi, cropped to the tight box of axes and labels.
    assert 500 <= w <= 660 and 380 <= h <= 500
    assert content["transient"] == {}


def test_exact_size_and_figure_left_open_at_cell_end(plotting):
    outputs = ok(plotting, "fig = fixed()\nprint('drawn')")
    assert kinds(outputs) == ["stream", "display_data"]
    ((content, size),) = images(outputs)
    assert size == (220, 120)
    assert content["metadata"]["image/png"] == {"width": 220, "height": 120}
    # Shown and closed: the next cell has no figure open and shows nothing.
    outputs = ok(plotting, "print(plt.get_fignums())")
    assert kinds(outputs) == ["stream"] and stdout_of(outputs) == "[]\n"


def test_two_charts_in_one_cell(plotting):
    outputs = ok(plotting, "fixed(2, 1)\nfixed(3, 1)\nNone")
    assert [size for _, size in images(outputs)] == [(220, 120), (320, 120)]


def test_a_loop_of_three_shows(plotting):
    outputs = ok(plotting, "for i in range(3):\n    fixed(1 + i, 1)\n    plt.show()")
    assert kinds(outputs) == ["display_data"] * 3
    assert [size for _, size in images(outputs)] == [(120, 120), (220, 120), (320, 120)]


def test_no_chart_from_a_cell_that_does_not_plot(plotting):
    outputs = ok(plotting, "x = sum(range(10))\nprint(x)")
    assert kinds(outputs) == ["stream"]


def test_a_figure_is_published_once_unless_it_changes(plotting):
    # display(fig) publishes it; the end of the cell does not publish it again
    outputs = ok(plotting, "fig = fixed()\ndisplay(fig)")
    assert [size for _, size in images(outputs)] == [(220, 120)]
    # a figure as the cell's result: execute_result only
    outputs = ok(plotting, "fig = fixed()\nfig")
    assert kinds(outputs) == ["execute_result"]
    assert [size for _, size in images(outputs)] == [(220, 120)]
    # fig.show(), then plt.show(): once
    outputs = ok(plotting, "fig = fixed()\nfig.show()\nplt.show()")
    assert kinds(outputs) == ["display_data"]
    # changed after it was shown: shown again at the end, as it is now
    outputs = ok(plotting, "fig = fixed()\ndisplay(fig)\nfig.set_size_inches(3, 1)")
    assert [size for _, size in images(outputs)] == [(220, 120), (320, 120)]


def test_empty_figure_is_text_only(plotting):
    outputs = ok(plotting, "plt.figure(figsize=(2, 1))\nNone")
    (content,) = [m["content"] for m in of_type(outputs, "display_data")]
    assert content["data"] == {"text/plain": "<Figure size 200x100 with 0 Axes>"}


def test_savefig_to_the_workspace_still_works(plotting):
    outputs = ok(plotting, "import os\nfig = fixed()\nfig.savefig('chart.png')\n"
                           "print(os.path.abspath('chart.png'))")
    path = stdout_of(outputs).strip()
    with PILImage.open(path) as img:
        assert img.format == "PNG" and img.size == (200, 100)  # savefig: not cropped
    assert [size for _, size in images(outputs)] == [(220, 120)]


def test_a_figure_that_fails_to_draw_is_reported(plotting):
    reply, outputs = plotting.execute("fig = fixed()\nfig.text(0.5, 0.5, r'$\\frac{$')\n"
                                      "print('cell done')")
    assert reply["content"]["status"] == "ok"
    assert stdout_of(outputs) == "cell done\n"
    assert "ValueError" in stdout_of(outputs, "stderr")
    assert images(outputs) == []
    assert stdout_of(ok(plotting, "print(plt.get_fignums())")) == "[]\n"


# --- options and the hot path: kernels of their own --------------------------------------


def _kernel_with_env(jupyter_dir, tmp_path, **env):
    return start("sandpit", cwd=str(tmp_path), env={**os.environ, **env})


def test_plain_cells_import_nothing_and_svg_format(jupyter_dir, tmp_path):
    k = _kernel_with_env(jupyter_dir, tmp_path, SANDPIT_FIGURE_FORMAT="svg")
    try:
        outputs = ok(k, "x = [1, 2]\nx\n")
        assert result_of(outputs)["data"] == {"text/plain": "[1, 2]"}
        ok(k, "display(x)")
        heavy = ["matplotlib", "pandas", "numpy", "IPython", "PIL"]
        assert k.value("[m for m in %r if m in __import__('sys').modules]" % heavy) == "[]"
        # plt.ioff() before the first figure holds: nothing is shown until plt.show()
        outputs = ok(k, "import matplotlib.pyplot as plt\nplt.ioff()\nplt.plot([1, 2])\nNone")
        assert outputs == []
        outputs = ok(k, "plt.show()\nplt.ion()")
        (content,) = [m["content"] for m in of_type(outputs, "display_data")]
        assert set(content["data"]) == {"text/plain", "image/svg+xml"}
        assert "<svg" in content["data"]["image/svg+xml"]
        assert content["metadata"] == {}
    finally:
        stop(k)


def test_retina_format_and_dpi(jupyter_dir, tmp_path):
    k = _kernel_with_env(jupyter_dir, tmp_path,
                         SANDPIT_FIGURE_FORMAT="retina", SANDPIT_DPI="50")
    try:
        ok(k, "import matplotlib.pyplot as plt\n" + FIXED.replace(", dpi=100", ""))
        outputs = ok(k, "fixed()\nNone")
        ((content, size),) = images(outputs)
        # 2.2 x 1.2 inches (with padding) at 50 dpi, drawn at twice that
        assert size == (220, 120)
        assert content["metadata"] == {"image/png": {"width": 110, "height": 60}}
        assert content["data"]["text/plain"] == "<Figure size 100x50 with 1 Axes>"
    finally:
        stop(k)


def test_libraries_preloaded_before_start_up_are_adjusted_too(kernel_with):
    k = kernel_with("--preload", "matplotlib.pyplot,IPython.display,pandas")
    outputs = ok(k, "import IPython.display, pandas\n"
                    "print(IPython.display.display.__module__,"
                    " IPython.display.clear_output.__module__,"
                    " pandas.get_option('display.max_columns'))\n"
                    "import matplotlib.pyplot as plt\nplt.plot([1, 2])\nNone")
    assert kinds(outputs) == ["stream", "display_data"]
    assert stdout_of(outputs) == "sandpit.display sandpit.display 20\n"
    assert len(images(outputs)) == 1


# Text in which JSON escapes something at every turn: quotes, backslashes,
# control characters, and characters of two, three and four bytes in UTF-8.
TRICKY = 'a"b\\c\nd\te\x01f\x1fg/h\u00e9\u20ac\U0001f600 '


def test_binary_values_are_base64_of_every_length(kernel):
    """The worker's base64 (made straight into a str) for each remainder of a
    length by three, short and long, from bytes, bytearray and memoryview."""
    reply, outputs = kernel.execute(
        "import os\n"
        "sizes = [0, 1, 2, 3, 4, 5, 6, 7, 8, 300001, 300002, 300003]\n"
        "blobs = [os.urandom(n) for n in sizes]\n"
        "for i, b in enumerate(blobs):\n"
        "    value = (b, bytearray(b), memoryview(b))[i % 3]\n"
        "    display({'image/png': value, 'text/plain': b.hex()}, raw=True)")
    assert reply["content"]["status"] == "ok", reply["content"]
    data = [m["content"]["data"] for m in outputs if m["msg_type"] == "display_data"]
    assert len(data) == 12
    for d in data:
        raw = bytes.fromhex(d["text/plain"])
        assert d["image/png"] == base64.b64encode(raw).decode("ascii"), len(raw)


def test_large_outputs_arrive_byte_for_byte(kernel):
    """Large strings (a long stream, a big HTML table, a chart's base64) travel
    from the worker to the supervisor beside the JSON as raw text, and are
    escaped once, by the supervisor, into the message: what the client reads
    must be exactly what the cell made, whichever way each went."""
    kernel.run("TRICKY = %r\n"
               "big = TRICKY * 20000\n"
               "png = b'\\x89PNG\\r\\n\\x1a\\n' + bytes(range(256)) * 2000" % TRICKY)
    big = TRICKY * 20000
    reply, outputs = kernel.execute("import sys\nsys.stdout.write(big); sys.stdout.flush()")
    assert reply["content"]["status"] == "ok"
    assert stdout_of(outputs) == big
    reply, outputs = kernel.execute(
        "from IPython.display import HTML, Image, display\n"
        "display(HTML('<p>' + big + '</p>'))\n"
        "display(Image(data=png, format='png'))\n"
        "big")
    assert reply["content"]["status"] == "ok"
    data = [m["content"]["data"] for m in outputs
            if m["msg_type"] in ("display_data", "execute_result")]
    assert len(data) == 3, [m["msg_type"] for m in outputs]
    assert data[0]["text/html"] == "<p>" + big + "</p>"
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 2000
    assert base64.b64decode(data[1]["image/png"]) == png
    assert data[2]["text/plain"] == repr(big)


RSS_MIB = ("print(int(next(l for l in open('/proc/self/status')"
           " if l.startswith('VmRSS:')).split()[1]) >> 10)")


def test_the_worker_keeps_freed_blocks_between_cells_and_gives_them_back_idle(kernel):
    """A few of a cell's large blocks stay with the worker when freed, so the next
    cell's reuse their pages (a chart after a chart faults nothing in); after a
    second with nothing to do, the worker gives them back to the system."""
    if ASAN:
        pytest.skip("an AddressSanitizer build: its allocator keeps what is freed "
                    "(its quarantine), whatever the worker's own would do")
    time.sleep(1.5)  # what earlier tests left kept has gone back
    base = int(kernel.run(RSS_MIB))
    held = int(kernel.run("blocks = [b'x' * (8 << 20) for _ in range(3)]\n"
                          "del blocks\n" + RSS_MIB))
    print("worker RSS: %d MiB, then %d MiB with 24 MiB freed" % (base, held))
    assert held - base >= 20, (base, held)
    # reused: three more of the same size bring no new pages
    again = int(kernel.run("blocks = [b'y' * (8 << 20) for _ in range(3)]\n"
                           "del blocks\n" + RSS_MIB))
    assert again - held < 4, (base, held, again)
    deadline = time.monotonic() + 10
    while True:
        time.sleep(1.5)
        after = int(kernel.run(RSS_MIB))
        if after - base < 8 or time.monotonic() > deadline:
            break
    print("worker RSS once idle: %d MiB" % after)
    assert after - base < 8, (base, held, after)


def test_a_cell_gets_memory_the_worker_keeps(kernel_with):
    """What the worker keeps for the next cell is given back when a cell needs it:
    under a memory limit, a cell asks for 12 MiB more than is left of it while
    the worker keeps the 24 MiB an earlier cell freed, and gets it."""
    if ASAN:
        pytest.skip("an AddressSanitizer build runs without its memory limit")
    k = kernel_with("--memory", "256")
    k.run("blocks = [b'x' * (8 << 20) for _ in range(3)]\ndel blocks")
    out = k.run(
        "import resource\n"
        "limit = resource.getrlimit(resource.RLIMIT_DATA)[0]\n"
        "data = next(int(l.split()[1]) for l in open('/proc/self/status')\n"
        "            if l.startswith('VmData:')) << 10\n"
        "n = limit - data + (12 << 20)\n"
        "big = b'z' * n\n"
        "print(limit >> 20, len(big) == n)\n"
        "del big")
    assert out == "256 True\n", out
