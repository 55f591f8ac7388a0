"""The examples a step's instruction gives, run as a check the model cannot edit.

A task often shows what its code must do as doctest examples in the docstrings it gives (``>>> area(2)`` then
``12.566370614359172``). Unlike the tests a small model writes itself, they are the task's own: right by
definition, and out of the model's reach. Each docstring's examples are run as one doctest, in the globals of
the project module that defines the function or class they belong to, inside the sandbox on the project's
interpreter (``examples_driver.py``), in a copy of the project (what they write is not left in it); those that
fail are reported with what was expected and what came out, and count before the model's own tests in how close
a step is to passing, so a step never keeps a state that breaks them for one that passes its own tests. Seen on
HumanEval+: right first drafts rewritten to fit a wrong test the model wrote (``longest()`` lower-casing its
answer), where the docstring's examples would have held them.

A task also states examples in its prose (``screaming_snake('DeviceType') == 'DEVICE_TYPE'``): a call of a
function by its plain name with literal arguments, compared with ``==`` to a literal. Those are run the same way,
as one doctest per function (``stated_examples``), from the task and from the step's instruction alike, since a
plan written by a small model often drops them from the instruction that needs them.

A docstring is left out when its examples use a name that neither they, the task's code, its imports nor the
builtins define (an instance made in another method's docstring), and an example of a function that is still
a stub is not run yet: it is a later step's. One is left out after it runs, too, when its first failure is an
example that shows what it reads from a file it names first and nothing made (``read_csv('read_test.csv')``
showing the rows), unless another docstring names that file and finds it: it needs a file the task never gives.
"""

from __future__ import annotations

import ast
import builtins
import doctest
import json
import re
from dataclasses import dataclass
from importlib.resources import files as package_files

from l2mac.checks.contract import mended
from l2mac.checks.demands import is_stub_definition
from l2mac.checks.layout import is_test_file, module_name
from l2mac.checks.python import defined_at_top_level
from l2mac.checks.runner import ProcessResult, Runner
from l2mac.checks.tests import stable_output
from l2mac.fenced import fenced_blocks
from l2mac.store import FileStore, project_copy

#: characters of doctest's report kept per failing docstring
REPORT_CHARS = 600


@dataclass(frozen=True)
class Example:
    """The examples of one docstring: whose they are (``Class.method`` or ``function``), the top-level name
    they need (``Class``), and the docstring's text."""

    name: str
    owner: str
    text: str


@dataclass(frozen=True)
class ExampleRun:
    tried: int  # docstrings run (but those whose output varies)
    failed: tuple[tuple[str, str], ...]  # (name, doctest's report) of each that failed
    varied: tuple[str, ...] = ()  # docstrings left out: run again on the same code, they showed other output
    needs: tuple[tuple[str, str], ...] = ()  # (name, file) of each left out: it reads a file the task never gives

    def failures(self) -> str:
        """Each failing docstring's name and what doctest said."""
        return "\n".join(f"{name}:\n{text}" for name, text in self.failed)


def given_examples(instruction: str) -> list[Example]:
    """The doctest examples in the docstrings of the Python code ``instruction`` shows, one per docstring."""
    found: list[Example] = []
    for path, body in fenced_blocks(instruction):
        if path is not None and not path.endswith(".py"):
            continue
        try:
            tree = ast.parse(mended(body))
        except SyntaxError:
            continue
        known = _defined(tree) | set(dir(builtins))
        for node, owner in _documented(tree):
            text = ast.get_docstring(node, clean=True) or ""
            name = node.name if owner is None else f"{owner.name}.{node.name}"
            if ">>>" in text and _self_contained(text, known):
                found.append(Example(name, (owner or node).name, _without_malformed(text)))
    return found


def _without_malformed(text: str) -> str:
    """``text`` with each example whose expected output is a literal no code can print (it does not parse: a
    brace missing, say) marked ``+SKIP``. Seen on ClassEval: ``{'user': {'name': 'user1'}`` held a step through
    two rewrites and every attempt; the other examples of the docstring still hold."""
    try:
        parsed = doctest.DocTestParser().parse(text)
    except ValueError:
        return text
    lines = text.splitlines()
    for example in parsed:
        if not isinstance(example, doctest.Example):
            continue
        want = example.want.strip()
        if want[:1] not in ("{", "[", "(", "'", '"') or "\n" in want:
            continue
        try:
            ast.parse(want, mode="eval")
        except SyntaxError:
            lines[example.lineno] += "  # doctest: +SKIP"
    return "\n".join(lines)


