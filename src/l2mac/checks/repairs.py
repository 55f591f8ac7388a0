"""Deterministic repairs of what small models reliably get wrong in the files they write, shared by every
strategy that writes files from a model's answer (the text protocol's control unit, the self-organised agents):
the heads (signatures, docstrings) of functions the step's skeleton gives, changed, and tests that call them
otherwise than given; imports forgotten for names
whose module is certain, pytest fixtures imported from pytest or redefined, a ``main(argv)`` that parses the
runner's command line instead of its ``argv``, ``self`` in a static method for what the class owns, imports
that the file's own definitions replace, exact copies of functions of a module the file imports from,
well-known third-party packages imported but not declared."""

from __future__ import annotations

import ast
import builtins
from collections.abc import Callable, Collection, Sequence
from functools import partial

from l2mac.checks.autofix import (
    add_imports,
    call_hidden_functions,
    drop_identical_copies,
    drop_placeholder_tests,
    drop_shadowed_imports,
    expand_star_imports,
    exported_definitions,
    fixtures_as_parameters,
    functions_not_modules,
    import_line,
    keep_arguments,
    project_definitions,
    project_imports,
    repair_fixture_misuse,
    repair_ignored_argv,
    star_export,
    undefined_names,
)
from l2mac.checks.class_repairs import qualify_static_self
from l2mac.checks.contract import given_heads, given_skeleton
from l2mac.checks.demands import is_stub_definition, is_stub_shaped, names_for_file
from l2mac.checks.dependencies import declaring, distribution_for, is_well_known
from l2mac.checks.given_calls import drop_miscalling_tests, given_interface
from l2mac.checks.issues import CodeIssue
from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.namespaces import unwrap_namespace_classes
from l2mac.checks.python import undeclared_imports
from l2mac.checks.readme import README, readme_commands, with_commands
from l2mac.checks.setups import call_setup, opened_in_init, setup_functions
from l2mac.checks.shape import top_level_functions
from l2mac.checks.type_repairs import CALLED, asdict_calls, dataclass_names, dict_method_places
from l2mac.checks.usage import lacking_commands, project_commands
from l2mac.checks.web_apps import web_app
from l2mac.checks.web_repairs import (
    client_app_attributes,
    drop_app_copy,
    factory_configured,
    main_through_factory,
    response_data_calls,
)
from l2mac.errors import WorkspaceError
from l2mac.store import FileStore

Log = Callable[..., None]


def repair_written(
    store: FileStore,
    check_files: Callable[[list[str]], list[CodeIssue]],
    paths: list[str],
    log: Log,
    instruction: str = "",
) -> list[str]:
    """Repair the Python files just written; returns one note per repair, to tell the model what was done.
    ``log(recovery, **fields)`` records each. ``check_files`` is asked only for undefined names, so it need not
    run the type check (callers pass one without it: mypy would run twice per write). ``instruction``, the
    step's, says which functions a file must define at its top level."""
    python = [p for p in paths if p.endswith(".py")]
    notes = _repair_fixtures(store, paths, log)
    if README in paths and store.exists(README):
        notes += _readme_commands(store, log)
    others = python_files(store) if instruction else {}
    for path in [p for p in python if instruction and not is_test_file(p)]:
        wanted = set(names_for_file(instruction, path))
        elsewhere = "\n".join(text for p, text in others.items() if p != path)
        skeleton = given_skeleton(instruction, sorted(wanted), path)
        if skeleton and (restored := rewrite(store, path, partial(given_heads, skeleton=skeleton))):
            notes.append(
                f"Put back the signatures and docstrings the task gives {', '.join(restored)} in {path}: code "
                "and tests call them as given, so change their bodies, never their heads"
            )
            log("given_heads_restored", path=path, functions=restored)
        if unwrapped := rewrite(store, path, partial(unwrap_namespace_classes, wanted=wanted, elsewhere=elsewhere)):
            notes.append(
                f"Made the functions of {', '.join(unwrapped)} in {path} module-level functions, as the task names "
                "them (a class that only hosts functions is a diagram's way of listing them)"
            )
            log("namespace_class_unwrapped", path=path, classes=unwrapped)
    given = given_interface(instruction)
    owners = project_definitions(project_trees(store), private=True) if given else {}
    for path in [p for p in python if given and is_test_file(p)]:
        if removed := rewrite(store, path, partial(drop_miscalling_tests, given=given, owners=owners, path=path)):
            notes.append(
                "Took out the tests that call a function the task gives with arguments it does not take (its head "
                "is the task's, and the task's own tests call it as given; call it so): " + "; ".join(removed)
            )
            log("miscalling_tests_removed", path=path, tests=removed)
    for path in python:
        if functions := rewrite(store, path, repair_ignored_argv):
            which = ", ".join(f"{f}()" for f in functions)
            notes.append(
                f"Changed parse_args() to parse the function's own argument list in {path} ({which}): with no "
                "argument argparse reads the command line of whatever runs the code, e.g. pytest"
            )
            log("argv_passed_to_parse_args", path=path, functions=functions)
        if methods := rewrite(store, path, qualify_static_self):
            notes.append(
                f"In {path}, {', '.join(f'{m}()' for m in methods)} now reach the class's own static methods and "
                "attributes through the class name: a @staticmethod has no `self` or `cls`"
            )
            log("static_self_qualified", path=path, methods=methods)
    notes += _repair_web_and_arguments(store, python, log)
    notes += _open_in_init(store, python, log)
    trees: dict[str, ast.Module] = {}
    notes += _repair_copies(store, python, trees, log)
    notes += _call_hidden_functions(store, python, trees, log)
    notes += _call_setups(store, python, trees, log)
    notes += _dataclasses_as_dicts(store, python, trees, log)
    notes += _add_missing_imports(store, undefined_names(check_files(paths)), trees, log)
    notes += _export_as_siblings(store, python, log)
    return notes + _declare_well_known(store, python, log)


