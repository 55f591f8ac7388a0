"""Deterministic repairs of generated code: the imports a model forgot, for names whose module is certain.

Small models often use ``Path``, ``json`` or ``dataclass`` without importing them (ruff reports F821). When
the undefined name is one of a fixed table of unambiguous standard-library (and pytest) names, or an alias the
Python community uses for one module only (``np``, ``pd``, ``ET``), the import is added after the module docstring
and ``from __future__`` imports. Anything else is left to the model.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Collection

from l2mac.checks.contract import parses
from l2mac.checks.issues import CodeIssue
from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.python import UNDEFINED_NAME, defined_at_top_level
from l2mac.checks.shape import calls_of, can_take, discarded_parameters, free_reads, hidden_calls, own_nodes
from l2mac.checks.typecheck import all_names
from l2mac.checks.web_apps import framework_import

_FROM = {
    "pathlib": ["Path"],
    "dataclasses": ["dataclass", "field", "asdict", "astuple"],
    "typing": ["Any", "Optional", "List", "Dict", "Tuple", "Set", "Union", "Callable", "Iterable", "Iterator"],
    "collections": ["defaultdict", "Counter", "namedtuple", "deque", "OrderedDict"],
    "datetime": ["datetime", "date", "timedelta", "timezone"],
    "enum": ["Enum", "auto"],
    "abc": ["ABC", "abstractmethod"],
    "io": ["StringIO", "BytesIO"],
    "decimal": ["Decimal"],
    "functools": ["reduce", "lru_cache", "partial", "wraps"],
}
_MODULES = [
    *("json", "os", "sys", "re", "math", "random", "time", "csv", "argparse", "shutil", "subprocess"),
    *("itertools", "functools", "collections", "uuid", "logging", "tempfile", "sqlite3", "hashlib"),
    *("string", "textwrap", "copy", "statistics", "pytest"),
]

#: aliases every tutorial and codebase uses for one module only (a third-party one the dependency check then asks
#: the model to declare). Seen: ``ET`` undefined beside ``from xml.etree.ElementTree import fromstring``, through
#: six rewrites of the same file.
_ALIASES = {
    "ET": "xml.etree.ElementTree",
    "np": "numpy",
    "pd": "pandas",
    "plt": "matplotlib.pyplot",
    "tk": "tkinter",
    "sns": "seaborn",
    "nx": "networkx",
}

KNOWN_IMPORTS: dict[str, str] = {name: f"import {name}" for name in _MODULES}
KNOWN_IMPORTS.update({alias: f"import {module} as {alias}" for alias, module in _ALIASES.items()})
KNOWN_IMPORTS.update({n: f"from {mod} import {n}" for mod, names in _FROM.items() for n in names})

#: names that are a module and a member of it: used as ``name.<one of these>``, the name is the module. Seen:
#: ``datetime.date.today()`` in a test given ``from datetime import datetime``, which broke every test it held.
_MODULE_WHEN_USED_FOR = {
    "datetime": {"date", "datetime", "time", "timedelta", "timezone", "tzinfo", "MINYEAR", "MAXYEAR", "UTC"},
}


def _known_import(name: str, tree: ast.Module) -> str | None:
    """The import that binds ``name`` as ``tree`` uses it, from the table (None: not in the table)."""
    members = _MODULE_WHEN_USED_FOR.get(name)
    if members and any(
        isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id == name and n.attr in members
        for n in ast.walk(tree)
    ):
        return f"import {name}"
    return KNOWN_IMPORTS.get(name)


def project_imports(trees: dict[str, ast.Module]) -> dict[str, str]:
    """The names the project's files bind by importing, each with its import line, where every file that binds
    the name imports it the same way (``np``: ``import numpy as np``). Seen: tests using ``np`` undefined beside
    a module that imports numpy as np."""
    found: dict[str, set[str]] = {}
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.Import):
                for a in node.names:
                    line = f"import {a.name}" + (f" as {a.asname}" if a.asname else "")
                    found.setdefault(a.asname or a.name.split(".")[0], set()).add(line)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                for a in node.names:
                    line = f"from {node.module} import {a.name}" + (f" as {a.asname}" if a.asname else "")
                    found.setdefault(a.asname or a.name, set()).add(line)
    return {name: next(iter(lines)) for name, lines in found.items() if len(lines) == 1 and name != "*"}


def import_line(tree: ast.Module) -> int:
    """Where new imports go: after the module docstring and ``from __future__`` imports (0-based line)."""
    head = 0
    for stmt in tree.body:
        is_doc = isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and stmt is tree.body[0]
        if is_doc or (isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__"):
            head = stmt.end_lineno or stmt.lineno
        else:
            break
    return head


def undefined_names(issues: list[CodeIssue]) -> dict[str, set[str]]:
    """Undefined names per file, from the lint issues."""
    out: dict[str, set[str]] = {}
    for issue in issues:
        if m := UNDEFINED_NAME.search(issue.message):
            out.setdefault(issue.path, set()).add(m.group(1))
    return out


def definitions(trees: dict[str, ast.Module]) -> dict[str, set[str]]:
    """Each top-level function or class name of the project's non-test modules, with the dotted modules defining it."""
    seen: dict[str, set[str]] = {}
    for rel, tree in trees.items():
        if rel.endswith(".py") and not is_test_file(rel) and (module := module_name(rel)):
            for node in tree.body:
                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                    seen.setdefault(node.name, set()).add(module)
    return seen


