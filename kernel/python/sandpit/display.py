"""Layer 3, display: MIME bundles, display(), and the objects that display well.

What a notebook shows of an object is its MIME bundle, {mime: data} plus
{mime: metadata}, built the way IPython's DisplayFormatter builds it, so that
sandpit's messages match ipykernel's:

- `_repr_mimebundle_(include=, exclude=)` first, when the object has it;
- then, for each mime not already in the bundle, the matching `_repr_*_`
  method: `_repr_html_`, `_repr_markdown_`, `_repr_svg_`, `_repr_png_`,
  `_repr_pdf_`, `_repr_jpeg_`, `_repr_latex_`, `_repr_json_`,
  `_repr_javascript_`; each may return data or (data, metadata); binary data
  goes out base64-encoded;
- text/plain always (sandpit.pretty: IPython's layout, without IPython),
  unless an extension has replaced its formatter (rich's %load_ext);
- a few types are formatted by name, without importing their library: a
  matplotlib Figure renders as an image (see sandpit.figures), a pandas Series
  as an HTML table like a DataFrame's.

A `_repr_*_` that raises is reported on stderr with its traceback and left
out; the other formats still go out. One that returns the wrong type is left
out with a FormatterWarning, as in IPython. NotImplementedError means "not
this format" and is silent.

display() publishes display_data (or update_display_data), clear_output()
publishes clear_output; both flush stdout and stderr first (sandpit.request),
so output keeps the order in which the cell produced it. display() is a
builtin in every cell; IPython.display's functions are routed here when
IPython is installed (sandpit.import_hooks). Without IPython, this module
offers the usual display objects itself: HTML, Markdown, Latex, Math, SVG,
JSON, Javascript, Image, Pretty.
"""

import builtins
import os
import sys
import types
import warnings

from . import link, request

__all__ = ["display", "update_display", "clear_output", "publish_display_data",
           "DisplayHandle", "format_object", "DisplayObject", "TextDisplayObject", "HTML",
           "Markdown", "Latex", "Math", "SVG", "JSON", "Javascript", "Image", "Pretty"]


class FormatterWarning(UserWarning):
    """A _repr_*_ method returned data of the wrong type for its MIME type."""


# (mime, method, accepted types of the data), in IPython's order.
_TEXT, _BINARY = (str,), (bytes, str)
FORMATS = [
    ("text/html", "_repr_html_", _TEXT),
    ("text/markdown", "_repr_markdown_", _TEXT),
    ("image/svg+xml", "_repr_svg_", _TEXT),
    ("image/png", "_repr_png_", _BINARY),
    ("application/pdf", "_repr_pdf_", _BINARY),
    ("image/jpeg", "_repr_jpeg_", _BINARY),
    ("text/latex", "_repr_latex_", _TEXT),
    ("application/json", "_repr_json_", (dict, list)),
    ("application/javascript", "_repr_javascript_", _TEXT),
]


# --- the MIME bundle -------------------------------------------------------------------


def format_object(obj, include=None, exclude=None):
    """Returns (data, metadata): the MIME bundle of obj, JSON-ready.

    include and exclude are collections of MIME types: with include, only
    those are computed; with exclude, all but those."""
    data, metadata = {}, {}
    bundle = _mimebundle(obj, include, exclude)
    if bundle is not None:
        for mime, value in bundle[0].items():
            if _wanted(mime, include, exclude):
                data[mime] = _encode(mime, value)
        for key, value in bundle[1].items():
            if _wanted(key, include, exclude):
                metadata[key] = value
    by_type = _type_formatters(obj)
    if _wanted("text/plain", include, exclude) and "text/plain" not in data:
        text = _plain_text(obj)
        if text is not None:
            data["text/plain"] = text
    for mime, method, accepted in FORMATS:
        special = by_type.get(mime)
        if (mime in data and special is None) or not _wanted(mime, include, exclude):
            continue
        fn = special or _real_method(obj, method)
        if fn is None:
            continue
        result = _call_formatter(fn, obj, mime)
        value, md = _split(result, mime, accepted, obj)
        if value is not None:
            data[mime] = _encode(mime, value)
        if md is not None:
            metadata[mime] = md
    return data, metadata