def task_examples(instruction: str, task: str = "") -> list[Example]:
    """The examples a step is held to: its instruction's docstring examples, then those the task's code and
    prose state (each once), as the task's examples hold for whichever step writes their function."""
    found: list[Example] = []
    for example in [*given_examples(instruction), *stated_examples(instruction), *given_examples(task)]:
        if example not in found:
            found.append(example)
    for example in stated_examples(task):
        if all(e.name != example.name for e in found):  # the instruction's own take on a function comes first
            found.append(example)
    return found


#: a call by a plain name (not an attribute: ``x.f(`` is a method of something the example does not make)
_CALL = re.compile(r"(?<![\w.])([A-Za-z_]\w*)\(")
#: where a literal after ``==`` may end: punctuation, a space, a code span's backtick, the line's end
_LITERAL_END = re.compile(r"(?=[,;:`)\]}\s])|\.(?=\s|$)|$", re.MULTILINE)


_BUILTINS = frozenset(dir(builtins))


#: an operator after a literal: the literal is only part of what the call is compared with
_OPERATOR_NEXT = re.compile(r"\s*(?:[-+*/%@&|^<>=\[(]|\.\w|\b(?:if|or|and not|else)\b)")
#: the words that introduce an example: what comes before them is another clause ("Currently, f(1) == 3" and
#: "Bug: f(1) == 3" are no examples)
_CLAUSE_BREAK = re.compile(r"\b(?:e\.g\.|i\.e\.|for example|for instance|such as)", re.IGNORECASE)
#: words near a statement that say it is not what the code must do: a bug, a negation, a condition
_NOT_AN_EXAMPLE = re.compile(
    r"\b(?:not|never|wrong|incorrect|bug|buggy|broken|currently|instead|isn't|aren't|shouldn't|doesn't|"
    r"if|while|elif|else|unless|when)\b",
    re.IGNORECASE,
)


def stated_examples(text: str) -> list[Example]:
    """The ``name(literal, ...) == literal`` examples stated in ``text``'s prose or code, one per function;
    not a call with no arguments, nor one said near words that make it no example ("currently f(1) == 3, which
    is wrong", "not f(1) == 4", "0 if main() == 0")."""
    by_name: dict[str, list[str]] = {}
    for match in _CALL.finditer(text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        line_end = text.find("\n", match.end())
        # after the words that introduce it: "until the slug is not in the set taken, e.g. f(...) == ..."
        # negates the clause before, not the example
        before = _CLAUSE_BREAK.split(text[max(line_start, match.start() - 40) : match.start()])[-1]
        after = text[match.end() : line_end if line_end >= 0 else len(text)][:80]
        if _NOT_AN_EXAMPLE.search(before) or _NOT_AN_EXAMPLE.search(after):
            continue
        stated = _stated_at(text, match.start(), match.end() - 1)
        if stated is not None and stated not in by_name.setdefault(match.group(1), []):
            by_name[match.group(1)].append(stated)
    return [Example(n, n, "\n".join(s)) for n, s in by_name.items() if s and n not in _BUILTINS]


def _stated_at(text: str, start: int, paren: int) -> str | None:
    """The doctest of the ``call == literal`` that begins at ``start`` (its ``(`` at ``paren``), if one does."""
    close = _closing(text, paren)
    if close is None:
        return None
    call = text[start : close + 1]
    rest = text[close + 1 :]
    equals = re.match(r"\s*==\s*", rest)
    if equals is None or "\n" in equals.group():
        return None
    try:
        node = ast.parse(call, mode="eval").body
        if not isinstance(node, ast.Call) or not (node.args or node.keywords):  # main() == 0: code, not an example
            return None
        if not all(_literal(a) for a in node.args) or not all(_literal(k) for k in node.keywords):
            return None
    except SyntaxError:
        return None
    after = rest[equals.end() :]
    for end in _LITERAL_END.finditer(after):  # the shortest text that is a literal: "3" of "3, with tests"
        if end.start() == 0:
            continue
        source = after[: end.start()]
        try:
            value = ast.literal_eval(source)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if _OPERATOR_NEXT.match(after[end.start() :]):  # "== 'a' + 'b'": the literal is not the whole side
            return None
        if _has_float(value):  # "area(2) == 12.57" is a rounded figure more often than an exact one
            return None
        if _shown_exactly(value):  # doctest compares what is shown: the value's repr, so a failure shows it too
            return f">>> {call}\n{value!r}"
        return f">>> {call} == {source.strip()}\nTrue"
    return None


def _has_float(value: object) -> bool:
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_has_float(v) for v in value)
    if isinstance(value, dict):
        return any(_has_float(v) for v in [*value.keys(), *value.values()])
    return isinstance(value, (float, complex))


