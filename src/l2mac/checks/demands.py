"""What a step's instruction asks of the project, and what the project still lacks.

The instruction names the files to write ("Write app/core.py ...") and the functions and classes they hold,
with signatures ("load_todos(path: Path) -> list[Todo]"). A step passes only when those files exist, those
definitions exist with bodies (not a stub echoing the signature), and each module and named function is used
by a test. Read from the instruction's text, the project's syntax trees and, for a failing run, the check
report (API the tests invent, helpers called but never written). Pure functions: the control unit acts on them.
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Sequence

from l2mac.checks.layout import is_test_file, module_name

_PATH = r"([\w-]+(?:/[\w-]+)*\.(?:py|md|toml|html|css|js|txt|cfg|sh))\b"
#: "Write todo/core.py", "create the file app.py"; or "implement ... in solution.py", "test it ... in tests/x.py"
_TO_WRITE = re.compile(
    r"\b(?:write|create|add|update|modify|change|edit|extend)\s+(?:a |an |the |new ){0,2}(?:file |module )?"
    rf"(?:named |called )?[`'\"]?{_PATH}"
    rf"|\b(implement|tests?)\b([^.`]{{0,60}}?)\b(?:in|into)\s+(?:the file |the module )?[`'\"]?{_PATH}"
    # "add a new function f(x) to utils.py", "create a class in the existing models.py"
    r"|\b(?:add|create|write|define|implement)s?\s+(?:a |an |the |new ){0,2}(?:function|method|class)\b"
    r"([^.`]{0,60}?)\b(?:in|into|to)\s+(?:the )?(?:existing )?(?:file |module )?[`'\"]?([\w-]+(?:/[\w-]+)*\.py)\b",
    re.IGNORECASE,
)
#: words between "implement" and "in path" that say the file is another's: "the helper defined in utils.py"
_ELSEWHERE = re.compile(r"\b(?:defined|described|declared|using|uses|from|helpers?|not|never|existing)\b|n't", re.I)


#: words between "add a function" and "to path" that say the path is another thing's: "a function that wraps
#: the client in api.py", "a class whose fields mirror the Row in rows.py"
_OF_ANOTHER = re.compile(r"\b(?:that|which|whose|calls?|wraps?|reads?|mirrors?|inherits?|extends?|of|like)\b", re.I)

_NEGATED = re.compile(r"(?:\bnot|\bnever|n't)\s+$", re.IGNORECASE)


def _writes(m: re.Match[str]) -> str | None:
    """The file a match says the step writes; None for "implement ... using the helper in utils.py", and for
    "test ... in x.py" unless x.py is a test file."""
    if m.group(1):
        return m.group(1)
    if m.group(6):  # not "a function that calls the parser in parser.py"
        return None if _ELSEWHERE.search(m.group(5)) or _OF_ANOTHER.search(m.group(5)) else m.group(6)
    verb, gap, path = m.group(2).lower(), m.group(3), m.group(4)
    if _ELSEWHERE.search(gap) or (verb.startswith("test") and not is_test_file(path)):
        return None
    if verb == "tests" and not _WRITING_TESTS.search(m.string[max(0, m.start() - 25) : m.start()]):
        return None  # "run the tests in test_x.py", "the existing tests in tests/test_x.py still pass"
    return path


#: words before "tests ... in test_x.py" that say the step writes them
_WRITING_TESTS = re.compile(
    r"\b(?:add|adds|write|writes|create|creates|with|pytest|new|its|their)\s+(?:\w+\s+)?$", re.I
)


def _file_mentions(text: str) -> list[tuple[int, str]]:
    """Where ``text`` names a file the step writes, and the file, in order."""
    return [
        (m.start(), _in_folder(path, text[m.end() :]))
        for m in _TO_WRITE.finditer(text)
        if (path := _writes(m)) and not _NEGATED.search(text[max(0, m.start() - 12) : m.start()])
    ]


#: "... in the `pkg` directory": where a bare file name goes
_IN_FOLDER = re.compile(
    r"^[`'\"]?\s+(?:in|into|under)\s+(?:the\s+)?[`'\"]?([\w-]+(?:/[\w-]+)*)/?[`'\"]?\s+(?:directory|folder|package)\b"
)


def _in_folder(path: str, after: str) -> str:
    """``path`` in the folder the words after it name, when it is a bare file name ("x.py in the pkg folder");
    not "in the root (same, current, ...) directory"."""
    m = _IN_FOLDER.match(after)
    if m is None or "/" in path or m.group(1).lower() in _NOT_FOLDERS:
        return path
    return f"{m.group(1)}/{path}"


_NOT_FOLDERS = frozenset(
    {"root", "same", "current", "project", "top", "main", "this", "that", "parent", "its", "base", "working", "right"}
)


_CALLABLE = re.compile(r"(?<![\w.])([A-Za-z_][A-Za-z0-9_]*)\(")
#: a name written with what is in its parentheses, ``unique_slugify(text, taken)``: a signature or a call
SIGNATURE = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(([^()]*)\)")
#: calls an instruction may show that are not the project's to define: every builtin (print, SystemExit, ...)
_NOT_NAMES = frozenset(dir(builtins))


_NO_ATTRIBUTE = re.compile(r"'(\w+)' object has no attribute '(\w+)'")


def invented_attributes(report: str, instruction: str, sources: dict[str, str]) -> list[str]:
    """``Class.name`` the failing tests use that neither the step asks for nor the code defines: a small model's
    tests invent API (``Queue.peek``), then it rewrites the code instead of the test."""
    code = "\n".join(src for path, src in sources.items() if not is_test_file(path))
    out: list[str] = []
    for cls, name in _NO_ATTRIBUTE.findall(report):
        defined = re.search(rf"^\s*def {re.escape(name)}\b|^\s*{re.escape(name)}\s*[:=]", code, re.MULTILINE)
        if not re.search(rf"\b{re.escape(name)}\b", instruction) and not defined and f"{cls}.{name}" not in out:
            out.append(f"{cls}.{name}")
    return out


_UNDEFINED = re.compile(r"^([\w./-]+\.py):\d+: lint: F821 Undefined name `(\w+)`", re.MULTILINE)


def undefined_calls(report: str, sources: dict[str, str]) -> dict[str, list[str]]:
    """Per file, the undefined names it calls as functions and no project file defines: helpers a small model
    uses without writing them (``save_todos(...)``). Said plainly, it then writes them."""
    defined = set()
    for src in sources.values():
        defined |= set(re.findall(r"^\s*(?:def|class)\s+(\w+)", src, re.MULTILINE))
    out: dict[str, list[str]] = {}
    for path, name in _UNDEFINED.findall(report):
        called = re.search(rf"(?<![\w.]){re.escape(name)}\(", sources.get(path, ""))
        if called and name not in defined and name not in out.get(path, []):
            out.setdefault(path, []).append(name)
    return out


#: a line of a check report that names a place in a file: ``path.py:12: ...``
_PLACE = re.compile(r"^(?P<path>[\w./-]+\.py):(?P<line>\d+): ", re.MULTILINE)


def problem_lines(report: str, path: str) -> set[int]:
    """The lines of ``path`` a check report names (``path:line: ...``)."""
    return {int(m["line"]) for m in _PLACE.finditer(report) if m["path"] == path}


#: the header pytest gives each failure: ``____ test_name ____``
_FAILURE_HEADER = re.compile(r"^_{3,} .+ _{3,}$", re.MULTILINE)


def failing_function(
    report: str, sources: dict[str, str], code: list[str], examples: Sequence[str] = ()
) -> tuple[str, str, str | None] | None:
    """The function of ``code`` (the step's code files) that a failed check points at, as (file, name, class or
    None): where the first code problem is in one of them, the function holding that line; else the first of
    ``examples`` (the task's failing examples, ``function`` or ``Class.method``) that one of them defines; else
    where the first failure's traceback is, or the one function of them that the first failing test's failing
    statement calls (only a failing test: a code problem on a test file's line is the test file's to fix). None
    when nothing points at exactly one."""
    problems = report.split("Tests:")[0]  # the code problems a report lists first: the first of them
    for m in _PLACE.finditer(problems):
        if m["path"] in code and (found := _enclosing(sources.get(m["path"], ""), int(m["line"]))) is not None:
            return m["path"], *found
    for example in examples:
        owner, _, name = example.rpartition(".")
        defining = [(p, name, owner or None) for p in code if (name, owner or None) in _definitions(sources.get(p, ""))]
        if len(defining) == 1:
            return defining[0]
    failures = _FAILURE_HEADER.split(report)
    first = failures[1] if len(failures) > 1 else report
    places = [(m["path"], int(m["line"])) for m in _PLACE.finditer(first)]
    for path, line in reversed([p for p in places if p[0] in code]):  # a traceback: the innermost frame
        found = _enclosing(sources.get(path, ""), line)
        if found is not None:
            return path, *found
    tests = [p for p in places if is_test_file(p[0])]
    if not tests or len(failures) < 2:  # a line of a test file that no failing test names: a problem of the
        return None  # test file (seen: a test file's own copy of the function, and the code rewritten for it)
    path, line = tests[-1]
    statement = sources.get(path, "").splitlines()[line - 1 : line]
    called = set(re.findall(r"(\w+)\(", statement[0])) if statement else set()
    candidates = [(p, *d) for p in code for d in _definitions(sources.get(p, "")) if d[0] in called]
    return candidates[0] if len(candidates) == 1 else None


def _definitions(source: str) -> list[tuple[str, str | None]]:
    """The functions of a module and the methods of its classes, as (name, class or None)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    out: list[tuple[str, str | None]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((node.name, None))
        elif isinstance(node, ast.ClassDef):
            out += [(m.name, node.name) for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return out


def _enclosing(source: str, line: int) -> tuple[str, str | None] | None:
    """The function (or method, with its class) of ``source`` whose lines hold ``line``."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in tree.body:
        scope = [node] if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else []
        owner = node.name if isinstance(node, ast.ClassDef) else None
        if isinstance(node, ast.ClassDef):
            scope = [m for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for fn in scope:
            if fn.lineno <= line <= (fn.end_lineno or fn.lineno):
                return fn.name, owner
    return None


_NOT_TESTED_ITSELF = frozenset({"__init__.py", "__main__.py", "conftest.py", "setup.py"})


def untested_modules(paths: list[str], sources: dict[str, str]) -> list[str]:
    """The Python modules among ``paths`` that no test file both imports and holds a test function in: a step
    that must leave tests passes only when each module it writes is tested (seen: a CLI whose test file was
    left with no test passed on the tests of the module before it)."""
    tests = [
        src for p, src in sources.items() if is_test_file(p) and re.search(r"^\s*(?:async\s+)?def test", src, re.M)
    ]
    out = []
    for path in paths:
        if not path.endswith(".py") or is_test_file(path):
            continue
        leaf_file = path.rsplit("/", 1)[-1]
        if leaf_file in _NOT_TESTED_ITSELF and not (leaf_file == "__init__.py" and _defines(sources.get(path, ""))):
            continue  # a package's __init__.py is tested when it holds the package's code, not only imports
        module = module_name(path)
        package, _, leaf = module.rpartition(".")
        used = rf"\b{re.escape(module)}\b" + (
            rf"|from\s+{re.escape(package)}\s+import\s[^\n]*\b{leaf}\b" if package else ""
        )
        if not any(re.search(used, src) for src in tests):
            out.append(path)
    return out


def _defines(source: str) -> bool:
    """Whether ``source`` defines a function or class at its top level."""
    return re.search(r"^(?:async\s+def|def|class)\s", source, re.MULTILINE) is not None


def untested_functions(
    instruction: str, paths: list[str], sources: dict[str, str], methods: bool = False
) -> dict[str, list[str]]:
    """Per module among ``paths``, the functions the step names for it that it defines and that no test file
    importing it ever uses (calls, passes or names in a string that runs it, as ``python -m`` does): a step
    passed with a CLI whose tests called copies of the core functions and never main(), which crashed on
    every real command line. With ``methods``, the methods of its classes too (not the dunders, which tests
    reach through syntax rather than by name). A name any test uses counts, whatever it is used on (a test's
    ``json.load`` counts for a method ``load``): this finds functions no test can reach, not every gap."""
    tests = {p: src for p, src in sources.items() if is_test_file(p)}
    out: dict[str, list[str]] = {}
    for path in paths:
        if not path.endswith(".py") or is_test_file(path) or path not in sources:
            continue
        try:
            tree = ast.parse(sources[path])
        except SyntaxError:
            continue
        functions = (ast.FunctionDef, ast.AsyncFunctionDef)
        defined = {n.name for n in tree.body if isinstance(n, functions)}
        if methods:
            classes = [n for n in tree.body if isinstance(n, ast.ClassDef)]
            defined |= {m.name for c in classes for m in c.body if isinstance(m, functions) and m.name[:2] != "__"}
        wanted = [n for n in names_for_file(instruction, path) if n in defined]
        module = module_name(path)
        used: set[str] = set()
        for src in tests.values():
            try:
                test_tree = ast.parse(src)
            except SyntaxError:
                continue
            for node in ast.walk(test_tree):
                if isinstance(node, ast.Name):
                    used.add(node.id)
                elif isinstance(node, ast.Attribute):
                    used.add(node.attr)
                elif isinstance(node, ast.Constant) and isinstance(node.value, str) and module in node.value:
                    used.add("main")  # the module run as a program
        if missing := [n for n in wanted if n not in used]:
            out[path] = missing
    return out


def named_definitions(instruction: str) -> list[str]:
    """Functions and classes an instruction names with a signature, e.g. ``load(path: Path) -> list``; in the
    Python code it shows, its code's, not its docstrings' prose. Seen on ClassEval_4 at 5d50fc8: a docstring's
    "return average grade(float)" made ``grade`` a function the step must define, and the step failed on
    "solution.py never defined grade" after four whole-class answers (up to 10 minutes each here)."""
    return [n for n in dict.fromkeys(_CALLABLE.findall(_BLOCK.sub(_code_only, instruction))) if n not in _NOT_NAMES]


#: a fenced block, its body in group 1
_BLOCK = re.compile(r"```[\w+-]*[^\n]*\n(.*?)```", re.DOTALL)


def _code_only(block: re.Match[str]) -> str:
    """A fenced Python block as its code without its functions' and classes' docstrings, a class written as
    ``class Name():`` so that it is named (as it is when it does not parse)."""
    try:
        tree = ast.parse(block.group(1))
    except SyntaxError:
        return block.group(0)
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and ast.get_docstring(node):
            node.body = node.body[1:] or [ast.Pass()]
    return re.sub(r"^(\s*class \w+):", r"\1():", ast.unparse(tree), flags=re.MULTILINE)


def missing_definitions(instruction: str, sources: dict[str, str]) -> list[str]:
    """Named functions/classes that no non-test module of the project defines (at any level), or defines as a
    stub only (a docstring, ``pass``, ``...`` or ``raise NotImplementedError``: the 1.5B model often answers
    a "write f" with the signature and docstring it was given). Interface methods (of a Protocol or an ABC, or
    marked abstract) may be stubs. A name a module imports (``Flask``, ``Counter``, a sibling module's class) is
    not the project's to define: whether that import works is the import check's business."""
    defined: set[str] = set()
    for rel, source in sources.items():
        if is_test_file(rel):
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        defined |= imported_names(tree)
        interfaces = {id(f) for c in ast.walk(tree) if isinstance(c, ast.ClassDef) and _is_interface(c) for f in c.body}
        defined |= {n.name for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
        defined |= {
            n.name
            for n in ast.walk(tree)
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
            and (id(n) in interfaces or _is_abstract(n) or _empty_constructor(n) or not is_stub_shaped(n))
        }
    return [n for n in named_definitions(instruction) if n not in defined]


def imported_names(tree: ast.Module) -> set[str]:
    """The names a module binds by importing them, anywhere in it (``import a.b`` binds ``a``)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            out |= {a.asname or a.name.split(".")[0] for a in node.names if a.name != "*"}
    return out


def stubbed(names: list[str], sources: dict[str, str]) -> dict[str, str]:
    """For each named function that a non-test module defines as a stub only: its file and the stub's source
    (the first such file per name; one stub per file)."""
    out: dict[str, str] = {}
    for rel, source in sources.items():
        if is_test_file(rel) or rel in out:
            continue
        try:
            tree = ast.parse(source)
        except SyntaxError:
            continue
        for node in tree.body:
            functions = (ast.FunctionDef, ast.AsyncFunctionDef)
            if isinstance(node, functions) and node.name in names and is_stub_shaped(node):
                out[rel] = ast.get_source_segment(source, node) or ""
                break
    return out


def is_stub_definition(fn: ast.FunctionDef | ast.AsyncFunctionDef, owner: ast.ClassDef | None = None) -> bool:
    """Whether ``fn`` (a method of ``owner``, if given) is a stub that is the project's to complete: not an
    abstract method, an overload, or a method of an interface (a Protocol or an ABC), which are meant to be; nor
    a constructor that takes nothing and says nothing (``def __init__(self): pass``), which is complete as it is.
    Seen on ClassEval_24 at 42ff847: asked for the body of such an ``__init__``, the 1.5B model answered ``pass``
    each time, and the step failed on "never defined __init__" with the class right."""
    if _is_abstract(fn) or (owner is not None and _is_interface(owner)):
        return False
    if owner is not None and _empty_constructor(fn):
        return False
    return is_stub_shaped(fn)


def _empty_constructor(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    args = fn.args
    takes = [*args.posonlyargs, *args.args, *args.kwonlyargs, *filter(None, [args.vararg, args.kwarg])]
    return fn.name == "__init__" and len(takes) <= 1 and ast.get_docstring(fn) is None and is_stub_shaped(fn)


def is_stub_shaped(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``fn``'s body is only a docstring, ``pass``, ``...`` or ``raise NotImplementedError``."""
    body = list(fn.body)
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    for node in body:
        if isinstance(node, ast.Pass) or (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)):
            continue
        if isinstance(node, ast.Raise) and "NotImplementedError" in ast.unparse(node):
            continue
        return False
    return True


def _is_abstract(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    return any("abstract" in ast.unparse(d) or "overload" in ast.unparse(d) for d in fn.decorator_list)


def _is_interface(cls: ast.ClassDef) -> bool:
    return any(ast.unparse(b).split(".")[-1] in {"Protocol", "ABC", "ABCMeta"} for b in cls.bases) or any(
        "ABCMeta" in ast.unparse(k.value) for k in cls.keywords
    )


def names_for_file(instruction: str, path: str) -> list[str]:
    """The names with signatures in the part of the instruction about ``path`` (up to the next file it names)."""
    start = instruction.find(path)
    if start < 0:
        return []
    rest = instruction[start + len(path) :]
    # the section ends at the next code file named: a test file's mention does not end it (tests define nothing,
    # so the test functions it names are left out)
    end = next((at for at, p in _file_mentions(rest) if not is_test_file(p)), len(rest))
    # and the names said before it where a function is added to it ("add a function f(x) to path")
    before = " ".join(m.group(5) for m in _TO_WRITE.finditer(instruction) if m.group(6) and _writes(m) == path)
    names = named_definitions(f"{before} {rest[:end]}")
    return [n for n in dict.fromkeys(names) if not n.lower().startswith("test")]


def mentioned_definitions(instruction: str, source: str) -> list[str]:
    """The top-level classes and functions of ``source`` that ``instruction`` mentions by name, with a signature
    or not ("a class URLShortener that handles ..."): the step's to complete where they are stubs."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return []
    kinds = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    names = [n.name for n in tree.body if isinstance(n, kinds)]
    return [n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}\b", instruction)]


def named_files(instruction: str) -> list[str]:
    """The files an instruction says to write ("Write todo/core.py ..."), in order, without repeats."""
    return list(dict.fromkeys(path for _, path in _file_mentions(instruction)))


_NAMED_FILE = re.compile(r"(?<![\w/.-])([\w-]+(?:/[\w-]+)*\.(?:py|md|txt|json|toml|yaml|yml|cfg|ini|html|css|js|sh))\b")


def mentioned_files(instruction: str) -> list[str]:
    """Every file an instruction mentions, whatever it says of it, in order."""
    return [m.group(1) for m in _NAMED_FILE.finditer(instruction)]


def example_path(instruction: str, domain: str) -> str:
    """A file the step names (not a test), for the prompts' examples: small models copy an example's path (seen:
    ``app/models.py``, once the example of the write_files schema, written in place of the step's password.py)."""
    named = mentioned_files(instruction)
    own = [p for p in named if not is_test_file(p)]
    if own or named:
        return (own or named)[0]
    return "chapters/01-chapter.md" if domain == "book" else "main.py"


def example_values(instruction: str, domain: str, focus: str | None = None) -> dict[str, str]:
    """What the prompts' examples show: ``focus`` (the file asked for) or else a file the step names, since a
    small model writes whatever path an example shows; and the module tests import, a code file's (asked for a
    test file, the example of an import was once ``from tests.test_solution import ...``)."""
    example = focus or example_path(instruction, domain)
    code = example if not is_test_file(example) else example_path(instruction, domain)
    module = module_name(code) if code.endswith(".py") and not is_test_file(code) else "main"
    return {"example_path": example, "example_module": module}
