"""The rules a plan follows before it runs: a small model's plan checked and repaired against the task.

Each rule is general (what a plan must be for any task), and each was met as a failure on a real run, said in
its docstring: steps repeated, a step submitting the plan, steps that only set up, a README step required to
have tests, the task's code and files dropped, a specification's files not owned by any step or put in files
of the plan's own invention.
"""

from __future__ import annotations

import ast
import re

from l2mac import outline
from l2mac.checks.demands import SIGNATURE, mentioned_files, named_definitions
from l2mac.checks.layout import is_test_file
from l2mac.types import Instruction

#: the planner's tool: a step that names it is about the plan, not the task
SUBMIT_PLAN = "submit_plan"


def dedupe(steps: list[Instruction]) -> list[Instruction]:
    """Steps without repeats: small models sometimes list a step twice, word for word or nearly (seen on a
    change to python-slugify: "Create a new test file named tests/test_unique_slugify.py and add a test case
    that uses the unique_slugify function ..." as step 2 and, without the word "test" before "file", as step
    6). A near repeat names the same files and uses the same words as the step before it, so the same work on
    another function (add, then mul) or the opposite work (raise, then not raise) is never one."""
    out: list[Instruction] = []
    for s in steps:
        if not any(_repeats(s, earlier) for earlier in out):
            out.append(s)
    return out


def _repeats(step: Instruction, earlier: Instruction) -> bool:
    said, before = (" ".join(x.instruction.lower().split()) for x in (step, earlier))
    if said == before:
        return step.title.strip().lower() == earlier.title.strip().lower()
    if set(mentioned_files(step.instruction)) != set(mentioned_files(earlier.instruction)):
        return False
    return set(_TOKEN.findall(said)) == set(_TOKEN.findall(before))


#: a word, number or path of an instruction
_TOKEN = re.compile(r"[\w./-]+")


def tests_with_their_code(steps: list[Instruction]) -> list[Instruction]:
    """No step that only tests what an earlier step writes: every step that writes code writes its tests, so a
    later step whose only work is tests of names an earlier code step already has is folded into that step, and
    the test file it names (if pytest would collect it) becomes that step's. Seen on a change to python-slugify:
    after "Add unique_slugify(text, taken) to slugify/slugify.py", four steps of "a test case that uses the
    unique_slugify function", in tests/test_unique_slugify.py, a slugify/__tests__.py, a tools/unique_slugify.py
    and a tools/__tests__.py; each failed on its own. A step with work besides tests ("add a --json flag to
    main() in cli.py, with tests for it") keeps its place."""
    out: list[Instruction] = []
    for step in steps:
        at = _tested_step(step, out)
        if at is None:
            out.append(step)
            continue
        target = out[at]
        named = set(mentioned_files(target.instruction))
        files = [p for p in dict.fromkeys(mentioned_files(step.instruction)) if is_test_file(p) and p not in named]
        update: dict[str, object] = {"requires_tests": True}
        if files:
            update["instruction"] = f"{target.instruction.rstrip()}\n\nWrite its tests in {', '.join(files)}."
        out[at] = target.model_copy(update=update)
    return out


#: a name that belongs to tests: test_x, XTests, TestX
_TEST_NAME = re.compile(r"^(?:test_?\w*|Test\w*|\w*Tests?)$")
#: where an instruction's clauses part: a sentence's end, a semicolon, a line, "and", "with", "then"
_CLAUSE = re.compile(r"[.;:](?:\s+|$)|\n+|,?\s+\b(?:and|with|then)\b\s+", re.IGNORECASE)
#: a verb of work on code
_WORK = re.compile(
    r"\b(?:add|write|create|make|implement|update|change|modify|extend|fix|handle|support|return|raise|define|"
    r"build|refactor|remove|delete|rename|validate|store|parse|accept|reject)(?:s|es)?\b",
    re.IGNORECASE,
)
#: a clause that only makes a file, saying nothing of what is in it: "create a new file named tools/x.py"
_BARE_FILE = re.compile(
    r"^\s*(?:create|add|make|write)s?\s+(?:a\s+|an\s+)?(?:new\s+)?(?:empty\s+)?(?:python\s+)?"
    r"(?:(?:file|module)(?:\s+(?:named|called))?\s+)?[`'\"]?[\w./-]+\.\w+[`'\"]?\s*$",
    re.IGNORECASE,
)


