"""Layer 4, inspection: what an object is, for inspect_request, obj?, obj?? and help().

The text is IPython's (IPython.core.oinspect, which ipykernel answers
inspect_request with): the same fields in the same order ("Signature:",
"Docstring:", "File:", "Type:", ...), headings in red ANSI, so that a
notebook's pager and a console show what they show for ipykernel. IPython also
colours the signature and the source; this module does not, so the text
differs from ipykernel's only in escape sequences.

inspect() finds the name at the cursor (the function being called when the
cursor is inside its parentheses, as IPython's token_at_cursor does) and
looks it up without calling anything: user namespace, then builtins, then
attributes, the last one read from the class when it is a property.

page() adds a "page" payload to the current execute_reply: that is how
obj? and obj?? answer. help(obj) prints pydoc's text, as ipykernel's does;
pydoc's pager (which could start `less`) is never used.
"""

import builtins
import inspect as _inspect
import io
import linecache
import os
import re
import sys
import types

from . import execution
from . import request

HEAD, NORMAL = "\x1b[0;31m", "\x1b[0m"
STRING_MAX = 200

_OBJECT_INIT_DOC = _inspect.getdoc(object.__init__)
_FUNC_CALL_DOC = _inspect.getdoc(types.FunctionType.__call__)
_BUILTIN_TYPE_DOCS = {_inspect.getdoc(t) for t in (types.ModuleType, types.MethodType,
                                                  types.FunctionType, property)}
_SIMPLE_CALLABLES = (types.FunctionType, types.MethodType, types.BuiltinFunctionType,
                     types.BuiltinMethodType, type(str.upper))


# --- finding the object ------------------------------------------------------------


def _is_dotted_name(name):
    return bool(name) and all(part.isidentifier() for part in name.split("."))


def _getattr_static_first(obj, attr):
    """getattr, except that a property is returned as the property (not run)."""
    if not isinstance(obj, type):
        try:
            static = _inspect.getattr_static(type(obj), attr)
        except AttributeError:
            pass
        else:
            if isinstance(static, property):
                return static
    return getattr(obj, attr)


def find_object(oname, user_ns, find_magic=None):
    """Looks oname up as IPython's _ofind does. Returns a dict with found, obj,
    namespace ("Interactive", "Python builtin" or "Magic") and ismagic.
    find_magic(name, cell) gives the function of a magic, or None (the
    caller passes it: the magics are a layer above this module)."""
    oname = oname.strip()
    if oname.startswith("%"):
        return _find_magic(oname.lstrip("%"), oname.startswith("%%"), find_magic)
    if not _is_dotted_name(oname):
        if oname in ("''", '""', "[]", "{}", "()"):
            return {"found": True, "obj": eval(oname), "namespace": "Interactive",
                    "ismagic": False}
        return {"found": False}
    head, *rest = oname.split(".")
    for nsname, ns in (("Interactive", user_ns), ("Python builtin", builtins.__dict__)):
        if head not in ns:
            continue
        obj = ns[head]
        try:
            for i, part in enumerate(rest):
                obj = (_getattr_static_first(obj, part) if i == len(rest) - 1
                       else getattr(obj, part))
        except Exception:
            break
        return {"found": True, "obj": obj, "namespace": nsname, "ismagic": False}
    if not rest:
        return _find_magic(head, False, find_magic)
    return {"found": False}


def _find_magic(name, cell, find_magic):
    if find_magic is None:
        return {"found": False}
    fn = find_magic(name, cell)
    if fn is None and not cell:
        fn = find_magic(name, True)
    if fn is None:
        return {"found": False}
    return {"found": True, "obj": fn, "namespace": "Magic", "ismagic": True}


def token_at_cursor(cell, cursor_pos=0):
    """The dotted name at the cursor; inside a call's parentheses, the callable
    (IPython's IPython.utils.tokenutil.token_at_cursor)."""
    import keyword
    import tokenize
    names, tokens, call_names = [], [], []
    offsets = {1: 0}
    try:
        for tok in tokenize.generate_tokens(io.StringIO(cell).readline):
            start_line, start_col = tok.start
            end_line, end_col = tok.end
            if end_line + 1 not in offsets:
                for lineno, line in enumerate(tok.line.splitlines(True), start_line + 1):
                    if lineno not in offsets:
                        offsets[lineno] = offsets[lineno - 1] + len(line)
            offset = offsets.get(start_line, 0)
            boundary = cursor_pos + 1 if start_col == 0 else cursor_pos
            if offset + start_col >= boundary:
                break
            if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
                if names and tokens and tokens[-1].type == tokenize.OP \
                        and tokens[-1].string == ".":
                    names[-1] = "%s.%s" % (names[-1], tok.string)
                else:
                    names.append(tok.string)
            elif tok.type == tokenize.OP:
                if tok.string == "=" and names:
                    names.pop(-1)
                if tok.string == "(" and names:
                    call_names.append(names[-1])
                elif tok.string == ")" and call_names:
                    call_names.pop(-1)
            tokens.append(tok)
            if offsets.get(end_line, 0) + end_col > cursor_pos:
                break
    except (tokenize.TokenError, SyntaxError, IndentationError):
        pass
    if call_names:
        return call_names[-1]
    return names[-1] if names else ""


