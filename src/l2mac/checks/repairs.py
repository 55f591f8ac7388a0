"""Deterministic repairs of what small models reliably get wrong in the files they write, shared by every
strategy that writes files from a model's answer (the text protocol's control unit, the self-organised agents):
imports forgotten for names whose module is certain, pytest fixtures imported from pytest or redefined, a
``main(argv)`` that parses the runner's command line instead of its ``argv``, imports that the file's own
definitions replace, exact copies of functions of a module the file imports from."""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import partial

from l2mac.checks.autofix import (
    add_imports,
    drop_identical_copies,
    drop_shadowed_imports,
    expand_star_imports,
    project_definitions,
    repair_fixture_misuse,
    repair_ignored_argv,
    undefined_names,
)
from l2mac.checks.issues import CodeIssue
from l2mac.checks.python import is_test_file, module_name
from l2mac.errors import WorkspaceError
from l2mac.store import FileStore

Log = Callable[..., None]


def repair_written(
    store: FileStore, check_files: Callable[[list[str]], list[CodeIssue]], paths: list[str], log: Log
) -> list[str]:
    """Repair the Python files just written; returns one note per repair, to tell the model what was done.
    ``log(recovery, **fields)`` records each. ``check_files`` is asked only for undefined names, so it need not
    run the type check (callers pass one without it: mypy would run twice per write)."""
    notes: list[str] = []
    for path in paths:
        try:
            cleaned, dropped, overridden = repair_fixture_misuse(store.read_text(path))
        except (OSError, UnicodeError, ValueError, WorkspaceError):
            continue
        if not (dropped or overridden):
            continue
        store.write_text(path, cleaned)
        if overridden:
            notes.append(f"Removed from {path}: redefinitions of pytest's own fixtures ({', '.join(overridden)})")
        if dropped:
            notes.append(
                f"Removed from {path}: importing pytest fixtures ({', '.join(dropped)}); take them "
                "as test parameters instead"
            )
        log("pytest_fixture_misuse_repaired", path=path)
    for path in [p for p in paths if p.endswith(".py")]:
        if functions := rewrite(store, path, repair_ignored_argv):
            which = ", ".join(f"{f}()" for f in functions)
            notes.append(
                f"Changed parse_args() to parse the function's own argument list in {path} ({which}): with no "
                "argument argparse reads the command line of whatever runs the code, e.g. pytest"
            )
            log("argv_passed_to_parse_args", path=path, functions=functions)
    code = [p for p in paths if p.endswith(".py") and not is_test_file(p)]
    trees = _trees(store) if code else {}  # parsed once, and only when a code file was written
    for path in [p for p in code if p in trees]:
        modules = {module_name(rel): tree for rel, tree in trees.items() if not is_test_file(rel)}
        if imports := rewrite(
            store, path, partial(drop_identical_copies, own_module=module_name(path), modules=modules)
        ):
            trees[path] = ast.parse(store.read_text(path))
            notes.append(f"Replaced exact copies in {path} by imports of the originals: {'; '.join(imports)}")
            log("copies_replaced_by_imports", path=path, imports=imports)
    for path in [p for p in paths if p.endswith(".py")]:
        if shadowed := rewrite(store, path, drop_shadowed_imports):
            notes.append(
                f"Removed from {path}'s imports the names it defines itself further down ({', '.join(shadowed)}): "
                "its own definitions replaced them, so those imports did nothing. If a function should call "
                "the imported one, give it a name of its own (for example cmd_add for a command)"
            )
            log("shadowed_imports_dropped", path=path, names=shadowed)
    star = [p for p in paths if p.endswith(".py") and not p.endswith("__init__.py")]
    trees = trees or (_trees(store) if star else {})
    for path in star:
        modules = {module_name(rel): tree for rel, tree in trees.items() if not is_test_file(rel)}
        if expanded := rewrite(store, path, partial(expand_star_imports, modules=modules)):
            trees[path] = ast.parse(store.read_text(path))  # still defines what it did, for the imports below
            notes.append(
                f"Replaced in {path} {'; '.join(expanded)} by imports of the names the file uses: a star import "
                "hides which names are missing"
            )
            log("star_imports_expanded", path=path, imports=expanded)
    undefined = undefined_names(check_files(paths))
    if not undefined:
        return notes
    trees = trees or _trees(store)
    project = project_definitions(trees)
    for path, names in undefined.items():
        own = module_name(path)
        # never import from a module that imports this one: that makes a circular import (seen in the demo)
        importers = {module_name(rel) for rel, tree in trees.items() if own in imported_modules(tree)}
        safe = {n: m for n, m in project.items() if m not in importers}
        if added := rewrite(store, path, partial(add_imports, names=names, project=safe, own_module=own)):
            notes.append(f"Added the missing imports to {path}: {'; '.join(added)}")
            log("missing_imports_added", path=path, imports=added)
    return notes


def rewrite(store: FileStore, path: str, transform: Callable[[str], tuple[str, list[str]]]) -> list[str]:
    """Apply ``transform`` (source -> the new source and what it changed) to the file at ``path``, and save the
    result when it changed anything; returns what it changed (nothing when the file cannot be read)."""
    try:
        fixed, changed = transform(store.read_text(path))
    except (OSError, UnicodeError, ValueError, WorkspaceError):
        return []
    if changed:
        store.write_text(path, fixed)
    return changed


def _trees(store: FileStore) -> dict[str, ast.Module]:
    trees: dict[str, ast.Module] = {}
    for rel, source in python_files(store).items():
        try:
            trees[rel] = ast.parse(source)
        except SyntaxError:
            continue
    return trees


def imported_modules(tree: ast.Module) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
    return out


def python_files(store: FileStore) -> dict[str, str]:
    out: dict[str, str] = {}
    for path in store.list_files():
        if path.endswith(".py"):
            try:
                out[path] = store.read_text(path)
            except (OSError, UnicodeError, ValueError, WorkspaceError):
                continue
    return out
