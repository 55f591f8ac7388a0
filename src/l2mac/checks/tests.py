"""Runs the project's pytest suite through a runner and reads the outcome."""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from l2mac.checks.runner import Runner

_COUNT = re.compile(r"(\d+) (passed|failed|error|errors|skipped|xfailed|xpassed)")


@dataclass(frozen=True)
class TestRun:
    """The outcome of one pytest run. ``status``: passed, failed, no_tests or timeout."""

    status: str
    passed: int
    failed: int
    errors: int
    output: str

    @property
    def ok(self) -> bool:
        return self.status == "passed"

    def headline(self) -> str:
        if self.status == "no_tests":
            return "no tests were collected"
        if self.status == "timeout":
            return "the test run timed out"
        return f"{self.passed} passed, {self.failed} failed, {self.errors} errors"


def run_tests(
    runner: Runner, root: Path, timeout_s: float, targets: list[str] | None = None, *, each: bool = False
) -> TestRun:
    """pytest in ``root``; with ``each``, the output ends with every test's outcome (``-rA``)."""
    argv = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "--no-header",
        "-p",
        "no:cacheprovider",
        "--color=no",
        "-o",
        "addopts=",
        "--rootdir",
        str(root),
        *(["-rA"] if each else []),
        *(targets or []),
    ]
    result = runner.run(argv, root, timeout_s)
    out = result.output
    if result.timed_out:
        return TestRun("timeout", 0, 0, 0, out)
    counts = {"passed": 0, "failed": 0, "errors": 0}
    tail = out.strip().splitlines()[-1] if out.strip() else ""
    for n, kind in _COUNT.findall(tail):
        key = "errors" if kind.startswith("error") else kind
        if key in counts:
            counts[key] = int(n)
    if result.returncode == 5:
        return TestRun("no_tests", 0, 0, 0, out)
    status = "passed" if result.returncode == 0 else "failed"
    if status == "failed" and not any(counts.values()):
        counts["errors"] = 1  # collection or usage error before any test ran
    return TestRun(status, counts["passed"], counts["failed"], counts["errors"], out)
