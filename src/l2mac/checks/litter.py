"""Tests that write their data files into the project, moved under pytest's ``tmp_path``.

A small model's tests often do ``path = Path("todos.json")``: the tests pass once, leave ``todos.json`` in the
project, and the next ``pytest`` finds it (seen in the README demo: a test expecting no saved todos failed on
the user's second run). The test run tells which files the tests left; in the test functions and fixtures
that name one of them as a string, the name becomes a path under ``tmp_path`` (``Path("todos.json")`` becomes
``tmp_path / "todos.json"``, a bare ``"todos.json"`` becomes ``str(tmp_path / "todos.json")``) and the function
takes ``tmp_path``. Reading a file that is not there behaves the same under ``tmp_path``, so only the writes
change, and each test gets its own folder. Names used elsewhere (a module constant, a comparison, an f-string)
are left to the model.
"""

from __future__ import annotations

import ast

from l2mac.checks.layout import is_test_file

#: callables whose single string argument is a path: the call itself becomes ``tmp_path / "name"``
_PATH_CALLS = frozenset({"Path", "pathlib.Path", "PurePath"})


def _is_fixture(fn: ast.FunctionDef) -> bool:
    for deco in fn.decorator_list:
        target = deco.func if isinstance(deco, ast.Call) else deco
        if ast.unparse(target) in {"fixture", "pytest.fixture"}:
            return True
    return False


def _candidates(tree: ast.Module) -> list[tuple[ast.FunctionDef, bool]]:
    """Test functions and fixtures, at module level or in a test class, with whether each is a method."""
    found: list[tuple[ast.FunctionDef, bool]] = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            found.append((node, False))
        elif isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            found += [(n, True) for n in node.body if isinstance(n, ast.FunctionDef)]
    return [(fn, method) for fn, method in found if fn.name.startswith("test") or _is_fixture(fn)]


def _plain_signature(fn: ast.FunctionDef, method: bool) -> bool:
    """Only positional parameters without defaults: a parameter can be added without a rule to weigh."""
    a = fn.args
    simple = not (a.vararg or a.kwarg or a.kwonlyargs or a.defaults or a.posonlyargs)
    return simple and (not method or bool(a.args))


def _replacements(fn: ast.FunctionDef, names: frozenset[str]) -> list[tuple[ast.expr, str]]:
    """(node to replace, its new text) for each string in ``fn`` that names a file the tests left."""
    parents: dict[ast.AST, ast.AST] = {}
    for above in ast.walk(fn):
        for child in ast.iter_child_nodes(above):
            parents[child] = above
    out: list[tuple[ast.expr, str]] = []
    for node in ast.walk(fn):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        if node.value.removeprefix("./") not in names:
            continue
        parent = parents.get(node)
        literal = repr(node.value.removeprefix("./"))
        if isinstance(parent, (ast.Compare, ast.JoinedStr, ast.BinOp)):
            continue  # "todos.json" in output, f"{x}.json", base / "todos.json": not a path of its own
        if (
            isinstance(parent, ast.Call)
            and ast.unparse(parent.func) in _PATH_CALLS
            and parent.args == [node]
            and not parent.keywords
        ):
            out.append((parent, f"tmp_path / {literal}"))
        else:
            out.append((node, f"str(tmp_path / {literal})"))
    return out


def _offset(lines: list[str], line: int, col: int) -> int:
    """The character offset of (1-based line, utf-8 byte column) in the source split into ``lines``."""
    text = lines[line - 1]
    return sum(len(x) for x in lines[: line - 1]) + len(text.encode("utf-8")[:col].decode("utf-8", "replace"))


def move_under_tmp_path(source: str, left: list[str]) -> tuple[str, list[str]]:
    """``source`` (a test file) with the files named in ``left`` (paths relative to the project, as the test
    run found them) moved under ``tmp_path``; and the functions changed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    names = frozenset(left)
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (start, end, text), character offsets
    changed: list[str] = []
    for fn, method in _candidates(tree):
        found = _replacements(fn, names)
        if not found or not _plain_signature(fn, method):
            continue
        for node, text in found:
            start = _offset(lines, node.lineno, node.col_offset)
            end = _offset(lines, node.end_lineno or node.lineno, node.end_col_offset or node.col_offset)
            edits.append((start, end, text))
        params = [a.arg for a in fn.args.args]
        if "tmp_path" not in params:
            if params:  # after self in a method, else first: pytest passes fixtures by name
                anchor = fn.args.args[0] if method else None
                if anchor is not None:
                    at = _offset(lines, anchor.end_lineno or anchor.lineno, anchor.end_col_offset or 0)
                    edits.append((at, at, ", tmp_path"))
                else:
                    first = fn.args.args[0]
                    at = _offset(lines, first.lineno, first.col_offset)
                    edits.append((at, at, "tmp_path, "))
            else:
                header = source[_offset(lines, fn.lineno, fn.col_offset) :]
                at = _offset(lines, fn.lineno, fn.col_offset) + header.index("(") + 1
                edits.append((at, at, "tmp_path"))
        changed.append(fn.name)
    if not edits:
        return source, []
    fixed = source
    for start, end, text in sorted(edits, reverse=True):
        fixed = fixed[:start] + text + fixed[end:]
    try:
        ast.parse(fixed)
    except SyntaxError:  # never make a file worse than it was
        return source, []
    return fixed, changed


def hard_coded(sources: dict[str, str], left: list[str]) -> list[tuple[str, int, str]]:
    """(code file, line, name) wherever a code file (not a test) passes one of the files ``left`` to a call as
    a literal string (``save_todos("todos.json", todos)``): then the code, not the tests, writes into the
    project, and no test can move it. A command-line default (``add_argument(..., default="todos.json")``) is
    not counted: a test passes its own path there."""
    names = frozenset(left)
    out: set[tuple[str, int, str]] = set()
    for path, source in sources.items():
        if not path.endswith(".py") or is_test_file(path):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for call in ast.walk(tree):
            if not isinstance(call, ast.Call) or ast.unparse(call.func).endswith("add_argument"):
                continue
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                    name = arg.value.removeprefix("./")
                    if name in names:
                        out.add((path, arg.lineno, name))
    return sorted(out)
