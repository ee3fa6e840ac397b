"""Issue 27, finding 2: active output from a sandboxed kernel must not run as
the notebook's page. The supervisor makes every output inert before it is
published (kernel/supervisor/active.c): these tests read the iopub messages and
replies a client receives, for output made the ordinary way (IPython.display)
and for frames that the cell's code writes to its link by hand, which no code
in the worker can filter. A DataFrame's table and matplotlib's charts come
through unchanged; `--active-output on` lets everything through as it was.
The browser itself is tested in tests/browser/test_browser_active_output.py."""

import hashlib
import json

import pytest

from sandpit_testing import start, stop

FORGE = """
import _sandpit, json
from sandpit import request
def forge(frame):
    _sandpit.send(json.dumps(frame).encode())
"""

JS = "fetch('/api/kernels', {method: 'POST', body: JSON.stringify({name: 'python3'})})"


@pytest.fixture(scope="module")
def kern(jupyter_dir, tmp_path_factory):
    k = start("sandpit", cwd=str(tmp_path_factory.mktemp("active")))
    k.run(FORGE)
    yield k
    stop(k)


def bundles(outputs, *types):
    types = types or ("display_data", "execute_result", "update_display_data")
    return [m["content"]["data"] for m in outputs if m["msg_type"] in types]


def ok(k, code):
    reply, outputs = k.execute(code)
    assert reply["content"]["status"] == "ok", reply["content"]
    return outputs


def assert_framed(html):
    assert html.startswith('<iframe sandbox="allow-scripts" '), html[:200]
    assert "allow-same-origin" not in html
    assert "Content-Security-Policy" in html  # the kernel has no network
    assert html.count("<") == 2 and html.endswith("</iframe>")


def test_javascript_is_withheld(kern):
    (data,) = bundles(ok(kern, "from IPython.display import display, Javascript\n"
                               "display(Javascript(%r))" % JS))
    assert not any("javascript" in k.lower() for k in data), data
    assert "--active-output on" in data["text/plain"]
    for mime in ("application/javascript", "text/javascript", "application/x-javascript",
                 "Application/ECMAScript"):
        (data,) = bundles(ok(kern, "display({%r: %r, 'text/plain': 'x'}, raw=True)"
                                   % (mime, JS)))
        assert list(data) == ["text/plain"], data


@pytest.mark.parametrize("markup", [
    "<img src=x onerror=\"%s\">" % JS,
    "<script>%s</script>" % JS,
    "<a href=' JaVaScRiPt:%s'>click</a>" % JS,
    "<svg><foreignObject><img src=x onerror=alert(1)></foreignObject></svg>",
    "<!--><img src=x onerror=alert(1)>-->",
    "<iframe src='/api/kernels'></iframe>",
])
def test_active_html_is_framed(kern, markup):
    (data,) = bundles(ok(kern, "from IPython.display import HTML\nHTML(%r)" % markup))
    assert_framed(data["text/html"])


def test_active_svg_becomes_a_picture(kern):
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" width="8" height="6" '
           'onload="alert(1)"><script>%s</script></svg>' % JS)
    (data,) = bundles(ok(kern, "from IPython.display import SVG, display\n"
                               "display(SVG(%r))" % svg))
    assert "image/svg+xml" not in data
    assert data["text/html"].startswith('<img src="data:image/svg+xml;base64,')


def test_active_markdown_is_shown_as_text(kern):
    md = "[click](javascript:alert(1)) <img src=x onerror=alert(1)>"
    (data,) = bundles(ok(kern, "from IPython.display import Markdown\nMarkdown(%r)" % md))
    assert "text/markdown" not in data
    (data,) = bundles(ok(kern, "display({'text/markdown': %r}, raw=True)" % md))
    assert data == {"text/plain": md}
    (data,) = bundles(ok(kern, "Markdown(%r)" % md))
    assert data == {"text/plain": md}


