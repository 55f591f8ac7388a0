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
from l2mac.checks.shape import parameter_defaults

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
        edits += _taking_tmp_path(fn, method, source, lines)
        changed.append(fn.name)
    fixed = _edited(source, edits)
    return (fixed, changed) if fixed is not None else (source, [])


def _taking_tmp_path(fn: ast.FunctionDef, method: bool, source: str, lines: list[str]) -> list[tuple[int, int, str]]:
    """The edit that makes test or fixture ``fn`` take pytest's ``tmp_path``, unless it does."""
    params = [a.arg for a in fn.args.args]
    if "tmp_path" in params:
        return []
    if not params:
        header = source[_offset(lines, fn.lineno, fn.col_offset) :]
        at = _offset(lines, fn.lineno, fn.col_offset) + header.index("(") + 1
        return [(at, at, "tmp_path")]
    if method:  # after self in a method, else first: pytest passes fixtures by name
        anchor = fn.args.args[0]
        at = _offset(lines, anchor.end_lineno or anchor.lineno, anchor.end_col_offset or 0)
        return [(at, at, ", tmp_path")]
    first = fn.args.args[0]
    at = _offset(lines, first.lineno, first.col_offset)
    return [(at, at, "tmp_path, ")]


def _edited(source: str, edits: list[tuple[int, int, str]]) -> str | None:
    """``source`` with ``edits`` (start, end, text) made, or None when there are none or the result would not
    parse: a file is never made worse than it was."""
    if not edits:
        return None
    fixed = source
    for start, end, text in sorted(edits, reverse=True):
        fixed = fixed[:start] + text + fixed[end:]
    try:
        ast.parse(fixed)
    except SyntaxError:
        return None
    return fixed


def path_parameter(source: str, line: int, name: str) -> tuple[str, str, str, int] | None:
    """``source`` (a code file) where the literal file name ``name`` on ``line`` becomes a parameter whose default
    is that name: of the class's ``__init__`` (kept as ``self.<parameter>``) when a method uses it, else of the
    function that does. Every caller works as before, and a test can pass a file under ``tmp_path``. Seen on the
    URL shortener at 5c074b4: ``Database.connect()`` opened ``sqlite3.connect('url_shortener.db')``; told four
    times that the code itself wrote that file, the 1.5B model never gave it a path. Returns (the new source,
    the class or function that takes it, the parameter, how many parameters a caller gives before it), or None
    where the literal is not one such function's own or its signature takes ``*args``, keyword-only parameters
    or the name already."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    owners: dict[ast.AST, tuple[ast.FunctionDef, ast.ClassDef | None]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            owners.update({n: (node, None) for n in ast.walk(node)})
        elif isinstance(node, ast.ClassDef):
            for method in [m for m in node.body if isinstance(m, ast.FunctionDef)]:
                owners.update({n: (method, node) for n in ast.walk(method)})
    literal = next(
        (
            n
            for n in owners
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and n.lineno == line
            if n.value.removeprefix("./") == name
        ),
        None,
    )
    if literal is None:
        return None
    fn, cls = owners[literal]
    takes = fn
    if cls is not None and any(ast.unparse(d) in ("staticmethod", "classmethod") for d in fn.decorator_list):
        return None  # no self to keep it on
    if cls is not None:
        init = next((m for m in cls.body if isinstance(m, ast.FunctionDef) and m.name == "__init__"), None)
        if init is None:
            return None
        takes = init
    parameter = "db_path" if name.endswith((".db", ".sqlite", ".sqlite3")) else "data_path"
    a = takes.args
    if a.vararg or a.kwonlyargs or a.kwarg or a.posonlyargs or (cls is not None and not a.args):
        return None
    lines = source.splitlines(keepends=True)
    use = f"self.{parameter}" if cls is not None and fn is not takes else parameter
    start = _offset(lines, literal.lineno, literal.col_offset)
    end = _offset(lines, literal.end_lineno or line, literal.end_col_offset or 0)
    owner = cls.name if cls is not None else fn.name
    before = len(a.args) - (1 if cls is not None else 0)
    if parameter in {x.arg for x in a.args}:  # given already for another use of the name: this one uses it too
        given = parameter_defaults(a).get(parameter)
        kept = f"self.{parameter} = {parameter}" in (ast.get_source_segment(source, takes) or "")
        if not (isinstance(given, ast.Constant) and given.value == literal.value) or (use != parameter and not kept):
            return None
        fixed = _edited(source, [(start, end, use)])
        at = [x.arg for x in a.args].index(parameter) - (1 if cls is not None else 0)
        return (fixed, owner, parameter, at) if fixed is not None else None
    last = a.defaults[-1] if a.defaults else a.args[-1] if a.args else None
    if last is None:  # a function of no parameters
        header = source[_offset(lines, takes.lineno, takes.col_offset) :]
        at = _offset(lines, takes.lineno, takes.col_offset) + header.index("(") + 1
        edits = [(at, at, f"{parameter}={literal.value!r}")]
    else:
        at = _offset(lines, last.end_lineno or last.lineno, last.end_col_offset or 0)
        edits = [(at, at, f", {parameter}={literal.value!r}")]
    edits.append((start, end, use))
    if use != parameter:  # kept by __init__ for the method that uses it
        first = takes.body[0]
        docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
        after = takes.body[1] if docstring and len(takes.body) > 1 else None if docstring else first
        indent = " " * (first.col_offset)
        if after is None:  # only a docstring: the assignment goes after it
            at = _offset(lines, (first.end_lineno or first.lineno) + 1, 0)
        else:
            at = _offset(lines, after.lineno, 0)
        edits.append((at, at, f"{indent}self.{parameter} = {parameter}\n"))
    fixed = _edited(source, edits)
    return (fixed, owner, parameter, before) if fixed is not None else None


def pass_tmp_path(source: str, owner: str, parameter: str, name: str, before: int) -> tuple[str, list[str]]:
    """``source`` (a test file) where each call of ``owner`` (a class or function) in its tests and fixtures that
    does not give ``parameter`` (by name, or as one of more than ``before`` arguments) gives it
    ``str(tmp_path / name)``, the test taking ``tmp_path``; see :func:`path_parameter`. Returns the tests and
    fixtures changed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []
    changed: list[str] = []
    for fn, method in _candidates(tree):
        calls = [
            n
            for n in ast.walk(fn)
            if isinstance(n, ast.Call)
            and (ast.unparse(n.func) == owner or ast.unparse(n.func).endswith(f".{owner}"))
            and len(n.args) <= before
            and not any(isinstance(x, ast.Starred) for x in n.args)
            and not any(k.arg == parameter or k.arg is None for k in n.keywords)
        ]
        if not calls or not _plain_signature(fn, method):
            continue
        for call in calls:
            at = _offset(lines, call.end_lineno or call.lineno, (call.end_col_offset or 1) - 1)  # before its ")"
            given = ", " if call.keywords or call.args else ""
            edits.append((at, at, f"{given}{parameter}=str(tmp_path / {name!r})"))
        edits += _taking_tmp_path(fn, method, source, lines)
        changed.append(fn.name)
    fixed = _edited(source, edits)
    return (fixed, changed) if fixed is not None else (source, [])


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