def _only_tests(instruction: str) -> bool:
    """Whether every clause of ``instruction`` that does work is about tests (or only makes a file), and one is."""
    clauses = [c for c in _CLAUSE.split(instruction) if c.strip()]
    tests = [c for c in clauses if re.search(r"test", c, re.IGNORECASE)]
    work = [c for c in clauses if _WORK.search(c) and c not in tests and not _BARE_FILE.match(c)]
    return bool(tests) and not work


def _tested_step(step: Instruction, earlier: list[Instruction]) -> int | None:
    """The earlier code step whose names ``step`` only tests, when that is all it does."""
    if not _only_tests(step.instruction):
        return None
    names = _code_names(step)
    if not names:
        return None
    for i, other in enumerate(earlier):
        if _TESTS_TITLE.search(other.title) or not _writes_code(other.instruction) or not names <= _code_names(other):
            continue
        # a code file of its own is work of its own, unless it is named for tests or for the very name it tests
        # (where a small model puts a test case)
        named = set(mentioned_files(other.instruction))
        own = [p for p in mentioned_files(step.instruction) if p.endswith(".py") and p not in named]
        if all("test" in p.rsplit("/", 1)[-1] or p.rsplit("/", 1)[-1].removesuffix(".py") in names for p in own):
            return i
    return None


def _code_names(step: Instruction) -> set[str]:
    """The code names a step uses (called, quoted or shaped as code), its files' paths and test names aside."""
    said = _NAMED_FILE_PATH.sub(" ", f"{step.title}\n{step.instruction}")
    return {n for found in _USED_NAME.findall(said) if (n := "".join(found)) and not _TEST_NAME.match(n)}


_NAMED_FILE_PATH = re.compile(r"(?<![\w/.-])[\w-]+(?:/[\w-]+)*\.\w+\b")


#: a step whose whole title is submitting the plan, or that names the planner's tool: not the task's work
_SUBMITS_THE_PLAN = re.compile(r"^\W*submit(?:ting)?[ _](?:the )?plan\W*$", re.IGNORECASE)
_NAMES_THE_TOOL = re.compile(rf"\b{SUBMIT_PLAN}\b")
#: a function or method named with its parentheses: the step writes code
_CALLABLE = re.compile(r"\b[A-Za-z_]\w*\(")


#: a step that says it makes a new file: "Create a new file named `special.py` in the `slugify` directory"
_CREATES = re.compile(
    r"\b(?:create|add|make|write)s?\s+(?:a\s+)?new\s+(?:python\s+)?(?:file|module)\s+(?:named\s+|called\s+)?"
    r"[`'\"]?(?P<name>[\w./-]+\.\w+)[`'\"]?(?:\s+(?:in|under)\s+(?:the\s+)?(?P<new>new\s+)?[`'\"]?"
    r"(?P<folder>[\w./-]+?)/?[`'\"]?\s+(?:directory|folder|package))?",
    re.IGNORECASE,
)
#: words before it that say the step does not: "do not create a new file named special.py"
_NOT_BEFORE = re.compile(r"\b(?:not|never|don't|without|instead of)\s+$", re.IGNORECASE)
#: files every folder may have its own of: a bare name is never one of the repository's
_PER_FOLDER = ("__init__.py", "conftest.py")