def format_result(value):
    """Returns (data, metadata) for execute_result; ({}, {}) when the value
    displayed itself through _ipython_display_ and no result should go out."""
    if _ipython_display(value):
        return {}, {}
    return format_object(value)


def publish_result(value, count):
    """Publishes the value of cell count's last expression as execute_result
    (nothing when it displayed itself, as a widget does)."""
    data, metadata = format_result(value)
    if data:
        request.publish("execute_result",
                        {"execution_count": count, "data": data, "metadata": metadata})


def _wanted(mime, include, exclude):
    return (not include or mime in include) and not (exclude and mime in exclude)


def _real_method(obj, name):
    """obj.name if it is a real method, else None: no failing getattr, no
    objects that claim to have every attribute, no unbound methods of a class."""
    try:
        canary = getattr(obj, "_ipython_canary_method_should_not_exist_", None)
    except Exception:
        return None
    if canary is not None:
        return None
    try:
        method = getattr(obj, name, None)
    except Exception:
        return None
    if isinstance(obj, type) and not isinstance(method, types.MethodType):
        return None
    return method if callable(method) else None


def _call_formatter(fn, obj, mime):
    """Calls a formatter; a failure is reported on stderr and yields None."""
    try:
        return fn()
    except NotImplementedError:
        return None
    except Exception as e:
        _report_failure("the %s representation of %s" % (mime, _short_repr(obj)), e)
        return None


def _mimebundle(obj, include, exclude):
    method = _real_method(obj, "_repr_mimebundle_")
    if method is None:
        return None
    try:
        result = method(include=include, exclude=exclude)
    except NotImplementedError:
        return None
    except Exception as e:
        _report_failure("_repr_mimebundle_ of %s" % _short_repr(obj), e)
        return None
    if result is None:
        return None
    data, md = result if isinstance(result, tuple) and len(result) == 2 else (result, None)
    if not isinstance(data, dict) or not (md is None or isinstance(md, dict)):
        _warn_type("mimebundle", result, dict, obj)
        return None
    return data, md or {}


def _split(result, mime, accepted, obj):
    """(data, metadata) of a formatter's result, None for a wrong type."""
    if result is None:
        return None, None
    md = None
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[0], accepted):
        result, md = result
    if not isinstance(result, accepted):
        _warn_type(mime, result, accepted, obj)
        return None, None
    return result, md


def _warn_type(mime, result, accepted, obj):
    expected = accepted[0] if isinstance(accepted, tuple) and len(accepted) == 1 else accepted
    warnings.warn("%s formatter returned invalid type %s (expected %s) for object: %s"
                  % (mime, type(result), expected, _short_repr(obj)), FormatterWarning)


def _encode(mime, value):
    if isinstance(value, (bytes, bytearray, memoryview)):
        return link.b64encode(value)
    return value


# What replaced the text/plain formatter (get_ipython().display_formatter
# .formatters["text/plain"] = fn, as rich's %load_ext does): fn(obj) -> str,
# or None for no text/plain (rich then displays the object itself).
_plain_formatter = None


def set_plain_formatter(fn):
    """Makes fn(obj) the text/plain of every object (None: sandpit.pretty again)."""
    global _plain_formatter
    _plain_formatter = fn


def _plain_text(obj):
    """The text/plain of obj, or None when a replaced formatter gives none."""
    from . import pretty
    try:
        if _plain_formatter is not None:
            text = _plain_formatter(obj)
            return text if isinstance(text, str) or text is None else str(text)
        return pretty.pretty(obj)
    except Exception as e:
        _report_failure("the text/plain representation of %s" % _short_repr(obj), e)
        return _short_repr(obj)


