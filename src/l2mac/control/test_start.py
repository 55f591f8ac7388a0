"""Where an answer that writes a test file whole is begun: its path, the opening fence, the imports of the code it
tests, for a web app a ``client`` fixture made with the framework's test client, and its first ``def test_``.

The frameworks are data (``web_clients.yaml``). An app is found by what the code does, never by a file's name:
a module-level ``app = Flask(__name__)``, or a function that makes one and returns it (an app factory, preferred:
each test gets its own app, its files under pytest's ``tmp_path``).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from l2mac.checks.autofix import project_definitions
from l2mac.checks.layout import is_test_file, module_name
from l2mac.fenced import fence_lang

#: names a begun test file imports from one module, at most
MAX_IMPORTED = 12
#: a factory parameter that takes a file or folder: filled with a place under pytest's tmp_path
_PATH_PARAM = re.compile(r"path|file|dir|folder|db|database|storage|root", re.IGNORECASE)
_FOLDER_PARAM = re.compile(r"dir|folder|root", re.IGNORECASE)


@dataclass(frozen=True)
class Framework:
    """A web framework: the class that makes an app, the decorators that make a view, and the fixture's body."""

    app_class: str
    routes: frozenset[str]
    imports: tuple[str, ...]
    client: str


@dataclass(frozen=True)
class WebApp:
    """The project's app: ``name`` in ``module``, made by calling it with ``arguments`` when it is a factory."""

    module: str
    name: str
    framework: Framework
    arguments: tuple[str, ...] | None = None  # None: a module-level app, not a factory

    def fixture(self) -> str:
        """A pytest fixture ``client`` that makes the app (a factory's file arguments under ``tmp_path``)."""
        uses_tmp = any("tmp_path" in a for a in self.arguments or ())
        made = f"app = {self.name}({', '.join(self.arguments)})\n" if self.arguments is not None else ""
        body = made + self.framework.client
        lines = "".join(f"    {line}\n" for line in body.splitlines())
        return f"@pytest.fixture\ndef client({'tmp_path' if uses_tmp else ''}):\n{lines}"

    def imports(self, others: list[str]) -> list[str]:
        """The fixture's imports, and the import of the app with ``others`` from its module."""
        name = self.name if self.arguments is not None or self.name == "app" else f"{self.name} as app"
        return ["import pytest", *self.framework.imports, f"from {self.module} import {', '.join([name, *others])}"]


@cache
def frameworks() -> tuple[Framework, ...]:
    text = resources.files(__package__).joinpath("web_clients.yaml").read_text(encoding="utf-8")
    return tuple(
        Framework(f["app_class"], frozenset(f["routes"]), tuple(f["imports"]), f["client"])
        for f in yaml.safe_load(text)
    )


def file_start(path: str, sources: dict[str, str] | None = None) -> str:
    """The beginning of an answer that writes ``path`` whole: its path and the opening fence, and for a test file
    the imports of what the code files ``sources`` define (their public top-level classes and functions, a web
    app's views left to its client), a web app's ``client`` fixture, and the beginning of its first test.
    Seen on ClassEval_21 at 42ff847: asked for tests/test_solution.py, the 1.5B model sent solution.py back
    whole (800 tokens, 2-5 minutes here) four times, and the step ended with no test written."""
    trees = _trees(sources or {})
    app = web_app(trees)
    public = _public(trees, app)
    first = app.imports(public.pop(app.module, [])) if app is not None else []
    imports = first + [f"from {module} import {', '.join(names)}" for module, names in public.items()]
    if not imports:
        return f"{path}\n```{fence_lang(path)}\n"
    fixture = f"\n\n{app.fixture()}" if app is not None else ""
    # begun at its first test function: begun after the imports alone, on ClassEval_21 at e52aef1 the model went
    # on to copy the class under test into the test file, three times
    return f"{path}\n```{fence_lang(path)}\n" + "\n".join(imports) + f"\n{fixture}\n\ndef test_"