# --- the text ---------------------------------------------------------------------


def getdoc(obj):
    try:
        ds = obj.getdoc()
    except Exception:
        pass
    else:
        if isinstance(ds, str):
            return _inspect.cleandoc(ds)
    try:
        return _inspect.getdoc(obj)
    except Exception:
        return None


def _unwrap(obj):
    orig, n = obj, 0
    try:
        while hasattr(obj, "__wrapped__"):
            obj = obj.__wrapped__
            n += 1
            if n > 100:
                return orig
    except Exception:
        return orig
    return obj


def find_file(obj):
    """Where obj was defined: a path, "Cell In[n]" for a cell, "<sandpit>/name.py"
    for the runtime, or None."""
    obj = _unwrap(obj)
    fname = None
    for candidate in (obj, getattr(obj, "__class__", None)):
        try:
            fname = _inspect.getfile(candidate)
            break
        except (OSError, TypeError):
            continue
    if fname is None:
        return None
    label = execution.cell_label(fname)
    if label:
        return label
    if fname.startswith("<frozen "):
        module = sys.modules.get(getattr(obj, "__module__", "") or "")
        fname = getattr(module, "__file__", None)
        return fname if fname and os.path.isabs(fname) else None
    if fname.startswith("<sandpit>/"):
        return fname  # the runtime, inside the worker: its source is still at hand
    if fname.startswith("<"):
        return None
    return os.path.abspath(fname)


def getsource(obj, oname=""):
    if isinstance(obj, property):
        parts = []
        for attr in ("fget", "fset", "fdel"):
            fn = getattr(obj, attr)
            if fn is None:
                continue
            prefix = (oname + ".") if oname else ""
            parts.append("# " + prefix + attr)
            if _inspect.isfunction(fn):
                src = getsource(fn)
                parts.append(_dedent(src) if src else "")
            else:
                parts.append("%s%s = %r\n" % (prefix, attr, fn))
        return "\n".join(parts) if parts else None
    obj = _unwrap(obj)
    try:
        return _inspect.getsource(obj)
    except TypeError:
        try:
            return _inspect.getsource(obj.__class__)
        except (OSError, TypeError):
            return None
    except (OSError, IndexError):
        return None


def _dedent(text):
    import textwrap
    return textwrap.dedent(text)


def render_signature(sig, name):
    """Signature text, one parameter a line when long (IPython's _render_signature)."""
    result = []
    pos_only, kw_only = False, True
    for param in sig.parameters.values():
        if param.kind == param.POSITIONAL_ONLY:
            pos_only = True
        elif pos_only:
            result.append("/")
            pos_only = False
        if param.kind == param.VAR_POSITIONAL:
            kw_only = False
        elif param.kind == param.KEYWORD_ONLY and kw_only:
            result.append("*")
            kw_only = False
        result.append(str(param))
    if pos_only:
        result.append("/")
    if len(name) + sum(len(r) + 2 for r in result) > 75:
        rendered = "{}(\n{})".format(name, "".join("    {},\n".format(r) for r in result))
    else:
        rendered = "{}({})".format(name, ", ".join(result))
    if sig.return_annotation is not _inspect.Signature.empty:
        rendered += " -> {}".format(_inspect.formatannotation(sig.return_annotation))
    return rendered


def _getdef(obj, oname):
    try:
        return render_signature(_inspect.signature(obj), oname)
    except Exception:
        return None


def _source_contains_docstring(src, doc):
    import ast
    try:
        (node,) = ast.parse(_dedent(src)).body
        return ast.get_docstring(node) == doc
    except Exception:
        return False


