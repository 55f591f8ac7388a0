"""Static checks of Python files: syntax (compile), pyflakes-class errors (ruff), broken imports (AST), type
errors that are bugs at run time (mypy, ``typecheck.py``) and the project-shape checks (``shape.py``).

A third-party module must be declared (``dependencies.py``); once it is, the project's environment installs it
(``environment.py``), and a failed install is reported there, with the installer's words.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path

from l2mac.checks.dependencies import Declared, is_third_party
from l2mac.checks.issues import CodeIssue
from l2mac.checks.layout import is_test_file, module_name, module_path
from l2mac.checks.shape import (
    calls_itself_for_another,
    copied_into_tests,
    defined_again,
    prompts_in_command_line,
    returns_nothing,
    tests_in_code,
)
from l2mac.checks.typecheck import type_issues

# E9: syntax/IO errors, F63: invalid comparisons, F7: statement errors, F82: undefined names.
RUFF_RULES = "E9,F63,F7,F82"


def _syntax_issues(root: Path, files: list[str]) -> tuple[list[CodeIssue], dict[str, ast.Module]]:
    issues: list[CodeIssue] = []
    trees: dict[str, ast.Module] = {}
    for rel in files:
        source = (root / rel).read_text(encoding="utf-8", errors="replace")
        try:
            trees[rel] = ast.parse(source, filename=rel)
            compile(trees[rel], rel, "exec")
        except SyntaxError as e:
            issues.append(CodeIssue(rel, e.lineno or 0, "syntax", f"{e.msg}"))
            trees.pop(rel, None)
    return issues, trees


def _ruff_issues(root: Path, files: list[str]) -> list[CodeIssue]:
    if not files:
        return []
    argv = [
        sys.executable,
        "-m",
        "ruff",
        "check",
        "--no-cache",
        "--isolated",
        "--select",
        RUFF_RULES,
        "--output-format",
        "json",
        "--exit-zero",
        *files,
    ]
    try:
        done = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=60, check=False)
        found = json.loads(done.stdout or "[]")
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError):
        return []
    out: list[CodeIssue] = []
    for item in found:
        code = item.get("code") or ""
        if not code or code.startswith("E999") or code == "invalid-syntax":
            continue  # syntax errors are reported by compile already
        rel = Path(item["filename"]).resolve().relative_to(root.resolve()).as_posix()
        out.append(CodeIssue(rel, item["location"]["row"], "lint", f"{code} {item['message']}"))
    return out


def _module_names(files: Iterable[str]) -> tuple[set[str], set[str]]:
    """Dotted names of local modules and packages (``src/`` layouts included)."""
    modules: set[str] = set()
    packages: set[str] = set()
    for rel in files:
        parts = Path(rel).with_suffix("").parts
        for base in (parts, parts[1:] if parts and parts[0] == "src" else ()):
            if not base:
                continue
            for i in range(1, len(base)):
                packages.add(".".join(base[:i]))
            if base[-1] == "__init__":
                packages.add(".".join(base[:-1]))
            else:
                modules.add(".".join(base))
    return modules, packages


def top_level_definitions(source: str | ast.Module) -> set[str]:
    """The functions and classes ``source`` defines at its top level (none when it does not parse)."""
    try:
        tree = ast.parse(source) if isinstance(source, str) else source
    except SyntaxError:
        return set()
    return {n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))}


def defined_at_top_level(tree: ast.Module) -> set[str]:
    """The names a module's own top-level code binds: definitions and assignments, not imports."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            out |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return out