def _export_as_siblings(store: FileStore, python: list[str], log: Log) -> list[str]:
    """A public module written in a package whose ``__init__`` star-imports every other public module of it is
    star-imported there too (see :func:`l2mac.checks.autofix.star_export`), unless it imports the package
    itself (that import would then run while the package is half made)."""
    notes: list[str] = []
    files = store.list_files() if python else []
    for path in python:
        folder, _, name = path.rpartition("/")
        stem = name.removesuffix(".py")
        init = f"{folder}/__init__.py"
        if not folder or is_test_file(path) or stem.startswith("_") or not store.exists(init):
            continue
        package = module_name(init)
        try:
            tree = ast.parse(store.read_text(path))
        except (SyntaxError, OSError, UnicodeError, ValueError, WorkspaceError):
            continue
        if not package or package in imported_modules(tree, module_name(path)):
            continue
        siblings = [
            p.rpartition("/")[2].removesuffix(".py")
            for p in files
            if p.endswith(".py") and p.rpartition("/")[0] == folder and p not in (path, init) and not is_test_file(p)
        ]
        if added := rewrite(store, init, partial(star_export, package=package, module=stem, siblings=siblings)):
            notes.append(f"Exported {path} from its package as its other modules are: {added[0]} in {init}")
            log("module_exported", path=path, init=init)
    return notes


