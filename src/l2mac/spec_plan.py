"""A prompt program read from a specification: one step per code file it describes, without asking the model.

When the task draws its file tree and says what each module holds, the plan is already written: each file the
specification describes is one step (what it says of the file, its interface as stubs to complete, and the
file's tests), in dependency order (a module another's description uses is written first; entry points last),
with each package's ``__init__.py`` beside its first module, and the example scripts the tree names last,
without tests, where only time the code did not need goes. Seen on DevBench: a 1.5B planner turned each of three
specifications into steps named after the document's sections ("Introduction", "UML Class Diagram", "Commit
Changes", "Run tests"), one invented module and steps writing one specified module three times; the rules of
:mod:`l2mac.plan_rules` removed some, and the planning call itself took 4 of each repository's 60 minutes.
"""

from __future__ import annotations

import ast
import re

from l2mac import outline
from l2mac.checks.demands import is_stub_definition
from l2mac.checks.layout import module_name
from l2mac.checks.repairs import imported_modules
from l2mac.fenced import fenced_blocks
from l2mac.plan_rules import file_detail
from l2mac.types import Instruction

#: files that use the rest of the project rather than define what it uses
ENTRY_POINTS = ("main.py", "__main__.py", "cli.py", "app.py", "run.py", "manage.py")
#: files of the tree other than Python modules that the project's code, its users or its README need: scripts,
#: web pages and their assets, the project's own documents (not data files: the task gives those, or they are
#: the program's output)
OTHER_FILES = (".sh", ".bash", ".html", ".css", ".js")
PROJECT_FILES = ("README.md", "requirements.txt", "pyproject.toml")
#: folders of files that use the project's code rather than make it up
USERS = ("examples", "scripts", "demo", "demos", "bin")


def spec_plan(task: str, *, tests: bool = True) -> list[Instruction]:
    """The plan the specification in ``task`` gives: ``[]`` unless it describes each of its code files but those
    that use the rest (entry points, examples, scripts), which then come last."""
    specs = outline.code_files(task)
    files, markers = _file_steps(specs, task, tests)
    if not files:
        return []
    steps = list(files.values())
    tree = outline.tree_paths(task)
    rest = [s.path for s in specs if not s.description] + markers
    rest += [p for p in tree if p.endswith(OTHER_FILES) or p.rsplit("/", 1)[-1] in PROJECT_FILES]
    if rest:
        steps.append(
            Instruction(
                title="The other files",
                instruction="W"
                + " and ".join(f"write {p}" for p in rest)[1:]
                + ", as the task's file tree names them. They use the code the earlier steps wrote, by the names"
                " it has; where the task shows a file's content or how it is run, follow it.",
                requires_tests=False,
            )
        )
    return steps


def module_steps(task: str, *, tests: bool = True) -> dict[str, Instruction]:
    """The step that writes each code file of the task, by path, as the l2mac strategy's plan has it: the task
    itself when it gives the skeleton of its one code file (:func:`one_skeleton_file`), else the specification's
    step for each file it describes; ``{}`` when neither."""
    if (path := one_skeleton_file(task)) is not None:
        return {path: task_step(task, tests=tests)}
    return _file_steps(outline.code_files(task), task, tests)[0]


def task_step(task: str, *, tests: bool = True) -> Instruction:
    """The task itself as one step, titled by the first words of its first line: the l2mac strategy's plan for a
    task it does not split, and a soa lead's draft step of the one module such a task gives. One step for both,
    so a soa lead's draft is the step l2mac would run (seen on ClassEval: titled "Write solution.py" there, the
    lead's step was asked otherwise, and its answers differed from l2mac's from the first)."""
    words = next((line for line in task.splitlines() if line.strip()), "").split()
    title = " ".join(words[:8]) + (" ..." if len(words) > 8 else "")
    return Instruction(title=title, instruction=task, requires_tests=tests)


def _file_steps(specs: list[outline.SpecFile], task: str, tests: bool) -> tuple[dict[str, Instruction], list[str]]:
    """Each described file's step, by path, in dependency order, with each package's marker beside its first
    module (``{}`` unless the specification describes its code files); and the package markers no step writes."""
    described = _ordered(_described(specs))
    markers = [p for p in outline.tree_paths(task) if p.endswith("/__init__.py")] if described else []
    stems = [s.path.rsplit("/", 1)[-1] for s in described]
    steps: dict[str, Instruction] = {}
    for spec in described:
        package = spec.path.rsplit("/", 1)[0] + "/__init__.py" if "/" in spec.path else ""
        own_marker = [package] if package in markers else []
        markers = [m for m in markers if m not in own_marker]
        unique = stems.count(spec.path.rsplit("/", 1)[-1]) == 1
        steps[spec.path] = _file_step(spec, own_marker, tests, unique)
    return steps, markers


