"""What a step found, and the regression guard: a step cannot silently break what earlier steps made work.

A small model shown every file sends them all back, and rewrites working code of an earlier step along the way
(seen: the CLI step broke todo/core.py's save_todos, then dropped its Todo class). The project is recorded as
each step finds it; when the step's checks fail, :func:`find_regression` says which earlier files to put back.
What failed when the step began is measured from the same record, so a step is held only by what it made worse
(``verdict.py``).
"""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass

from l2mac.checks.demands import named_definitions
from l2mac.checks.env import ToolEnv
from l2mac.checks.issues import CodeIssue
from l2mac.checks.layout import is_test_file
from l2mac.checks.python import find_code_issues
from l2mac.checks.tests import per_test_outcomes, problem_files
from l2mac.store import FileStore, scratch_copy


@dataclass(frozen=True)
class Tests:
    """The project's tests as measured once: the ids that passed, and what failed (test ids, and test files that
    did not import)."""

    passing: frozenset[str] = frozenset()
    failing: frozenset[str] = frozenset()


@dataclass
class Baseline:
    """The project as a step found it; what worked then, and what did not, is measured only when asked (once)."""

    snapshot: dict[str, str]
    own: set[str]  # the files the step names: its own to write
    store: FileStore | None = None  # the project, whose binary and hidden files the scratch copy needs too
    names: frozenset[str] = frozenset()  # the functions and classes the step's instruction names
    _tests: Tests | None = None
    _issues: tuple[CodeIssue, ...] | None = None

    def tests(self, env: ToolEnv) -> Tests:
        """The tests that passed and failed when the step began, run in a scratch copy of the project as it was."""
        if self._tests is None:
            self._tests = Tests()
            if any(is_test_file(p) for p in self.snapshot):
                with scratch_copy(self.snapshot, "l2mac-before-", opaque_from=self.store) as scratch:
                    run = env.test_run(scratch.root, each=True)
                self._tests = Tests(*run.passing_and_failing())
        return self._tests

    def issues(self) -> tuple[CodeIssue, ...]:
        """The blocking code problems the project had when the step began."""
        if self._issues is None:
            with scratch_copy(self.snapshot, "l2mac-before-", opaque_from=self.store) as scratch:
                self._issues = tuple(i for i in find_code_issues(scratch.root, scratch.list_files()) if i.blocking)
        return self._issues

    def what_worked(self, env: ToolEnv, with_tests: bool) -> tuple[frozenset[str], frozenset[str]]:
        """The tests that passed when the step began (when ``with_tests``) and the files that had code problems
        then."""
        passing = self.tests(env).passing if with_tests else frozenset()
        return passing, frozenset(i.path for i in self.issues())

    def new_issues(self, issues: list[CodeIssue], store: FileStore) -> tuple[list[CodeIssue], list[CodeIssue]]:
        """``issues`` split into those the project did not have when the step began and those it had: in a file
        the step left as it was, a problem of the same kind on the same line (its words may name what changed
        elsewhere: the project's modules, its declared packages); in a changed file, the same kind and words, as
        often as then (its lines moved)."""

        def key(issue: CodeIssue) -> tuple[str, str, str | int]:
            same = issue.path in self.snapshot and store.has_text(issue.path, self.snapshot[issue.path])
            return issue.path, issue.kind, issue.line if same else issue.message

        before = Counter(key(i) for i in self.issues())
        new: list[CodeIssue] = []
        old: list[CodeIssue] = []
        for issue in issues:
            if before[key(issue)] > 0:
                before[key(issue)] -= 1
                old.append(issue)
            else:
                new.append(issue)
        return new, old


@dataclass(frozen=True)
class Regression:
    """What a step broke: the earlier steps' files to put back, and why."""

    undo: list[str]
    broken: list[str]  # tests that passed when the step began and fail (or are gone) now
    spoiled: list[str]  # changed files that had no code problems then and have now


def find_regression(
    before: Baseline, env: ToolEnv, with_tests: bool, report: str, removed: list[str]
) -> Regression | None:
    """The files the step changed that it must put back, when the change broke what worked when the step began:
    a test that passed then fails (or is gone), or a file that was clean has code problems (``report`` is the
    step's failed checks). Files of earlier steps are put back for any test broken; a file the step names is
    its own to change, and is put back only when the change broke tests that are not the step's (seen on a
    repository: told to modify its 430-line module, the model rewrote every function, and 191 of the
    repository's tests failed). Tests that agreement removed (``removed``) are not missed. None when nothing
    broke."""
    store = env.store
    changed = [p for p, content in before.snapshot.items() if not store.has_text(p, content)]
    earlier = [p for p in changed if p not in before.own]
    if not changed or not env.python_checks:
        return None
    passing, troubled = before.what_worked(env, with_tests)
    problems = set(problem_files(report.partition("Tests:")[0]))
    spoiled = [p for p in earlier if p in problems and p not in troubled]
    broken: list[str] = []
    if passing:
        now = per_test_outcomes(env.test_run(each=True).output)
        broken = sorted(t for t in passing if not now.get(t, False) and t not in removed)
    others = [t for t in broken if not _the_steps(t, before)]
    undo = changed if others else earlier if broken else spoiled
    if not undo:
        return None
    return Regression(undo, broken, [p for p in spoiled if p in undo])


def _the_steps(test: str, before: Baseline) -> bool:
    """Whether a test is the step's to break: in a test file it names, or named for a function or class its
    instruction names (``test_slugify_joins`` when the step changes ``slugify``): a change of behaviour the
    step asks for may break the old test of it, not tests of everything else."""
    path, _, name = test.partition("::")
    if path in before.own:
        return True
    name = name.split("[")[0].lower()
    return any(re.search(rf"(?:^|_){re.escape(n.lower())}(?:_|$)", name) for n in before.names)


def step_names(instruction: str, snapshot: dict[str, str]) -> frozenset[str]:
    """The functions and classes a step's instruction names: those it shows or calls (``slugify()``), and the
    project's own it mentions in backticks or by a name no English word has (``to_slug``, ``SlugMaker``). A
    plain word is not taken for a name: "add mul() to core.py" does not name core.py's ``add``."""
    words = set(re.findall(r"`(\w+)`", instruction))
    words |= {w for w in re.findall(r"\w+", instruction) if "_" in w.strip("_") or re.search(r"[a-z][A-Z]", w)}
    defined: set[str] = set()
    for path, text in snapshot.items():
        if path.endswith(".py") and not is_test_file(path):
            try:
                tree = ast.parse(text)
            except (SyntaxError, ValueError):
                continue
            defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
            defined |= {n.name for n in ast.walk(tree) if isinstance(n, defs) and not n.name.startswith("__")}
    return frozenset(named_definitions(instruction)) | frozenset(words & defined)
