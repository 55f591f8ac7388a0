"""Web apps in a project's code: which framework makes them, where the app (or its factory) is, and which of its
functions are views. The frameworks are data (``web_apps.yaml``). An app is found by what the code does, never by
a file's name: a module-level ``app = Flask(__name__)``, or a function that makes one and returns it (an app
factory, preferred: each test, each run, gets its own app, its files where the caller says).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TypeGuard

import yaml

from l2mac.checks.layout import module_name

#: the last word of a factory parameter that takes a file or folder (a test gives it a place under tmp_path):
#: db_path, data_dir, database; not db_url, nor profile
_PATH_WORDS = frozenset({"path", "file", "filename", "dir", "directory", "folder", "db", "database", "storage", "root"})
_FOLDER_WORDS = frozenset({"dir", "directory", "folder", "root"})


@dataclass(frozen=True)
class Framework:
    """A web framework: the class that makes an app, the decorators that make a view, and the fixture's body."""

    app_class: str
    routes: frozenset[str]
    imports: tuple[str, ...]
    client: str
    run: str  # the command that starts an app, ``{app}`` where the app is named; "" when there is none
    data: str = "json"  # the method of a test client's response that gives its JSON data
    module: str = ""  # the framework's module, and the names code takes from it
    names: frozenset[str] = frozenset()
    client_app: str = ""  # the test client's attribute that holds its app


@dataclass(frozen=True)
class Place:
    """A file or folder parameter of an app factory: its name, whether it is a folder, whether it takes text (an
    ``str`` annotation) rather than a path, and whether it is passed by keyword."""

    name: str
    folder: bool = False
    text: bool = False
    keyword: bool = False
    path: str = ""  # its annotation when that is a path class (``Path``, ``pathlib.Path``)

    def literal(self) -> str:
        """The argument a program passes it: its name, as a path where it takes one (``Path('db_path')``)."""
        return f"{self.path}({self.name!r})" if self.path else repr(self.name)

    def under(self, root: str) -> str:
        """The argument passed for it: a place named after it under the expression ``root`` (``tmp_path``)."""
        place = root if self.folder else f'{root} / "{self.name}"'
        place = f"str({place})" if self.text else place
        return f"{self.name}={place}" if self.keyword else place


@dataclass(frozen=True)
class WebApp:
    """The project's app: ``name`` in ``module``, made by calling it with its ``places`` when it is a factory."""

    module: str
    name: str
    framework: Framework
    places: tuple[Place, ...] | None = None  # None: a module-level app, not a factory

    @property
    def factory(self) -> bool:
        return self.places is not None

    def run_command(self) -> str | None:
        """How a user starts it from the project folder, when the framework has a command line for it: a factory
        is given its files as literal names (``flask --app "notes.app:create_app('db_path')" run``)."""
        if not self.framework.run or any(p.path for p in self.places or ()):
            return None  # a command line passes text, where the factory takes a path
        target = self.module if self.name == "app" or self.factory else f"{self.module}:{self.name}"
        if self.places:
            named = ", ".join(f"{p.name}={p.name!r}" if p.keyword else repr(p.name) for p in self.places)
            target = f'"{self.module}:{self.name}({named})"'
        return self.framework.run.format(app=target)


@cache
def frameworks() -> tuple[Framework, ...]:
    text = resources.files(__package__).joinpath("web_apps.yaml").read_text(encoding="utf-8")
    return tuple(
        Framework(
            f["app_class"],
            frozenset(f["routes"]),
            tuple(f["imports"]),
            f["client"],
            f.get("run", ""),
            f.get("data", "json"),
            f.get("module", ""),
            frozenset(f.get("names", ())),
            f.get("client_app", ""),
        )
        for f in yaml.safe_load(text)
    )


def web_app(trees: dict[str, ast.Module]) -> WebApp | None:
    """The project's web app among the code modules ``trees``: a factory that needs nothing but files and folders
    first, else a module-level app; None when the code makes none."""
    found: list[WebApp] = []
    for path, tree in trees.items():
        module = module_name(path)
        for framework in frameworks():
            made = factories(tree, framework)
            for node in tree.body:
                if isinstance(node, ast.Assign) and _makes(node.value, framework):
                    targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
                    found += [WebApp(module, t, framework) for t in targets[:1]]
                elif isinstance(node, ast.FunctionDef) and node in made:
                    places = file_parameters(node.args)
                    if places is not None and not node.name.startswith("_"):
                        found.append(WebApp(module, node.name, framework, places))
    made_by_factories = [a for a in found if a.factory]
    return (made_by_factories or found)[0] if found else None


def factories(tree: ast.Module, framework: Framework) -> list[ast.FunctionDef]:
    """The module's top-level functions that make an app of ``framework`` (or set up the module's own) and return
    it."""
    apps = frozenset(
        t.id
        for n in tree.body
        if isinstance(n, ast.Assign) and _makes(n.value, framework)
        for t in n.targets
        if isinstance(t, ast.Name)
    )
    return [n for n in tree.body if isinstance(n, ast.FunctionDef) and _factory(n, framework, apps)]


