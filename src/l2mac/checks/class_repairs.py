"""Deterministic repairs inside a class a small model wrote: a ``@staticmethod`` that reaches the class's own
static methods, class methods or class attributes through a ``self`` (or ``cls``) it does not have.

Seen on ClassEval_3 and _39: given static methods written with ``self.factorial(n)`` calls. Each use is a
NameError when the method runs; the code-problem note says so (:mod:`l2mac.checks.python`), yet the 1.5B model
sent the same calls back through every resample. Naming the class instead is what the code means, and only
names the class itself owns are rewritten: an instance method or an attribute set on ``self`` in ``__init__``
has no meaning without an instance, so those uses are left for the model, with the note."""

from __future__ import annotations

import ast

from l2mac.checks.python import defined_at_top_level
from l2mac.checks.shape import bound_in, own_nodes

_RECEIVERS = ("self", "cls")


def _decorated(fn: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    return any(ast.unparse(d) == name for d in fn.decorator_list)


def _class_level_names(cls: ast.ClassDef) -> set[str]:
    """The names ``cls`` itself owns that mean the same through the class as through an instance: its static
    and class methods, and the names its body assigns."""
    names: set[str] = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _decorated(node, "staticmethod") or _decorated(node, "classmethod"):
                names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and node.value is not None and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


def qualify_static_self(source: str) -> tuple[str, list[str]]:
    """``source`` with ``self.name`` (or ``cls.name``) inside a ``@staticmethod`` that has no such parameter
    made ``ClassName.name``, where ``name`` is a static method, class method or class attribute of the class
    the method is in. Returns the source and the static methods repaired (``Class.method``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    receivers = [r for r in _RECEIVERS if r not in defined_at_top_level(tree)]  # a global `cls` is meant
    edits: list[tuple[int, int, int, str]] = []  # (line index, start column, end column, class name)
    repaired: list[str] = []
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        owned = _class_level_names(cls)
        for fn in cls.body:
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) or not _decorated(fn, "staticmethod"):
                continue
            own = own_nodes(fn)
            bound = bound_in(fn, own)
            uses = [
                n.value
                for n in own
                if isinstance(n, ast.Attribute)
                and isinstance(n.value, ast.Name)
                and n.value.id in receivers
                and n.value.id not in bound
                and n.attr in owned
            ]
            for name in uses:  # the receiver is ASCII, so its end is its start plus its length in bytes too
                edits.append((name.lineno - 1, name.col_offset, name.col_offset + len(name.id), cls.name))
            if uses:
                repaired.append(f"{cls.name}.{fn.name}")
    if not edits:
        return source, []
    lines = source.splitlines(keepends=True)
    for line, start, end, owner in sorted(edits, reverse=True):
        raw = lines[line].encode()
        lines[line] = (raw[:start] + owner.encode() + raw[end:]).decode()
    return "".join(lines), repaired