def _short_repr(obj):
    """A repr that cannot fail and runs no user code."""
    cls = type(obj)
    return "<%s.%s object at 0x%x>" % (cls.__module__, cls.__qualname__, id(obj))


def _report_failure(what, exc):
    import traceback  # at the first such failure (see sandpit.tracebacks)
    te = traceback.TracebackException(type(exc), exc, exc.__traceback__, compact=True)
    te.stack = traceback.StackSummary.from_list(
        [f for f in te.stack if not f.filename.startswith("<sandpit>")])
    sys.stderr.write("%s raised an exception and is left out:\n%s"
                     % (what[0].upper() + what[1:], "".join(te.format())))


# (module, class name) -> fn(obj) giving {mime: formatter}: formatters for the
# classes of libraries that layers above this one know (a matplotlib Figure).
_registered = {}


def register_formatters(module, name, fn):
    """Formats the instances of module.name (and its subclasses) with the
    formatters fn(obj) returns, {mime: callable}, in place of their _repr_*_
    methods. The module is never imported to check: an object of a module
    that is not loaded cannot exist."""
    _registered[(module, name)] = fn


def _type_formatters(obj):
    """Formatters for types that lack the _repr_*_ methods we want, found by
    their class and module so that nothing is imported to check."""
    for (module, name), fn in _registered.items():
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and isinstance(obj, cls):
            return fn(obj)
    for cls in type(obj).__mro__:
        if cls.__name__ == "Series" and cls.__module__ == "pandas.core.series":
            return {"text/html": lambda: _series_html(obj)}
    return {}


def _series_html(series):
    """A Series as the HTML table of a one-column DataFrame (pandas has no
    _repr_html_ for a Series), unnamed columns left blank."""
    frame = series.to_frame() if series.name is not None else series.to_frame(name="")
    return frame._repr_html_()


def _ipython_display(obj):
    """Calls obj._ipython_display_() if it has one; True if it did. A failing
    one is reported and the object is then formatted as usual, as in IPython."""
    method = _real_method(obj, "_ipython_display_")
    if method is None:
        return False
    try:
        method()
    except NotImplementedError:
        return False
    except Exception as e:
        _report_failure("_ipython_display_ of %s" % _short_repr(obj), e)
        return False
    return True


# --- publishing ------------------------------------------------------------------------


def publish_display_data(data, metadata=None, source=None, *, transient=None, update=False):
    """Publishes a ready MIME bundle as display_data (update_display_data
    with update=True). source is accepted and ignored, as by IPython."""
    if not isinstance(data, dict):
        raise TypeError("data must be a dict, got: %r" % (data,))
    if metadata is not None and not isinstance(metadata, dict):
        raise TypeError("metadata must be a dict, got: %r" % (metadata,))
    for key in data:
        if not isinstance(key, str):
            raise TypeError("MIME type keys must be strings, got: %r" % (key,))
    content = {"data": {k: _encode(k, v) for k, v in data.items()},
               "metadata": metadata or {}, "transient": transient or {}}
    request.publish("update_display_data" if update else "display_data", content)


def _new_id():
    return os.urandom(16).hex()


def _merge(d1, d2):
    """d1 updated with d2, merging dicts inside rather than replacing them."""
    if not isinstance(d2, dict) or not isinstance(d1, dict):
        return d2
    for key, value in d2.items():
        d1[key] = _merge(d1.get(key), value)
    return d1


