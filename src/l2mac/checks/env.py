"""What checks and tools act on: the file store, the runner generated code runs under, the interpreter it runs
on, and their limits."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from l2mac.checks.environment import Environment, ProjectEnvironment
from l2mac.checks.issues import CodeIssue
from l2mac.checks.python import find_code_issues
from l2mac.checks.runner import Runner
from l2mac.checks.tests import TestRun, run_tests
from l2mac.store import FileStore


@dataclass
class ToolEnv:
    """What tools act on. One per run; shared by every step and agent."""

    store: FileStore
    runner: Runner
    python_checks: bool = True
    command_timeout_s: float = 60.0
    test_timeout_s: float = 180.0
    max_output_chars: int = 6000
    #: the project's own .venv, kept in step with what it declares; None: code runs on l2mac's interpreter
    environment: ProjectEnvironment | None = None
    #: pytest runs with the project's own addopts (a repository l2mac did not write: its options are part of
    #: how its tests run); else without (a generated project's ``--cov`` would need a plugin it never installs)
    own_pytest_options: bool = False
    #: each test begins with ``random`` seeded with this, so the same code gives the same report (None: unseeded)
    test_seed: int | None = 0

    @property
    def python(self) -> str:
        """The interpreter the project's code and tests run on."""
        return self.environment.current.python if self.environment is not None else sys.executable

    def sync(self) -> Environment | None:
        """Bring the project's environment up to date with its declarations (cheap when they did not change)."""
        return self.environment.sync() if self.environment is not None else None

    def test_run(
        self,
        root: Path | None = None,
        targets: list[str] | None = None,
        *,
        each: bool = False,
        skip: Sequence[str] = (),
    ) -> TestRun:
        """The project's tests (or those of ``root``, a scratch copy of it) on its interpreter: see
        :func:`l2mac.checks.tests.run_tests`."""
        return run_tests(
            self.runner,
            root or self.store.root,
            self.test_timeout_s,
            targets,
            each=each,
            python=self.python,
            skip=skip,
            addopts=self.own_pytest_options,
            seed=self.test_seed,
        )

    def check_files(self, paths: list[str], *, types: bool = True) -> list[CodeIssue]:
        if not self.python_checks:
            return []
        return find_code_issues(self.store.root, self.store.list_files(), only=paths, types=types)
