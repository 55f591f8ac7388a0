"""Runs the project's pytest suite through a runner and reads the outcome."""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from functools import cache
from importlib.metadata import entry_points
from importlib.resources import files as package_files
from pathlib import Path

from l2mac.checks.hints import FRAME, failure_hints
from l2mac.checks.output import trim_output
from l2mac.checks.runner import Runner
from l2mac.store import IGNORED_DIRS, RESERVED_DIRS

_COUNT = re.compile(r"(\d+) (passed|failed|error|errors|skipped|xfailed|xpassed)")
#: the distribution ``run_tests(per_test_timeout_s=...)`` needs in the interpreter that runs the tests
TIMEOUT_PLUGIN = "pytest-timeout"


@dataclass(frozen=True)
class TestRun:
    """The outcome of one pytest run. ``status``: passed, failed, no_tests or timeout."""

    status: str
    passed: int
    failed: int
    errors: int
    output: str
    litter: tuple[str, ...] = ()  # files the tests created in the project, removed after the run

    @property
    def ok(self) -> bool:
        return self.status == "passed"

    def without(self, tests: set[str]) -> TestRun:
        """This run (made with ``each``) judged without ``tests``: passed when every other test passed."""
        if self.status not in ("passed", "failed"):
            return self
        outcomes = {t: ok for t, ok in per_test_outcomes(self.output).items() if t not in tests}
        failing = sum(not ok for ok in outcomes.values()) + len(set(uncollected_files(self.output)) - tests)
        passed = sum(outcomes.values())
        return replace(self, status="failed" if failing else "passed", passed=passed, failed=failing, errors=0)

    def passing_and_failing(self) -> tuple[frozenset[str], frozenset[str]]:
        """The ids of the tests that passed, and of those that failed with the files that did not import (of a
        run made with ``each``)."""
        outcomes = per_test_outcomes(self.output)
        failing = {t for t, ok in outcomes.items() if not ok} | set(uncollected_files(self.output))
        return frozenset(t for t, ok in outcomes.items() if ok), frozenset(failing)

    def litter_note(self) -> str:
        """What to tell the model about files its tests left in the project (kept apart from pytest's output,
        which is trimmed to its first failure); empty when there were none."""
        if not self.litter:
            return ""
        shown = ", ".join(self.litter[:5]) + (f" and {len(self.litter) - 5} more" if len(self.litter) > 5 else "")
        return (
            f"The tests wrote {shown} into the project; removed after the run. Tests must write files under "
            f"pytest's tmp_path, or the next run finds what this one left.\n"
        )

    def report(self, max_chars: int) -> str:
        """What the model is shown: the counts, files the tests left, hints for common runtime errors, and
        pytest's output trimmed to about ``max_chars`` (hints and notes go first: the output is cut)."""
        hints = "".join(f"{h}\n" for h in failure_hints(self.output)) if not self.ok else ""
        head = f"Tests: {self.headline()}\n{self.litter_note()}{hints}"
        return head + trim_output(self.output, max(max_chars - len(head), max_chars // 2))

    def headline(self) -> str:
        if self.status == "no_tests":
            return "no tests were collected"
        if self.status == "timeout":
            return "the test run timed out"
        return f"{self.passed} passed, {self.failed} failed, {self.errors} errors"


@cache
def _pytest_driver() -> str:
    """The source of ``pytest_driver.py``, read once: it goes with every seeded test run."""
    return package_files("l2mac.checks").joinpath("pytest_driver.py").read_text(encoding="utf-8")


@cache
def own_plugins() -> tuple[str, ...]:
    """The pytest plugins installed with l2mac itself (hypothesis, anyio, ...): not the project's, and loading
    them took 2.6 s of a one-test project's 3.0 s test run."""
    return tuple(sorted({e.name for e in entry_points(group="pytest11")}))


def run_tests(
    runner: Runner,
    root: Path,
    timeout_s: float,
    targets: list[str] | None = None,
    *,
    each: bool = False,
    python: str = sys.executable,
    skip: Sequence[str] = (),
    addopts: bool = False,
    seed: int | None = None,
    per_test_timeout_s: float | None = None,
) -> TestRun:
    """pytest in ``root`` on ``python`` (the project's environment, or l2mac's interpreter, whose own pytest
    plugins are then left out); with ``each``, the output ends with every test's outcome (``-rA``), and a test
    file that fails to import does not stop the others. ``skip``: test ids left out, and test files not
    collected at all. ``addopts``: with the project's own pytest options (else without them). ``seed``: each
    test begins with ``random`` (and numpy's global generator) seeded with it (``pytest_driver.py``); None runs
    pytest as it is, as a benchmark's own tests are run. ``per_test_timeout_s``: a test running longer fails alone
    and the others still count (pytest-timeout, which ``python`` must have: ``TIMEOUT_PLUGIN``); without it a
    test that never ends times the whole run out, and no test's outcome is known."""
    kept = {"timeout"} if per_test_timeout_s else set()  # pytest-timeout's entry point, when it is l2mac's own
    plugins = (
        [arg for name in own_plugins() if name not in kept for arg in ("-p", f"no:{name}")]
        if python == sys.executable
        else []
    )
    left_out = [arg for s in skip for arg in (("--deselect", s) if "::" in s else ("--ignore", s))]
    pytest_call = ["-m", "pytest"] if seed is None else ["-c", _pytest_driver(), str(seed)]
    argv = [
        python,
        *pytest_call,
        # with each test's outcome, its failure message whole: at -q pytest cuts it to the terminal's width
        # (``assert 'b...``), and failures alike across implementations are then no evidence (agreement.py)
        "-vv" if each else "-q",
        "--no-header",
        "-p",
        "no:cacheprovider",
        *plugins,
        "--color=no",
        *([] if addopts else ["-o", "addopts="]),
        "--rootdir",
        str(root),
        *(["-rA", "--continue-on-collection-errors"] if each else []),
        *([f"--timeout={per_test_timeout_s:g}"] if per_test_timeout_s else []),
        *left_out,
        *(targets or []),
    ]
    before = _project_files(root)
    result = runner.run(argv, root, timeout_s)
    litter = tuple(_remove_new_files(root, before))
    out = relative_to(root, stable_output(result.output))
    if result.timed_out:
        return TestRun("timeout", 0, 0, 0, out, litter)
    counts = {"passed": 0, "failed": 0, "errors": 0}
    tail = out.strip().splitlines()[-1] if out.strip() else ""
    for n, kind in _COUNT.findall(tail):
        key = "errors" if kind.startswith("error") else kind
        if key in counts:
            counts[key] = int(n)
    if result.returncode == 5:
        return TestRun("no_tests", 0, 0, 0, out, litter)
    status = "passed" if result.returncode == 0 else "failed"
    if status == "failed" and not any(counts.values()):
        counts["errors"] = 1  # collection or usage error before any test ran
    return TestRun(status, counts["passed"], counts["failed"], counts["errors"], out, litter)


_DURATION = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?(?=(?: =+)?$)", re.MULTILINE)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")


def stable_output(output: str) -> str:
    """pytest's output without the duration on its summary line and the memory addresses in reprs (``<Obj at
    0x7f...>`` in an assertion's message), which change from one run of the same tests to the next. The output
    goes into the model's prompt, and a prompt must be the same for the same project, or a seeded run (and its
    replay on resume) drifts. (Under bubblewrap /tmp is new for every run, so tmp_path is the same each time
    too.)"""
    return _ADDRESS.sub(" at 0x...>", _DURATION.sub("", output))


def relative_to(root: Path, output: str) -> str:
    """``output`` with the project's files named as the model names them, from the project's folder: Python
    prints a file it could not compile, and pytest a test module it could not import, by absolute path. Seen on
    ClassEval_17: ``File "/tmp/l2mac-bench-l2mac-rnaa2w06/ClassEval_17/solution.py"`` in the report, so the same
    project in another folder sent another prompt, and its replay went to the model again."""
    return output.replace(f"{root}{os.sep}", "").replace(str(root), ".")


#: folders that are not the project's files: version control, the run record, caches
_NOT_PROJECT = RESERVED_DIRS | IGNORED_DIRS


def _project_files(root: Path) -> set[str]:
    """The project's files and folders (a folder ends with "/"), relative to ``root``."""
    found: set[str] = set()
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d not in _NOT_PROJECT]
        base = Path(folder).relative_to(root)
        found.update((base / n).as_posix() for n in names)
        found.update((base / d).as_posix() + "/" for d in dirs)
    return found