def display(*objs, include=None, exclude=None, metadata=None, transient=None,
            display_id=None, raw=False, clear=False, update=False):
    """Displays objects in the notebook, each as its own display_data.

    include, exclude: MIME types to compute only, or to leave out.
    metadata: merged into each object's metadata (it takes precedence).
    transient: data that is not saved in the notebook.
    display_id: an id (or True for a new one) that later updates can name;
    display() then returns a DisplayHandle.
    raw: the objects are ready MIME bundles ({mime: data}).
    clear: clears the output first, once new output arrives.
    update: updates the displays with display_id instead (update_display)."""
    transient = dict(transient) if transient else {}
    if display_id:
        if display_id is True:
            display_id = _new_id()
        transient["display_id"] = display_id
    if update and "display_id" not in transient:
        raise TypeError("display_id required for update_display")
    if not objs and display_id:
        # An empty output that can be updated later.
        objs, raw = [{}], True
    if clear:
        clear_output(wait=True)
    for obj in objs:
        if raw:
            publish_display_data(obj, metadata, transient=transient, update=update)
            continue
        if _ipython_display(obj):
            continue
        data, md = format_object(obj, include, exclude)
        if not data:
            continue
        if metadata:
            _merge(md, metadata)
        publish_display_data(data, md, transient=transient, update=update)
    if display_id:
        return DisplayHandle(display_id)
    return None


def update_display(obj, *, display_id, **kwargs):
    """Replaces what the displays with display_id show by obj."""
    kwargs["update"] = True
    display(obj, display_id=display_id, **kwargs)


def clear_output(wait=False):
    """Clears the output of the cell; with wait=True, only once new output arrives."""
    request.publish("clear_output", {"wait": bool(wait)})


class DisplayHandle:
    """A handle on an updatable display: .update(obj) replaces what it shows,
    .display(obj) shows obj in a new output with the same id."""

    def __init__(self, display_id=None):
        self.display_id = display_id if display_id is not None else _new_id()

    def __repr__(self):
        return "<%s display_id=%s>" % (self.__class__.__name__, self.display_id)

    def display(self, obj, **kwargs):
        display(obj, display_id=self.display_id, **kwargs)

    def update(self, obj, **kwargs):
        update_display(obj, display_id=self.display_id, **kwargs)


# --- display objects (the equivalents of IPython.display's) ---------------------------------


def _copied(metadata):
    """A deep copy of a display object's metadata (copy is loaded by the
    first object that has some)."""
    import copy
    return copy.deepcopy(metadata)


def _safe_exists(path):
    try:
        return os.path.exists(path)
    except Exception:
        return False


class DisplayObject:
    """Data to display, given as data, read from a file, or fetched from a URL
    (there is no network in the sandbox unless the kernel allows it)."""

    _read_flags = "r"
    metadata = None

    def __init__(self, data=None, url=None, filename=None, metadata=None):
        if isinstance(data, os.PathLike):
            data = os.fspath(data)
        if data is not None and isinstance(data, str):
            if data.startswith("http") and url is None:
                url, filename, data = data, None, None
            elif filename is None and _safe_exists(data):
                url, filename, data = None, data, None
        self.url = url
        self.filename = filename
        self.data = data
        if metadata is not None:
            self.metadata = metadata
        elif self.metadata is None:
            self.metadata = {}
        self.reload()
        self._check_data()

    def __repr__(self):
        cls = self.__class__
        return "<%s.%s object>" % (cls.__module__, cls.__name__)

    def _check_data(self):
        pass

    def _data_and_metadata(self):
        if self.metadata:
            return self.data, _copied(self.metadata)
        return self.data

    def reload(self):
        """Reads the data again from the file or URL."""
        if self.filename is not None:
            encoding = None if "b" in self._read_flags else "utf-8"
            with open(self.filename, self._read_flags, encoding=encoding) as f:
                self.data = f.read()
        elif self.url is not None:
            from urllib.request import urlopen
            with urlopen(self.url) as response:
                raw = response.read()
                charset = response.headers.get_content_charset()
            if "b" in self._read_flags:
                self.data = raw
            else:
                self.data = raw.decode(charset or "utf-8", "replace")


class TextDisplayObject(DisplayObject):
    """A display object whose data is text."""

    def _check_data(self):
        if self.data is not None and not isinstance(self.data, str):
            raise TypeError("%s expects text, not %r" % (self.__class__.__name__, self.data))