def project_definitions(trees: dict[str, ast.Module], *, private: bool = False) -> dict[str, str]:
    """Public top-level names defined by exactly one non-test module of the project: name -> dotted module
    (with ``private``, the names starting with ``_`` too)."""
    seen = definitions(trees)
    return {n: next(iter(m)) for n, m in seen.items() if len(m) == 1 and (private or not n.startswith("_"))}


def exported_definitions(trees: dict[str, ast.Module], *, private: bool = False) -> dict[str, str]:
    """Top-level names several non-test modules define, each with the one of them a package's ``__init__`` takes
    it from (``from .core import name``, or ``from .core import *``): name -> dotted module. The package's own
    export says which definition is the project's (seen on python-slugify: ``slugify`` is defined in
    slugify/slugify.py, slugify/_legacy.py and tools/legacy_reference.py, and the package star-imports the
    first; a new module of the package calling ``slugify`` got no import, and its step rewrote the function)."""
    defined = definitions(trees)
    modules = {module_name(rel): tree for rel, tree in trees.items()}
    taken: dict[str, set[str]] = {}
    for rel, tree in trees.items():
        package = module_name(rel)
        if not rel.endswith("__init__.py") or not package:
            continue
        bound: dict[str, str] = {}  # the module each name is last bound from: the one the package has
        for node in tree.body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                bound.pop(node.name, None)  # the package's own: a module of it importing that is circular
            elif isinstance(node, ast.ImportFrom):
                source = _import_source(package, node)
                for a in node.names:
                    if a.name == "*":
                        brought = _bound_names(modules[source]) if source in modules else set()
                        bound |= {n: source for n in brought if source in defined.get(n, ())}
                    elif a.asname in (None, a.name) and source in defined.get(a.name, ()):
                        bound[a.name] = source
                    else:  # another thing bound under the name
                        bound.pop(a.asname or a.name, None)
        for name, source in bound.items():
            taken.setdefault(name, set()).add(source)
    return {
        n: next(iter(m))
        for n, m in taken.items()
        if len(m) == 1 and len(defined.get(n, ())) > 1 and (private or not n.startswith("_"))
    }


