"""Type errors in a generated project (mypy), limited to the kinds that are bugs at run time.

A 1.5B model's code often has the annotations right and the calls wrong: ``json.dump([dict(todo)])`` on a
dataclass, ``main(argv) -> int`` that never returns, ``load_todos(args.file)`` with a ``str`` where the
function reads ``path.is_file()``. Tests that save an empty list or never check main's return value pass
anyway; mypy names each line before the code is run. Only the error codes in :data:`BLOCKING_CODES` are
reported; style-like complaints (missing annotations, Optional
narrowing, re-assignment to another type) are left out, since a small model told about them churns instead of
fixing bugs. The rules that explain a message are data, in ``type_hints.yaml``.

Functions without annotations are checked too (``--check-untyped-defs``), for the two kinds of error that need
no types to be sure of (:data:`UNTYPED_CODES`): a class or module without the attribute read, and a call with
the wrong arguments. Most generated code (ClassEval's skeletons, DevBench's modules, a small model's helpers)
has no annotations, so mypy's default, which skips such functions, saw none of it. On the ClassEval solutions
in bench/results (50 of l2mac's at 1be87d3, 50 of single's), it named a bug in 7 classes that failed their
hidden tests, among them a call of ``itertools.factorial`` and of a method the class never defined, and in
none that passed.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path

import yaml

from l2mac.checks.issues import CodeIssue
from l2mac.checks.layout import is_test_file, module_name

#: mypy error codes reported to the model: each is a call or a return that fails (or misbehaves) at run time
BLOCKING_CODES = frozenset(
    {
        "arg-type",
        "attr-defined",
        "call-arg",
        "call-overload",
        "func-returns-value",
        "index",
        "operator",
        "return",
        "return-value",
    }
)
#: the codes reported inside a function without annotations, where mypy infers types from first uses (a list's
#: first append, a dict literal's mixed values joined to ``object``) and would call a mixed list a bug
UNTYPED_CODES = frozenset({"attr-defined", "call-arg"})
TIMEOUT_S = 120
#: a message about a value that may be None (``str | None``, ``Optional[str]``, ``Item "None" of``): Optional
#: narrowing, which the idiom of the library at hand often leaves to the data (``find(...).text``, ``match(...)``)
_MAYBE_NONE = re.compile(r'\| None\b|\bNone \||Optional\[|"None"')
#: mypy's own blind spots: an overloaded method passed as a function (``max(counts, key=counts.get)``, idiomatic
#: and correct)
_FALSE_ALARMS = re.compile(r"incompatible type overloaded function")
#: a value whose type mypy joined to ``object`` (``{"id": 1, "tags": []}``), which it does in a function without
#: annotations and for the attributes such a function sets (an unannotated ``__init__``'s)
_JOINED = re.compile(r'"object"')
_LACKED = re.compile(r'has no attribute "(?P<attr>\w+)"')


@dataclass(frozen=True)
class _Rule:
    message: re.Pattern[str]
    hint: str


@cache
def _rules() -> tuple[_Rule, ...]:
    text = resources.files(__package__).joinpath("type_hints.yaml").read_text(encoding="utf-8")
    return tuple(_Rule(re.compile(r["message"]), " ".join(r["hint"].split())) for r in yaml.safe_load(text))


def explain(message: str) -> str:
    """mypy's ``message`` with the advice of the first rule that matches it, if any."""
    for rule in _rules():
        if m := rule.message.search(message):
            return f"{message}: " + rule.hint.format(**{k: v or "" for k, v in m.groupdict().items()})
    return message


def _argv(files: list[str]) -> list[str]:
    return [
        sys.executable,
        "-m",
        "mypy",
        "--config-file",
        "",  # never the project's own config: it could name plugins, which mypy would import and run
        "--output",
        "json",
        "--no-site-packages",
        "--ignore-missing-imports",
        "--follow-imports",
        "silent",
        "--explicit-package-bases",
        "--check-untyped-defs",
        # No cache: a check must give the same answer for the same files (runs replay by seed and journal). With
        # a cache shared across projects, the same sample checked clean in one run and not in the next; and
        # without one a small project is checked in about 0.5 s here anyway.
        "--no-incremental",
        "--cache-dir",
        os.devnull,
        *files,
    ]


