"""Layer 3, pretty: the text/plain of a result, laid out as IPython lays it out.

ipykernel's text/plain is not repr(): long lists and dicts are broken over
lines at 79 columns, sequences stop after 1000 items, classes print as
`__main__.A`, functions with their signature, and objects may take part with
a `_repr_pretty_(p, cycle)` method. Notebooks saved from sandpit should read
the same, but importing IPython for this costs a fifth of a second and some
650 modules, on the path of every result. So this module is a small port of
the layout engine of IPython.lib.pretty (BSD licence, (c) 2007 Armin Ronacher,
portions (c) 2009 Robert Kern, the IPython Development Team): the same
printer API (text, breakable, break_, group, begin_group, end_group, indent,
pretty), so that `_repr_pretty_` methods written for IPython work unchanged,
and the printers of IPython's defaults for built-in types.

The hard part is the line-breaking algorithm (a Wadler/Oppen pretty printer):
text is buffered until it is known whether the outermost open group fits on
the line; if not, every breakable of that group becomes a newline, inner
groups stay whole while they fit. It is kept verbatim, quirks included,
because its output is what notebooks already hold.
"""

import datetime
import os
import re
import types
from collections import deque
from contextlib import contextmanager
from inspect import signature
from io import StringIO

MAX_SEQ_LENGTH = 1000
MAX_WIDTH = 79

_re_pattern_type = type(re.compile(""))


def pretty(obj, max_width=MAX_WIDTH, max_seq_length=MAX_SEQ_LENGTH):
    """The text/plain of obj, as IPython's PlainTextFormatter writes it."""
    stream = StringIO()
    printer = RepresentationPrinter(stream, False, max_width, "\n",
                                    max_seq_length=max_seq_length)
    printer.pretty(obj)
    printer.flush()
    return stream.getvalue()


def _safe_getattr(obj, attr, default=None):
    try:
        return getattr(obj, attr, default)
    except Exception:
        return default


def _sorted_for_pprint(items):
    items = list(items)
    try:
        return sorted(items)
    except Exception:
        try:
            return sorted(items, key=str)
        except Exception:
            return items


# --- the layout engine --------------------------------------------------------------


class PrettyPrinter:
    """Lays out text, breakables and groups within max_width columns."""

    def __init__(self, output, max_width=MAX_WIDTH, newline="\n",
                 max_seq_length=MAX_SEQ_LENGTH):
        self.output = output
        self.max_width = max_width
        self.newline = newline
        self.max_seq_length = max_seq_length
        self.output_width = 0
        self.buffer_width = 0
        self.buffer = deque()
        root_group = Group(0)
        self.group_stack = [root_group]
        self.group_queue = GroupQueue(root_group)
        self.indentation = 0

    @contextmanager
    def indent(self, indent):
        self.indentation += indent
        try:
            yield
        finally:
            self.indentation -= indent

    @contextmanager
    def group(self, indent=0, open="", close=""):
        self.begin_group(indent, open)
        try:
            yield
        finally:
            self.end_group(indent, close)

    def _break_one_group(self, group):
        while group.breakables:
            x = self.buffer.popleft()
            self.output_width = x.output(self.output, self.output_width)
            self.buffer_width -= x.width
        while self.buffer and isinstance(self.buffer[0], Text):
            x = self.buffer.popleft()
            self.output_width = x.output(self.output, self.output_width)
            self.buffer_width -= x.width

    def _break_outer_groups(self):
        while self.max_width < self.output_width + self.buffer_width:
            group = self.group_queue.deq()
            if not group:
                return
            self._break_one_group(group)

    def text(self, obj):
        """Adds literal text."""
        width = len(obj)
        if self.buffer:
            text = self.buffer[-1]
            if not isinstance(text, Text):
                text = Text()
                self.buffer.append(text)
            text.add(obj, width)
            self.buffer_width += width
            self._break_outer_groups()
        else:
            self.output.write(obj)
            self.output_width += width

    def breakable(self, sep=" "):
        """A place where the line may break; sep is written if it does not."""
        width = len(sep)
        group = self.group_stack[-1]
        if group.want_break:
            self.flush()
            self.output.write(self.newline)
            self.output.write(" " * self.indentation)
            self.output_width = self.indentation
            self.buffer_width = 0
        else:
            self.buffer.append(Breakable(sep, width, self))
            self.buffer_width += width
            self._break_outer_groups()

    def break_(self):
        """A newline, whatever the width, keeping the indentation."""
        group = self.group_queue.deq()
        if group:
            self._break_one_group(group)
        self.flush()
        self.output.write(self.newline)
        self.output.write(" " * self.indentation)
        self.output_width = self.indentation
        self.buffer_width = 0

    def begin_group(self, indent=0, open=""):
        if open:
            self.text(open)
        group = Group(self.group_stack[-1].depth + 1)
        self.group_stack.append(group)
        self.group_queue.enq(group)
        self.indentation += indent

    def _enumerate(self, seq):
        """enumerate(), stopping with '...' after max_seq_length items."""
        for idx, x in enumerate(seq):
            if self.max_seq_length and idx >= self.max_seq_length:
                self.text(",")
                self.breakable()
                self.text("...")
                return
            yield idx, x

    def end_group(self, dedent=0, close=""):
        self.indentation -= dedent
        group = self.group_stack.pop()
        if not group.breakables:
            self.group_queue.remove(group)
        if close:
            self.text(close)

    def flush(self):
        for data in self.buffer:
            self.output_width += data.output(self.output, self.output_width)
        self.buffer.clear()
        self.buffer_width = 0


