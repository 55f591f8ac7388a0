"""Deterministic repairs of a web app a small model wrote: a module-level app that its factory makes again, and
a test client's response read the wrong way for its framework (see :mod:`l2mac.checks.web_apps`).
"""

from __future__ import annotations

import ast
import builtins
import re

from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.python import defined_at_top_level
from l2mac.checks.serve import is_main_guard
from l2mac.checks.shape import free_reads
from l2mac.checks.web_apps import app_copy, factories, file_parameters, frameworks


def drop_app_copy(source: str, imported: frozenset[str] = frozenset()) -> tuple[str, list[str]]:
    """``source`` without a module-level web app that its factory makes again (see
    :func:`l2mac.checks.web_apps.app_copy`): the app, its views, and the module-level state only they used (a
    data file's path, the code that made that file, the app's configuration); a ``__main__`` block that ran the
    app runs the factory's, given that state's values where it took them (``create_app(Path('data.db')).run()``).
    Returns what was removed (``app`` and the views' names). Nothing is changed when another file imports the
    app or a view (``imported``: the names other project files import from this module), when the factory
    cannot be called so, or when code left would still read what was removed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    copy = app_copy(tree)
    if copy is None:
        return source, []
    app = next(t.id for t in copy.assign.targets if isinstance(t, ast.Name))
    if {app, *(v.name for v in copy.views), "*"} & imported:
        return source, []
    removed: list[ast.stmt] = [copy.assign, *copy.views]
    mains = [n for n in tree.body if is_main_guard(n)]
    kept = [n for n in tree.body if n not in removed and n not in mains]
    live = set().union(
        *(free_reads(n) for n in kept if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)))
    )
    used_by_removed = set().union(*(free_reads(n) for n in removed))
    values: dict[str, ast.expr] = {}
    for node in kept:
        if isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            names = {t.id for t in node.targets if isinstance(t, ast.Name)}
            if names <= used_by_removed and not names & live:
                removed.append(node)
                values.update({n: node.value for n in names})
    gone = {app, *values}
    state = defined_at_top_level(tree)
    for node in kept:
        named = isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) for t in node.targets)
        if isinstance(node, (ast.If, ast.Expr, ast.With, ast.For, ast.Assign, ast.AugAssign)) and not named:
            read = {n for n in free_reads(node) if n in state}
            if (
                read and read <= gone and node not in removed
            ):  # it only sets up what was removed (``app.config[...] = ...``)
                removed.append(node)
    call = _factory_call(copy.factory, values)
    lines = source.splitlines()
    edits: list[tuple[int, int, int, str]] = []
    for main in mains:
        for n in ast.walk(main):
            if isinstance(n, ast.Name) and n.id in gone:
                if call is None or n.id != app:
                    return source, []  # the program would lose what it runs
                edits.append((n.lineno, n.col_offset, n.end_col_offset or n.col_offset, call))
    for line, start, end, new in sorted(edits, reverse=True):
        text = lines[line - 1].encode()
        lines[line - 1] = (text[:start] + new.encode() + text[end:]).decode()
    for node in sorted(removed, key=lambda n: -n.lineno):
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
        while first > 1 and lines[first - 2].strip().startswith("#"):  # its comment goes with it
            first -= 1
        del lines[first - 1 : node.end_lineno or node.lineno]
    fixed = re.sub(r"\n{4,}", "\n\n\n", "\n".join(lines).strip("\n") + "\n")
    try:
        after = ast.parse(fixed)
    except SyntaxError:
        return source, []
    imports = {
        (a.asname or a.name).split(".")[0]
        for n in after.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    bound = defined_at_top_level(after) | imports | set(dir(builtins))
    if any(n in gone and n not in bound for n in free_reads(after)):
        return source, []  # code left still reads what was removed
    return fixed, [app, *(v.name for v in copy.views)]


def _factory_call(factory: ast.FunctionDef, values: dict[str, ast.expr]) -> str | None:
    """A call of ``factory`` that gives each required parameter the module-level value of its name, else a file
    or folder parameter its name (None when a parameter is given neither way)."""
    a = factory.args
    required = [*a.posonlyargs, *a.args][: len(a.posonlyargs) + len(a.args) - len(a.defaults)]
    places = {p.name: p for p in file_parameters(a) or ()}
    if any(d is None for d in a.kw_defaults) or any(p.arg not in values and p.arg not in places for p in required):
        return None
    given = [ast.unparse(values[p.arg]) if p.arg in values else places[p.arg].literal() for p in required]
    return f"{factory.name}({', '.join(given)})"


def response_data_calls(source: str, data: str) -> tuple[str, list[str]]:
    """``source`` (a test file) with ``.json()`` on a test client's response made ``.{data}()`` where the web
    framework's responses give their data so (``data``: Flask's ``get_json``; its ``response.json`` is the data,
    and calling it fails). A response is what a ``client.<method>(...)`` call returns, used directly or through
    the name it was assigned to. Seen on the notes API at 7c5de5d: ``response.json().get('error')`` in two
    tests, the same test file sent back four times. Returns the changed lines' text."""
    if data == "json":
        return source, []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    responses = {
        t.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign) and _a_client_call(n.value)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    lines = source.splitlines()
    edits: list[tuple[int, int, int]] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and not n.args and not n.keywords and isinstance(n.func, ast.Attribute):
            on = n.func.value
            if n.func.attr == "json" and ((isinstance(on, ast.Name) and on.id in responses) or _a_client_call(on)):
                end = n.func.end_col_offset or 0
                edits.append((n.func.end_lineno or n.lineno, end - len("json"), end))
    changed = []
    for line, start, end in sorted(edits, reverse=True):
        text = lines[line - 1].encode()
        lines[line - 1] = (text[:start] + data.encode() + text[end:]).decode()
        changed.append(lines[line - 1].strip())
    if not changed:
        return source, []
    return "\n".join(lines) + "\n", sorted(changed)


