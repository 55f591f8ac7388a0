"""Setup functions: the function a module's other functions need called first on the value they share
(``init_db(path)`` before ``add_note(path, ...)``), found from what the project's tests do or from the table a
failing test lacks, and called where the code or a test skips it; and a class's opener (``connect()``, which
sets what its other methods use), called when the object is made.
"""

from __future__ import annotations

import ast
import re

from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.web_apps import factories, file_parameters, frameworks


def setup_functions(trees: dict[str, ast.Module]) -> dict[str, tuple[str, str]]:
    """The project's setup functions, learned from its tests: a function of a code module that takes one value
    and returns nothing, which every test calling that module's other functions calls first, on the value it
    then hands them (``init_db(path)`` before ``add_note(path, ...)`` in two tests or more). Returns its name ->
    (its module, its parameter's name)."""
    defined: dict[str, dict[str, ast.FunctionDef]] = {}
    for rel, tree in trees.items():
        if not is_test_file(rel):
            defined[module_name(rel)] = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    first: dict[tuple[str, str], int] = {}  # (module, function) -> the tests that call it first, on the value
    broken: set[tuple[str, str]] = set()
    for rel, tree in trees.items():
        if not is_test_file(rel):
            continue
        owner = {
            a.asname or a.name: (n.module, a.name)
            for n in tree.body
            if isinstance(n, ast.ImportFrom) and n.module in defined and not n.level
            for a in n.names
            if a.name in defined[n.module]
        }
        for test in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name.startswith("test")]:
            calls = sorted(
                (n for n in ast.walk(test) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)),
                key=lambda n: (n.lineno, n.col_offset),
            )
            by_module: dict[str, list[tuple[str, ast.Call]]] = {}
            for call in calls:
                if isinstance(call.func, ast.Name) and call.func.id in owner:
                    module, name = owner[call.func.id]
                    by_module.setdefault(module, []).append((name, call))
            for module, seq in by_module.items():
                name, call = seq[0]
                later = [c for n, c in seq[1:] if n != name]
                if not later:
                    continue
                value = ast.unparse(call.args[0]) if len(call.args) == 1 and not call.keywords else None
                if value is not None and all(c.args and ast.unparse(c.args[0]) == value for c in later):
                    first[(module, name)] = first.get((module, name), 0) + 1
                broken |= {(module, n) for n, _ in seq[1:] if n != name}
                if value is None:
                    broken.add((module, name))
    out: dict[str, tuple[str, str]] = {}
    for (module, name), count in first.items():
        fn = defined[module][name]
        positional = [*fn.args.posonlyargs, *fn.args.args]
        returns = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn))
        if count >= 2 and (module, name) not in broken and len(positional) == 1 and not returns:
            out[name] = (module, positional[0].arg)
    return out