def _repair_web_and_arguments(store: FileStore, python: list[str], log: Log) -> list[str]:
    """In the code files of ``python``: a module-level web app its factory makes again, a ``__main__`` block that
    sets up the app by hand instead of through its factory, and arguments thrown away before use; in its test
    files: tests that hold no code, a test client's response data or configuration read the wrong way for the
    framework, and
    fixtures used but not taken. The project is parsed once, and a file again only when it was changed."""
    code = [p for p in python if not is_test_file(p)]
    tests = [p for p in python if is_test_file(p)]
    trees = project_trees(store) if python else {}
    notes: list[str] = []
    for path in code:
        imported = _imported_from(trees, module_name(path), path)
        if dropped := rewrite(store, path, partial(drop_app_copy, imported=imported)):
            notes.append(
                f"Removed from {path} the module-level {dropped[0]} and its routes ({', '.join(dropped[1:])}): "
                "the app factory makes the same app, each test and each run its own"
            )
            log("app_copy_dropped", path=path, names=dropped)
        if kept := rewrite(store, path, keep_arguments):
            notes.append(
                f"Removed in {path} what threw a parameter's value away before it was used ({'; '.join(kept)}): a "
                "function uses what its caller passes"
            )
            log("arguments_kept", path=path, statements=kept)
        if configured := rewrite(store, path, factory_configured):
            notes.append(
                f"Made the app factory in {path} configure the app it returns from its parameters "
                f"({'; '.join(configured)}): the app a caller makes must use what the caller gives"
            )
            log("factory_configured", path=path, statements=configured)
        if through := rewrite(store, path, main_through_factory):
            notes.append(
                f"Made the __main__ block of {path} set up the app with {through[0]}: the factory does what the "
                "block did by hand, and the rest of the app's setup with it"
            )
            log("main_through_factory", path=path, calls=through)
        if dropped or kept or through or configured:
            trees[path] = ast.parse(store.read_text(path))
    app = web_app({p: t for p, t in trees.items() if not is_test_file(p)}) if tests else None
    for path in tests:
        if empty := rewrite(store, path, drop_placeholder_tests):
            notes.append(
                f"Removed from {path} the tests that held no code ({', '.join(empty)}): a test holding only a "
                "comment does not compile and stops every test being collected, and one of only pass tests "
                "nothing. Write each test with the calls it makes and what it asserts"
            )
            log("placeholder_tests_dropped", path=path, tests=empty)
        if app is not None and (lines := rewrite(store, path, partial(response_data_calls, data=app.framework.data))):
            notes.append(
                f"Made the test client's response data calls in {path} {app.framework.data}() ({'; '.join(lines)}): "
                "there, response.json is the data, not a method"
            )
            log("response_data_calls", path=path, lines=lines)
        if app is not None and (
            read := rewrite(store, path, partial(client_app_attributes, holder=app.framework.client_app))
        ):
            notes.append(
                f"Made the test client's configuration in {path} its app's ({'; '.join(read)}): the client has none"
            )
            log("client_app_attributes", path=path, lines=read)
        if fixed := rewrite(store, path, fixtures_as_parameters):
            notes.append(
                f"Gave {', '.join(fixed)} in {path} the fixtures they use as parameters, as pytest passes them"
            )
            log("fixtures_made_parameters", path=path, tests=fixed)
    return notes


def _open_in_init(store: FileStore, python: list[str], log: Log) -> list[str]:
    """Classes in the code files of ``python`` made ready to use when made (see :func:`opened_in_init`)."""
    notes: list[str] = []
    for path in [p for p in python if not is_test_file(p)]:
        if opened := rewrite(store, path, opened_in_init):
            notes.append(
                f"Made __init__ call {'; '.join(opened)} at its end in {path}: the other methods use what it sets "
                "up, so a new object must be ready to use"
            )
            log("opened_in_init", path=path, calls=opened)
    return notes


def _readme_commands(store: FileStore, log: Log) -> list[str]:
    """The commands a README needs and lacks, of those the project's files support (see
    :func:`l2mac.checks.usage.lacking_commands`), put in. Seen on the notes API at c291e57: told its README
    asked the server with curl and gave no command that started it, the 1.5B model sent the README back without
    it three times, 2,000 tokens each."""
    text = store.read_text(README)
    known = project_commands(store.snapshot())
    lacking = lacking_commands(known, readme_commands(text))
    if not lacking:
        return []
    store.write_text(README, with_commands(text, lacking, known.get("run", "")))
    log("readme_commands_added", path=README, commands=lacking)
    return [f"Put in {README} the commands it needs and lacked, which work for the project: {'; '.join(lacking)}"]


def _repair_fixtures(store: FileStore, paths: list[str], log: Log) -> list[str]:
    """pytest fixtures imported from pytest, or redefined, taken out."""
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
    return notes


