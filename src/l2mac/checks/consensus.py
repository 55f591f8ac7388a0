"""Which implementation to keep and which tests to doubt, from how implementations and tests agree.

A small model's own tests are often wrong (an expected value miscounted, an API the step never asked for), and
shown a failing test it rewrites the code to match, breaking code that was right. Following CodeT (Chen et al.,
2022, "dual execution agreement"), the control unit samples a few more implementations of the file under test,
written without seeing the tests, runs the tests against each, and keeps the implementation whose passed-test
set is shared by the most implementations and holds the most tests. The tests that implementation fails are
*disputed*: when independent implementations agree on failing them, the test is the likelier culprit.

This module is the pure part: whether a failed check can be weighed, reading per-test outcomes and sampled
answers, and choosing. Sampling and running are the control unit's.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from l2mac.checks.layout import is_test_file
from l2mac.checks.python import defined_at_top_level
from l2mac.checks.tests import problem_files
from l2mac.fenced import fenced_files, unnamed_blocks


@dataclass(frozen=True)
class Agreement:
    """The choice among implementations (index 0 is the current one)."""

    chosen: int
    supporters: int  # implementations that pass exactly the tests ``chosen`` passes (itself included)
    passed: frozenset[str]
    disputed: tuple[str, ...]  # tests ``chosen`` fails, in the order they were first seen
    scores: tuple[int, ...]  # per implementation: supporters x tests passed (0 for one that ran no test)
    passes: Mapping[str, int]  # per test: how many implementations pass it
    implementations: int
    #: tests the current code and enough others fail on the same expectation with the same values (``assert 14
    #: == 36``): the implementations agree on what the code does, and the test expects something else
    agreed: Mapping[str, str] = field(default_factory=dict)  # test: the message they all fail it with


def choose(
    outcomes: Sequence[Mapping[str, bool]],
    failures: Sequence[Mapping[str, str]] = (),
    rank: Sequence[tuple[int, ...]] = (),
    problems: Sequence[int] = (),
) -> Agreement:
    """The implementation to keep: the one whose set of passed tests has the highest CodeT score (how many
    implementations pass exactly that set, times its size). Ties go to the one with the fewest ``problems``
    (per implementation, the code problems a step's checks fail on), then to the current implementation (index
    0), then to the earliest, so an equal alternative never churns the code. ``failures``, per implementation,
    the message of each test it failed, tell which tests they all fail the same way. ``rank``, per
    implementation, is evidence that outranks the tests (how many of the task's own examples it passes, then
    how few code problems it adds), compared in order: the best ranked is kept, the tests choosing among those."""
    if not outcomes:
        raise ValueError("no implementations to choose from")
    tests = list(dict.fromkeys(t for o in outcomes for t in o))
    passed = [frozenset(t for t, ok in o.items() if ok) for o in outcomes]
    support = {s: sum(1 for p in passed if p == s) for s in passed}
    scores = tuple(support[p] * len(p) if outcomes[i] else 0 for i, p in enumerate(passed))
    if rank and len(rank) != len(outcomes):
        raise ValueError(f"{len(rank)} ranks for {len(outcomes)} implementations")
    if problems and len(problems) != len(outcomes):
        raise ValueError(f"{len(problems)} problem counts for {len(outcomes)} implementations")
    ranks = list(rank) or [()] * len(outcomes)
    issues = list(problems) or [0] * len(outcomes)
    best = max(range(len(outcomes)), key=lambda i: (ranks[i], scores[i], -issues[i], i == 0, -i))
    return Agreement(
        chosen=best,
        supporters=support[passed[best]],
        passed=passed[best],
        disputed=tuple(t for t in tests if t not in passed[best]),
        scores=scores,
        passes={t: sum(1 for p in passed if t in p) for t in tests},
        implementations=len(outcomes),
        agreed={t: m for t in tests if (m := _failed_alike(t, failures, len(outcomes), errors=not any(passed)))},
    )


#: implementations (the current one among them) that must fail a test with one message for it to be agreement
MIN_ALIKE = 3
#: failure messages that state an expectation the code did not meet (not an error the test ran into)
_EXPECTATION = re.compile(r"^(?:assert |AssertionError|Failed: DID NOT RAISE)")
#: an error raised with a message of its own (``sqlite3.OperationalError: unable to open database file``)
_ERROR = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception): \S")
#: errors from where the code runs rather than from the test: a missing package or file, no network, a timeout
_ENVIRONMENT = re.compile(
    r"^(?:[\w.]*\.)?(?:ModuleNotFound|Import|\w*Connection\w*|Timeout|FileNotFound|Permission|OS)Error\b"
)
#: messages that say nothing of what the code did: no value (``assert False``), or code that returned nothing
_SAYS_NOTHING = re.compile(r"^assert (?:False|not \w+)$|\bNone\b")


def _failed_alike(test: str, failures: Sequence[Mapping[str, str]], implementations: int, errors: bool) -> str:
    """The expectation message ``test`` failed with in the current implementation (index 0) and in at least
    :data:`MIN_ALIKE` implementations in all, when it says what the code did; else "". A small model's samples
    are noisy (seen: three of four computing 14 where the test expected 36, the fourth raising a TypeError), so
    a majority that includes the current code is the agreement, not every sample. pytest cuts a long message
    to the terminal's width (ending it with ``...``): two cut alike may differ after the cut. With ``errors``
    (no implementation passes any test), one error raised alike counts too: every implementation of a store
    failed every test with ``unable to open database file``, for the tests passed a folder as its path; where
    some tests pass, an error alike is as likely a bug they share (an empty list indexed)."""
    if len(failures) != implementations or not failures:
        return ""
    message = failures[0].get(test)
    if message is None or message.endswith("...") or _SAYS_NOTHING.search(message):
        return ""
    if not (_EXPECTATION.match(message) or (errors and _ERROR.match(message) and not _ENVIRONMENT.match(message))):
        return ""
    return message if sum(1 for f in failures if f.get(test) == message) >= MIN_ALIKE else ""


def test_functions(tree: ast.Module) -> dict[tuple[str, ...], ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions of a test module by their pytest key: ``("test_f",)``, ``("TestC", "test_f")``."""
    functions: dict[tuple[str, ...], ast.FunctionDef | ast.AsyncFunctionDef] = {}

    def collect(body: list[ast.stmt], prefix: tuple[str, ...]) -> None:
        for node in body:
            if isinstance(node, ast.ClassDef):
                collect(node.body, (*prefix, node.name))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[(*prefix, node.name)] = node

    collect(tree.body, ())
    return functions