def _defined_names(tree: ast.Module) -> set[str] | None:
    """Top-level names a module defines; None if it can't be known (star import, module ``__getattr__``)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and any(a.name == "*" for a in node.names):
            return None
    for node in tree.body:
        stack: list[ast.stmt] = [node]
        while stack:
            n = stack.pop()
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                if n.name == "__getattr__":
                    return None
                names.add(n.name)
            elif isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = n.targets if isinstance(n, ast.Assign) else [n.target]
                for t in targets:
                    for sub in ast.walk(t):
                        if isinstance(sub, ast.Name):
                            names.add(sub.id)
            elif isinstance(n, (ast.Import, ast.ImportFrom)):
                for a in n.names:
                    names.add((a.asname or a.name).split(".")[0])
            elif isinstance(n, (ast.If, ast.Try, ast.With)):
                stack.extend(n.body)
                stack.extend(getattr(n, "orelse", []))
                for h in getattr(n, "handlers", []):
                    stack.extend(h.body)
                stack.extend(getattr(n, "finalbody", []))
    return names


def _guarded_imports(tree: ast.Module) -> set[int]:
    """ids of import nodes inside ``try`` blocks (optional imports are not errors)."""
    guarded: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try):
            for inner in node.body:
                for sub in ast.walk(inner):
                    if isinstance(sub, (ast.Import, ast.ImportFrom)):
                        guarded.add(id(sub))
    return guarded


class _ImportChecker:
    """Resolves the imports of project files against the project's own modules and the installed ones."""

    def __init__(self, all_files: list[str], trees: dict[str, ast.Module], declared: Declared) -> None:
        self.declared = declared
        self.modules, self.packages = _module_names(all_files)
        self.local_tops = {n.split(".")[0] for n in self.modules | self.packages}
        #: file -> the third-party modules it imports that the project does not declare
        self.undeclared: dict[str, set[str]] = {}
        self.trees: dict[str, ast.Module] = {}
        self.files: dict[str, str] = {}
        for rel, tree in trees.items():
            for parts in (Path(rel).with_suffix("").parts, module_path(rel)):
                if parts:
                    module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
                    self.trees[module], self.files[module] = tree, rel

    def exists(self, name: str) -> bool:
        return name in self.modules or name in self.packages

    def check(self, rel: str, tree: ast.Module) -> list[CodeIssue]:
        guarded = _guarded_imports(tree)
        package = list(module_path(rel)[:-1])
        issues: list[CodeIssue] = []
        for node in ast.walk(tree):
            if id(node) in guarded:
                continue
            if isinstance(node, ast.Import):
                for alias in node.names:
                    issues += self._check_module(rel, node.lineno, alias.name, relative=False)
            elif isinstance(node, ast.ImportFrom):
                issues += self._check_from(rel, node, package)
        return issues

    def _check_module(
        self, rel: str, line: int, name: str, relative: bool, imported: Iterable[str] = ()
    ) -> list[CodeIssue]:
        top = name.split(".")[0]
        if relative or top in self.local_tops:
            if name and not self.exists(name):
                return [CodeIssue(rel, line, "import", f"no local module {name!r}")]
            return []
        if is_third_party(name) and not self.declared.covers(name):
            self.undeclared.setdefault(rel, set()).add(name)
            return [CodeIssue(rel, line, "dependency", self._undeclared(rel, name, set(imported)))]
        return []

    def _undeclared(self, rel: str, name: str, imported: set[str]) -> str:
        """What to say of an import that is neither local, nor standard, nor declared: it may be a package to
        declare, or a project module under a wrong name (seen: ``from project import f`` for solution.py's f,
        answered with a pyproject.toml in a new project/ folder)."""
        top = name.split(".")[0]
        for module, tree in sorted(self.trees.items()):
            if module not in self.modules or is_test_file(self.files[module]) or self.files[module] == rel:
                continue
            if imported and imported <= defined_at_top_level(tree):  # all of them: else it may be a package
                names = sorted(imported)
                return (
                    f"imports {', '.join(names)} from {top!r}, which is not a module of this project, but "
                    f"{self.files[module]} defines {'it' if len(names) == 1 else 'them'}: import from {module!r}"
                )
        own = sorted(m for m, path in self.files.items() if m in self.modules and not is_test_file(path))
        local = (
            f"if {top!r} was meant to be one of this project's modules, import that module by its name: "
            f"{', '.join(own[:6])}"
            if own
            else f"if {top!r} was meant to be one of this project's modules, write that module first"
        )
        return f"{self.declared.missing(name)}; or, {local}"

    def _check_from(self, rel: str, node: ast.ImportFrom, package: list[str]) -> list[CodeIssue]:
        if node.level:
            if node.level - 1 > len(package):
                return [CodeIssue(rel, node.lineno, "import", "relative import beyond top package")]
            base = package[: len(package) - (node.level - 1)]
            target = ".".join([*base, *(node.module.split(".") if node.module else [])])
        else:
            target = node.module or ""
        imported = [alias.name for alias in node.names]
        problems = self._check_module(rel, node.lineno, target, relative=bool(node.level), imported=imported)
        if problems or (not node.level and target.split(".")[0] not in self.local_tops):
            return problems
        defined = _defined_names(self.trees[target]) if target in self.trees else None
        if defined is None:
            return []
        return [
            CodeIssue(
                rel,
                node.lineno,
                "import",
                not_defined(alias.name, target, self.files[target]),
            )
            for alias in node.names
            if alias.name != "*"
            and alias.name not in defined
            and not self.exists(f"{target}.{alias.name}" if target else alias.name)
        ]