class RepresentationPrinter(PrettyPrinter):
    """A PrettyPrinter that knows how to print Python objects."""

    def __init__(self, output, verbose=False, max_width=MAX_WIDTH, newline="\n",
                 max_seq_length=MAX_SEQ_LENGTH):
        PrettyPrinter.__init__(self, output, max_width, newline, max_seq_length=max_seq_length)
        self.verbose = verbose
        self.stack = []
        self.singleton_pprinters = _singleton_pprinters
        self.type_pprinters = _type_pprinters
        self.deferred_pprinters = _deferred_type_pprinters

    def pretty(self, obj):
        obj_id = id(obj)
        cycle = obj_id in self.stack
        self.stack.append(obj_id)
        self.begin_group()
        try:
            obj_class = _safe_getattr(obj, "__class__", None) or type(obj)
            try:
                printer = self.singleton_pprinters[obj_id]
            except (TypeError, KeyError):
                pass
            else:
                return printer(obj, self, cycle)
            for cls in _get_mro(obj_class):
                if cls in self.type_pprinters:
                    return self.type_pprinters[cls](obj, self, cycle)
                printer = self._in_deferred_types(cls)
                if printer is not None:
                    return printer(obj, self, cycle)
                # Objects that claim every attribute are caught by callable().
                if "_repr_pretty_" in cls.__dict__:
                    meth = cls._repr_pretty_
                    if callable(meth):
                        return meth(obj, self, cycle)
                if cls is not object and callable(cls.__dict__.get("__repr__")):
                    return _repr_pprint(obj, self, cycle)
            return _default_pprint(obj, self, cycle)
        finally:
            self.end_group()
            self.stack.pop()

    def _in_deferred_types(self, cls):
        key = (_safe_getattr(cls, "__module__", None), _safe_getattr(cls, "__name__", None))
        printer = self.deferred_pprinters.get(key)
        if printer is not None:
            self.type_pprinters[cls] = printer
        return printer


def _get_mro(obj_class):
    mro = _safe_getattr(obj_class, "__mro__", None)
    return mro if isinstance(mro, tuple) else (obj_class,)


class Printable:
    def output(self, stream, output_width):
        return output_width


class Text(Printable):
    def __init__(self):
        self.objs = []
        self.width = 0

    def output(self, stream, output_width):
        for obj in self.objs:
            stream.write(obj)
        return output_width + self.width

    def add(self, obj, width):
        self.objs.append(obj)
        self.width += width


class Breakable(Printable):
    def __init__(self, seq, width, pretty):
        self.obj = seq
        self.width = width
        self.pretty = pretty
        self.indentation = pretty.indentation
        self.group = pretty.group_stack[-1]
        self.group.breakables.append(self)

    def output(self, stream, output_width):
        self.group.breakables.popleft()
        if self.group.want_break:
            stream.write(self.pretty.newline)
            stream.write(" " * self.indentation)
            return self.indentation
        if not self.group.breakables:
            self.pretty.group_queue.remove(self.group)
        stream.write(self.obj)
        return output_width + self.width


class Group(Printable):
    def __init__(self, depth):
        self.depth = depth
        self.breakables = deque()
        self.want_break = False


class GroupQueue:
    def __init__(self, *groups):
        self.queue = []
        for group in groups:
            self.enq(group)

    def enq(self, group):
        depth = group.depth
        while depth > len(self.queue) - 1:
            self.queue.append([])
        self.queue[depth].append(group)

    def deq(self):
        for stack in self.queue:
            for idx, group in enumerate(reversed(stack)):
                if group.breakables:
                    del stack[idx]  # sic: IPython's index, kept for identical output
                    group.want_break = True
                    return group
            for group in stack:
                group.want_break = True
            del stack[:]

    def remove(self, group):
        try:
            self.queue[group.depth].remove(group)
        except ValueError:
            pass


class RawText:
    """p.pretty(RawText(s)) is p.text(s)."""

    def __init__(self, value):
        self.value = value

    def _repr_pretty_(self, p, cycle):
        p.text(self.value)