def _literal(node: ast.expr | ast.keyword) -> bool:
    try:
        ast.literal_eval(node.value if isinstance(node, ast.keyword) else node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False
    return not isinstance(node, ast.keyword) or node.arg is not None


def _shown_exactly(value: object) -> bool:
    """Whether ``x == value`` is the same as ``repr(x) == repr(value)`` for what a function would return: not
    for numbers and booleans (3 == 3.0, True == 1), sets or dicts (their order)."""
    if isinstance(value, (list, tuple)):
        return all(_shown_exactly(v) for v in value)
    return value is None or isinstance(value, (str, bytes))


def _closing(text: str, paren: int) -> int | None:
    """Where the bracket opened at ``paren`` closes on the same line (quotes respected), if it does."""
    depth, quote = 0, ""
    for i in range(paren, len(text)):
        c = text[i]
        if c == "\n":
            return None
        if quote:
            if c == quote and text[i - 1] != "\\":
                quote = ""
        elif c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return None


def run_examples(
    examples: list[Example], store: FileStore, runner: Runner, python: str, timeout_s: float
) -> ExampleRun | None:
    """The examples whose function the project defines with a body, run; None when there are none to run."""
    if not examples:
        return None
    where, stubs = _definitions(store)
    ready = [(e, where[e.owner]) for e in examples if e.owner in where and e.name not in stubs]
    if not ready:
        return None
    spec = [{"module": module, "name": e.name, "text": e.text} for e, module in ready]
    # run on a copy of the project: what the examples write (a CSV, a database) is neither left in the project
    # nor found by a later run, which would then judge the same code otherwise (seen on ClassEval_25: a second
    # run passed load_cookies on the cookies.json the first run's save_cookies example had left)
    with project_copy(store, "l2mac-examples-") as copy:
        rows, result = _driven(spec, copy, runner, python, timeout_s)
    if rows is None:  # they never finished (a loop, a crash): all failed
        said = "timed out" if result.timed_out else _short(result.output) or f"exit status {result.returncode}"
        return ExampleRun(len(ready), tuple((e.name, f"could not be run: {said}") for e, _ in ready))
    # a docstring whose examples read a file that one of them names first and nothing made (a CSV they show the
    # rows of) needs what the task never gives: no code passes it, and right code was rewritten to try (seen on
    # ClassEval_26, its draft's read_csv right); it is left out, and the file's reading is left to the tests;
    # but not when another docstring names the file and finds it (one writes it, and this one reads it back)
    needs = tuple(
        (r.name, r.missing)
        for r in rows
        if r.failed and r.missing and all(o.missing == r.missing for o in rows if r.missing in o.named)
    )
    left_out = {name for name, _ in needs}
    failing = {r.name: r.report for r in rows if r.failed and r.name not in left_out}
    # the failing docstrings are run again, in a new process (the hash seed pinned in both, so a set's order
    # is the same each time) on a new copy of the files (so a database or a file the first run wrote is not
    # there): one whose output then differs shows what varies from run to run (a shuffle,
    # the time), which no code can match (seen on ClassEval_12: create_deck's example shows one shuffle, and
    # two rounds of resampling could not pass it)
    again: list[_Row] | None = []
    if failing:
        with project_copy(store, "l2mac-examples-") as copy:
            again = _driven([s for s in spec if s["name"] in failing], copy, runner, python, timeout_s)[0]
    varied = tuple(r.name for r in again or [] if stable_output(failing.get(r.name, "")) != stable_output(r.report))
    failed = tuple((name, _short(report)) for name, report in failing.items() if name not in varied)
    return ExampleRun(len(ready) - len(varied) - len(needs), failed, varied, needs)


@dataclass(frozen=True)
class _Row:
    """The driver's word on one docstring: its name, how many examples failed, doctest's report, the file it
    reads that nothing made (if that is its first failure) and the files its examples name."""

    name: str
    failed: int
    report: str
    missing: str | None
    named: frozenset[str]


def _driven(
    spec: list[dict[str, str]], store: FileStore, runner: Runner, python: str, timeout_s: float
) -> tuple[list[_Row] | None, ProcessResult]:
    """The driver's rows for ``spec`` (None when it never finished), and its run; each report with the project's
    folder as ``.`` (a traceback names it, and the same failure run in a copy of the project names the copy)."""
    driver = package_files("l2mac.checks").joinpath("examples_driver.py").read_text(encoding="utf-8")
    # -I: a project file named like a module the driver imports (json.py) must not stand in for it; -B, as
    # PYTHONDONTWRITEBYTECODE (which -I ignores): a file rewritten within the second at the same size would
    # otherwise be run from its stale bytecode
    result = runner.run([python, "-I", "-B", "-c", driver, json.dumps(spec)], store.root, timeout_s)
    try:
        root = str(store.root)
        rows = [
            _Row(
                str(r["name"]),
                int(r["failed"]),
                str(r["report"]).replace(root, "."),
                str(r["missing"]) if r.get("missing") else None,
                frozenset(str(f) for f in r.get("named") or []),
            )
            for r in json.loads(result.stdout.strip().splitlines()[-1])
        ]
        return rows, result
    except (IndexError, ValueError, KeyError, TypeError, AttributeError):
        return None, result


_Node = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef


def _documented(tree: ast.Module) -> list[tuple[_Node, ast.ClassDef | None]]:
    """Top-level functions and classes, and the methods of the classes, each with its class (or None)."""
    out: list[tuple[_Node, ast.ClassDef | None]] = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append((node, None))
        if isinstance(node, ast.ClassDef):
            out += [(m, node) for m in node.body if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return out


def _defined(tree: ast.Module) -> set[str]:
    """The names the task's code binds at its top level: its definitions, assignments and imports."""
    imported = {
        (a.asname or a.name).split(".")[0]
        for node in tree.body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        for a in node.names
    }
    return defined_at_top_level(tree) | imported


def _self_contained(text: str, known: set[str]) -> bool:
    """Whether every name the examples read is known or bound by an earlier example of the same docstring."""
    try:
        examples = doctest.DocTestParser().get_examples(text)
    except ValueError:  # malformed (an example's indentation)
        return False
    bound = set(known)
    for example in examples:
        try:
            tree = ast.parse(example.source)
        except SyntaxError:
            return False
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                bound.add(node.id)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id not in bound:
                return False
    return bool(examples)


def _definitions(store: FileStore) -> tuple[dict[str, str], set[str]]:
    """Top-level name -> the module that defines it (where one module does), and the names (``f``,
    ``Class.method``) still defined as stubs."""
    where: dict[str, set[str]] = {}
    stubs: set[str] = set()
    for rel in store.list_files():
        if not rel.endswith(".py") or is_test_file(rel):
            continue
        try:
            tree = ast.parse(store.read_text(rel))
        except (SyntaxError, ValueError, UnicodeError):
            continue
        module = module_name(rel)
        for node, owner in _documented(tree):
            if owner is None:
                where.setdefault(node.name, set()).add(module)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and is_stub_definition(node, owner):
                stubs.add(node.name if owner is None else f"{owner.name}.{node.name}")
    return {n: next(iter(m)) for n, m in where.items() if len(m) == 1}, stubs


#: lines of doctest's report that are doctest's own machinery, not the example's code
_MACHINERY = re.compile(
    r"^\s*(?:\*{5,}|Traceback \(most recent call last\)|exec\(compile|File \".*(?:doctest\.py|<doctest ))"
)


def _short(text: str) -> str:
    """Doctest's report without its own frames (an exception's traceback through doctest.py), from the start:
    which example, what it expected, and what came out or was raised where in the project."""
    lines = text.splitlines()

    def machinery(i: int) -> bool:  # its own line, or the source line shown under one of its frames
        return bool(_MACHINERY.match(lines[i])) or (
            i > 0 and "File" in lines[i - 1] and bool(_MACHINERY.match(lines[i - 1]))
        )

    kept = [line for i, line in enumerate(lines) if line.strip() and not machinery(i)]
    out = "\n".join(kept)
    return out if len(out) <= REPORT_CHARS else out[:REPORT_CHARS] + " ..."