def info(obj, oname="", detail_level=0, namespace="Interactive", ismagic=False):
    """The fields IPython's Inspector.info computes, as a dict of strings."""
    ds = getdoc(obj)
    if ds is None:
        ds = "<no docstring>"
    out = {"subclasses": None}
    out["type_name"] = "Magic function" if ismagic else type(obj).__name__
    try:
        ostr = str(obj)
        if not detail_level and len(ostr) > STRING_MAX:
            half = (STRING_MAX - 5) // 2
            ostr = ostr[:half] + " <...> " + ostr[-half:]
            ostr = ("\n" + " " * len("string_form")).join(q.strip() for q in ostr.split("\n"))
        out["string_form"] = ostr
    except Exception:
        pass
    out["namespace"] = namespace
    try:
        out["length"] = str(len(obj))
    except Exception:
        pass
    fname = None if ismagic else find_file(obj)
    binary = fname is None or fname.endswith((".so", ".dll", ".pyd"))
    if fname is not None:
        out["file"] = fname
    if detail_level:
        linecache.checkcache()
        try:
            if isinstance(obj, property) or not binary:
                src = getsource(obj, oname)
                out["source"] = src.rstrip() if src is not None else None
        except Exception:
            pass
    if ds and not _source_contains_docstring(out.get("source"), ds):
        out["docstring"] = ds
    if _inspect.isclass(obj):
        out["isclass"] = True
        init_def = _getdef(obj, oname)
        init_ds = None
        try:
            obj_init = obj.__init__
        except AttributeError:
            pass
        else:
            if init_def is None:
                init_def = _getdef(obj_init, oname)
            init_ds = getdoc(obj_init)
            if init_ds == _OBJECT_INIT_DOC:
                init_ds = None
        if init_def:
            out["init_definition"] = init_def
        if init_ds:
            out["init_docstring"] = init_ds
        try:
            names = [sub.__name__ for sub in type.__subclasses__(obj)]
        except TypeError:
            names = []
        out["subclasses"] = ", ".join(names if len(names) < 10 else names[:10] + ["..."])
    else:
        defln = None if ismagic else _getdef(obj, oname)
        if defln:
            out["definition"] = defln
        if ds:
            try:
                class_ds = getdoc(obj.__class__)
            except Exception:
                class_ds = None
            if class_ds in _BUILTIN_TYPE_DOCS:
                class_ds = None
            if class_ds and ds != class_ds:
                out["class_docstring"] = class_ds
        try:
            init_ds = getdoc(obj.__init__)
            if init_ds == _OBJECT_INIT_DOC:
                init_ds = None
        except AttributeError:
            init_ds = None
        if init_ds:
            out["init_docstring"] = init_ds
        if hasattr(obj, "__call__") and not isinstance(obj, _SIMPLE_CALLABLES):
            call_def = _getdef(obj.__call__, oname)
            if call_def and call_def != out.get("definition"):
                out["call_def"] = call_def
            call_ds = getdoc(obj.__call__)
            if call_ds == _FUNC_CALL_DOC:
                call_ds = None
            if call_ds:
                out["call_docstring"] = call_ds
    return out


def info_text(obj, oname="", detail_level=0, namespace="Interactive", ismagic=False):
    """The text IPython's Inspector._get_info gives as text/plain."""
    data = info(obj, oname, detail_level, namespace, ismagic)
    fields = []

    def add(title, key):
        value = data.get(key)
        if value is not None:
            fields.append((title, value))

    if ismagic:
        if detail_level > 0 and data.get("source"):
            add("Source", "source")
        else:
            add("Docstring", "docstring")
        add("File", "file")
    elif data.get("isclass") or isinstance(obj, _SIMPLE_CALLABLES):
        add("Signature", "definition")
        add("Init signature", "init_definition")
        add("Docstring", "docstring")
        if detail_level > 0 and data.get("source"):
            add("Source", "source")
        else:
            add("Init docstring", "init_docstring")
        add("File", "file")
        add("Type", "type_name")
        add("Subclasses", "subclasses")
    else:
        add("Signature", "definition")
        add("Call signature", "call_def")
        add("Type", "type_name")
        add("String form", "string_form")
        if data.get("namespace") != "Interactive":
            add("Namespace", "namespace")
        add("Length", "length")
        add("File", "file")
        if detail_level > 0 and data.get("source"):
            add("Source", "source")
        else:
            add("Docstring", "docstring")
        add("Class docstring", "class_docstring")
        add("Init docstring", "init_docstring")
        add("Call docstring", "call_docstring")
    if not fields:
        return ""
    width = max(len(title) for title, _ in fields)
    text = ""
    for title, body in fields:
        body = body.strip("\n")
        delim = "\n" if "\n" in body else " "
        text += HEAD + title + ":" + NORMAL + " " * (width - len(title)) + delim + body + "\n"
    return text


