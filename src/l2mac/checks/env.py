"""What checks and tools act on: the file store, the runner generated code runs under, the interpreter it runs
on, and their limits."""

from __future__ import annotations

import sys
from dataclasses import dataclass

from l2mac.checks.environment import Environment, ProjectEnvironment
from l2mac.checks.issues import CodeIssue
from l2mac.checks.python import find_code_issues
from l2mac.checks.runner import Runner
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

    @property
    def python(self) -> str:
        """The interpreter the project's code and tests run on."""
        return self.environment.current.python if self.environment is not None else sys.executable

    def sync(self) -> Environment | None:
        """Bring the project's environment up to date with its declarations (cheap when they did not change)."""
        return self.environment.sync() if self.environment is not None else None

    def check_files(self, paths: list[str], *, types: bool = True) -> list[CodeIssue]:
        if not self.python_checks:
            return []
        return find_code_issues(self.store.root, self.store.list_files(), only=paths, types=types)