def _called(node: ast.expr) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _makes(value: ast.expr, framework: Framework) -> bool:
    return isinstance(value, ast.Call) and _called(value) == framework.app_class


def _factory(fn: ast.FunctionDef, framework: Framework, module_apps: frozenset[str] = frozenset()) -> bool:
    """Whether ``fn`` makes an app of ``framework`` and returns it, or returns the module's own app
    (``module_apps``) once it has set it up: ``def create_app(db_path): app.config["DB"] = db_path; return app``
    (seen on the notes API, run in-process at b9efa8c: the tests used the module-level app with no database
    configured, and the factory that configures it went uncalled)."""
    made = {
        t.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and _makes(n.value, framework)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    local = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    shared = module_apps - local - {p.arg for p in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
    returned = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    return any((isinstance(r, ast.Name) and r.id in made | shared) or _makes(r, framework) for r in returned)


def views(tree: ast.Module, app: WebApp | None) -> list[str]:
    """The functions at the top level of ``tree`` that are views of ``app`` (see :func:`is_view`)."""
    return [node.name for node in tree.body if is_view(node, app)]


def is_view(node: ast.AST, app: WebApp | None) -> TypeGuard[ast.FunctionDef | ast.AsyncFunctionDef]:
    """Whether ``node`` is a function a route decorator of ``app``'s framework makes a view (``@app.route("/")``)."""
    routes = app.framework.routes if app is not None else frozenset()
    return isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and any(
        isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in routes
        for d in node.decorator_list
    )


def file_parameters(args: ast.arguments) -> tuple[Place, ...] | None:
    """A factory's required parameters, each a file or folder; None when one of them is neither."""
    positional = [*args.posonlyargs, *args.args]
    required = positional[: len(positional) - len(args.defaults)]
    required += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    out: list[Place] = []
    for arg in required:
        annotation = ast.unparse(arg.annotation) if arg.annotation else ""
        last = arg.arg.lower().rsplit("_", 1)[-1]
        path = annotation if annotation in ("Path", "pathlib.Path") else ""
        if not (last in _PATH_WORDS or path):
            return None
        out.append(Place(arg.arg, last in _FOLDER_WORDS, annotation == "str", arg not in positional, path))
    return tuple(out)


@dataclass(frozen=True)
class AppCopy:
    """A module-level app (``assign``) and its views (``views``) that the module's factory (``factory``) makes
    again, each view among the factory's own."""

    assign: ast.Assign
    views: tuple[ast.FunctionDef | ast.AsyncFunctionDef, ...]
    factory: ast.FunctionDef


def app_copy(tree: ast.Module) -> AppCopy | None:
    """The module-level app of ``tree`` when a factory in the same module makes the same app again (every one of
    its views is a view of the factory's too): a copy. Seen on the notes API at 7b721fe: asked for
    ``create_app(db_path)``, the 1.5B model first wrote a module-level ``app = Flask(__name__)`` with its routes
    and its own data.db, then the factory with the same routes; importing the module wrote data.db."""
    for framework in frameworks():
        factories = [n for n in tree.body if isinstance(n, ast.FunctionDef) and _factory(n, framework)]
        for node in tree.body:
            if not (isinstance(node, ast.Assign) and _makes(node.value, framework)):
                continue
            names = [t.id for t in node.targets if isinstance(t, ast.Name)]
            routed = [
                n
                for n in tree.body
                if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                and names
                and _routed_by(n, names[0], framework)
            ]
            for factory in factories:
                inner = {n.name for n in ast.walk(factory) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
                if routed and {v.name for v in routed} <= inner:
                    return AppCopy(node, tuple(routed), factory)
    return None


def _routed_by(node: ast.FunctionDef | ast.AsyncFunctionDef, app: str, framework: Framework) -> bool:
    """Whether a route decorator of the app named ``app`` makes ``node`` a view."""
    return any(
        isinstance(d, ast.Call)
        and isinstance(d.func, ast.Attribute)
        and d.func.attr in framework.routes
        and isinstance(d.func.value, ast.Name)
        and d.func.value.id == app
        for d in node.decorator_list
    )


def framework_import(name: str, tree: ast.Module) -> str | None:
    """The import of ``name`` from a web framework's module that ``tree`` already imports from, when the framework
    gives that name (``from flask import url_for`` in a file with ``from flask import Flask``); else None."""
    imported = {n.module for n in tree.body if isinstance(n, ast.ImportFrom) and n.module and not n.level}
    imported |= {a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    for framework in frameworks():
        if framework.module in imported and name in framework.names:
            return f"from {framework.module} import {name}"
    return None