def _remove_new_files(root: Path, before: set[str]) -> list[str]:
    """Remove the files a test run created in the project (a small model's tests write ``todos.json`` into the
    working folder; left there, an empty or stale one fails every later run and every sampled implementation)
    and the folders that held only them; the removed paths, sorted."""
    created = _project_files(root) - before
    files = sorted(p for p in created if not p.endswith("/"))
    for rel in files:
        (root / rel).unlink(missing_ok=True)
    for folder in sorted((p for p in created if p.endswith("/")), key=len, reverse=True):
        with contextlib.suppress(OSError):
            (root / folder).rmdir()  # a folder the tests made, once empty
    return files


# pytest -rA: "PASSED tests/test_x.py::test_a", "FAILED tests/test_x.py::test_b - assert 1 == 2"
_OUTCOME = re.compile(r"^(PASSED|FAILED|ERROR|XFAIL|XPASS) (\S+::.+?)(?: - .*)?$", re.MULTILINE)
_PASSING = frozenset({"PASSED", "XFAIL"})


def per_test_outcomes(output: str) -> dict[str, bool]:
    """Per test id, whether it passed, from the short summary pytest prints with ``-rA``. A test reported twice
    (passed, then an error in its teardown) counts as failed."""
    out: dict[str, bool] = {}
    for kind, test in _OUTCOME.findall(output):
        out[test] = out.get(test, True) and kind in _PASSING
    return out


