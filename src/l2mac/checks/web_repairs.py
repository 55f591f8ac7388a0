"""Deterministic repairs of a web app a small model wrote: a module-level app that its factory makes again, and
a test client's response read the wrong way for its framework (see :mod:`l2mac.checks.web_apps`).
"""

from __future__ import annotations

import ast
import builtins
import re

from l2mac.checks.python import defined_at_top_level
from l2mac.checks.serve import is_main_guard
from l2mac.checks.shape import free_reads, parameter_defaults
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


def client_app_attributes(source: str, holder: str) -> tuple[str, list[str]]:
    """``source`` (a test file) with ``client.config`` read through the attribute that holds the client's app
    (``holder``: Flask's ``client.application.config``); a test client has no configuration of its own. A client
    is a name with "client" in it, as :func:`_a_client_call` has it. Seen on the notes API at f2bd868:
    ``add_note(client.config["DB_PATH"], ...)`` failed on an AttributeError, and the same test file came back
    three times. Returns the changed lines' text."""
    if not holder:
        return source, []
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    lines = source.splitlines()
    edits: list[tuple[int, int]] = []  # (line, column after the client's name)
    for n in ast.walk(tree):
        on = n.value if isinstance(n, ast.Attribute) and n.attr == "config" else None
        if isinstance(on, ast.Name) and "client" in on.id.lower() and on.end_col_offset is not None:
            edits.append((on.end_lineno or on.lineno, on.end_col_offset))
    changed = []
    for line, at in sorted(edits, reverse=True):
        text = lines[line - 1].encode()
        lines[line - 1] = (text[:at] + f".{holder}".encode() + text[at:]).decode()
        changed.append(lines[line - 1].strip())
    if not changed:
        return source, []
    return "\n".join(lines) + "\n", sorted(set(changed))


def _a_client_call(node: ast.expr) -> bool:
    """Whether ``node`` is a request made with a test client: ``client.get(...)``, ``self.client.post(...)``."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
        return False
    owner = node.func.value
    name = owner.id if isinstance(owner, ast.Name) else owner.attr if isinstance(owner, ast.Attribute) else ""
    return "client" in name.lower()


def main_through_factory(source: str) -> tuple[str, list[str]]:
    """``source`` with a ``__main__`` block that runs the module's app without its factory's setup made to call
    that factory: where ``create_app(db_path)`` sets ``app.config["DB_PATH"] = db_path`` (and does whatever else
    ``app.run()`` would otherwise skip) and returns the module's app, a block statement
    ``app.config["DB_PATH"] = Path("notes.db")`` becomes ``create_app(Path("notes.db"))``; a block that sets
    nothing, in a module that sets the key itself at top level, calls ``create_app`` on that value first. Seen on
    the notes API: in-process at c1bae50 the block set the key itself, at f4c5bc8 the module did; either way the
    README's ``python -m notes.app`` served an app whose database was never created. A block that changes the
    configuration another way, or a module that calls the factory itself, is left as it is. Returns the calls
    made."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    mains = [n for n in tree.body if isinstance(n, ast.If) and is_main_guard(n)]
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for fn, app in _returning_the_modules_app(tree) if mains else ():
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args]]
        required = params[: len(params) - len(fn.args.defaults)]
        if fn.args.kwonlyargs or not required:
            continue
        keys: dict[str, str] = {}  # the configuration key -> the parameter the factory sets it to
        for stmt in fn.body:
            key = _config_key(stmt, app)
            if key is not None and isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Name):
                keys[key] = stmt.value.id
        at_top = _given(source, tree.body, keys, app)  # what the module sets for every importer (and the block)
        made_at_top = any(fn.name in free_reads(n) for n in tree.body if not isinstance(n, defs) and n not in mains)
        for main in mains:
            given = _given(source, main.body, keys, app)
            values = {p: value for p, (_, value) in {**at_top, **given}.items()}
            if set(required) - set(values) or not all(values[p] for p in required) or fn.name in free_reads(main):
                continue
            if not given and (made_at_top or not _reads(main, app) or _changes_config(main, app)):
                continue
            call = f"{fn.name}({', '.join(values[p] for p in required)})"
            lines = source.splitlines()
            statements = sorted((s for s, _ in given.values()), key=lambda s: s.lineno, reverse=True)
            if any(_shares_a_line(lines, stmt) for stmt in statements or main.body[:1]):
                continue
            if not statements:  # the block calls the factory first, on what the module sets
                first = main.body[0]
                lines[first.lineno - 1 : first.lineno - 1] = [lines[first.lineno - 1][: first.col_offset] + call]
            for stmt in statements:  # the call takes the place of the last: every value it reads is made
                indent = lines[stmt.lineno - 1][: stmt.col_offset]
                replacement = [indent + call] if stmt is statements[0] else []
                lines[stmt.lineno - 1 : stmt.end_lineno or stmt.lineno] = replacement
            return "\n".join(lines) + "\n", [call]
    return source, []