def specified_skeletons(task: str) -> dict[str, str]:
    """The modules a specification gives as interfaces (each file's functions and classes listed with what they
    do; :func:`l2mac.outline.interface`), as stubs by path, with the package markers its tree names: the
    interfaces to write first. ``{}`` unless every code file it describes has one, but those that use the rest
    (entry points, examples), which are not given."""
    specs = [s for s in _described(outline.code_files(task)) if not _uses_the_rest(s.path)]
    given = {s.path: outline.interface(s.description) for s in specs}
    if not given or not all(given.values()):
        return {}
    markers = [p for p in outline.tree_paths(task) if p.endswith("/__init__.py")]
    return {**dict.fromkeys(markers, ""), **{p: code for p, code in given.items() if code is not None}}


def one_skeleton_file(task: str) -> str | None:
    """The one code file a task asks for when it gives that file's skeleton ("implement the class below in
    shapes.py", a fenced block of classes and functions to complete) and names no other code file: that task is
    already one step. Seen on ClassEval: a 1.5B planner split one class into a step per method, the first step
    wrote every method, and the two after it spent their budgets rewriting its tests."""
    prose = "\n".join(outline._outside_fences(task))
    named = {p for p in re.findall(r"(?<![\w/.-])([\w./-]+\.py)\b", prose) if not outline.is_test(p)}
    if len(named) != 1 or outline.tree_paths(task):
        return None
    path = named.pop()
    skeletons = [body for _, body in fenced_blocks(task) if _is_skeleton(body, module_name(path))]
    return path if len(skeletons) == 1 else None


def _is_skeleton(code: str, module: str) -> bool:
    """Whether ``code`` is the skeleton of module ``module``: it defines a function (or a method) to complete,
    does not import the module (an example of its use does), and its classes derive only from what it
    defines or imports (an example of a plugin of the program derives from the program's own class)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return False
    known = {
        a.asname or a.name.split(".")[0]
        for n in tree.body
        if isinstance(n, (ast.Import, ast.ImportFrom))
        for a in n.names
    }
    known |= {n.name for n in tree.body if isinstance(n, ast.ClassDef)} | {"object", "Exception", "ValueError"}
    if module in imported_modules(tree):
        return False
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and any(ast.unparse(b).split(".")[0] not in known for b in node.bases):
            return False
    stubs = [
        is_stub_definition(m, n if isinstance(n, ast.ClassDef) else None)
        for n in tree.body
        for m in (n.body if isinstance(n, ast.ClassDef) else [n])
        if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
    ]
    return any(stubs)


def _described(specs: list[outline.SpecFile]) -> list[outline.SpecFile]:
    """The code files a specification describes, when it describes every one but those that use the rest;
    else ``[]`` (the specification does not give the plan)."""
    if any(not s.description and not _uses_the_rest(s.path) for s in specs):
        return []
    return [s for s in specs if s.description]


def _uses_the_rest(path: str) -> bool:
    parts = path.split("/")
    return parts[-1] in ENTRY_POINTS or any(p in USERS for p in parts[:-1])


def _file_step(spec: outline.SpecFile, markers: list[str], tests: bool, unique: bool) -> Instruction:
    """A described file's step; its tests' file is named after it (after its module path when another described
    file has the same name, so neither step writes over the other's tests)."""
    stem = spec.path.rsplit("/", 1)[-1].removesuffix(".py") if unique else module_name(spec.path).replace(".", "_")
    parts = [f"Write {spec.path} as the task specifies.", file_detail(spec)]
    if markers:
        parts.append(f"Write {markers[0]} too: the package's marker (it may be empty).")
    if tests:
        parts.append(
            f"Then write tests/test_{stem}.py: pytest tests of every function and class above, importing them "
            f"from {module_name(spec.path)} and calling them as the specification shows."
        )
    return Instruction(title=f"Write {spec.path}", instruction="\n\n".join(parts), requires_tests=tests)


def _ordered(specs: list[outline.SpecFile]) -> list[outline.SpecFile]:
    """``specs`` with each file after those whose module or names its description uses (in tree order where
    nothing says), and entry points last."""
    # an entry point's module name (main, app) is a common word: a description saying "the main loop" uses no main.py
    names = {
        s.path: _said(s) | ({module_name(s.path).rsplit(".", 1)[-1]} if not _uses_the_rest(s.path) else set())
        for s in specs
    }

    def uses(a: outline.SpecFile, b: outline.SpecFile) -> bool:
        words = set(re.findall(r"\b\w+\b", a.description))
        return a is not b and bool(names[b.path] & words)

    order: list[outline.SpecFile] = []
    left = sorted(specs, key=lambda s: s.path.rsplit("/", 1)[-1] in ENTRY_POINTS)
    while left:
        ready = next((s for s in left if not any(uses(s, o) for o in left)), left[0])  # a cycle: tree order
        order.append(ready)
        left.remove(ready)
    return order


def _said(spec: outline.SpecFile) -> set[str]:
    """The classes and functions a description defines at its top level (not the methods under a class, whose
    names are common words)."""
    entries = (outline.ENTRY.match(line) for line in spec.description.splitlines())
    return {m["name"] for m in entries if m is not None and not m["indent"]}