class CallExpression:
    """Prints as name(*args, **kwargs), wrapped like a call."""

    def __init__(__self, __name, *args, **kwargs):
        __self.name = __name
        __self.args = args
        __self.kwargs = kwargs

    @classmethod
    def factory(cls, name):
        def inner(*args, **kwargs):
            return cls(name, *args, **kwargs)
        return inner

    def _repr_pretty_(self, p, cycle):
        started = False

        def new_item():
            nonlocal started
            if started:
                p.text(",")
                p.breakable()
            started = True

        prefix = self.name + "("
        with p.group(len(prefix), prefix, ")"):
            for arg in self.args:
                new_item()
                p.pretty(arg)
            for arg_name, arg in self.kwargs.items():
                new_item()
                arg_prefix = arg_name + "="
                with p.group(len(arg_prefix), arg_prefix):
                    p.pretty(arg)


class RawStringLiteral:
    """Prints a string as a raw literal where that is possible."""

    def __init__(self, value):
        self.value = value

    def _repr_pretty_(self, p, cycle):
        base_repr = repr(self.value)
        if base_repr[:1] in "uU":
            base_repr = base_repr[1:]
            prefix = "ur"
        else:
            prefix = "r"
        p.text(prefix + base_repr.replace("\\\\", "\\"))


# --- printers for built-in types ------------------------------------------------------


def _default_pprint(obj, p, cycle):
    klass = _safe_getattr(obj, "__class__", None) or type(obj)
    if _safe_getattr(klass, "__repr__", None) is not object.__repr__:
        _repr_pprint(obj, p, cycle)
        return
    p.begin_group(1, "<")
    p.pretty(klass)
    p.text(" at 0x%x" % id(obj))
    if cycle:
        p.text(" ...")
    p.end_group(1, ">")


def _seq_pprinter_factory(start, end):
    def inner(obj, p, cycle):
        if cycle:
            return p.text(start + "..." + end)
        step = len(start)
        p.begin_group(step, start)
        for idx, x in p._enumerate(obj):
            if idx:
                p.text(",")
                p.breakable()
            p.pretty(x)
        if len(obj) == 1 and isinstance(obj, tuple):
            p.text(",")
        p.end_group(step, end)
    return inner


def _set_pprinter_factory(start, end):
    def inner(obj, p, cycle):
        if cycle:
            return p.text(start + "..." + end)
        if len(obj) == 0:
            p.text(type(obj).__name__ + "()")
        else:
            step = len(start)
            p.begin_group(step, start)
            if not (p.max_seq_length and len(obj) >= p.max_seq_length):
                items = _sorted_for_pprint(obj)
            else:
                items = obj
            for idx, x in p._enumerate(items):
                if idx:
                    p.text(",")
                    p.breakable()
                p.pretty(x)
            p.end_group(step, end)
    return inner


def _dict_pprinter_factory(start, end):
    def inner(obj, p, cycle):
        if cycle:
            return p.text("{...}")
        step = len(start)
        p.begin_group(step, start)
        for idx, key in p._enumerate(obj.keys()):
            if idx:
                p.text(",")
                p.breakable()
            p.pretty(key)
            p.text(": ")
            p.pretty(obj[key])
        p.end_group(step, end)
    return inner


def _super_pprint(obj, p, cycle):
    p.begin_group(8, "<super: ")
    p.pretty(obj.__thisclass__)
    p.text(",")
    p.breakable()
    p.pretty(obj.__self__)
    p.end_group(8, ">")


class _ReFlags:
    def __init__(self, value):
        self.value = value

    def _repr_pretty_(self, p, cycle):
        done_one = False
        for flag in ("TEMPLATE", "IGNORECASE", "LOCALE", "MULTILINE", "DOTALL", "UNICODE",
                     "VERBOSE", "DEBUG"):
            if self.value & getattr(re, flag):
                if done_one:
                    p.text("|")
                p.text("re." + flag)
                done_one = True


def _re_pattern_pprint(obj, p, cycle):
    re_compile = CallExpression.factory("re.compile")
    if obj.flags:
        p.pretty(re_compile(RawStringLiteral(obj.pattern), _ReFlags(obj.flags)))
    else:
        p.pretty(re_compile(RawStringLiteral(obj.pattern)))


def _types_simplenamespace_pprint(obj, p, cycle):
    namespace = CallExpression.factory("namespace")
    if cycle:
        p.pretty(namespace(RawText("...")))
    else:
        p.pretty(namespace(**obj.__dict__))


