"""The lead's test rounds: her tests run (with, in a repository, those that passed before the change), each round's
state ranked by how close it is to passing, and the earlier round to put back in place of the last.

A round ranks by whether her test run finished, how many of the task's own examples pass (a function still a stub
passes none), how many tests that passed before the change it broke, then how many of her tests pass."""

from __future__ import annotations

from dataclasses import dataclass

from l2mac.checks.examples import Example, run_examples
from l2mac.checks.tests import TestRun
from l2mac.soa.contracts import Contract
from l2mac.tools import ToolEnv


@dataclass(frozen=True)
class Round:
    """One of the lead's test rounds: its number, its rank (higher is closer to passing), the texts of her modules
    and her test file, and the tests that passed before the change that it broke."""

    number: int
    rank: tuple[bool, int, int, int]
    files: dict[str, str]
    broken: list[str]


@dataclass
class Rounds:
    """The lead's rounds that may be put back: the best so far (a tie goes to the later: it saw more), and the
    last in which her tests passed (her own functions' examples failing)."""

    best: Round | None = None
    passed: Round | None = None
    last: Round | None = None  # the last round ranked, whether its tests passed, and the store's revision then
    last_ok: bool = False
    revision: int = -1

    def add(self, now: Round | None, ok: bool, revision: int) -> None:
        if now is not None and (self.best is None or now.rank >= self.best.rank):
            self.best = now
        if ok and now is not None:
            self.passed = now
        self.last, self.last_ok, self.revision = now, ok, revision

    def closest(self, now: Round | None, ok: bool) -> Round | None:
        """The round to put back in place of ``now`` (whose tests passed when ``ok``), if one ranks above it."""
        if now is None:
            return None
        if self.passed is not None and not ok and self.passed.rank[1] >= now.rank[1]:
            return self.passed  # her tests all passed then (with the tests she had then), and no fewer examples
        if self.best is not None and self.best.rank > now.rank:
            return self.best
        return None


def measured(
    number: int, outcome: TestRun, broken: list[str], test_file: str, modules: list[str], examples: list[Example],
    env: ToolEnv,
) -> Round | None:  # fmt: skip
    """The lead's round as it ranks, with her ``modules`` as they are; None when her test file is gone."""
    store = env.store
    if not store.exists(test_file):
        return None
    run = run_examples(examples, store, env.runner, env.python, env.test_timeout_s)
    passed = run.tried - len(run.failed) if run is not None else 0  # a function still a stub passes none
    texts = {p: store.read_text(p) for p in [*modules, test_file] if store.exists(p)}
    finished = outcome.status != "timeout"  # a run that hung ranks below any that finished
    return Round(number, (finished, passed, -len(broken), outcome.passed), texts, broken)


def mother_tests(
    env: ToolEnv, test_file: str, passing_before: frozenset[str], lead: bool
) -> tuple[TestRun, bool, list[str]]:
    """A mother's tests: the run, whether it passes, and the tests it broke. In a repository the lead's tests run
    with those of the repository that passed before the change: she passes when her own tests do and every one of
    those still does (a test that failed before is not hers to fix). An agent that split its function runs only its
    own tests: the lead's run, after every agent, is the one that sees it all."""
    if not (passing_before and lead):
        run = env.test_run(targets=[test_file])
        return run, run.ok, []
    others = sorted({t.split("::")[0] for t in passing_before} - {test_file})
    run = env.test_run(targets=[test_file, *others], each=True)
    if run.status == "timeout":  # nothing is known to be broken: the run did not finish
        return run, False, []
    passing, failing = run.passing_and_failing()
    own = [t for t in passing | failing if t == test_file or t.startswith(test_file + "::")]
    broken = sorted(passing_before - passing)
    return run, bool(own) and not (set(own) & failing) and not broken, broken


def own_examples_failing(examples: list[Example], contracts: list[Contract], env: ToolEnv) -> str:
    """What the task's examples of the functions no agent owns showed, where they fail; empty when they pass."""
    owned = {c.qualname for c in contracts}
    classes = {c.owner for c in contracts if c.owner}  # a class docstring's examples run its agents' methods
    theirs = [e for e in examples if e.name not in owned and e.owner not in classes]
    run = run_examples(theirs, env.store, env.runner, env.python, env.test_timeout_s)
    return run.failures()[-2000:] if run is not None and run.failed else ""