def not_recreating(steps: list[Instruction], existing: list[str]) -> list[Instruction]:
    """A change's plan without the steps that make as new a file the repository has: such a step is the
    planner walking the repository's map, not the change (seen on python-slugify: "Add slugify_filename function
    to special.py: Create a new file named `special.py` in the `slugify` directory", and nine more like it, one
    per file of the map), and written as new it would replace the file. A file is the repository's when the
    step places it (a path, or a name in a folder) where the repository has one, or names it bare and the
    repository has exactly one file of that name (never a package marker or a conftest.py, which any folder
    may get). Unchanged when every step is one: then the planner's steps are all it gives."""
    kept = [s for s in steps if not _recreates(s, existing)]
    return kept or steps


def _recreates(step: Instruction, existing: list[str]) -> bool:
    for m in _CREATES.finditer(step.instruction):
        if m["new"] or _NOT_BEFORE.search(step.instruction[max(0, m.start() - 20) : m.start()]):
            continue
        name, folder = m["name"], m["folder"]
        if folder or "/" in name:
            path = f"{folder.strip('/')}/{name}" if folder and "/" not in name else name
            if any(e == path or e == f"src/{path}" for e in existing):
                return True
        elif name not in _PER_FOLDER and sum(e.rsplit("/", 1)[-1] == name for e in existing) == 1:
            return True
    return False


def repair(steps: list[Instruction]) -> list[Instruction]:
    """A plan as it can run: no step whose work is submitting the plan (seen as a last step "Submit plan" of a
    plan answered in prose), no test required of a step that mentions files but neither a code file nor a
    function (seen: a README step failing "no tests were collected" nine times), and each step's instruction
    naming the functions its title names."""
    out: list[Instruction] = []
    for step in packages_over_modules(steps):
        if _SUBMITS_THE_PLAN.search(step.title) or _NAMES_THE_TOOL.search(step.instruction):
            continue
        files = mentioned_files(step.instruction)
        if step.requires_tests and files and not _writes_code(step.instruction):
            step = step.model_copy(update={"requires_tests": False})
        out.append(titled_names(with_test_file(step, files)))
    return out or steps


def with_test_file(step: Instruction, files: list[str]) -> Instruction:
    """A step that must leave tests of the code files it names, and names no test file, names one:
    ``tests/test_<module>.py``. Seen on the URL shortener at 0b99821: the planner's steps said "Write
    url_shortener/db.py with a class Database ..." and nothing of tests; told "no test tests url_shortener/db.py"
    four times, the 1.5B model wrote db.py again each time, as nothing named a test file to write."""
    code = [f for f in files if f.endswith(".py") and not is_test_file(f) and f.rsplit("/", 1)[-1] != "__main__.py"]
    if not step.requires_tests or not code or any(is_test_file(f) for f in files):
        return step
    parts = code[0][: -len(".py")].split("/")
    stem = parts[-2] if parts[-1] == "__init__" and len(parts) > 1 else parts[-1]
    test = f"tests/test_{stem}.py"
    named = " and ".join(code[:3])
    return step.model_copy(
        update={"instruction": f"{step.instruction.rstrip()}\nWrite {test} with pytest tests of {named}."}
    )


def packages_over_modules(steps: list[Instruction]) -> list[Instruction]:
    """The plan with a module that a package of the same name would hide (``url_shortener.py`` beside
    ``url_shortener/db.py``) written as that package's ``__init__.py``: what it defines is imported as before
    (``from url_shortener import URLShortener``), and ``import url_shortener`` finds one thing. Seen on the URL
    shortener at ad8862e: the 1.5B planner put its main class in url_shortener.py and eight modules in
    url_shortener/."""
    files = {f for s in steps for f in mentioned_files(s.instruction)}
    folders = {f.rsplit("/", 1)[0] for f in files if "/" in f}
    clashing = sorted(f for f in files if f.endswith(".py") and f[: -len(".py")] in folders)
    if not clashing:
        return steps
    out = []
    for step in steps:
        text = step.instruction
        for module in clashing:
            text = re.sub(rf"(?<![\w/.]){re.escape(module)}\b", f"{module[: -len('.py')]}/__init__.py", text)
        out.append(step.model_copy(update={"instruction": text}) if text != step.instruction else step)
    return out