class Pretty(TextDisplayObject):
    """Text shown as it is (text/plain)."""

    def _repr_pretty_(self, p, cycle):
        p.text(self.data)


class HTML(TextDisplayObject):
    """HTML (text/html)."""

    def __init__(self, data=None, url=None, filename=None, metadata=None):
        if data and isinstance(data, str) and data.lstrip().startswith("<iframe ") \
                and data.rstrip().endswith("</iframe>"):
            warnings.warn("Consider using IFrame instead of HTML for an iframe", UserWarning)
        super().__init__(data=data, url=url, filename=filename, metadata=metadata)

    def _repr_html_(self):
        return self._data_and_metadata()

    def __html__(self):
        return self._repr_html_()


class Markdown(TextDisplayObject):
    """Markdown (text/markdown)."""

    def _repr_markdown_(self):
        return self._data_and_metadata()


class Latex(TextDisplayObject):
    """LaTeX (text/latex), usually maths between $ signs."""

    def _repr_latex_(self):
        return self._data_and_metadata()


class Math(TextDisplayObject):
    """A LaTeX formula, typeset in display style."""

    def _repr_latex_(self):
        s = r"$\displaystyle %s$" % self.data.strip("$")
        return (s, _copied(self.metadata)) if self.metadata else s


class Javascript(TextDisplayObject):
    """JavaScript for the notebook to run (application/javascript)."""

    def _repr_javascript_(self):
        return self._data_and_metadata()


class SVG(DisplayObject):
    """An SVG image (image/svg+xml); the <svg> element is taken out of a
    whole document."""

    _read_flags = "rb"

    @property
    def data(self):
        return self._data

    @data.setter
    def data(self, svg):
        if svg is None:
            self._data = None
            return
        from xml.dom import minidom
        found = minidom.parseString(svg).getElementsByTagName("svg")
        if found:
            svg = found[0].toxml()
        self._data = svg.decode("utf-8", "replace") if isinstance(svg, bytes) else svg

    def _repr_svg_(self):
        return self._data_and_metadata()


class JSON(DisplayObject):
    """JSON data, shown as a tree that can be expanded (application/json)."""

    def __init__(self, data=None, url=None, filename=None, expanded=False, metadata=None,
                 root="root"):
        self.metadata = {"expanded": expanded, "root": root}
        if metadata:
            self.metadata.update(metadata)
        super().__init__(data=data, url=url, filename=filename)

    def _check_data(self):
        if self.data is not None and not isinstance(self.data, (dict, list)):
            raise TypeError("JSON expects a dict or a list, not %r" % (self.data,))

    @property
    def data(self):
        return self._data

    @data.setter
    def data(self, data):
        if isinstance(data, os.PathLike):
            data = os.fspath(data)
        if isinstance(data, (str, bytes)):
            import json
            data = json.loads(data)
        self._data = data

    def _repr_json_(self):
        return self._data_and_metadata()


_PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
_JPEG_MAGIC = b"\xff\xd8"


def png_size(data):
    """(width, height) of PNG data, from its IHDR chunk; None if it is not a PNG."""
    if len(data) >= 24 and data[:8] == _PNG_MAGIC and data[12:16] == b"IHDR":
        return int.from_bytes(data[16:20], "big"), int.from_bytes(data[20:24], "big")
    return None


def _jpeg_size(data):
    i = 2
    while i + 9 < len(data):
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        length = int.from_bytes(data[i + 2:i + 4], "big")
        if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
            return (int.from_bytes(data[i + 7:i + 9], "big"),
                    int.from_bytes(data[i + 5:i + 7], "big"))
        i += 2 + length
    return None