def test_a_table_and_charts_come_through_unchanged(kern):
    outputs = ok(kern, """
import hashlib, io
import pandas as pd
import matplotlib
matplotlib.use('svg')
import matplotlib.pyplot as plt
from IPython.display import SVG, Image, display
df = pd.DataFrame({'plant': ['rose', 'tulip'], 'height': [1.5, 2.0]})
print(hashlib.sha256(df._repr_html_().encode()).hexdigest())
display(df)
fig, ax = plt.subplots()
ax.plot([1, 2, 3], [3, 1, 2])
ax.set_title('Garden & <heights>')
for fmt in ('svg', 'png'):
    b = io.BytesIO()
    fig.savefig(b, format=fmt)
    shown = SVG(b.getvalue()) if fmt == 'svg' else Image(b.getvalue())
    data = shown._repr_svg_().encode() if fmt == 'svg' else b.getvalue()
    print(hashlib.sha256(data).hexdigest())
    display(shown)
display({'text/html': '<b>bold</b> <a href="https://example.org/">link</a>'}, raw=True)
""")
    table_hash, svg_hash, png_hash = "".join(
        m["content"]["text"] for m in outputs if m["msg_type"] == "stream").split()
    table, svg, png, plain = bundles(outputs)
    assert hashlib.sha256(table["text/html"].encode()).hexdigest() == table_hash
    assert hashlib.sha256(svg["image/svg+xml"].encode()).hexdigest() == svg_hash
    assert "text/html" not in svg
    import base64
    assert hashlib.sha256(base64.b64decode(png["image/png"])).hexdigest() == png_hash
    assert plain["text/html"] == '<b>bold</b> <a href="https://example.org/">link</a>'


def test_forged_frames_are_made_inert_too(kern):
    """Frames the cell writes to its link itself, past every Python layer."""
    outputs = ok(kern, """
tag = request.current_tag()
forge({'type': 'iopub', 'msg_type': 'display_data', 'parent': tag,
       'content': {'data': {'application/javascript': 'x', 'text/html': '<svg onload=x>'},
                   'metadata': {}, 'transient': {'display_id': 'd'}}})
forge({'type': 'iopub', 'msg_type': 'update_display_data', 'parent': tag,
       'content': {'data': {'text/html': '<img src=x onerror=x>'}, 'metadata': {},
                   'transient': {'display_id': 'd'}}})
forge({'type': 'iopub', 'msg_type': 'comm_msg', 'parent': tag,
       'content': {'comm_id': 'c', 'data': {'method': 'update', 'state': {
           '_view_module': '../files/evil',
           'value': '<img src=x onerror=x>',
           'outputs': [{'output_type': 'display_data', 'metadata': {},
                        'data': {'application/javascript': 'x'}}]}}}})
""")
    shown, update = bundles(outputs)
    assert "application/javascript" not in shown
    assert_framed(shown["text/html"])
    assert_framed(update["text/html"])
    (comm,) = [m["content"] for m in outputs if m["msg_type"] == "comm_msg"]
    state = comm["data"]["state"]
    assert state["_view_module"] == "sandpit-withheld"
    assert_framed(state["value"])
    assert state["outputs"][0]["data"] == {
        "text/plain": state["outputs"][0]["data"]["text/plain"]}


def test_a_pager_payload_is_made_inert(kern):
    """Notebook puts a pager payload's text/html in its page."""
    reply, _ = kern.execute(
        "forge({'type': 'reply', 'shell': '', 'parent': request.current_tag(),\n"
        "       'content': {'status': 'ok', 'execution_count': 1, 'user_expressions': {},\n"
        "                   'payload': [{'source': 'page', 'start': 0, 'data': {\n"
        "                       'text/html': '<img src=x onerror=x>', 'text/plain': 'x'}}]}})\n")
    (page,) = reply["content"]["payload"]
    assert_framed(page["data"]["text/html"])


def test_active_output_on_lets_it_through(kernel_with):
    k = kernel_with("--active-output", "on")
    (data,) = bundles(ok(k, "display({'application/javascript': %r, 'text/html':"
                            " '<img src=x onerror=x>'}, raw=True)" % JS))
    assert data == {"application/javascript": JS, "text/html": "<img src=x onerror=x>"}
