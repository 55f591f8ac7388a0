"""Where an answer that writes a test file whole is begun: its path, the opening fence, the imports of the code it
tests, for a web app (see :mod:`l2mac.checks.web_apps`) a ``client`` fixture made with the framework's test
client, its files under pytest's ``tmp_path``, and its first ``def test_``.
"""

from __future__ import annotations

import ast

from l2mac.checks.autofix import project_definitions
from l2mac.checks.layout import code_trees, module_name
from l2mac.checks.web_apps import WebApp, is_view, views, web_app
from l2mac.fenced import fence_lang

#: names a begun test file imports from one module, at most
MAX_IMPORTED = 12


def file_start(path: str, sources: dict[str, str] | None = None) -> str:
    """The beginning of an answer that writes ``path`` whole: its path and the opening fence, and for a test file
    the imports of what the code files ``sources`` define (their public top-level classes and functions, a web
    app's views left to its client), a web app's ``client`` fixture, and the beginning of its first test.
    Seen on ClassEval_21 at 42ff847: asked for tests/test_solution.py, the 1.5B model sent solution.py back
    whole (800 tokens, 2-5 minutes here) four times, and the step ended with no test written."""
    trees = code_trees(sources or {})
    app = web_app(trees)
    public = _public(trees, app)
    first = _app_imports(app, public.pop(app.module, [])) if app is not None else []
    imports = first + [f"from {module} import {', '.join(names)}" for module, names in public.items()]
    if not imports:
        return f"{path}\n```{fence_lang(path)}\n"
    fixture = f"\n\n{_fixture(app)}" if app is not None else ""
    # begun at its first test function: begun after the imports alone, on ClassEval_21 at e52aef1 the model went
    # on to copy the class under test into the test file, three times
    return f"{path}\n```{fence_lang(path)}\n" + "\n".join(imports) + f"\n{fixture}\n\ndef test_{_first(trees, app)}"


def _first(trees: dict[str, ast.Module], app: WebApp | None) -> str:
    """The name the first test is begun with: the first view of a web app, else the first public function or
    method the code defines; then the model tests the code in front of it, not the task. Seen on the URL
    shortener at dc80a46: begun at ``def test_``, every one of nine test files, db.py's and admin.py's alike,
    was named after the task's checklist (``test_1_1_shorten_url`` to ``test_6_1_set_expiration_date``) and
    tested the whole task through whichever module it had, 64 of its 102 tests failing."""
    for tree in trees.values():
        for node in ast.walk(tree):  # a factory's views are inside it
            if is_view(node, app):
                return node.name
    factory = app.name if app is not None else ""
    for tree in trees.values():
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                methods = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
                if public := [m.name for m in methods if not m.name.startswith("_")]:
                    return public[0]
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name != factory:
                if node.name.startswith(("_", "test")):  # private, or a test pytest would collect
                    continue
                return node.name
    return ""


def _public(trees: dict[str, ast.Module], app: WebApp | None) -> dict[str, list[str]]:
    """Per module, the public classes and functions the code modules ``trees`` define at their top level (a name
    two of them define is left out), but those pytest would collect, the app (imported by itself) and its views,
    at most :data:`MAX_IMPORTED` each."""
    routed = {(module_name(p), n) for p, t in trees.items() for n in views(t, app)}
    found: dict[str, list[str]] = {}
    for name, module in project_definitions(trees).items():
        if name.startswith(("test", "Test")) or (module, name) in routed:
            continue
        if app is not None and (module, name) == (app.module, app.name):
            continue
        if len(found.setdefault(module, [])) < MAX_IMPORTED:
            found[module].append(name)
    return {m: names for m, names in found.items() if names}


def _fixture(app: WebApp) -> str:
    """A pytest fixture ``client`` that makes the app (a factory's files and folders under ``tmp_path``)."""
    made = f"app = {app.name}({', '.join(p.under('tmp_path') for p in app.places)})\n" if app.places is not None else ""
    lines = "".join(f"    {line}\n" for line in (made + app.framework.client).splitlines())
    return f"@pytest.fixture\ndef client({'tmp_path' if app.places else ''}):\n{lines}"


def _app_imports(app: WebApp, others: list[str]) -> list[str]:
    """The fixture's imports, and the import of the app with ``others`` from its module."""
    name = app.name if app.factory or app.name == "app" else f"{app.name} as app"
    return ["import pytest", *app.framework.imports, f"from {app.module} import {', '.join([name, *others])}"]