def mypy_errors(root: Path, files: list[str]) -> list[dict[str, object]]:
    """mypy's errors on ``files`` (paths relative to ``root``), as its JSON rows. Empty when mypy is missing or
    fails: a check that cannot run must not stop a step."""
    if not files:
        return []
    env = {k: v for k, v in os.environ.items() if k not in ("MYPYPATH", "PYTHONPATH")}
    if (root / "src").is_dir():
        env["MYPYPATH"] = "src"
    try:
        done = subprocess.run(
            _argv(files), cwd=root, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return []
    if done.returncode not in (0, 1):  # 2: mypy could not run (a crash, bad flags, a duplicate module)
        return []
    rows: list[dict[str, object]] = []
    for row in done.stdout.splitlines():
        try:
            item = json.loads(row)
        except json.JSONDecodeError:
            continue
        if isinstance(item, dict) and item.get("severity") == "error":
            item["file"] = Path(str(item.get("file", ""))).as_posix()
            rows.append(item)
    return rows


def type_issues(root: Path, files: list[str], check: list[str]) -> list[CodeIssue]:
    """Blocking type errors in ``check`` (paths relative to ``root``), with the whole of ``files`` analysed so
    that calls across modules are checked. Empty when mypy is missing or fails."""
    wanted = set(check)
    if not wanted:
        return []
    lines: dict[tuple[str, str], list[int]] = {}  # one issue per message and file, its other lines listed
    untyped: dict[str, frozenset[int]] = {}  # per file: the lines inside functions without annotations
    outside: frozenset[str] | None = None  # the attributes set on objects from outside their class, once asked
    for item in mypy_errors(root, files):
        rel = str(item["file"])
        if item.get("code") not in BLOCKING_CODES or rel not in wanted:
            continue
        message = str(item.get("message", ""))
        if _MAYBE_NONE.search(message) or _FALSE_ALARMS.search(message) or _JOINED.search(message):
            continue  # Optional narrowing under another code: seen blocking a step on ElementTree's .find().text
        line = int(str(item.get("line") or 0))
        if rel not in untyped:
            untyped[rel] = _untyped_lines(root / rel)
        if line in untyped[rel] and item.get("code") not in UNTYPED_CODES:
            continue
        if (lacked := _LACKED.search(message)) and outside is None:
            outside = set_on_objects(root, files)
        if lacked and outside is not None and lacked["attr"] in outside:
            continue  # an attribute the project sets on an object from outside its class (``app.db = ...``)
        message = _module_named(message, root / rel, line)
        at = lines.setdefault((rel, message), [])
        if line not in at:
            at.append(line)
    issues: list[CodeIssue] = []
    for (rel, message), at in lines.items():
        more = f" (also line{'s' if len(at) > 2 else ''} {', '.join(map(str, at[1:]))})" if len(at) > 1 else ""
        elsewhere = defined_elsewhere(root, files, message) or in_the_standard_library(message)
        issues.append(CodeIssue(rel, at[0], "type", explain(message + more) + elsewhere))
    return issues


_UNNAMED_MODULE = re.compile(r'^Module has no attribute "(?P<attr>\w+)"')
#: the standard library's modules where a small model looks for a function in the wrong one (``itertools.factorial``)
STANDARD_MODULES = (
    "math", "statistics", "itertools", "functools", "operator", "collections", "heapq", "bisect", "string", "re",
    "json", "os", "os.path", "shutil", "pathlib", "datetime", "time", "calendar", "random", "decimal", "fractions",
    "copy", "textwrap", "hashlib", "base64", "csv", "typing", "dataclasses", "sys", "urllib.parse",
)  # fmt: skip


def _module_named(message: str, path: Path, line: int) -> str:
    """mypy's ``Module has no attribute "x"`` (its words for ``module.x`` on a module of the standard library)
    with the module named, as the source line has it: ``Module "itertools" has no attribute "factorial"``."""
    if not (m := _UNNAMED_MODULE.match(message)):
        return message
    try:
        text = path.read_text(encoding="utf-8").splitlines()[line - 1]
    except (OSError, UnicodeError, IndexError):
        return message
    used = re.search(rf"\b(?P<mod>[A-Za-z_][\w.]*)\.{re.escape(m['attr'])}\b", text)
    return f'Module "{used["mod"]}"' + message[len("Module") :] if used else message


def in_the_standard_library(message: str) -> str:
    """For mypy's "Module m has no attribute n": the modules of :data:`STANDARD_MODULES` that do define n."""
    if not (found := _NO_ATTRIBUTE.search(message)):
        return ""
    name, homes = found["attr"], []
    for module in STANDARD_MODULES:
        if module != found["mod"] and hasattr(importlib.import_module(module), name):
            homes.append(f"{module}.{name}")
    return f" `{name}` is in the standard library as {', '.join(homes[:3])}." if homes else ""


def set_on_objects(root: Path, files: list[str]) -> frozenset[str]:
    """The attributes ``files`` set on an object from outside its class (``app.db = connect()``,
    ``node.visited = True``): Python allows it, mypy reports each use as missing."""
    names = set()
    for rel in files:
        try:
            tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for n in ast.walk(tree):
            own = isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls")
            if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) and not own:
                names.add(n.attr)
    return frozenset(names)