def _repair_copies(store: FileStore, paths: list[str], trees: dict[str, ast.Module], log: Log) -> list[str]:
    """Exact copies of another module's functions replaced by imports, imports the file's own definitions
    replace dropped, star imports of project modules expanded. ``trees`` is filled when parsed (once)."""
    notes: list[str] = []
    code = [p for p in paths if not is_test_file(p)]
    trees.update(project_trees(store) if code else {})  # parsed once, and only when a code file was written
    for path in [p for p in code if p in trees]:
        modules = {module_name(rel): tree for rel, tree in trees.items() if not is_test_file(rel)}
        if imports := rewrite(
            store, path, partial(drop_identical_copies, own_module=module_name(path), modules=modules)
        ):
            trees[path] = ast.parse(store.read_text(path))
            notes.append(f"Replaced exact copies in {path} by imports of the originals: {'; '.join(imports)}")
            log("copies_replaced_by_imports", path=path, imports=imports)
    for path in paths:
        if shadowed := rewrite(store, path, drop_shadowed_imports):
            notes.append(
                f"Removed from {path}'s imports the names it defines itself further down ({', '.join(shadowed)}): "
                "its own definitions replaced them, so those imports did nothing. If a function should call "
                "the imported one, give it a name of its own"
            )
            log("shadowed_imports_dropped", path=path, names=shadowed)
    star = [p for p in paths if not p.endswith("__init__.py")]
    if star and not trees:
        trees.update(project_trees(store))
    for path in star:
        modules = {module_name(rel): tree for rel, tree in trees.items() if not is_test_file(rel)}
        if expanded := rewrite(store, path, partial(expand_star_imports, modules=modules)):
            trees[path] = ast.parse(store.read_text(path))  # still defines what it did, for the imports below
            notes.append(
                f"Replaced in {path} {'; '.join(expanded)} by imports of the names the file uses: a star import "
                "hides which names are missing"
            )
            log("star_imports_expanded", path=path, imports=expanded)
    for path in paths:
        modules = {module_name(rel): tree for rel, tree in trees.items() if not is_test_file(rel)}
        if functions := rewrite(store, path, partial(functions_not_modules, modules=modules)):
            trees[path] = ast.parse(store.read_text(path))
            notes.append(
                f"Made {path} import {', '.join(functions)} from its module: the package does not export it, so "
                "its name there is the submodule, which cannot be called"
            )
            log("functions_imported_from_their_modules", path=path, names=functions)
    return notes


def _imported_from(trees: dict[str, ast.Module], module: str, path: str) -> frozenset[str]:
    """The names the project's other files import from ``module`` (``*`` for a star import)."""
    return frozenset(
        a.name
        for rel, tree in trees.items()
        if rel != path
        for n in ast.walk(tree)
        if isinstance(n, ast.ImportFrom) and n.module == module and not n.level
        for a in n.names
    )


def _call_hidden_functions(store: FileStore, paths: list[str], trees: dict[str, ast.Module], log: Log) -> list[str]:
    """Functions that call themselves where they mean a project function of their name made to call that one (see
    :func:`call_hidden_functions`), never from a module that imports this one (a circular import)."""
    code = [p for p in paths if not is_test_file(p)]
    if code and not trees:
        trees.update(project_trees(store))
    notes: list[str] = []
    imports = {module_name(r): imported_modules(t, module_name(r)) for r, t in trees.items()}  # read once
    defined = top_level_functions(trees)
    for path in [p for p in code if p in trees]:
        own = module_name(path)
        owners = {name: [m for m in modules if own not in imports.get(m, set())] for name, modules in defined.items()}
        if added := rewrite(store, path, partial(call_hidden_functions, module=own, owners=owners)):
            trees[path] = ast.parse(store.read_text(path))
            notes.append(
                f"In {path}, functions that called themselves with arguments they do not take now call the "
                f"project's function of that name: {'; '.join(added)}"
            )
            log("hidden_functions_called", path=path, imports=added)
    return notes


def _call_setups(store: FileStore, paths: list[str], trees: dict[str, ast.Module], log: Log) -> list[str]:
    """App factories made to call the setup the project's tests call first (see :func:`call_setup`): in the code
    files written, or in every code file when tests were written (they are what the setup is learned from). Runs
    after the copies of project functions became imports: a factory's module often defined its own first."""
    if not paths:
        return []
    if not trees:
        trees.update(project_trees(store))
    written = any(is_test_file(p) for p in paths)
    code = [p for p in trees if not is_test_file(p) and (written or p in paths)]
    setups = setup_functions(trees) if code else {}
    notes: list[str] = []
    for path in code if setups else []:
        if called := rewrite(store, path, partial(call_setup, setups=setups)):
            trees[path] = ast.parse(store.read_text(path))
            notes.append(
                f"Made the app factory in {path} call {', '.join(called)} before it returns the app: the project's "
                "tests call that first on the file they then hand to the module's other functions"
            )
            log("setup_called", path=path, calls=called)
    return notes