def undeclared_imports(root: Path, all_files: list[str], only: list[str]) -> dict[str, set[str]]:
    """The third-party modules each file of ``only`` imports (outside ``try``) that the project does not
    declare; nothing when its declarations cannot be read."""
    py_all = [f for f in all_files if f.endswith(".py")]
    _, trees = _syntax_issues(root, py_all)
    declared = Declared.read(root)
    if declared.problem:
        return {}
    checker = _ImportChecker(py_all, trees, declared)
    for rel in only:
        if rel in trees:
            checker.check(rel, trees[rel])
    return checker.undeclared


def find_code_issues(
    root: Path, all_files: list[str], only: list[str] | None = None, *, types: bool = True
) -> list[CodeIssue]:
    """Issues in the Python files of ``all_files`` (or just ``only``), sorted by path and line; ``types=False``
    leaves out the type check, the slowest part (mypy), for callers that only need the rest."""
    py_all = [f for f in all_files if f.endswith(".py")]
    check = [f for f in (only if only is not None else py_all) if f.endswith(".py")]
    syntax, trees = _syntax_issues(root, py_all)
    syntax = [i for i in syntax if i.path in check]
    lint = _explain_undefined(_ruff_issues(root, [f for f in check if f in trees]), trees)
    declared = Declared.read(root)
    checker = _ImportChecker(py_all, trees, declared)
    imports = [issue for rel in check if rel in trees for issue in checker.check(rel, trees[rel])]
    if declared.problem:
        imports.append(CodeIssue(declared.problem_file, 1, "dependency", declared.problem))
    copies = copied_into_tests(trees, [r for r in check if r in trees])
    misplaced = [i for r in check if r in trees and (i := tests_in_code(r, trees[r])) is not None]
    misplaced += [i for r in check if r in trees and (i := prompts_in_command_line(r, trees[r])) is not None]
    again = defined_again(trees, [r for r in check if r in trees])
    again += [i for r in check if r in trees for i in returns_nothing(r, trees[r])]
    again += calls_itself_for_another(trees, [r for r in check if r in trees])
    # mypy only where the code compiles: a syntax error is reported once, by compile
    typed = type_issues(root, [f for f in py_all if f in trees], [f for f in check if f in trees]) if types else []
    found = syntax + lint + imports + copies + misplaced + again + typed
    return sorted(found, key=lambda i: (i.path, i.line, i.kind))


#: ruff's undefined-name issue; its message may go on with what :func:`_explain_undefined` adds
UNDEFINED_NAME = re.compile(r"F821 Undefined name `([A-Za-z_]\w*)`")


def not_defined(name: str, module: str, path: str) -> str:
    """What the import check says of a name imported from a project module that does not define it."""
    return f"cannot import name {name!r} from {module!r} ({path} does not define it)"


#: :func:`not_defined` in a report, with the file that imports it
_NOT_DEFINED = re.compile(
    r"^(?P<user>[\w./-]+\.py):\d+: import: cannot import name '(?P<name>\w+)' from '[\w.]+' "
    r"\((?P<path>[\w./-]+\.py) does not define it\)",
    re.MULTILINE,
)


def imported_not_defined(report: str) -> list[tuple[str, str, str]]:
    """(the importing file, the name, the file that lacks it) of each name a report says cannot be imported."""
    return [(m["user"], m["name"], m["path"]) for m in _NOT_DEFINED.finditer(report)]


#: a report's line for a name used and defined nowhere: the file, the name, and what the check added to it
_UNDEFINED_LINE = re.compile(
    r"^(?P<user>[\w./-]+\.py):\d+: lint: F821 Undefined name `(?P<name>\w+)`(?P<rest>.*)$", re.MULTILINE
)