def call_setup(source: str, setups: dict[str, tuple[str, str]]) -> tuple[str, list[str]]:
    """``source`` with its app factory calling a setup function (see :func:`setup_functions`) on its file before
    it returns the app, when the module hands that file on to the setup's module's other functions and never
    calls the setup. Seen on the notes API run in-process at c1bae50: ``create_app(db_path)`` stored the path in
    the app's configuration, its views passed it to ``add_note``, and ``init_db``, imported, was never called;
    every request failed "no such table", and told so three times the model rewrote the views. Returns the calls
    added (``init_db(db_path)``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    imported = {
        a.asname or a.name: (n.module, a.name)
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.module and not n.level
        for a in n.names
    }
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    bound = {*imported, *(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.ClassDef)))}
    imports: list[str] = []
    used = {imported[c][0] for c in called if c in imported}
    for framework in frameworks():
        for fn in factories(tree, framework):
            places = [p for p in file_parameters(fn.args) or () if not p.folder]
            lines = source.splitlines()
            ret = fn.body[-1]
            if not places or not isinstance(ret, ast.Return) or lines[ret.lineno - 1][: ret.col_offset].strip():
                continue  # a return sharing its line (``def f(p): return app``, ``x = p; return app``)
            alone = [  # (module, argument) of each statement of the factory's own calling an imported function
                (imported[c.func.id][0], ast.unparse(c.args[0]))  # with one argument only: init_db(db_path)
                for stmt in fn.body
                if isinstance(stmt, ast.Expr) and isinstance(c := stmt.value, ast.Call)
                if isinstance(c.func, ast.Name) and c.func.id in imported and len(c.args) == 1 and not c.keywords
            ]
            added = []
            for name, (module, parameter) in sorted(setups.items()):
                local = next((k for k, v in imported.items() if v == (module, name)), None)
                if module not in used or (local or name) in called:
                    continue
                if any(m == module and a in {p.name for p in places} for m, a in alone):
                    continue  # it hands the file alone to that module already: set up there (a reset is no setup)
                place = next((p for p in places if p.name == parameter), places[0] if len(places) == 1 else None)
                if place is None or (local is None and name in bound):
                    continue
                added.append(f"{local or name}({place.name})")
                if local is None:  # its module is imported already: importing one more name is no new cycle
                    imports.append(f"from {module} import {name}")
            if added:
                indent = lines[ret.lineno - 1][: ret.col_offset]
                last_import = max(n.end_lineno or n.lineno for n in tree.body if isinstance(n, ast.ImportFrom))
                edits = [(ret.lineno - 1, [indent + a for a in added]), (last_import, imports)]
                for at, new_lines in sorted(edits, key=lambda e: e[0], reverse=True):  # the later place first
                    lines[at:at] = new_lines
                return "\n".join(lines) + "\n", added
    return source, []


#: a failing test's message: the table the database lacks
NO_SUCH_TABLE = re.compile(r"OperationalError: no such table: (\w+)")
#: a failing test's section of pytest's report: its header (the test's name) and its traceback
_SECTION = re.compile(
    r"^_{3,} (?:\w+\.)?(\w+)(?:\[.*?\])? _{3,}$(.*?)(?=^_{3,} |^=+ short test summary|\Z)", re.M | re.S
)
_TEST_FILE_LINE = re.compile(r"^([\w./-]+\.py):\d+: ", re.MULTILINE)


def lacking_tables(output: str) -> dict[str, dict[str, set[str]]]:
    """From pytest's report, the tests that failed for a table the database lacks: table -> test file -> the
    tests' names."""
    found: dict[str, dict[str, set[str]]] = {}
    for name, body in _SECTION.findall(output):
        table = NO_SUCH_TABLE.search(body)
        files = [f for f in _TEST_FILE_LINE.findall(body) if is_test_file(f) and not f.startswith(("/", "."))]
        if table is not None and files:
            found.setdefault(table.group(1), {}).setdefault(files[0], set()).add(name)
    return found