def relevant_tests(source: str, path: str, module: str, defined: set[str] | None = None) -> set[str]:
    """The ids (``path::test_f``, ``path::TestC::test_f``) of the tests in ``source`` that use ``module``: they
    reference a name imported from it (or the module itself, or a fixture or helper that does), or name it in
    a string (a test that runs ``python -m todo.cli``). Only these are evidence about an implementation of
    ``module``: a test of another module, copied into the same file, fails with every implementation of this
    one (seen: core tests copied into tests/test_cli.py were removed as "disputed" by the CLI's samples).
    With ``defined`` (the names the module itself defines), a name it only imports and re-exports does not
    count: ``from todo.cli import load_todos`` tests todo.core's function."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return set()
    parent, _, leaf = module.rpartition(".")
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            for alias in node.names:
                if node.module == module:
                    if alias.name == "*":
                        names.add("*")
                    if defined is None or alias.name in defined:
                        names.add(alias.asname or alias.name)
                elif node.module == parent and alias.name == leaf:
                    names.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == module and alias.asname:
                    names.add(alias.asname)
    functions = test_functions(tree)
    mention = re.compile(rf"\b{re.escape(module)}\b|\b{re.escape(module.replace('.', '/'))}\.py\b")
    if "*" in names:
        return {"::".join((path, *key)) for key, fn in functions.items() if fn.name.startswith("test")}
    keys = _tests_reaching(functions, names, lambda fn: bool(mention.search(ast.unparse(fn))))
    return {"::".join((path, *key)) for key in keys}


#: the methods of a test class that make what its tests use: what they use, every test of the class uses
_SETUPS = frozenset({"setUp", "setup_method", "setup", "setUpClass", "setup_class"})


def _tests_reaching(
    functions: Mapping[tuple[str, ...], ast.FunctionDef | ast.AsyncFunctionDef],
    names: Collection[str],
    mentions: Callable[[ast.FunctionDef | ast.AsyncFunctionDef], bool] = lambda fn: False,
    *,
    attributes: bool = False,
) -> set[tuple[str, ...]]:
    """The keys of the tests among ``functions`` (a test module's, by :func:`test_functions`) that use one of
    ``names`` (a name read, or a parameter so named; with ``attributes``, also an attribute read: ``obj.name``)
    or that ``mentions`` holds for, directly or through a fixture or helper that does (by its name, or as a
    parameter), or through their class's ``setUp``."""
    reached = set(names)

    def uses(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
        params = {a.arg for a in [*fn.args.posonlyargs, *fn.args.args, *fn.args.kwonlyargs]}
        read = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name)}
        if attributes:
            read |= {n.attr for n in ast.walk(fn) if isinstance(n, ast.Attribute)}
        return bool((params | read) & reached) or mentions(fn)

    changed = True
    while changed:  # fixtures and helpers that use the names make their users reach them too
        changed = False
        for fn in functions.values():
            if not fn.name.startswith("test") and fn.name not in reached and uses(fn):
                reached.add(fn.name)
                changed = True
    set_up = {key[:-1] for key, fn in functions.items() if fn.name in _SETUPS and len(key) > 1 and uses(fn)}
    return {key for key, fn in functions.items() if fn.name.startswith("test") and (key[:-1] in set_up or uses(fn))}