def strip_ansi(text):
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


# --- requests, pages and help() -------------------------------------------------------


def inspect(code, cursor_pos, detail_level, user_ns, find_magic=None):
    """The content of an inspect_reply (find_magic: see find_object)."""
    reply = {"status": "ok", "found": False, "data": {}, "metadata": {}}
    name = token_at_cursor(code, cursor_pos)
    if not name:
        return reply
    # "%time" or "%%time" at the cursor: the tokenizer sees the name alone
    if "." not in name:
        for m in re.finditer(r"(%{1,2})" + re.escape(name) + r"\b", code):
            if m.start() <= cursor_pos <= m.end():
                name = m.group(0)
                break
    found = find_object(name, user_ns, find_magic)
    if not found.get("found"):
        return reply
    text = info_text(found["obj"], name.lstrip("%"), detail_level, found["namespace"],
                     found["ismagic"])
    reply["found"] = True
    reply["data"] = {"text/plain": text}
    return reply


def page(text):
    """Shows text in the client's pager: a page payload of the current
    execute_reply (printed when there is no execute_request to attach it to)."""
    current = request.current()
    payload = {"source": "page", "data": {"text/plain": text}, "start": 0}
    if current is not None and current.msg_type == "execute_request" \
            and request.add_payload(payload):
        return
    sys.stdout.write(text if text.endswith("\n") else text + "\n")


def pinfo(oname, detail_level, user_ns, find_magic=None):
    """obj? and obj??: a page with what inspect_request says about oname."""
    oname = oname.strip()
    if not oname:
        page(USAGE)
        return
    found = find_object(oname, user_ns, find_magic)
    if not found.get("found"):
        print("Object `%s` not found." % oname)
        return
    page(info_text(found["obj"], oname.lstrip("%"), detail_level, found["namespace"],
                   found["ismagic"]))


def psearch(pattern, user_ns):
    """np.*lin*? : the names that match a wildcard pattern, on a page."""
    import fnmatch
    parts = pattern.split(".")
    spaces = [("", user_ns), ("", builtins.__dict__)]
    for i, part in enumerate(parts):
        last = i == len(parts) - 1
        found = []
        for prefix, ns in spaces:
            names = ns.keys() if isinstance(ns, dict) else _safe_dir(ns)
            for name in names:
                if not fnmatch.fnmatchcase(name, part):
                    continue
                if name.startswith("_") and not part.startswith("_"):
                    continue
                full = prefix + name
                if last:
                    found.append(full)
                else:
                    try:
                        value = ns[name] if isinstance(ns, dict) else getattr(ns, name)
                    except Exception:
                        continue
                    found.append((full + ".", value))
        if last:
            if found:
                page("\n".join(sorted(set(found))))
            else:
                print("Object `%s` not found." % pattern)
            return
        spaces = found


def _safe_dir(obj):
    try:
        return dir(obj)
    except Exception:
        return []


USAGE = """\
sandpit runs Python cells, with the IPython syntax that notebooks use:

  obj?, obj??     what obj is (?? adds its source); also ?obj, %magic?
  help(obj)       Python's help on obj
  %magic args     a line magic, %%magic args a cell magic: %lsmagic lists them
  _, __, ___      the last three results; _N and Out[N] the result of cell N
  _i, In[N]       the inputs of earlier cells

Shell commands (!cmd, %pip, %%bash) are disabled in this kernel.
"""


class Helper:
    """help(): pydoc's text, printed on stdout as under ipykernel (so that a
    saved notebook, nbconvert and agents have it; obj? is the pager's)."""

    def __repr__(self):
        return ("Type help() for interactive help, or help(object) for help about "
                "object.")

    def __call__(self, *args, **kwargs):
        import pydoc
        if not args and not kwargs:
            sys.stdout.write(USAGE + "\nhelp(obj) shows Python's documentation of obj; "
                             "help('topic') that of a keyword or topic, help('modules') "
                             "lists the modules.\n")
            return None
        request = args[0] if args else kwargs.get("request")
        out = io.StringIO()
        helper = pydoc.Helper(input=io.StringIO(""), output=out)
        saved = pydoc.pager
        pydoc.pager = lambda text, title="": out.write(text)  # never a pager process
        try:
            helper.help(request)
        finally:
            pydoc.pager = saved
        text = pydoc.plain(out.getvalue())
        if text.strip():
            sys.stdout.write(text if text.endswith("\n") else text + "\n")
        return None