#: a function or class named with its parameters: ``unique_slugify(text, taken)``


def titled_names(step: Instruction) -> Instruction:
    """The step with the functions its title names (with their parameters) said in its instruction too: what
    the step must define is read from its instruction. Seen: a step titled "Add a new function
    unique_slugify(text, taken) to slugify.py" whose instruction said "a new function ... that takes two
    arguments"; it passed with the function never written."""
    said = set(named_definitions(step.instruction))
    missing = {n: m.group(0) for m in SIGNATURE.finditer(step.title) if (n := m.group(1)) not in said}
    missing = {n: sig for n, sig in missing.items() if n in named_definitions(step.title)}
    if not missing:
        return step
    names = " and ".join(missing.values())
    return step.model_copy(update={"instruction": f"{step.instruction.rstrip()} It is about {names}."})


_README = re.compile(r"\breadme\b", re.IGNORECASE)
README_STEP = "README"


def with_readme(steps: list[Instruction], limit: int, instruction: str) -> list[Instruction]:
    """``steps`` and, when none of them mentions a README and ``limit`` leaves room, a last step writing one,
    without tests. The planner is told never to plan a step that only writes a README (seen: one failing "no
    tests were collected" nine times), so a planned project had none, and its README's install and run commands,
    which l2mac checks, did not exist (seen on a Flask notes API)."""
    if len(steps) >= limit or any(_README.search(f"{s.title} {s.instruction}") for s in steps):
        return steps
    return [*steps, Instruction(title=README_STEP, instruction=instruction, requires_tests=False)]


def is_readme_step(step: Instruction) -> bool:
    """Whether ``step`` is the README step :func:`with_readme` adds (before it, the project is made installable)."""
    return step.title == README_STEP and not step.requires_tests


#: a title about setting up rather than writing, and an instruction that installs packages or makes folders
_SETUP_TITLE = re.compile(
    r"\b(?:install\w*|set\s?up|setup|structure|director(?:y|ies)|folders?|scaffold\w*|dependenc(?:y|ies)|"
    r"requirements|libraries)\b",
    re.IGNORECASE,
)
_SETUP_WORK = re.compile(
    r"\b(?:pip|install\w*|mkdir|folders?|director(?:y|ies)|venv|virtual environment|requirements\.txt)\b",
    re.IGNORECASE,
)


def without_setup(steps: list[Instruction]) -> list[Instruction]:
    """No step that only installs packages or makes folders: the checks ask for what code imports to be declared,
    and it is installed; a write makes its folders. A step titled so that names no code file and no function is
    dropped when its instruction, too, only installs or makes folders. Seen: "Define Project Structure" and
    "Install Required Libraries" as the first steps of a specified library, the first failing "no tests were
    collected" until its budget was spent."""
    kept = [s for s in steps if not _only_setup(s)]
    return kept or steps


def _only_setup(step: Instruction) -> bool:
    setup = _SETUP_TITLE.search(step.title) and _SETUP_WORK.search(step.instruction)
    return bool(setup) and not _writes_code(step.instruction)


def _writes_code(instruction: str) -> bool:
    return any(f.endswith(".py") for f in mentioned_files(instruction)) or bool(_CALLABLE.search(instruction))


def echoes(steps: list[Instruction], task: str) -> bool:
    """Whether a plan is the task read back: most of its steps are lines of the task, word for word. Seen: a plan
    cut off at its token limit whose numbered steps were the bullet points of the requirements it was given
    ("Enables querying by any combinations of `category`, `author`, ...")."""
    if len(steps) < 3:
        return False
    flat = " ".join(task.split())
    said = [" ".join(s.instruction.split()) for s in steps]
    return sum(len(s) >= 20 and s in flat for s in said) * 2 > len(steps)