def callers(source: str, names: Collection[str]) -> set[str]:
    """``names`` and the functions (and methods) of ``source`` that use one of them (call it, or pass it on),
    directly or through one another, by their short names: what a wrong ``names`` makes wrong too. Only
    ``names`` when it does not parse."""
    reached = set(names)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return reached
    uses: dict[str, set[str]] = {}  # by short name: two classes' methods of one name are one function here
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            uses.setdefault(fn.name, set()).update(_read(n) for n in ast.walk(fn))
    changed = True
    while changed:
        new = {name for name, read in uses.items() if name not in reached and read & reached}
        reached |= new
        changed = bool(new)
    return reached


def _read(node: ast.AST) -> str:
    """The name ``node`` reads (``name``, or ``obj.name``'s attribute), if it is one: a function is used by a
    call, and by being passed on (``map(self.parse, lines)``)."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def reaching_tests(files: Mapping[str, str], test_ids: Sequence[str], names: Collection[str]) -> set[str]:
    """The tests of ``test_ids`` (in ``files``, path -> text) that use one of ``names`` (``name(...)``,
    ``obj.name(...)``, any mention), in their own code or through a fixture, a helper or their class's
    ``setUp``; a test that cannot be found or read counts as one that does."""
    found: set[str] = set()
    by_file: dict[str, list[str]] = {}
    for test in test_ids:
        by_file.setdefault(test.split("::")[0], []).append(test)
    for path, tests in by_file.items():
        try:
            functions = test_functions(ast.parse(files.get(path, "")))
        except SyntaxError:
            found.update(tests)
            continue
        using = _tests_reaching(functions, names, attributes=True)
        found.update(t for t in tests if _key(t) not in functions or _key(t) in using)
    return found


def remove_tests(source: str, test_ids: Sequence[str]) -> tuple[str, list[str]]:
    """``source`` without the test functions ``test_ids`` name (``path::test_f``, ``path::TestC::test_f``, with
    or without ``[params]``), decorators included; and the ids removed. Unchanged if it does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source, []
    wanted = {_key(t): t for t in test_ids}
    spans: list[tuple[int, int]] = []
    removed: list[str] = []
    for key, node in test_functions(tree).items():
        if (test := wanted.get(key)) is not None:
            spans.append((min([node.lineno, *(d.lineno for d in node.decorator_list)]), node.end_lineno or node.lineno))
            removed.append(test)
    lines = source.splitlines(keepends=True)
    for start, end in sorted(spans, reverse=True):
        del lines[start - 1 : end]
    out = re.sub(r"\n{4,}", "\n\n\n", "".join(lines))
    try:
        ast.parse(out)
    except SyntaxError:  # e.g. a test class left with no body
        return source, []
    return out, removed


def _key(test_id: str) -> tuple[str, ...]:
    """A test id's key in :func:`test_functions` (``path::TestC::test_f[param]`` -> ``("TestC", "test_f")``)."""
    return tuple(test_id.split("[")[0].split("::")[1:])


_CHECK_BLOCKS = (ast.Assert, ast.With, ast.AsyncWith, ast.For, ast.If, ast.Try)


def _checks_something(body: Sequence[ast.stmt]) -> bool:
    """Whether a test body still states an expectation: an ``assert`` or a ``with pytest.raises(...)``."""
    return any(
        isinstance(node, ast.Assert)
        or (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "raises")
        for stmt in body
        for node in ast.walk(stmt)
    )