def _import_source(package: str, node: ast.ImportFrom) -> str:
    """The dotted module an import in the ``__init__`` of ``package`` imports from (relative ones resolved)."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    base = parts[: len(parts) - node.level + 1]
    return ".".join([*base, *([node.module] if node.module else [])])


def star_export(init: str, package: str, module: str, siblings: Collection[str]) -> tuple[str, list[str]]:
    """The ``__init__`` source ``init`` of ``package`` with ``from .module import *`` after its last star import,
    when it star-imports every one of its public ``siblings`` (the package re-exports its modules: a new module
    is exported the same way) and not ``module`` yet. Seen on python-slugify: ``is_slug`` added in a new module
    slugify/is_slug.py, and ``from slugify import is_slug`` gave the submodule. Returns the import added."""
    try:
        tree = ast.parse(init)
    except SyntaxError:
        return init, []
    starred = [n for n in tree.body if isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names)]
    sources = {_import_source(package, n) for n in starred}
    public = {f"{package}.{s}" for s in siblings if not s.startswith("_")}
    if not public or not public <= sources or f"{package}.{module}" in sources or not starred:
        return init, []
    lines = init.splitlines()
    line = f"from .{module} import *"
    lines.insert(starred[-1].end_lineno or starred[-1].lineno, line)
    return "\n".join(lines) + "\n", [line]


def add_imports(
    source: str,
    names: set[str],
    project: dict[str, str] | None = None,
    own_module: str = "",
    imported: dict[str, str] | None = None,
) -> tuple[str, list[str]]:
    """``source`` with imports for those of ``names`` whose module is certain (the standard-library table, the
    one project module that defines the name, or the one way the project's other files import it), and the
    import lines added."""
    project, imported = project or {}, imported or {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    known = {n: line for n in names if (line := _known_import(n, tree) or framework_import(n, tree)) is not None}
    lines_to_add = sorted(
        set(known.values())
        | {f"from {project[n]} import {n}" for n in names if n not in known and n in project}
        | {imported[n] for n in names if n not in known and n not in project and n in imported}
        - {f"from {own_module} import {n}" for n in names}
    )
    if not lines_to_add:
        return source, []
    head = import_line(tree)
    lines = source.splitlines()
    lines[head:head] = lines_to_add
    return "\n".join(lines) + "\n", lines_to_add


#: pytest fixtures small models try to import from pytest; they are parameters of a test, never imports
PYTEST_FIXTURES = frozenset({"tmp_path", "tmpdir", "capsys", "capfd", "monkeypatch", "caplog", "tmp_path_factory"})


def repair_fixture_misuse(source: str) -> tuple[str, list[str], list[str]]:
    """``source`` without the two ways small models break pytest's fixtures: fixture names in
    ``from pytest import ...`` lines, and top-level ``@pytest.fixture`` functions redefining a built-in
    fixture (``def tmp_path():``). Returns the source, the imports dropped and the redefinitions removed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, [], []
    lines = source.splitlines()
    dropped: list[str] = []
    removed: list[str] = []
    for node in sorted(tree.body, key=lambda n: -n.lineno):  # bottom-up, so earlier line numbers hold
        end = node.end_lineno or node.lineno
        if isinstance(node, ast.ImportFrom) and node.module == "pytest" and node.level == 0:
            bad = [a.name for a in node.names if a.name in PYTEST_FIXTURES]
            keep = [ast.unparse(a) for a in node.names if a.name not in PYTEST_FIXTURES]
            if bad:
                dropped += bad
                lines[node.lineno - 1 : end] = [f"from pytest import {', '.join(keep)}"] if keep else []
        elif (
            isinstance(node, ast.FunctionDef)
            and node.name in PYTEST_FIXTURES
            and any("fixture" in ast.unparse(d) for d in node.decorator_list)
        ):
            removed.append(node.name)
            del lines[min(d.lineno for d in node.decorator_list) - 1 : end]
    if not (dropped or removed):
        return source, [], []
    return "\n".join(lines) + "\n", sorted(dropped), sorted(removed)


#: parameters that hold a command line a function should parse
_ARGV_PARAMS = ("argv", "args", "arguments")


def repair_ignored_argv(source: str) -> tuple[str, list[str]]:
    """``source`` with ``parser.parse_args()`` inside ``def main(argv)`` made ``parser.parse_args(argv)``: a
    small model's ``main(argv)`` that ignores its argument parses the test runner's own command line, and
    every test that calls ``main([...])`` fails on argparse's SystemExit. Returns the source and the functions
    repaired."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    lines = source.splitlines(keepends=True)
    edits: list[tuple[int, int, str]] = []  # (line index, column of "()", parameter)
    repaired: list[str] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        params = [a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]]
        param = next((p for p in _ARGV_PARAMS if p in params), None)
        if param is None:
            continue
        for call in own_nodes(fn):
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr == "parse_args"
                and not call.args
                and not call.keywords
                and call.end_lineno is not None
                and call.end_col_offset is not None
            ):
                line, col = call.end_lineno - 1, call.end_col_offset - 2
                if lines[line].encode()[col : col + 2] == b"()":
                    edits.append((line, col, param))
                    repaired.append(fn.name)
    for line, col, param in sorted(edits, reverse=True):
        raw = lines[line].encode()
        lines[line] = (raw[:col] + f"({param})".encode() + raw[col + 2 :]).decode()
    return "".join(lines), list(dict.fromkeys(repaired))


def drop_identical_copies(source: str, own_module: str, modules: dict[str, ast.Module]) -> tuple[str, list[str]]:
    """``source`` without the top-level functions and classes that are exact copies of ones defined by a
    project module it imports from (``modules``: dotted name -> tree), each replaced by an import of the
    original, and the import lines added. A small model writing todo/cli.py copies todo/core.py's functions
    and, told to delete the copies, writes them again; an exact copy can go without changing behaviour."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    imported = sorted(
        {
            n.module
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom) and not n.level and n.module in modules and n.module != own_module
        }
    )
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    originals = {
        node.name: (module, ast.dump(node))
        for module in imported
        for node in modules[module].body
        if isinstance(node, defs) and not node.name.startswith("_") and node.name != "main"
    }
    lines = source.splitlines()
    added: list[str] = []
    for node in sorted(tree.body, key=lambda n: -n.lineno):  # bottom-up, so earlier line numbers hold
        if isinstance(node, defs) and node.name in originals and ast.dump(node) == originals[node.name][1]:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            del lines[start - 1 : node.end_lineno or node.lineno]
            added.append(f"from {originals[node.name][0]} import {node.name}")
    if not added:
        return source, []
    added.reverse()
    head = import_line(ast.parse("\n".join(lines)))
    lines[head:head] = added
    return re.sub(r"\n{4,}", "\n\n\n", "\n".join(lines) + "\n"), added