def _dataclasses_as_dicts(store: FileStore, paths: list[str], trees: dict[str, ast.Module], log: Log) -> list[str]:
    """A project dataclass asked for as a dict through a method it lacks made ``asdict(x)`` (see
    :mod:`l2mac.checks.type_repairs`). The type check runs only when a file written calls such a method. Seen on
    the notes API at f4c5bc8: ``jsonify(note.to_dict())`` in every view, the type check naming it three times
    in a row and each rewrite of the view calling it again."""
    written = [p for p in paths if p in trees or store.exists(p)]
    if not any(CALLED.search(store.read_text(p)) for p in written):
        return []
    if not trees:
        trees.update(project_trees(store))
    classes = dataclass_names(trees)
    ours = {module_name(rel).split(".")[0] for rel in trees}
    foreign = {  # per file, the names it imports from outside the project
        rel: {
            (a.asname or a.name).split(".")[0]
            for n in ast.walk(tree)
            if isinstance(n, ast.ImportFrom)
            if n.level == 0 and (n.module or "").split(".")[0] not in ours
            for a in n.names
        }
        for rel, tree in trees.items()
    }
    made: dict[str, list[str]] = {}
    for _ in range(3):  # mypy names one call per line: a second on the line is named once the first is repaired
        places = dict_method_places(store.root, sorted(trees), written, classes, foreign)
        fixes = {path: partial(asdict_calls, places=at) for path, at in places.items()}
        repaired = {path: calls for path, fix in fixes.items() if (calls := rewrite(store, path, fix))}
        for path, calls in repaired.items():
            trees[path] = ast.parse(store.read_text(path))
            made[path] = sorted([*made.get(path, []), *calls])
        if not repaired:
            break
    notes: list[str] = []
    for path, calls in sorted(made.items()):
        notes.append(
            f"In {path}, a dataclass is now made a dict with dataclasses.asdict ({'; '.join(calls)}): it has no "
            "method for that"
        )
        log("dataclass_asdict", path=path, calls=calls)
    return notes


def _add_missing_imports(
    store: FileStore, undefined: dict[str, set[str]], trees: dict[str, ast.Module], log: Log
) -> list[str]:
    """Imports added for undefined names whose module is certain (the standard library's, or the one project
    module that defines the name, or of several the one its package exports, unless that module imports this
    one). A private name (``_transliterate``) is imported only into a module of the same package: seen on
    python-slugify, a function added in a new module of the package used the helpers of its neighbour
    slugify/slugify.py, undefined."""
    if not undefined:
        return []
    if not trees:
        trees.update(project_trees(store))
    # a name one module defines, or several with one the package exports
    project = exported_definitions(trees, private=True) | project_definitions(trees, private=True)
    ours = {module_name(rel).split(".")[0] for rel in trees}  # the project's own modules: never by this way
    imported = {n: line for n, line in project_imports(trees).items() if line.split()[1].split(".")[0] not in ours}
    notes: list[str] = []
    for path, names in undefined.items():
        own = module_name(path)
        # never import from a module that imports this one: that makes a circular import (seen in the demo)
        importers = {module_name(rel) for rel, tree in trees.items() if own in imported_modules(tree, module_name(rel))}
        package = own.rpartition(".")[0]
        safe = {
            n: m
            for n, m in project.items()
            if m not in importers and (not n.startswith("_") or (package and m.rpartition(".")[0] == package))
        }
        fix = partial(add_imports, names=names, project=safe, own_module=own, imported=imported)
        if added := rewrite(store, path, fix):
            notes.append(f"Added the missing imports to {path}: {'; '.join(added)}")
            log("missing_imports_added", path=path, imports=added)
    return notes


def _declare_well_known(store: FileStore, paths: list[str], log: Log) -> list[str]:
    """Well-known packages (``well_known.yaml``) the files import without the project declaring them, declared
    as ``uv add`` would: in ``[project] dependencies``, or the ``test`` extra when only tests import them. Seen:
    a 1.5B model told to declare flask spent the rest of its budget without writing pyproject.toml."""
    if not paths:
        return []
    code: set[str] = set()
    tests: set[str] = set()
    for rel, modules in undeclared_imports(store.root, store.list_files(), paths).items():
        (tests if is_test_file(rel) else code).update(m for m in modules if is_well_known(m))
    added = sorted({distribution_for(m) for m in code | tests})
    target = _declare(store, code, tests - code, added, log)
    if not target:
        return []
    return [f"Declared {', '.join(added)} in {target}, which the code imports (it is installed for the checks)"]


def make_installable(store: FileStore, log: Log) -> list[str]:
    """Before the README is written: a project with tests declares pytest for them (in a ``test`` extra of its
    pyproject.toml, made when it has none, or in its requirements.txt when that is all it has), so that the
    README's install and test commands work in a fresh environment. Seen: a README's ``python -m pytest`` failing
    "No module named pytest" after its own ``pip install -e .``."""
    if not any(is_test_file(p) for p in store.list_files()):
        return []
    target = _declare(store, set(), {"pytest"}, ["pytest"], log)
    return [f"Declared pytest for the tests in {target}"] if target else []