def web_app(trees: dict[str, ast.Module]) -> WebApp | None:
    """The project's web app among the code modules ``trees``: a factory whose file parameters can be given
    places under ``tmp_path`` first, else a module-level app; None when the code makes none."""
    found: list[WebApp] = []
    for path, tree in trees.items():
        module = module_name(path)
        for framework in frameworks():
            for node in tree.body:
                if isinstance(node, ast.Assign) and _makes(node.value, framework):
                    targets = [t.id for t in node.targets if isinstance(t, ast.Name)]
                    found += [WebApp(module, t, framework) for t in targets[:1]]
                elif isinstance(node, ast.FunctionDef) and _factory(node, framework):
                    arguments = _arguments(node.args)
                    if arguments is not None and not node.name.startswith("_"):
                        found.append(WebApp(module, node.name, framework, arguments))
    factories = [a for a in found if a.arguments is not None]
    return (factories or found)[0] if found else None


def _trees(sources: dict[str, str]) -> dict[str, ast.Module]:
    trees: dict[str, ast.Module] = {}
    for path, source in sources.items():
        if not path.endswith(".py") or is_test_file(path):
            continue
        try:
            trees[path] = ast.parse(source)
        except SyntaxError:
            continue
    return trees


def _public(trees: dict[str, ast.Module], app: WebApp | None) -> dict[str, list[str]]:
    """Per module, the public classes and functions the code modules ``trees`` define at their top level (a name
    two of them define is left out), but those pytest would collect, the app (imported by itself) and its views,
    at most :data:`MAX_IMPORTED` each."""
    views = {(module_name(p), n) for p, t in trees.items() for n in _views(t, app)}
    found: dict[str, list[str]] = {}
    for name, module in project_definitions(trees).items():
        if name.startswith(("test", "Test")) or (module, name) in views:
            continue
        if app is not None and (module, name) == (app.module, app.name):
            continue
        if len(found.setdefault(module, [])) < MAX_IMPORTED:
            found[module].append(name)
    return {m: names for m, names in found.items() if names}


def _called(node: ast.expr) -> str:
    func = node.func if isinstance(node, ast.Call) else node
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""


def _makes(value: ast.expr, framework: Framework) -> bool:
    return isinstance(value, ast.Call) and _called(value) == framework.app_class


def _factory(fn: ast.FunctionDef, framework: Framework) -> bool:
    """Whether ``fn`` makes an app of ``framework`` and returns it."""
    made = {
        t.id
        for n in ast.walk(fn)
        if isinstance(n, ast.Assign) and _makes(n.value, framework)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    returned = [n.value for n in ast.walk(fn) if isinstance(n, ast.Return) and n.value is not None]
    return any((isinstance(r, ast.Name) and r.id in made) or _makes(r, framework) for r in returned)


def _views(tree: ast.Module, app: WebApp | None) -> list[str]:
    """The functions of ``tree`` a route decorator of ``app``'s framework makes views (``@app.route("/")``)."""
    routes = app.framework.routes if app is not None else frozenset()
    return [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and any(
            isinstance(d, ast.Call) and isinstance(d.func, ast.Attribute) and d.func.attr in routes
            for d in node.decorator_list
        )
    ]


def _arguments(args: ast.arguments) -> tuple[str, ...] | None:
    """What a test passes a factory: a place under ``tmp_path`` for each required file or folder parameter
    (``tmp_path`` itself for a folder); None when it has a required parameter that is neither."""
    positional = [*args.posonlyargs, *args.args]
    required = positional[: len(positional) - len(args.defaults)]
    required += [a for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
    out: list[str] = []
    for arg in required:
        annotation = ast.unparse(arg.annotation) if arg.annotation else ""
        if not (_PATH_PARAM.search(arg.arg) or "Path" in annotation):
            return None
        place = "tmp_path" if _FOLDER_PARAM.search(arg.arg) else f'tmp_path / "{arg.arg}"'
        place = f"str({place})" if annotation == "str" else place
        out.append(place if arg in positional else f"{arg.arg}={place}")
    return tuple(out)