def called_not_defined(report: str, sources: dict[str, str]) -> list[tuple[str, str, str]]:
    """(the calling file, the name, the project file it belongs in) for each function a report says a code file
    calls and nothing defines: it belongs in the project module that file imports the most names from. Seen on
    the notes API at df27f4e: app.py, which imported add_note and init_db from notes/store.py, called
    delete_note_from_db(db_path, id), which no module defined; told "undefined name" four times, the model
    rewrote app.py each time and the function was never written."""
    paths = {module_name(p): p for p in sources if p.endswith(".py") and not is_test_file(p)}
    defined: set[str] = set()
    trees: dict[str, ast.Module] = {}
    for path in paths.values():
        try:
            trees[path] = ast.parse(sources[path])
        except SyntaxError:
            continue
        defined |= defined_at_top_level(trees[path])
    found: list[tuple[str, str, str]] = []
    for m in _UNDEFINED_LINE.finditer(report):
        user, name = m["user"], m["name"]
        if user not in trees or name in defined or "local variable" in m["rest"] or not name[0].islower():
            continue
        tree = trees[user]
        if not any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == name for n in ast.walk(tree)
        ):
            continue
        counts: dict[str, int] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and not node.level and paths.get(node.module or "") not in (None, user):
                target = paths[node.module or ""]
                counts[target] = counts.get(target, 0) + len(node.names)
        if counts:
            found.append((user, name, max(counts, key=lambda p: counts[p])))
    return found


def _local_owners(tree: ast.Module, name: str) -> list[tuple[str, int]]:
    """The functions that bind ``name`` locally (as a parameter or by assignment), with the line where each does."""
    owners: list[tuple[str, int]] = []
    for fn in ast.walk(tree):
        if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        a = fn.args
        params = [p for p in [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg] if p is not None]
        stores = [n for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)]
        lines = [p.lineno for p in params if p.arg == name] + [n.lineno for n in stores if n.id == name]
        if lines:
            owners.append((fn.name, min(lines)))
    return owners


def _static_method_at(tree: ast.Module, line: int, name: str) -> str:
    """The @staticmethod whose body holds ``line`` when ``name`` is ``self`` or ``cls``, which it does not have
    (seen on ClassEval_39 at ec0ff1d: a given static method written with ``self.`` calls, and the note said
    ``self`` was a local variable of __init__(), through six answers); "" otherwise."""
    if name not in ("self", "cls"):
        return ""
    for fn in ast.walk(tree):
        if (
            isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(ast.unparse(d) == "staticmethod" for d in fn.decorator_list)
            and fn.lineno <= line <= (fn.end_lineno or fn.lineno)
        ):
            return fn.name
    return ""


def _explain_undefined(issues: list[CodeIssue], trees: dict[str, ast.Module]) -> list[CodeIssue]:
    """One issue per undefined name and file (its other lines listed), saying where the name does exist when
    it is another function's local variable: a small model uses ``args`` of ``main()`` in helper functions and,
    told only "undefined name", rewrites the same code again."""
    lines: dict[tuple[str, str], list[int]] = {}
    for issue in issues:
        if m := UNDEFINED_NAME.match(issue.message):
            lines.setdefault((issue.path, m.group(1)), []).append(issue.line)
    out: list[CodeIssue] = []
    for issue in issues:
        m = UNDEFINED_NAME.match(issue.message)
        if m is None:
            out.append(issue)
            continue
        key = (issue.path, m.group(1))
        if key not in lines:
            continue  # its first line was already reported
        message, more = issue.message, lines.pop(key)[1:]
        if more:
            message += f" (also line{'s' if len(more) > 1 else ''} {', '.join(map(str, more))})"
        if issue.path in trees and (static := _static_method_at(trees[issue.path], issue.line, key[1])):
            message += (
                f": {static}() is a @staticmethod, so it has no `{key[1]}`; use only its parameters, and call the "
                f"class's other static methods through the class name"
            )
        elif issue.path in trees and (owners := _local_owners(trees[issue.path], key[1])):
            where = ", ".join(f"{fn}() (line {line})" for fn, line in owners[:3])
            message += (
                f": `{key[1]}` is a local variable of {where}, which no other function can see; pass it (or what "
                f"is needed from it) as a parameter, or compute it where it is used"
            )
        out.append(CodeIssue(issue.path, issue.line, issue.kind, message, issue.blocking))
    return out