def table_makers(trees: dict[str, ast.Module], table: str) -> list[tuple[str, str, str]]:
    """(module, function, its parameter) of each top-level function of the project's code that takes one value, returns
    nothing and creates the table ``table`` (a ``CREATE TABLE`` statement naming it in its body)."""
    made = re.compile(rf"CREATE\s+TABLE\s+(?:IF\s+NOT\s+EXISTS\s+)?[\"'`\[]?{re.escape(table)}\b", re.IGNORECASE)
    found = []
    for rel, tree in trees.items():
        if is_test_file(rel):
            continue
        for fn in [n for n in tree.body if isinstance(n, ast.FunctionDef)]:
            positional = [*fn.args.posonlyargs, *fn.args.args]
            required = len(positional) - len(fn.args.defaults)
            returns = any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(fn))
            texts = [n.value for n in ast.walk(fn) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
            annotation = ast.unparse(positional[0].annotation) if required and positional[0].annotation else ""
            takes_a_file = annotation in ("", "str", "Path", "pathlib.Path", "str | Path", "Path | str")
            public = not fn.name.startswith("_")
            if required == 1 and public and takes_a_file and not returns and any(made.search(t) for t in texts):
                found.append((module_name(rel), fn.name, positional[0].arg))
    return found


def sharing_first_parameter(tree: ast.Module, maker: tuple[str, str, str]) -> frozenset[str]:
    """The functions of the maker's module (``tree``) whose first parameter is named as the maker's: those that
    take what it sets up (``add_note(path, ...)`` beside ``init_db(path)``)."""
    return frozenset(
        fn.name
        for fn in tree.body
        if isinstance(fn, ast.FunctionDef) and fn.name != maker[1]
        for first in [[*fn.args.posonlyargs, *fn.args.args][:1]]
        if first and first[0].arg == maker[2]
    )


def tables_made_first(
    source: str, tests: set[str], maker: tuple[str, str, str], users: frozenset[str]
) -> tuple[str, list[str]]:
    """``source`` (a test file) with each test of ``tests`` (names) that hands a value to functions of the
    maker's module, and never calls the maker, calling it first on that value (``init_db(path)`` before
    ``add_note(path, ...)``); the maker imported as the file imports that module's other functions. Seen on the
    notes API at 994f53a: tests called add_note on a fresh database under tmp_path, "no such table: notes" three
    times, and the model sent the same test file back each time. ``users``: the module's functions that take what
    the maker sets up (see :func:`sharing_first_parameter`), the only calls whose value it is given. Returns the
    calls added, by test."""
    module, name, _ = maker
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    imports = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.module == module and not n.level]
    local = {a.asname or a.name for n in imports for a in n.names if a.name in users}
    if not imports or any(a.name == "*" for n in imports for a in n.names):
        return source, []
    own = next((a.asname or a.name for n in imports for a in n.names if a.name == name), None)
    lines = source.splitlines()
    inserts: list[tuple[int, str]] = []
    for test in [n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name in tests]:
        every = [n for stmt in test.body for n in ast.walk(stmt) if isinstance(n, ast.Call)]  # not decorators
        if any(isinstance(c.func, ast.Name) and c.func.id == (own or name) for c in every):
            continue
        calls = sorted(
            (n for n in every if isinstance(n.func, ast.Name) and n.func.id in local and n.args),
            key=lambda n: (n.lineno, n.col_offset),
        )
        if not calls:
            continue
        first = calls[0]
        # the test's own statement holding it: the setup goes just before it
        statement = next(s for s in test.body if s.lineno <= first.lineno <= (s.end_lineno or s.lineno))
        value = ast.get_source_segment(source, first.args[0])
        if value is None or "\n" in value or any(isinstance(n, ast.Call) for n in ast.walk(first.args[0])):
            continue  # a value made by a call may differ each time it is made
        made_there = {n.id for n in ast.walk(statement) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        if made_there & {n.id for n in ast.walk(first.args[0]) if isinstance(n, ast.Name)}:
            continue  # the value exists only inside that statement (``with open_db(p) as db: add(db, ...)``)
        indent = lines[statement.lineno - 1][: statement.col_offset]
        inserts.append((statement.lineno - 1, f"{indent}{own or name}({value})"))
    if not inserts:
        return source, []
    for at, line in sorted(inserts, reverse=True):
        lines.insert(at, line)
    if own is None:
        head = imports[0]
        lines.insert((head.end_lineno or head.lineno), f"from {module} import {name}")
    return "\n".join(lines) + "\n", [line.strip() for _, line in sorted(inserts)]


def opened_in_init(source: str) -> tuple[str, list[str]]:
    """``source`` with each class whose ``__init__`` leaves attributes ``None`` that one method of no arguments
    then sets (``connect()`` setting ``self.cursor``), and that its other methods use unchecked
    (``self.cursor.execute(...)``), calling that method at the end of ``__init__``: a new object is then ready to
    use. Seen on the URL shortener at 8922e3d: ``Database(path)`` left ``self.cursor = None`` until ``connect()``,
    its tests called ``create_tables()`` on a new one, and 11 of 13 failed ``'NoneType' object has no attribute
    'execute'`` three checks in a row. Returns the calls added (``Database: self.connect()``)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    lines = source.splitlines()
    inserts: list[tuple[int, str, str]] = []
    for cls in [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]:
        methods = {m.name: m for m in cls.body if isinstance(m, ast.FunctionDef)}
        init = methods.get("__init__")
        if init is None:
            continue
        unset = {a for s in init.body for a in _self_targets(s) if _is_none(s)}
        openers = [m for m in methods.values() if m is not init and _no_arguments(m) and unset & _given(m)]
        if len(openers) != 1 or _calls_self(init, openers[0].name):
            continue  # none, or two (connect() and reconnect()): which one is not for l2mac to say
        opener = openers[0]
        opened = unset & _given(opener)
        users = [
            m
            for m in methods.values()
            if m not in (init, opener) and not _calls_self(m, opener.name) and _uses_unchecked(m, opened)
        ]
        last = init.body[-1]
        at = last.end_lineno or last.lineno
        if not users or lines[last.lineno - 1][: last.col_offset].strip():
            continue  # nothing needs it, or the last statement shares its line
        indent = lines[last.lineno - 1][: last.col_offset]
        inserts.append((at, f"{indent}self.{opener.name}()", f"{cls.name}: self.{opener.name}()"))
    if not inserts:
        return source, []
    for at, line, _ in sorted(inserts, reverse=True):
        lines.insert(at, line)
    return "\n".join(lines) + "\n", [note for _, _, note in sorted(inserts)]


def _self_targets(node: ast.AST) -> set[str]:
    """The attributes of ``self`` an assignment statement ``node`` sets (none for any other node)."""
    if isinstance(node, ast.Assign):
        targets = node.targets
    elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
        targets = [node.target]
    else:
        return set()
    found = set()
    for target in targets:
        for t in target.elts if isinstance(target, ast.Tuple) else [target]:
            if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                found.add(t.attr)
    return found


def _given(method: ast.FunctionDef) -> set[str]:
    """The attributes of ``self`` that ``method`` sets to something other than ``None`` (``close()`` setting
    ``self.connection = None`` opens nothing)."""
    return {a for s in ast.walk(method) if isinstance(s, ast.stmt) and not _is_none(s) for a in _self_targets(s)}


def _is_none(statement: ast.stmt) -> bool:
    """Whether an assignment sets its target to ``None``."""
    value = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
    return isinstance(value, ast.Constant) and value.value is None


def _no_arguments(method: ast.FunctionDef) -> bool:
    """Whether a method can be called with no argument but ``self``."""
    a = method.args
    required = len([*a.posonlyargs, *a.args]) - len(a.defaults)
    kw_required = any(d is None for d in a.kw_defaults)
    return required == 1 and not kw_required and not method.name.startswith("__")


def _calls_self(method: ast.FunctionDef, name: str) -> bool:
    """Whether ``method`` calls ``self.<name>()``."""
    return any(
        isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == name
        and isinstance(n.func.value, ast.Name)
        and n.func.value.id == "self"
        for n in ast.walk(method)
    )


def _uses_unchecked(method: ast.FunctionDef, attributes: set[str]) -> bool:
    """Whether ``method`` reaches into one of ``attributes`` of ``self`` (``self.cursor.execute``) without
    setting it or testing it first (``if self.cursor``, ``self.cursor is None``)."""
    if {a for s in ast.walk(method) for a in _self_targets(s)} & attributes:
        return False
    tested = {
        a.attr
        for n in ast.walk(method)
        if isinstance(n, (ast.If, ast.IfExp, ast.While, ast.Assert, ast.BoolOp))
        for a in ast.walk(n.test if not isinstance(n, ast.BoolOp) else n)
        if isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "self"
    }
    return any(
        isinstance(n, ast.Attribute)
        and isinstance(inner := n.value, ast.Attribute)
        and isinstance(inner.value, ast.Name)
        and inner.value.id == "self"
        and inner.attr in attributes - tested
        for n in ast.walk(method)
    )