def _given(source: str, body: list[ast.stmt], keys: dict[str, str], app: str) -> dict[str, tuple[ast.Assign, str]]:
    """Per parameter of ``keys`` (configuration key -> the factory's parameter), the statement of ``body`` that
    sets its key on ``app`` and the source of the value it sets."""
    given: dict[str, tuple[ast.Assign, str]] = {}
    for stmt in body:
        key = _config_key(stmt, app)
        if key in keys and isinstance(stmt, ast.Assign):
            given[keys[key]] = (stmt, ast.get_source_segment(source, stmt.value) or "")
    return given


def _changes_config(node: ast.AST, app: str) -> bool:
    """Whether ``node`` sets a key of ``app.config`` anywhere in it, or calls one of its methods."""
    for n in ast.walk(node):
        if _config_method(n, app):
            return True
        owner = n.value if isinstance(n, ast.Subscript) and isinstance(n.ctx, ast.Store) else None
        if isinstance(owner, ast.Attribute) and owner.attr == "config" and ast.unparse(owner.value) == app:
            return True
    return False


def _reads(node: ast.AST, name: str) -> bool:
    """Whether ``node`` reads the name ``name``."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Load) for n in ast.walk(node))


def factory_configured(source: str) -> tuple[str, list[str]]:
    """``source`` with a factory that returns the module's own app giving that app its parameters: where the
    module sets ``app.config["DB_PATH"] = Path("notes.db")`` and ``create_app(db_path)`` returns ``app`` without
    setting that key, the factory sets ``app.config["DB_PATH"] = db_path`` before it returns (a key is a
    parameter's when it is the parameter's name in capitals). Seen on the notes API at ee24634: create_app made
    the tables at the test's tmp_path and returned an app whose views read notes.db ("no such table: notes"),
    reported four times. A factory that sets its app's configuration another way (``app.config.update(...)``)
    is left as it is, as is a parameter that defaults to None. Returns the statements added."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    lines = source.splitlines()
    for fn, app in _returning_the_modules_app(tree):
        if any(_config_method(n, app) for n in ast.walk(fn)):
            continue
        module_keys = {k: stmt for stmt in tree.body if (k := _config_key(stmt, app)) is not None}
        own_keys = {k for stmt in ast.walk(fn) if isinstance(stmt, ast.stmt) and (k := _config_key(stmt, app))}
        defaults = parameter_defaults(fn.args)
        settable = [
            p.arg
            for p in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]
            if not (isinstance(d := defaults.get(p.arg), ast.Constant) and d.value is None)
        ]
        added = [
            f"{app}.config[{ast.get_source_segment(source, _key_node(module_keys[key]))}] = {p}"
            for p in settable
            for key in sorted(set(module_keys) - own_keys)
            if key == p.upper()
        ]
        last = fn.body[-1]
        if added and not _shares_a_line(lines, last):
            indent = lines[last.lineno - 1][: last.col_offset]
            lines[last.lineno - 1 : last.lineno - 1] = [indent + a for a in added]
            return "\n".join(lines) + "\n", added
    return source, []


def _returning_the_modules_app(tree: ast.Module) -> list[tuple[ast.FunctionDef, str]]:
    """The module's app factories that set up and return the module's own app (``return app``, no app of their
    own), each with the app's name."""
    found = []
    for framework in frameworks():
        for fn in factories(tree, framework):
            last = fn.body[-1]
            if not (isinstance(last, ast.Return) and isinstance(last.value, ast.Name)):
                continue
            app = last.value.id
            if any(isinstance(n, ast.Name) and n.id == app and not isinstance(n.ctx, ast.Load) for n in ast.walk(fn)):
                continue  # it makes an app of its own
            found.append((fn, app))
    return found


def _config_method(node: ast.AST, app: str) -> bool:
    """Whether ``node`` calls a method of ``app.config`` (``update``, ``from_mapping``, ``setdefault``, ...)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(owner := node.func.value, ast.Attribute)
        and owner.attr == "config"
        and isinstance(owner.value, ast.Name)
        and owner.value.id == app
    )


def _shares_a_line(lines: list[str], stmt: ast.stmt) -> bool:
    """Whether another statement shares a line with ``stmt`` (``app.config["DB"] = "x"; app.run()``)."""
    before = lines[stmt.lineno - 1][: stmt.col_offset]
    after = lines[(stmt.end_lineno or stmt.lineno) - 1].encode()[stmt.end_col_offset or 0 :].decode()
    return bool(before.strip()) or bool(after.split("#", 1)[0].strip())


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
    key = target.slice
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def _key_node(stmt: ast.stmt) -> ast.expr:
    """The key of ``app.config[KEY] = ...`` (a statement :func:`_config_key` reads)."""
    assert isinstance(stmt, ast.Assign) and isinstance(stmt.targets[0], ast.Subscript)
    return stmt.targets[0].slice