def fit_steps(steps: list[Instruction], max_steps: int) -> list[Instruction]:
    """At most ``max_steps`` steps; extra steps are merged into the last, so no requirement is dropped."""
    if len(steps) <= max_steps:
        return steps
    keep, extra = steps[: max_steps - 1], steps[max_steps - 1 :]
    merged = Instruction(
        title=extra[0].title,
        instruction="\n\n".join(f"{s.title}: {s.instruction}" for s in extra),
        requires_tests=any(s.requires_tests for s in extra),
    )
    return [*keep, merged]


_CODE_BLOCK = re.compile(r"```([\w+-]*)\n(.*?)```", re.DOTALL)
_PY_PATH = re.compile(r"(?<![\w/.-])([\w-]+(?:/[\w-]+)*\.py)\b")
_DEFINED = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", re.MULTILINE)


def carry_task_details(steps: list[Instruction], task: str) -> list[Instruction]:
    """Put back what a plan must carry and a small model's plan drops: the task's code blocks (signatures and
    docstrings to keep), given to the step that mentions what they define (else the first), and the Python files
    the task names, to be written in the first step that is not told of them. Seen on HumanEval+: a one-step
    plan without solution.py or the docstring's examples, and the model then wrote main.py from memory."""
    if not steps:
        return steps
    out = list(steps)

    def add(i: int, text: str) -> None:
        out[i] = out[i].model_copy(update={"instruction": f"{out[i].instruction.rstrip()}\n\n{text}"})

    for language, block in _CODE_BLOCK.findall(task):
        labelled = language.lower() in ("python", "py", "python3")
        names = _DEFINED.findall(block) if labelled else _python_definitions(block) if not language else []
        if not names or any(block.strip() in s.instruction for s in out):
            continue
        at = next((i for i, s in enumerate(out) if any(n in s.instruction for n in names)), 0)
        add(at, f"From the task (keep its names, signatures and docstrings):\n```python\n{block.rstrip()}\n```")
    tree = outline.tree_paths(task)  # a name on a tree's line is the file at its place in the tree
    named = (next((p for p in tree if outline.same_file(p, f)), f) for f in _PY_PATH.findall(task))
    files = [f for f in dict.fromkeys(named) if not any(f in s.instruction for s in out)]
    if files:
        add(0, "The task names these files: " + ", ".join(f"write {f}" for f in files) + ".")
    return out


def _python_definitions(block: str) -> list[str]:
    """The functions and classes an unlabelled block defines, when it is Python; none when it is not (a file
    tree, a shell script, a diagram: seen carried into a step as "keep its signatures" code)."""
    try:
        ast.parse(block)
    except SyntaxError:
        return []
    return _DEFINED.findall(block)


#: a name an instruction uses as code: called (``name(``), quoted (`` `name` ``), or shaped as no word is
#: (``snake_case``, ``CamelCase``)
_USED_NAME = re.compile(r"\b([A-Za-z_]\w*)\(|`([A-Za-z_]\w*)`|\b([a-z]\w*_\w+|[A-Z][a-z0-9]+[A-Z]\w*)\b")


def _invented(path: str, named: set[str], specs: list[outline.SpecFile]) -> bool:
    """A code file of the plan's own that the task names nowhere: not a test, a package marker, an entry point
    or an example, which use the specified names rather than define them."""
    stem = path.rsplit("/", 1)[-1]
    return (
        path.endswith(".py")
        and not outline.is_test(path)
        and stem not in ("__init__.py", "__main__.py", "main.py", "cli.py", "app.py")
        and not path.startswith(("examples/", "scripts/"))
        and not any(outline.same_file(path, n) for n in named)
        and not any(outline.same_file(path, s.path) for s in specs)
    )


def placed(steps: list[Instruction], task: str) -> list[Instruction]:
    """A file the plan names bare (``pso_simple.py``) is the file the task's tree places (``pso/pso_simple.py``),
    when the tree has one file of that name. Seen: a step naming '__init__.py' and 'pso_simple.py' beside
    'pso/pso_simple.py', and an answer writing the class meant for one into the other."""
    tree = outline.tree_paths(task)
    names = [p.rsplit("/", 1)[-1] for p in tree]
    where = {n: p for n, p in zip(names, tree, strict=True) if "/" in p and names.count(n) == 1}
    return _renamed(steps, where)