def remove_statement(source: str, test_id: str, line: int) -> tuple[str, str] | None:
    """``source`` without the check of test ``test_id`` that holds ``line`` (an ``assert``, or a ``with``,
    ``for``, ``if`` or ``try`` block holding one), and that check's text. None when the line is in no such
    statement of the test, shares a line with another statement, or the test would then assert nothing: only
    expectations are taken out, never the statements that set them up."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    fn = test_functions(tree).get(_key(test_id))
    if fn is None:
        return None
    at = [i for i, stmt in enumerate(fn.body) if stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno)]
    if not at or not isinstance(fn.body[at[0]], _CHECK_BLOCKS) or not _checks_something(fn.body[at[0] : at[0] + 1]):
        return None
    rest = fn.body[: at[0]] + fn.body[at[0] + 1 :]
    start, end = fn.body[at[0]].lineno, fn.body[at[0]].end_lineno or fn.body[at[0]].lineno
    if not _checks_something(rest) or any(start <= (s.end_lineno or s.lineno) and s.lineno <= end for s in rest):
        return None
    lines = source.splitlines(keepends=True)
    text = "".join(lines[start - 1 : end])
    del lines[start - 1 : end]
    return "".join(lines), text.strip()


_TESTS_FAILED = re.compile(r"^Tests: \d+ passed, [1-9]\d* failed", re.MULTILINE)


def weighable(report: str, step_code: list[str], examples: str = "") -> bool:
    """Whether a failed check is the tests failing one by one, with code problems, if any, only in the test files
    (a lint error in a test file is the tests' own fault and no reason not to weigh them) or in one of the step's
    own code files, which sampled implementations may replace (seen: a CLI whose helpers used ``main()``'s
    local ``args``, rewritten the same way four times); a step that still lacks files or definitions, or has a
    problem in code it does not own, has something else to fix first. ``examples``, the report's part on the
    task's failing examples, is no reason not to weigh: samples are judged by them first."""
    head, _, _ = (report.replace(examples, "", 1).strip() if examples else report).partition("Tests:")
    if not _TESTS_FAILED.search(report) or (head.strip() and not head.startswith("Code problems:")):
        return False
    broken = broken_code(head)
    return not broken or (len(broken) == 1 and broken[0] in step_code)


def broken_code(report_head: str) -> list[str]:
    """The code files (not tests) the "Code problems" part of a check report names, in order."""
    return list(dict.fromkeys(p for p in problem_files(report_head) if not is_test_file(p)))


def sampled_file(answer: str, target: str) -> str | None:
    """The content a sampled answer gives ``target``: its block under that name (or its bare name), else its one
    unnamed block; None unless that is Python that parses."""
    named = {f["path"]: f["content"] for f in fenced_files(answer)}
    content = named.get(target)
    if content is None:
        same = [c for p, c in named.items() if p.rsplit("/", 1)[-1] == target.rsplit("/", 1)[-1]]
        blocks = unnamed_blocks(answer)
        content = same[0] if len(same) == 1 else blocks[0] if not named and len(blocks) == 1 else None
    if content is None:
        return None
    try:
        ast.parse(content)
    except SyntaxError:
        return None
    return content


def defined_names(source: str) -> set[str] | None:
    """The names a module's own top-level code binds (definitions and assignments, not imports); None if it
    does not parse."""
    try:
        return defined_at_top_level(ast.parse(source))
    except SyntaxError:
        return None


#: a function of a module by where it is: (its class, or None at the top level; its name)
FunctionKey = tuple[str | None, str]


def changed_functions(before: str, after: str) -> dict[FunctionKey, bool] | None:
    """The functions ``after`` has that differ from ``before``'s (top-level ones and classes' methods), each with
    whether ``before`` has it at all; None when either does not parse."""
    try:
        old, new = _functions(ast.parse(before)), _functions(ast.parse(after))
    except SyntaxError:
        return None
    return {key: key in old for key, dump in new.items() if old.get(key) != dump}


def _functions(tree: ast.Module) -> dict[FunctionKey, str]:
    found: dict[FunctionKey, str] = {}
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions):
            found[(None, node.name)] = ast.dump(node)
        elif isinstance(node, ast.ClassDef):
            found |= {(node.name, m.name): ast.dump(m) for m in node.body if isinstance(m, functions)}
    return found


def unevidenced(
    before: str, after: str, files: Mapping[str, str], tests: Sequence[str], examples: Collection[str]
) -> list[FunctionKey] | None:
    """The functions ``after`` changes from ``before`` that no evidence telling them apart reaches: no test of
    ``tests`` (those whose outcome differs between them; ``files`` holds their text) and no example of
    ``examples`` (whose verdict differs; by the name code uses: ``method``, ``function``, a class for its
    constructor) uses them, directly or through the functions that call them, in either version. None when
    nothing may be kept of ``before``: a constructor or other special method changed (what the class's methods
    share), or a source does not parse."""
    changed = changed_functions(before, after)
    if changed is None or any(name.startswith("__") and name.endswith("__") for _, name in changed):
        return None
    kept = []
    for key, existed in changed.items():
        if not existed:
            continue  # a new function: nothing of ``before`` to keep in its place
        users = callers(before, {key[1]}) | callers(after, {key[1]})
        if users & set(examples) or reaching_tests(files, tests, users):
            continue
        kept.append(key)
    return kept