def drop_shadowed_imports(source: str) -> tuple[str, list[str]]:
    """``source`` without the names it imports (``from m import name``) and then defines again at the top level
    with ``def`` or ``class``: from the definition on, the import is dead, so dropping it changes nothing at
    run time. Returns the names dropped. Seen: todo/cli.py imported add_todo from todo.core and defined its own
    add_todo(file, task), which main() calls; told to delete "the copy", the model could not."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    defined = {node.name: node.lineno for node in tree.body if isinstance(node, defs)}
    lines = source.splitlines()
    dropped: list[str] = []
    for node in sorted(tree.body, key=lambda n: -n.lineno):  # bottom-up, so earlier line numbers hold
        if not isinstance(node, ast.ImportFrom) or node.module == "__future__":
            continue
        shadowed = [
            a
            for a in node.names
            if a.asname is None
            and defined.get(a.name, 0) > node.lineno
            and not _used_at_import_time(tree, a.name, node.lineno, defined[a.name])
        ]
        if not shadowed:
            continue
        kept = [a for a in node.names if a not in shadowed]
        indent = lines[node.lineno - 1][: node.col_offset]
        new = [indent + ast.unparse(ast.ImportFrom(node.module, kept, node.level))] if kept else []
        lines[node.lineno - 1 : node.end_lineno or node.lineno] = new
        dropped += [a.name for a in reversed(shadowed)]
    if not dropped:
        return source, []
    return "\n".join(lines) + "\n", list(reversed(dropped))


def _used_at_import_time(tree: ast.Module, name: str, start: int, end: int) -> bool:
    """Whether module-level code between lines ``start`` and ``end`` (decorators, defaults and class bases
    included, function bodies not) reads ``name``."""
    for stmt in tree.body:
        if not start < stmt.lineno < end:
            continue
        if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
            kw = [d for d in stmt.args.kw_defaults if d is not None]
            parts: list[ast.AST] = [*stmt.decorator_list, *stmt.args.defaults, *kw]
        elif isinstance(stmt, ast.ClassDef):
            parts = [*stmt.decorator_list, *stmt.bases, *stmt.keywords]
        else:
            parts = [stmt]
        if any(isinstance(n, ast.Name) and n.id == name for part in parts for n in ast.walk(part)):
            return True
    return False


def _bound_names(tree: ast.Module) -> set[str]:
    """What ``from module import *`` brings: ``__all__`` when it is a literal list, else the module's public
    top-level names (definitions, assignments, imports)."""
    if (listed := all_names(tree)) is not None:
        return set(listed)
    names = defined_at_top_level(tree)
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
    return {n for n in names if not n.startswith("_")}


def expand_star_imports(source: str, modules: dict[str, ast.Module]) -> tuple[str, list[str]]:
    """``source`` with each ``from m import *`` of a project module (one in ``modules``, by dotted name)
    replaced by an import of the names the file uses from it (dropped when it uses none). A star import hides
    every undefined name (ruff reports F405, "may be undefined", instead of F821), so nothing could tell the
    model, or the forgotten-import repair, that a name is missing (seen: tests star-importing todo.core and
    calling todo.cli's main). Returns the imports changed. ``__init__.py`` files are not given to this: a star
    import there re-exports."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    lines = source.splitlines()
    changed: list[str] = []
    for node in sorted(tree.body, key=lambda n: -n.lineno):  # bottom-up, so earlier line numbers hold
        if not (isinstance(node, ast.ImportFrom) and not node.level and node.module in modules):
            continue
        if [a.name for a in node.names] != ["*"]:
            continue
        names = sorted(used & _bound_names(modules[node.module]))
        new = [f"from {node.module} import {', '.join(names)}"] if names else []
        lines[node.lineno - 1 : node.end_lineno or node.lineno] = new
        changed.append(f"from {node.module} import *")
    if not changed:
        return source, []
    return "\n".join(lines) + "\n", list(reversed(changed))


def functions_not_modules(source: str, modules: dict[str, ast.Module]) -> tuple[str, list[str]]:
    """``source`` with each ``from pkg import name`` that gets the submodule ``pkg.name`` where the file calls
    ``name(...)`` and that submodule defines a function or class ``name`` made ``from pkg.name import name``.
    The package gives the submodule when its ``__init__`` binds no such name, itself or through its star imports
    of project modules (seen on python-slugify: a test's ``from slugify import slugify_filename`` beside
    slugify/slugify_filename.py, "'module' object is not callable"). A file that uses the name as a module
    (``name.x``) is left alone, and so is an import sharing its line with another statement, and a package that
    star-imports a module not the project's. ``modules`` are the project's modules by dotted name. Returns the
    imports changed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    called = {n.func.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}
    as_module = {n.value.id for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)}
    lines = source.splitlines()
    changed: list[str] = []
    for node in sorted(tree.body, key=lambda n: -n.lineno):  # bottom-up, so earlier line numbers hold
        if not (isinstance(node, ast.ImportFrom) and not node.level and node.module in modules):
            continue
        bound = _binds(modules[node.module], node.module, modules)
        shared = any(n is not node and n.lineno <= (node.end_lineno or node.lineno) and
                     (n.end_lineno or n.lineno) >= node.lineno for n in tree.body)  # fmt: skip
        if bound is None or shared:
            continue
        moved = [
            a
            for a in node.names
            if (sub := modules.get(f"{node.module}.{a.name}")) is not None
            and a.asname is None
            and a.name in called - as_module
            and a.name in defined_at_top_level(sub)
            and a.name not in bound
        ]
        if not moved:
            continue
        kept = [ast.unparse(ast.alias(a.name, a.asname)) for a in node.names if a not in moved]
        new = [f"from {node.module} import {', '.join(kept)}"] if kept else []
        new += [f"from {node.module}.{a.name} import {a.name}" for a in moved]
        lines[node.lineno - 1 : node.end_lineno or node.lineno] = new
        changed += [f"{node.module}.{a.name}.{a.name}" for a in moved]
    if not changed:
        return source, []
    return "\n".join(lines) + "\n", sorted(changed)


def _binds(package: ast.Module, name: str, modules: dict[str, ast.Module]) -> set[str] | None:
    """Every name the package ``name``'s ``__init__`` binds: its definitions, assignments and imports (whatever
    its ``__all__``), with what its star imports of the project's modules bring; None when it star-imports a
    module that is not the project's (what that brings is not known)."""
    bound = set(defined_at_top_level(package))
    for node in package.body:
        if not isinstance(node, (ast.Import, ast.ImportFrom)):
            continue
        bound |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name != "*"}
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            source = _import_source(name, node)
            if source not in modules:
                return None
            bound |= _bound_names(modules[source])
    return bound