def one_folder(steps: list[Instruction], task: str) -> list[Instruction]:
    """A file the plan names alone in its top folder (no other file of the plan or the task is under it) is the
    file of the same name the plan has in a folder of its own files, when it has one. Seen on the notes API: a
    plan that wrote notes/store.py said "Use bookmarks/store.py for note storage", the planner's worked
    example's folder left over; the step's answer then imported from a package that never existed. A file in a
    subfolder of the plan's own (``pkg/plugins/__init__.py``) is not alone."""
    files = [f for s in steps for f in mentioned_files(s.instruction)]
    named = set(mentioned_files(task)) | set(outline.tree_paths(task))
    everything = {*files, *named}

    def alone(path: str) -> bool:
        top = path.split("/", 1)[0] + "/"
        return not any(f.startswith(top) for f in everything if f != path)

    moved: dict[str, str] = {}
    for path in dict.fromkeys(files):
        if "/" not in path or path in named or not alone(path):
            continue
        stem = path.rsplit("/", 1)[1]
        same = {f for f in everything if "/" in f and f.rsplit("/", 1)[1] == stem and not alone(f)}
        if len(same) == 1:
            moved[path] = same.pop()
    return _renamed(steps, moved)


def _renamed(steps: list[Instruction], moved: dict[str, str]) -> list[Instruction]:
    """``steps`` with each file of ``moved`` named as the file it maps to, wherever an instruction names it."""
    if not moved:
        return steps
    pattern = re.compile(r"(?<![\w/.-])(" + "|".join(re.escape(p) for p in moved) + r")(?![\w/-])")
    return [
        s.model_copy(update={"instruction": pattern.sub(lambda m: moved[m.group(1)], s.instruction)}) for s in steps
    ]


def retarget(steps: list[Instruction], specs: list[outline.SpecFile], task: str) -> list[Instruction]:
    """A code file the plan invents for names the specification places in one of its files is that file: the
    plan is pointed at it, in every step. Seen: steps writing the specified functions of src/hybrid.py into a
    global_functions.py (named after the UML's "fake class to host global functions")."""
    places: dict[str, set[str]] = {}
    for spec in specs:
        for a, b in _SAID_NAME.findall(spec.description):
            if not (a or b).startswith("__"):
                places.setdefault(a or b, set()).add(spec.path)
    owner = {n: next(iter(p)) for n, p in places.items() if len(p) == 1}  # a name in two files tells nothing
    named = set(_PY_PATH.findall(task)) | set(outline.tree_paths(task))
    moved: dict[str, str] = {}
    for step in steps:
        used = {n for found in _USED_NAME.findall(step.instruction) if (n := "".join(found)) in owner}
        files = {owner[n] for n in used}
        for path in mentioned_files(step.instruction):
            if len(used) >= 2 and len(files) == 1 and _invented(path, named, specs):
                moved.setdefault(path, next(iter(files)))
    return _renamed(steps, moved)


