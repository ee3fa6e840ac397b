"""The worker's Python runtime is built in layers (see the docstring of
kernel/python/sandpit/__init__.py): each module imports only modules listed
before it there, and says its layer in the first line of its docstring."""

import ast
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "kernel", "python", "sandpit")


def _source(name):
    with open(os.path.join(PACKAGE, name + ".py"), encoding="utf-8") as f:
        return f.read()


def layers():
    """[(module, layer number)] from the table in the package's docstring, in order."""
    doc = ast.get_docstring(ast.parse(_source("__init__")))
    lines = doc.splitlines()
    header = next(i for i, line in enumerate(lines) if re.match(r"\s+layer\s+module\s", line))
    layer_col, module_col = lines[header].index("layer"), lines[header].index("module")
    table, layer = [], None
    for line in lines[header + 1:]:
        if not line.strip():
            break
        if line[layer_col:layer_col + 1].isdigit():
            layer = int(line[layer_col])
        table.append((line[module_col:].split()[0], layer))
    return table


def imports(name, modules):
    """The modules of the package that module name imports, anywhere in it
    (as depcycles reads them), and those it names as "sandpit.x" strings."""
    tree = ast.parse(_source(name))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                found.update([node.module.split(".")[0]] if node.module
                             else [a.name for a in node.names])
            elif node.module == "sandpit":
                found.update(a.name for a in node.names)
            elif node.module and node.module.startswith("sandpit."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names
                         if a.name.startswith("sandpit."))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = re.fullmatch(r"sandpit\.(\w+)", node.value)
            if m:
                found.add(m.group(1))
    return {m for m in found if m in modules and m != name}


def test_the_table_lists_every_module_once():
    listed = [module for module, _ in layers()]
    on_disk = sorted(f[:-3] for f in os.listdir(PACKAGE)
                     if f.endswith(".py") and f != "__init__.py")
    assert sorted(listed) == on_disk
    assert len(set(listed)) == len(listed)
    assert [layer for _, layer in layers()] == sorted(layer for _, layer in layers())


def test_each_module_says_its_layer_first():
    for module, layer in layers():
        first = ast.get_docstring(ast.parse(_source(module))).splitlines()[0]
        assert first.startswith("Layer %d, " % layer), (module, first)


def test_imports_go_only_downward():
    order = [module for module, _ in layers()]
    upward = {}
    for i, module in enumerate(order):
        above = imports(module, set(order[i:]))
        if above:
            upward[module] = sorted(above)
    assert upward == {}