def _declare(store: FileStore, code: set[str], tests: set[str], added: list[str], log: Log) -> str:
    """Declares the modules ``code`` and ``tests`` import (see ``declaring``) and logs ``added``; returns the file
    written, or "" when nothing was."""
    target, text = declaring(store.root, code, tests)
    if not target:
        return ""
    try:
        store.write_text(target, text)
    except (OSError, WorkspaceError):
        return ""
    log("dependencies_declared", path=target, dependencies=added)
    return target


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


def project_trees(store: FileStore) -> dict[str, ast.Module]:
    """The project's Python files (tests too) that parse, parsed."""
    trees: dict[str, ast.Module] = {}
    for rel, source in python_files(store).items():
        try:
            trees[rel] = ast.parse(source)
        except SyntaxError:
            continue
    return trees


def imported_modules(tree: ast.Module, module: str = "") -> set[str]:
    """The modules ``tree`` imports (``from notes import app`` counts notes.app too: it may be a module); a
    relative import is resolved when the importing ``module`` is given."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level and module:
            base = module.split(".")[: -node.level]
            node = ast.ImportFrom(".".join([*base, *([node.module] if node.module else [])]), node.names, 0)
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            out.add(node.module)
            out |= {f"{node.module}.{a.name}" for a in node.names}  # from notes import app: maybe a module
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


def definition_span(node: ast.stmt) -> tuple[int, int]:
    """The 0-based line range a definition takes, its decorators included."""
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)]) - 1, node.end_lineno or node.lineno


def _stub_for_body(new: ast.stmt, old: ast.stmt, owner: ast.ClassDef | None = None) -> bool:
    """Whether ``new`` is a stub of a function ``old`` defines with a body."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    if isinstance(new, functions) and isinstance(old, functions):
        return is_stub_shaped(new) and not is_stub_definition(old, owner)
    return False


Replacement = tuple[tuple[int, int], list[str]]


def _class_members(new: ast.ClassDef, old: ast.ClassDef, snippet_lines: list[str]) -> list[Replacement]:
    """A class sent again, merged member by member: each method sent replaces the one of the same name (not a
    stub over a body), new ones go after the class's last line, and the methods not sent stay as they are (a
    small model sends the class with the one method it changed)."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    old_methods = {m.name: m for m in old.body if isinstance(m, functions)}
    out: list[Replacement] = []
    added: list[str] = []
    for member in new.body:
        if not isinstance(member, functions):
            continue
        a, b = definition_span(member)
        before = old_methods.get(member.name)
        if before is None:
            added += ["", *snippet_lines[a:b]]
        elif not _stub_for_body(member, before, old):
            out.append((definition_span(before), snippet_lines[a:b]))
    if added:
        end = old.end_lineno or old.lineno
        out.append(((end, end), added))
    return out


def _needed(
    imports: Sequence[ast.Import | ast.ImportFrom],
    defs: Sequence[ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef],
    module: ast.Module,
) -> list[ast.Import | ast.ImportFrom]:
    """The snippet's imports its definitions need: those binding a name they use that ``module`` does not bind
    (a star import: when some such name is bound by none of the others). All of them for a snippet of imports
    alone. Seen on a change to python-slugify: the answer for slugify/slugify.py copied __init__.py's imports,
    ``from .slugify import *`` among them, above a copy of a function; all were added to the module."""
    if not defs:
        return list(imports)
    bound = _bound(module.body) | {d.name for d in defs}  # a builtin's name imported (ConnectionError) is needed
    used: set[str] = set()
    for d in defs:
        local = {
            a.arg
            for n in ast.walk(d)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))  # a lambda's parameter hides nothing
            for a in [
                *n.args.posonlyargs,
                *n.args.args,
                *n.args.kwonlyargs,
                *(x for x in (n.args.vararg, n.args.kwarg) if x),
            ]
        }
        local |= {n.id for n in ast.walk(d) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
        used |= {n.id for n in ast.walk(d) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)} - local
    wanted = used - bound
    named = [i for i in imports if not any(a.name == "*" for a in i.names)]
    kept = [i for i in named if _bound([i]) & wanted]
    rest = wanted - _bound(kept) - set(dir(builtins))
    return kept + [i for i in imports if i not in named and rest]


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _bound(body: Sequence[ast.stmt]) -> set[str]:
    """The names a module's top-level statements bind: definitions, imports, assignments."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, _DEFS):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names |= {a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"}
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.Try):  # try: import x / except ImportError: x = None (not `if TYPE_CHECKING:`)
            names |= _bound([*node.body, *node.orelse, *(h for x in node.handlers for h in x.body)])
    return names