def follow_spec(steps: list[Instruction], task: str, *, tests: bool = True) -> list[Instruction]:
    """A plan that owns every code file the task's specification names (in a file tree, or under a heading of
    its own), at the path it gives and with what it says of the file. A file goes to the step that mentions it
    and most of the names said of it; a file no step mentions gets a step of its own, placed before the first
    step that imports its module (what is imported is written first), else last (as is a file nothing is said
    of: a script that uses the rest). Seen: a plan of a specified package whose steps installed packages and
    made folders, and never wrote two of its five modules.

    The files' steps are the plan's code then: a step that neither owns a specified file, nor writes tests, nor
    names a code file of its own is dropped (every step sees the whole task). Seen: steps named after the
    specification's sections ("Introduction", "UML Class Diagram", "Deployment") writing READMEs, diagrams and
    scripts nobody asked for, and three steps writing parts of one specified module beside the step that owns
    it."""
    specs = outline.code_files(task)
    out = retarget(placed(list(steps), task), specs, task)
    owners: set[int] = set()
    for spec in specs:
        name = spec.path.rsplit("/", 1)[-1]
        said = {a or b for a, b in _SAID_NAME.findall(spec.description)}
        mentioning = re.compile(rf"(?<![\w.-]){re.escape(name)}\b")
        # a step that names the file, or at least two of the names said of it and no other code file
        mentions = [
            i
            for i, s in enumerate(out)
            if mentioning.search(s.instruction) or (len(said & set(_WORD.findall(s.instruction))) >= 2 and _no_file(s))
        ]
        detail = file_detail(spec)
        if mentions:
            at = max(
                mentions,
                key=lambda i: (
                    len(said & set(_WORD.findall(out[i].instruction))),
                    bool(mentioning.search(out[i].instruction)),
                    _writes(out[i]),
                    -i,
                ),
            )
            extra = [] if spec.path in out[at].instruction else [f"Write it at {spec.path}, as the task places it."]
            if detail and spec.description not in out[at].instruction:
                extra.append(detail)
            update: dict[str, object] = {"requires_tests": out[at].requires_tests or (tests and bool(detail))}
            if extra:
                update["instruction"] = "\n\n".join([out[at].instruction.rstrip(), *extra])
            out[at] = out[at].model_copy(update=update)
            owners.add(id(out[at]))
            continue
        own = Instruction(
            title=f"Write {spec.path}",
            instruction="\n\n".join(x for x in (f"Write {spec.path} as the task specifies.", detail) if x),
            requires_tests=tests and bool(detail),  # nothing said of it to test (seen: an example script)
        )
        m = re.escape(name.removesuffix(".py"))
        imports = re.compile(rf"\b(?:from|import)\s+(?:[\w.]*\.)?{m}\b|\b{m}\.[A-Za-z_]")
        users = (i for i, s in enumerate(out) if imports.search(s.instruction))
        out.insert(next(users, len(out)) if detail else len(out), own)
        owners.add(id(own))
    if not any(s.description for s in specs):  # no specified code to own: the plan's own steps are its code
        return out
    named = set(outline.tree_paths(task)) | set(mentioned_files(task))
    return [s for s in out if id(s) in owners or not _writes(s) or _works(s, named)] or out


def file_detail(spec: outline.SpecFile) -> str:
    """What a step writing ``spec`` carries of the task: what it says of the file, and its interface as stubs to
    complete (interfaces first: later steps import names that exist); "" when it says nothing."""
    if not spec.description:
        return ""
    detail = f"From the task, {spec.path}:\n{spec.description}"
    if skeleton := outline.interface(spec.description):
        intro = "Its interface, to complete (keep every name and signature):"
        detail += f"\n\n{intro}\n{spec.path}\n```python\n{skeleton}```"
    return detail


def _works(step: Instruction, named: set[str]) -> bool:
    """Whether a step writes code (names a code file or a function) or a file the task names: not a README, a
    diagram or a document nobody asked for."""
    return _writes_code(step.instruction) or any(p in step.instruction for p in named)


def _no_file(step: Instruction) -> bool:
    """A step that names no code file: one that uses the specification's names may be writing them (a step that
    names its own file, a CLI calling them, writes that file)."""
    return not any(p.endswith(".py") for p in mentioned_files(step.instruction))


def _writes(step: Instruction) -> bool:
    """Not a step about tests: a file's description goes to the step that writes the file."""
    return not _TESTS_TITLE.search(step.title)


_TESTS_TITLE = re.compile(r"\b(?:test(?:s|ing)?|pytest|unittest)\b", re.IGNORECASE)


#: a name the specification gives a class (``class Name``) or a function or method (``name(``)
_SAID_NAME = re.compile(r"\bclass\s+([A-Za-z_]\w*)|\b([A-Za-z_]\w*)\(")
_WORD = re.compile(r"\b[A-Za-z_]\w*\b")
