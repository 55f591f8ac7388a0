"""A repository's checks at one moment, for the report's before and after: its tests one by one (how many pass,
which, how long they take) and its blocking code problems."""

from __future__ import annotations

import time

from l2mac.checks.env import ToolEnv
from l2mac.report import Measured


def measure(env: ToolEnv, *, with_tests: bool = True) -> tuple[Measured, frozenset[str]]:
    """The repository's checks now, and the ids of the tests that passed."""
    problems = sum(1 for i in env.check_files(env.store.list_files()) if i.blocking)
    if not with_tests:
        return Measured(problems=problems), frozenset()
    env.sync()
    began = time.monotonic()
    run = env.test_run(each=True)
    took = round(time.monotonic() - began, 2)
    passing, failing = run.passing_and_failing()
    return Measured(tests_passed=len(passing), tests_failing=len(failing), problems=problems, test_s=took), passing