def _a_client_call(node: ast.expr) -> bool:
    """Whether ``node`` is a request made with a test client: ``client.get(...)``, ``self.client.post(...)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value
    name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
    return "client" in name.lower()


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
    used = {imported[c][0] for c in called if c in imported}
    for framework in frameworks():
        for fn in factories(tree, framework):
            places = [p for p in file_parameters(fn.args) or () if not p.folder]
            if not places or not isinstance(fn.body[-1], ast.Return):
                continue
            added = []
            for name, (module, parameter) in sorted(setups.items()):
                local = next((k for k, v in imported.items() if v == (module, name)), None)
                if module not in used or (local or name) in called:
                    continue
                place = next((p for p in places if p.name == parameter), places[0] if len(places) == 1 else None)
                if local is None or place is None:
                    continue  # the setup is not imported here: a new import could be circular
                added.append(f"{local}({place.name})")
            if added:
                lines = source.splitlines()
                ret = fn.body[-1]
                indent = lines[ret.lineno - 1][: ret.col_offset]
                lines[ret.lineno - 1 : ret.lineno - 1] = [indent + a for a in added]
                return "\n".join(lines) + "\n", added
    return source, []


def main_through_factory(source: str) -> tuple[str, list[str]]:
    """``source`` with a ``__main__`` block that sets up the module's app by hand made to call the factory that
    does it: ``app.config["DB_PATH"] = Path("notes.db")`` becomes ``create_app(Path("notes.db"))`` where
    ``create_app(db_path)`` sets ``app.config["DB_PATH"] = db_path`` (and whatever else it does: the setup
    ``app.run()`` would otherwise skip) and returns the module's app. Seen on the notes API run in-process at
    c1bae50: the README's ``python -m notes.app`` served an app whose database was never created. Returns the
    calls made."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    mains = [n for n in tree.body if isinstance(n, ast.If) and is_main_guard(n)]
    for framework in frameworks() if mains else ():
        for fn in factories(tree, framework):
            if not isinstance(fn.body[-1], ast.Return) or not isinstance(fn.body[-1].value, ast.Name):
                continue
            app = fn.body[-1].value.id
            params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
            required = params[: len(params) - len(fn.args.defaults)]
            if fn.args.kwonlyargs or not required:
                continue
            keys: dict[str, str] = {}  # the configuration key -> the parameter the factory sets it to
            for stmt in fn.body:
                key = _config_key(stmt, app)
                if key is not None and isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name):
                    keys[key] = stmt.value.id
            for main in mains:
                given: dict[str, tuple[ast.Assign, str]] = {}  # parameter -> (the statement setting its key, its value)
                for stmt in main.body:
                    key = _config_key(stmt, app)
                    if key in keys and isinstance(stmt, ast.Assign):
                        given[keys[key]] = (stmt, ast.get_source_segment(source, stmt.value) or "")
                values = [given[p][1] for p in required if p in given]
                if set(required) - set(given) or fn.name in free_reads(main) or not all(values):
                    continue
                call = f"{fn.name}({', '.join(values)})"
                lines = source.splitlines()
                statements = sorted((s for s, _ in given.values()), key=lambda s: s.lineno, reverse=True)
                for stmt in statements:
                    indent = lines[stmt.lineno - 1][: stmt.col_offset]
                    replacement = [indent + call] if stmt is statements[-1] else []
                    lines[stmt.lineno - 1 : stmt.end_lineno or stmt.lineno] = replacement
                return "\n".join(lines) + "\n", [call]
    return source, []


def _config_key(stmt: ast.stmt, app: str) -> str | None:
    """The key of ``app.config[KEY] = ...`` (a constant), else None."""
    if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1):
        return None
    target = stmt.targets[0]
    if not (isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute)):
        return None
    owner = target.value
    if owner.attr != "config" or not (isinstance(owner.value, ast.Name) and owner.value.id == app):
        return None
    return ast.unparse(target.slice)