def call_hidden_functions(source: str, module: str, owners: dict[str, list[str]]) -> tuple[str, list[str]]:
    """``source`` (module ``module``) with each function that calls itself with arguments it cannot take, where
    another project module defines a function of its name (see :func:`l2mac.checks.shape.hidden_calls`), made
    to call that one: imported under an alias (``from notes.store import list_notes as store_list_notes``) and
    called by it. The call cannot mean the function itself (its arguments do not fit), so the change is safe; a
    small model told of it rewrote the whole file, with the same view, four times. Returns the imports added."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    found = hidden_calls(tree, module, owners)
    if not found:
        return source, []
    bound = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)} | defined_at_top_level(tree)
    lines = source.splitlines()
    edits: list[tuple[int, int, int, str]] = []  # (line, start column, end column, new text)
    aliases: dict[tuple[str, str], str] = {}
    for fn, _, other in found:
        alias = aliases.get((other, fn.name))
        if alias is None:
            alias = f"{other.rsplit('.', 1)[-1]}_{fn.name}"
            while alias in bound:
                alias += "_"
            bound.add(alias)
            aliases[(other, fn.name)] = alias
        for call in calls_of(fn, fn.name):
            if not can_take(fn.args, call):
                name = call.func
                edits.append((name.lineno, name.col_offset, name.end_col_offset or name.col_offset, alias))
    added = [f"from {other} import {name} as {alias}" for (other, name), alias in aliases.items()]
    for line, start, end, new in sorted(edits, reverse=True):
        text = lines[line - 1].encode()  # ast's columns count bytes
        lines[line - 1] = (text[:start] + new.encode() + text[end:]).decode()
    head = import_line(tree)
    lines[head:head] = added
    return "\n".join(lines) + "\n", added


def fixtures_as_parameters(source: str) -> tuple[str, list[str]]:
    """``source`` (a test file) with the fixtures its tests use but do not take added to their parameters: pytest's
    own (``tmp_path``...) and those the file defines (``client``). Seen on the notes API at f1b9326: a test read
    ``tmp_path``, which only the file's ``client`` fixture took, and failed on an undefined name. Returns the
    tests changed."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    defined = {
        n.name
        for n in tree.body
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any("fixture" in ast.unparse(d) for d in n.decorator_list)
    }
    fixtures = PYTEST_FIXTURES | defined
    module_level = defined_at_top_level(tree) - defined
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            module_level |= {(a.asname or a.name).split(".")[0] for a in node.names}
    tests = [n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    tests += [m for c in tree.body if isinstance(c, ast.ClassDef) for m in c.body if isinstance(m, ast.FunctionDef)]
    lines = source.splitlines()
    changed: list[str] = []
    for fn in sorted(tests, key=lambda f: -f.lineno):
        if not fn.name.startswith("test") or fn.args.vararg or fn.args.kwarg:
            continue
        a = fn.args
        read = [n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        free = free_reads(fn)  # not its own parameters or variables, nor those of a lambda or function inside
        missing = [x for x in dict.fromkeys(read) if x in fixtures and x in free and x not in module_level]
        if not missing or a.defaults or a.posonlyargs or a.kwonlyargs:
            continue
        head = lines[fn.lineno - 1]
        opened = head.find(f"{fn.name}(")
        closed = head.find(")", opened)
        if opened < 0 or closed < 0:
            continue  # a signature over several lines: left as it is
        params = [ast.unparse(p) for p in a.args] + missing
        lines[fn.lineno - 1] = head[: opened + len(fn.name) + 1] + ", ".join(params) + head[closed:]
        changed.append(fn.name)
    if not changed:
        return source, []
    fixed = "\n".join(lines) + "\n"
    if not parses(fixed):  # a signature read wrongly (a default or an annotation holding a parenthesis)
        return source, []
    return fixed, sorted(changed)


def keep_arguments(source: str) -> tuple[str, list[str]]:
    """``source`` without the statements that throw a parameter's value away before anything reads it (see
    :func:`l2mac.checks.shape.discarded_parameters`): the function then uses what its caller passes, which is
    what its signature says it does. Returns each as ``f(): name = value``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    lines = source.splitlines()
    dropped: list[tuple[int, int, str]] = []
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for _, stmt in discarded_parameters(fn):
                if len(fn.body) > 1:  # never a function's only statement
                    dropped.append((stmt.lineno, stmt.end_lineno or stmt.lineno, f"{fn.name}(): {ast.unparse(stmt)}"))
    if not dropped:
        return source, []
    for start, end, _ in sorted(dropped, reverse=True):
        del lines[start - 1 : end]
    fixed = "\n".join(lines) + "\n"
    return (fixed, [said for _, _, said in sorted(dropped)]) if parses(fixed) else (source, [])


#: the head of a test function written on one line
_TEST_HEAD = re.compile(
    r"^(?P<indent>[ \t]*)(?:async[ \t]+)?def[ \t]+(?P<name>test\w*)[ \t]*\(.*\)[^:]*:[ \t]*(?:#.*)?$"
)
#: a line of a body that does nothing (stripped): a comment, ``pass``, ``...``, ``raise NotImplementedError``, or
#: a one-line string
DOES_NOTHING = re.compile(
    r"""^(?:#.*|pass|\.\.\.|raise NotImplementedError\b.*|(?P<q>'''|\"\"\"|'|\").*(?P=q))?[ \t]*(?:#.*)?$"""
)


def _outside(line: str, width: int) -> bool:
    """Whether ``line``, after a block indented deeper than ``width``, may belong to what follows it: a blank
    line, or a comment indented no deeper than the block's head."""
    return not line.strip() or len(line.expandtabs()) - len(line.expandtabs().lstrip()) <= width


def drop_placeholder_tests(source: str) -> tuple[str, list[str]]:
    """``source`` (a test file) without the tests whose bodies hold nothing but comments, ``pass``, ``...`` or a
    docstring, and the decorators above them. A body of comments alone does not compile, and stops pytest
    collecting every test in the project; one of ``pass`` passes while testing nothing. Seen on the URL shortener
    at dc80a46: six tests reading only ``# Add tests to validate URLs...`` were sent back three times, and the
    file, kept as the step's best, left the README's ``python -m pytest`` at a collection error. The file is
    changed only when it then compiles. Returns the tests removed."""
    lines = source.splitlines()
    spans: list[tuple[int, int, str]] = []
    i = 0
    while i < len(lines):
        head = _TEST_HEAD.match(lines[i])
        if head is None:
            i += 1
            continue
        width = len(head["indent"].expandtabs())
        end = i + 1  # the body: the lines after the head, to the next one indented no deeper than it
        while end < len(lines) and (
            not lines[end].strip()
            or lines[end].lstrip().startswith("#")  # a comment does not end a block
            or len(lines[end]) - len(lines[end].lstrip()) > width
        ):
            end += 1
        while end > i + 1 and _outside(lines[end - 1], width):  # what comes after the body is not its
            end -= 1
        body = [line.strip() for line in lines[i + 1 : end] if line.strip()]
        if all(DOES_NOTHING.match(line) for line in body):
            start = i
            while start > 0 and lines[start - 1].strip().startswith("@"):
                start -= 1
            spans.append((start, end, head["name"]))
        i = end
    if not spans:
        return source, []
    for start, end, _ in reversed(spans):
        del lines[start:end]
    fixed = "\n".join(lines).rstrip("\n") + "\n"
    if not parses(fixed):  # a class left with no body, a head read wrongly: left as it was
        return source, []
    return fixed, [name for _, _, name in spans]
