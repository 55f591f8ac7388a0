"""Deterministic repairs of what the type check finds a small model reliably gets wrong: a dataclass of the
project asked for as a dict through a method it does not have (``note.to_dict()``, the way of pandas and of
pydantic), where the standard library's way is ``dataclasses.asdict(note)``. mypy says which object is such a
dataclass; the repair is made only where it says so, so a DataFrame's own ``to_dict()`` is never touched.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from l2mac.checks.autofix import import_line
from l2mac.checks.python import defined_at_top_level
from l2mac.checks.typecheck import mypy_errors

#: the methods a model calls on an object to have it as a dict: pandas' to_dict, pydantic's dict and model_dump
DICT_METHODS = frozenset({"to_dict", "as_dict", "asdict", "todict", "dict", "model_dump"})
#: a call of one of them with no arguments, in a file's text: the type check runs only where one is written
CALLED = re.compile(rf"\.(?:{'|'.join(sorted(DICT_METHODS))})\(\s*\)")
_LACKS = re.compile(r'^"(?P<cls>\w+)" has no attribute "(?P<attr>\w+)"')


def dataclass_names(trees: dict[str, ast.Module]) -> set[str]:
    """The names of the classes the project's modules (``trees``) make dataclasses (``@dataclass``,
    ``@dataclasses.dataclass``, ``@dataclass(frozen=True)``), but for a name another class of the project has."""
    names: set[str] = set()
    others: set[str] = set()
    for tree in trees.values():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                (names if any(_is_dataclass(d) for d in node.decorator_list) else others).add(node.name)
    return names - others  # mypy names a class by its name alone: one of that name is not a dataclass


def _is_dataclass(decorator: ast.expr) -> bool:
    """Whether ``decorator`` is the standard library's ``dataclass`` (``@attr.dataclass`` makes an attrs class,
    which ``asdict`` refuses)."""
    target = decorator.func if isinstance(decorator, ast.Call) else decorator
    return ast.unparse(target) in ("dataclass", "dataclasses.dataclass")


Place = tuple[int, int]  # (line, column in characters, from 0) where an expression begins


def dict_method_places(
    root: Path, files: list[str], check: list[str], dataclasses: set[str], foreign: dict[str, set[str]]
) -> dict[str, set[Place]]:
    """Per file of ``check``, where mypy (run on all of ``files``) finds one of :data:`DICT_METHODS` read from a
    dataclass of ``dataclasses`` that does not define it: the place of the object it is read from. A class named
    as a name the file imports from outside the project (``foreign``, per file) is not the project's: mypy
    names a class by its name alone. (mypy names one such place per line and message: a second call on the
    line is found once the first is repaired.)"""
    found: dict[str, set[Place]] = {}
    for item in mypy_errors(root, files) if dataclasses else []:
        m = _LACKS.match(str(item.get("message", "")))
        rel = str(item["file"])
        ours = m is not None and m["cls"] in dataclasses - foreign.get(rel, set()) and m["attr"] in DICT_METHODS
        if ours and item.get("code") == "attr-defined" and rel in check:
            found.setdefault(rel, set()).add((int(str(item.get("line") or 0)), int(str(item.get("column") or 0))))
    return found


def asdict_calls(source: str, places: set[Place]) -> tuple[str, list[str]]:
    """``source`` with each call ``x.to_dict()`` (any of :data:`DICT_METHODS`, no arguments) whose object ``x``
    begins at one of ``places`` made ``asdict(x)``, and ``from dataclasses import asdict`` added when the module
    lacks it (``dataclasses.asdict(x)`` where the module binds ``asdict`` to something else). Returns the new
    calls."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    source_lines = source.splitlines()

    def place(node: ast.expr) -> Place:  # ast's columns count bytes, mypy's characters
        line = source_lines[node.lineno - 1] if node.lineno <= len(source_lines) else ""
        return node.lineno, len(line.encode()[: node.col_offset].decode(errors="ignore"))

    calls = [
        n
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr in DICT_METHODS
        and not n.args
        and not n.keywords
        and place(n.func.value) in places
    ]
    if not calls:
        return source, []
    imported = _imports_asdict(tree)
    imports = [n for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    bound = defined_at_top_level(tree) | {(a.asname or a.name).split(".")[0] for n in imports for a in n.names}
    name = "asdict" if imported or "asdict" not in bound else "dataclasses.asdict"
    text = source.encode()
    starts = [0]
    for line in text.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(line: int, col: int) -> int:
        return starts[line - 1] + col

    spans = sorted(
        (offset(c.lineno, c.col_offset), offset(c.end_lineno or c.lineno, c.end_col_offset or 0), c) for c in calls
    )
    kept: list[tuple[int, int, ast.Call]] = []
    for start, end, call in spans:  # a call inside another's object is left: the outer one is rewritten
        if not kept or start >= kept[-1][1]:
            kept.append((start, end, call))
    made = []
    for start, end, call in reversed(kept):
        assert isinstance(call.func, ast.Attribute)
        obj = call.func.value
        inner = text[offset(obj.lineno, obj.col_offset) : offset(obj.end_lineno or obj.lineno, obj.end_col_offset or 0)]
        new = f"{name}(".encode() + inner + b")"
        text = text[:start] + new + text[end:]
        made.append(new.decode())
    fixed = text.decode()
    if not imported and not (name != "asdict" and "dataclasses" in bound):
        head = import_line(tree)
        out = fixed.splitlines()
        out[head:head] = ["from dataclasses import asdict" if name == "asdict" else "import dataclasses"]
        fixed = "\n".join(out) + "\n"
    return fixed, sorted(made)


def _imports_asdict(tree: ast.Module) -> bool:
    """Whether the module already has the name the repair calls: ``from dataclasses import asdict``."""
    return any(
        isinstance(n, ast.ImportFrom)
        and n.module == "dataclasses"
        and any(a.name == "asdict" and not a.asname for a in n.names)
        for n in tree.body
    )
