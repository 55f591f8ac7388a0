"""The regression guard: a step cannot silently break what earlier steps made work.

A small model shown every file sends them all back, and rewrites working code of an earlier step along the way
(seen: the CLI step broke todo/core.py's save_todos, then dropped its Todo class). The project is recorded as
each step finds it; when the step's checks fail, :func:`find_regression` says which earlier files to put back.
"""

from __future__ import annotations

from dataclasses import dataclass

from l2mac.checks.env import ToolEnv
from l2mac.checks.layout import is_test_file
from l2mac.checks.python import find_code_issues
from l2mac.checks.tests import per_test_outcomes, problem_files, run_tests
from l2mac.store import scratch_copy


@dataclass
class Baseline:
    """The project as a step found it; what worked then is measured only if the step changes it."""

    snapshot: dict[str, str]
    own: set[str]  # the files the step names: its own to write
    measured: tuple[frozenset[str], frozenset[str]] | None = None  # tests that passed, files with problems

    def what_worked(self, env: ToolEnv, with_tests: bool) -> tuple[frozenset[str], frozenset[str]]:
        """The tests that passed when the step began and the files that had code problems then, measured in a
        scratch copy of the project as it was (once per step)."""
        if self.measured is None:
            with scratch_copy(self.snapshot, "l2mac-before-") as scratch:
                troubled = frozenset(i.path for i in find_code_issues(scratch.root, scratch.list_files()) if i.blocking)
                passing: frozenset[str] = frozenset()
                if with_tests and any(is_test_file(p) for p in self.snapshot):
                    run = run_tests(env.runner, scratch.root, env.test_timeout_s, each=True, python=env.python)
                    passing = frozenset(t for t, ok in per_test_outcomes(run.output).items() if ok)
            self.measured = (passing, troubled)
        return self.measured


@dataclass(frozen=True)
class Regression:
    """What a step broke: the earlier steps' files to put back, and why."""

    undo: list[str]
    broken: list[str]  # tests that passed when the step began and fail (or are gone) now
    spoiled: list[str]  # changed files that had no code problems then and have now


def find_regression(
    before: Baseline, env: ToolEnv, with_tests: bool, report: str, removed: list[str]
) -> Regression | None:
    """The earlier steps' files the step changed, when the change broke what worked when the step began: a test
    that passed then fails (or is gone), or a file that was clean has code problems (``report`` is the step's
    failed checks). Tests that agreement removed (``removed``) are not missed. None when nothing broke."""
    store = env.store
    earlier = {p: c for p, c in before.snapshot.items() if p not in before.own}
    changed = [p for p, content in earlier.items() if not store.has_text(p, content)]
    if not changed or not env.python_checks:
        return None
    passing, troubled = before.what_worked(env, with_tests)
    problems = set(problem_files(report.partition("Tests:")[0]))
    spoiled = [p for p in changed if p in problems and p not in troubled]
    broken: list[str] = []
    if passing:
        now = per_test_outcomes(
            run_tests(env.runner, store.root, env.test_timeout_s, each=True, python=env.python).output
        )
        broken = sorted(t for t in passing if not now.get(t, False) and t not in removed)
    undo = changed if broken else spoiled
    if not undo:
        return None
    return Regression(undo, broken, [p for p in spoiled if p in undo])