def _untyped_lines(path: Path) -> frozenset[int]:
    """The lines of ``path`` whose innermost enclosing function has no annotations (as mypy tells them: none on
    its parameters or its return)."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return frozenset()
    spans: list[tuple[int, int, bool]] = []  # (first line, last line, annotated), outer functions first
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p)]
            annotated = node.returns is not None or any(p.annotation is not None for p in params)
            spans.append((node.lineno, node.end_lineno or node.lineno, annotated))
    innermost: dict[int, bool] = {}
    for first, last, annotated in sorted(spans, key=lambda s: s[1] - s[0], reverse=True):
        innermost.update(dict.fromkeys(range(first, last + 1), annotated))
    return frozenset(line for line, annotated in innermost.items() if not annotated)


_NO_ATTRIBUTE = re.compile(r'^Module "(?P<mod>[\w.]+)" has no attribute "(?P<attr>\w+)"')


def defined_elsewhere(root: Path, files: list[str], message: str) -> str:
    """For mypy's "Module m has no attribute n": where the project does define n, and why m does not give it
    (a package that takes a module's names with ``import *`` gets only those its ``__all__`` lists). Seen on a
    change to python-slugify: unique_slugify added to slugify/slugify.py, whose __all__ did not list it, and a
    test importing it from slugify rewritten unchanged three times, told only "slugify defines no
    unique_slugify"."""
    if not (found := _NO_ATTRIBUTE.search(message)):
        return ""
    package, name = found["mod"], found["attr"]
    for rel in files:
        if not rel.endswith(".py") or is_test_file(rel) or module_name(rel) == package:
            continue
        try:
            tree = ast.parse((root / rel).read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
        if not any(isinstance(n, defs) and n.name == name for n in tree.body):
            continue
        home = module_name(rel)
        said = f" `{name}` is defined in {rel}: import it from {home}"
        listed = all_names(tree)
        if _star_imports(root, files, package, home) and listed is not None and name not in listed:
            said += (
                f", or add '{name}' to __all__ in {rel} ({package} takes that module's names with `import *`, "
                "which imports only the names its __all__ lists)"
            )
        return said + "."
    return ""


def _star_imports(root: Path, files: list[str], package: str, module: str) -> bool:
    """Whether the project's ``package`` takes ``module``'s names with ``from module import *``."""
    init = next((f for f in files if f.endswith("__init__.py") and module_name(f) == package), None)
    if init is None or not module.startswith(package + "."):
        return False
    try:
        tree = ast.parse((root / init).read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return False
    tail = module[len(package) + 1 :]
    return any(
        isinstance(n, ast.ImportFrom)
        and any(a.name == "*" for a in n.names)
        and ((n.level == 1 and n.module == tail) or (n.level == 0 and n.module == module))
        for n in tree.body
    )


def all_names(tree: ast.Module) -> list[str] | None:
    """The names a module's ``__all__ = [...]`` lists; None when it has none (or builds it otherwise)."""
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
            and isinstance(node.value, (ast.List, ast.Tuple))
        ):
            return [e.value for e in node.value.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
    return None