def _type_pprint(obj, p, cycle):
    # A metaclass with its own __repr__ keeps it.
    if [m for m in _get_mro(type(obj)) if "__repr__" in vars(m)][:1] != [type]:
        _repr_pprint(obj, p, cycle)
        return
    mod = _safe_getattr(obj, "__module__", None)
    try:
        name = obj.__qualname__
        if not isinstance(name, str):
            raise TypeError
    except Exception:
        name = obj.__name__
        if not isinstance(name, str):
            name = "<unknown type>"
    if mod in (None, "__builtin__", "builtins", "exceptions"):
        p.text(name)
    else:
        p.text(mod + "." + name)


def _repr_pprint(obj, p, cycle):
    output = repr(obj)
    lines = output.splitlines()
    with p.group():
        for idx, output_line in enumerate(lines):
            if idx:
                p.break_()
            p.text(output_line)


def _function_pprint(obj, p, cycle):
    name = _safe_getattr(obj, "__qualname__", obj.__name__)
    mod = obj.__module__
    if mod and mod not in ("__builtin__", "builtins", "exceptions"):
        name = mod + "." + name
    try:
        func_def = name + str(signature(obj))
    except (ValueError, TypeError):
        func_def = name
    p.text("<function %s>" % func_def)


def _exception_pprint(obj, p, cycle):
    name = getattr(obj.__class__, "__qualname__", obj.__class__.__name__)
    if obj.__class__.__module__ not in ("exceptions", "builtins"):
        name = "%s.%s" % (obj.__class__.__module__, name)
    p.pretty(CallExpression(name, *getattr(obj, "args", ())))


def _ctor_pprinter(args_of):
    def inner(obj, p, cycle):
        ctor = CallExpression.factory(obj.__class__.__name__)
        if cycle:
            p.pretty(ctor(RawText("...")))
        else:
            args, kwargs = args_of(obj)
            p.pretty(ctor(*args, **kwargs))
    return inner


_type_pprinters = {
    int: _repr_pprint,
    float: _repr_pprint,
    str: _repr_pprint,
    tuple: _seq_pprinter_factory("(", ")"),
    list: _seq_pprinter_factory("[", "]"),
    dict: _dict_pprinter_factory("{", "}"),
    set: _set_pprinter_factory("{", "}"),
    frozenset: _set_pprinter_factory("frozenset({", "})"),
    super: _super_pprint,
    _re_pattern_type: _re_pattern_pprint,
    type: _type_pprint,
    types.FunctionType: _function_pprint,
    types.BuiltinFunctionType: _function_pprint,
    types.MethodType: _repr_pprint,
    types.SimpleNamespace: _types_simplenamespace_pprint,
    datetime.datetime: _repr_pprint,
    datetime.timedelta: _repr_pprint,
    BaseException: _exception_pprint,
    types.MappingProxyType: _dict_pprinter_factory("mappingproxy({", "})"),
    slice: _repr_pprint,
    range: _repr_pprint,
    bytes: _repr_pprint,
}
if type(os.environ) is not dict:
    _type_pprinters[type(os.environ)] = _dict_pprinter_factory("environ{", "}")

_deferred_type_pprinters = {
    ("collections", "defaultdict"):
        _ctor_pprinter(lambda o: ((o.default_factory, dict(o)), {})),
    ("collections", "OrderedDict"):
        _ctor_pprinter(lambda o: (((list(o.items()),) if len(o) else ()), {})),
    ("collections", "deque"):
        _ctor_pprinter(lambda o: ((list(o),), ({"maxlen": o.maxlen}
                                               if o.maxlen is not None else {}))),
    ("collections", "Counter"):
        _ctor_pprinter(lambda o: (((dict(o),) if len(o) else ()), {})),
    ("collections", "UserList"): _ctor_pprinter(lambda o: ((o.data,), {})),
}

_singleton_pprinters = dict.fromkeys(map(id, [None, True, False, Ellipsis, NotImplemented]),
                                     _repr_pprint)


# --- what a shell may change -------------------------------------------------------------


def set_float_format(fmt):
    """%precision: floats shown as fmt % value ('%.3f'); None shows their repr again."""
    if fmt is None:
        _type_pprinters[float] = _repr_pprint
    else:
        fmt % 1.0  # a bad format fails here, not at the next result

        def _float_pprint(obj, p, cycle):
            p.text(fmt % obj)
        _type_pprinters[float] = _float_pprint


def for_type(typ, func=None):
    """IPython's PlainTextFormatter.for_type: func(obj, p, cycle) prints the
    instances of typ; returns the printer it replaces (without func: the printer)."""
    old = _type_pprinters.get(typ)
    if func is not None:
        _type_pprinters[typ] = func
    return old


def for_type_by_name(module, name, func=None):
    """for_type for a class named by its module and name, not imported to register."""
    key = (module, name)
    old = _deferred_type_pprinters.get(key)
    if func is not None:
        _deferred_type_pprinters[key] = func
    return old