#: pytest -rA's line for a test file that failed to import: "ERROR tests/test_x.py" (maybe " - <message>")
_UNCOLLECTED = re.compile(r"^ERROR ([^\s:]+\.py)(?: - .*)?$", re.MULTILINE)


_DESELECTED = re.compile(r"(\d+) deselected")


def deselected(output: str) -> int:
    """How many tests pytest's summary line says it deselected."""
    tail = output.strip().splitlines()[-1] if output.strip() else ""
    found = _DESELECTED.search(tail)
    return int(found.group(1)) if found else 0


def uncollected_files(output: str) -> list[str]:
    """The test files pytest could not collect (an import error, a syntax error), from its ``-rA`` summary."""
    return sorted(set(_UNCOLLECTED.findall(output)))


#: pytest -rA's line for a failed test, with its message: "FAILED tests/test_x.py::test_b - assert 14 == 36"
_FAILED_WITH = re.compile(r"^FAILED (\S+::.+?) - (.+)$", re.MULTILINE)


def failure_messages(output: str) -> dict[str, str]:
    """Per failed test id, the message pytest's short summary (``-rA``) gives for it: ``assert 14 == 36``."""
    return {test: message.strip() for test, message in _FAILED_WITH.findall(output)}


def problem_files(report: str) -> list[str]:
    """The files a check report's lines name (``path.py:12: ...``), in order, with repeats."""
    return [m.group("path") for m in FRAME.finditer(report)]


def failure_lines(output: str, path: str) -> list[int]:
    """The lines of ``path`` that pytest's tracebacks in ``output`` pass through (``path.py:12: ...``), in order:
    in a test's own failure the first is the test's statement. pytest prints absolute paths when a test changed
    the working directory, so those count too."""

    def same(found: str) -> bool:
        return found == path or (found.startswith("/") and found.endswith("/" + path))

    return [int(m.group("line")) for m in FRAME.finditer(output) if same(m.group("path"))]