class Image(DisplayObject):
    """A PNG, JPEG or GIF image: embedded (base64 in the message) from data or
    a file, or linked to by URL (an <img> tag).

    width, height: display size in pixels; retina: show at half the image's
    pixel size (for 2x images); alt: alternative text."""

    _read_flags = "rb"
    _MIMETYPES = {"png": "image/png", "jpeg": "image/jpeg", "gif": "image/gif"}

    def __init__(self, data=None, url=None, filename=None, format=None, embed=None,
                 width=None, height=None, retina=False, unconfined=False, metadata=None,
                 alt=None):
        if isinstance(data, os.PathLike):
            data = os.fspath(data)
        if filename is not None:
            ext = _extension(filename)
        elif url is not None:
            ext = _extension(url)
        elif data is None:
            raise ValueError("No image data found. Expecting filename, url, or data.")
        elif isinstance(data, str) and (data.startswith("http") or _safe_exists(data)):
            ext = _extension(data)
        else:
            ext = None
        if format is None:
            if ext is not None:
                format = {"jpg": "jpeg", "jpeg": "jpeg", "png": "png", "gif": "gif"}.get(
                    ext.lower(), ext.lower())
            elif isinstance(data, bytes):
                format = "jpeg" if data[:2] == _JPEG_MAGIC else \
                    "gif" if data[:4] == b"GIF8" else "png"
            else:
                format = "png"
        self.format = "jpeg" if format.lower() == "jpg" else format.lower()
        self.embed = embed if embed is not None else (url is None)
        if self.embed and self.format not in self._MIMETYPES:
            raise ValueError("Cannot embed the '%s' image format" % self.format)
        self._mimetype = self._MIMETYPES.get(self.format)
        self.width, self.height = width, height
        self.retina, self.unconfined, self.alt = retina, unconfined, alt
        super().__init__(data=data, url=url, filename=filename, metadata=metadata)
        if self.width is None and self.metadata.get("width", {}):
            self.width = metadata["width"]
        if self.height is None and self.metadata.get("height", {}):
            self.height = metadata["height"]
        if retina:
            size = None
            if isinstance(self.data, bytes):
                size = png_size(self.data) if self.format == "png" else \
                    _jpeg_size(self.data) if self.format == "jpeg" else None
            if size:
                self.width, self.height = size[0] // 2, size[1] // 2

    def reload(self):
        if self.embed:
            super().reload()

    def _data_and_metadata(self, always_both=False):
        if not isinstance(self.data, (bytes, bytearray)):
            raise FileNotFoundError("No such file or directory: '%s'" % (self.data,))
        b64 = link.b64encode(self.data)
        md = dict(self.metadata) if self.metadata else {}
        for key in ("width", "height", "unconfined", "alt"):
            if getattr(self, key):
                md[key] = getattr(self, key)
        return (b64, md) if md or always_both else b64

    def _repr_mimebundle_(self, include=None, exclude=None):
        if self.embed:
            data, md = self._data_and_metadata(always_both=True)
            return {self._mimetype: data}, ({self._mimetype: md} if md else {})
        return {"text/html": self._repr_html_()}

    def _repr_html_(self):
        if self.embed:
            return None
        attrs = ""
        for key in ("width", "height", "alt"):
            if getattr(self, key):
                attrs += ' %s="%s"' % (key, _html_attr(getattr(self, key)))
        if self.unconfined:
            attrs += ' class="unconfined"'
        return '<img src="%s"%s/>' % (_html_attr(self.url), attrs)

    def _repr_png_(self):
        if self.embed and self.format == "png":
            return self._data_and_metadata()
        return None

    def _repr_jpeg_(self):
        if self.embed and self.format == "jpeg":
            return self._data_and_metadata()
        return None


def _extension(path):
    return os.path.splitext(str(path))[1][1:].lower() or None


def _html_attr(value):
    import html
    return html.escape(str(value), quote=True)


# --- start-up ----------------------------------------------------------------------


def install(user_ns):
    """Makes display() a builtin (sandpit.import_hooks routes IPython's
    display functions here)."""
    builtins.display = display