def merge_definitions(source: str, snippet: str, *, add_new: bool = False) -> str | None:
    """``source`` with the top-level functions and classes of ``snippet`` put in place of those of the same name.

    Small models often answer a failure with just the corrected function. When the snippet holds only
    imports and definitions, and ``source`` already defines every one of them, the result is the whole file
    with those definitions replaced (and the snippet's missing imports added at the top); otherwise None. With
    ``add_new`` (the answer named the file), a definition ``source`` lacks is added after its last definition
    (before a ``__main__`` guard): a function added to a long module, which a small model cannot send whole.
    A stub never replaces a function that has a body: a small model shown a module's outline copies it back as
    ``pass`` bodies (inflection, issue 23). A class is merged member by member (see :func:`_class_members`).
    With ``add_new``, a block of imports alone adds those missing."""
    try:
        new_tree, old_tree = ast.parse(snippet), ast.parse(source)
    except SyntaxError:
        return None
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    new_defs = [n for n in new_tree.body if isinstance(n, defs)]
    imports = [n for n in new_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    if not new_tree.body or len(new_defs) + len(imports) != len(new_tree.body) or not (new_defs or add_new):
        return None
    old_defs = {n.name: n for n in old_tree.body if isinstance(n, defs)}
    if any(n.name not in old_defs for n in new_defs) and not (add_new and old_defs):
        return None
    snippet_lines, lines = snippet.splitlines(), source.splitlines()
    guard = next((n for n in old_tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)), None)
    before = [n for n in old_tree.body if guard is None or n.lineno < guard.lineno]
    end = (before[-1].end_lineno or len(lines)) if before else 0  # new definitions: after these, before a guard

    replacements: list[Replacement] = []
    added: list[str] = []
    for node in new_defs:
        a, b = definition_span(node)
        old = old_defs.get(node.name)
        if isinstance(node, ast.ClassDef) and isinstance(old, ast.ClassDef):
            replacements += _class_members(node, old, snippet_lines)
            continue
        if old is not None and _stub_for_body(node, old):
            continue
        if old is not None:
            replacements.append((definition_span(old), snippet_lines[a:b]))
        else:  # after the last definition, two blank lines apart
            added += ["", "", *snippet_lines[a:b]]
    if added:
        replacements.append(((end, end), added))
    for (a, b), new in sorted(replacements, reverse=True):
        lines[a:b] = new
    have = {ast.unparse(n) for n in old_tree.body if isinstance(n, (ast.Import, ast.ImportFrom))}
    missing = [ast.unparse(n) for n in _needed(imports, new_defs, old_tree) if ast.unparse(n) not in have]
    head = import_line(old_tree)  # definitions come after it, so replacing them first leaves it valid
    lines[head:head] = missing
    merged = "\n".join(lines).rstrip("\n") + "\n" if added else "\n".join(lines) + "\n"
    return None if merged == source else merged


def with_functions_of(base: str, donor: str, keys: Collection[tuple[str | None, str]]) -> str | None:
    """``base`` with ``donor``'s versions of the functions ``keys`` names (``(class or None, name)``) put in place
    of its own (and the imports they need that ``base`` lacks); None when either does not parse or ``base`` lacks
    one of them."""
    try:
        tree = ast.parse(donor)
        ast.parse(base)
    except SyntaxError:
        return None
    lines = donor.splitlines()
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    parts = [ast.get_source_segment(donor, n) or "" for n in tree.body if isinstance(n, (ast.Import, ast.ImportFrom))]
    for node in tree.body:
        if isinstance(node, functions) and (None, node.name) in keys:
            a, b = definition_span(node)
            parts.append("\n".join(lines[a:b]))
        elif isinstance(node, ast.ClassDef):
            methods = [m for m in node.body if isinstance(m, functions) and (node.name, m.name) in keys]
            if methods:
                bodies = ["\n".join(lines[slice(*definition_span(m))]) for m in methods]
                parts.append(f"class {node.name}:\n" + "\n".join(bodies))
    return merge_definitions(base, "\n\n".join(parts) + "\n")
