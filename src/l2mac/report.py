"""The run report: what was produced and how well it holds up, written to ``.l2mac/run_report.json``."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from l2mac.checks.python import find_code_issues
from l2mac.checks.readme import ReadmeCommand
from l2mac.domains import Domain
from l2mac.tools import ToolEnv
from l2mac.types import StepOutcome, StopCause, Usage

CODE_SUFFIXES = (".py", ".js", ".ts", ".html", ".css", ".sql", ".sh", ".toml", ".cfg", ".ini", ".yaml", ".yml")

RunStatus = Literal["passed", "failed", "stopped"]


def count_loc(files: dict[str, str]) -> int:
    """Non-blank lines in code files."""
    return sum(
        sum(1 for line in text.splitlines() if line.strip())
        for path, text in files.items()
        if path.endswith(CODE_SUFFIXES)
    )


class TestsSummary(BaseModel):
    """The project's own tests, run once at the end of the run."""

    status: str = "not_run"  # passed | failed | no_tests | not_run | error | timeout
    passed: int = 0
    failed: int = 0
    errors: int = 0
    #: files the tests wrote into the project (removed again): a user's next run would find them
    left_files: list[str] = Field(default_factory=list)


class StepDetail(BaseModel):
    index: int
    title: str
    status: str
    reason: str
    turns: int
    context_restarts: int
    check_failures: int
    tests_removed: list[str]
    #: what failed when the step began, not held against it (tests of other files, code problems)
    inherited: list[str] = []

    @classmethod
    def of(cls, o: StepOutcome) -> StepDetail:
        return cls(
            index=o.index,
            title=o.title,
            status=o.status.value,
            reason=o.reason,
            turns=o.turns,
            context_restarts=o.context_restarts,
            check_failures=o.check_failures,
            tests_removed=o.tests_removed,
            inherited=o.inherited,
        )


class StepsSummary(BaseModel):
    planned: int
    run: int
    passed: int
    failed: int
    detail: list[StepDetail]


class Tokens(BaseModel):
    input: int
    output: int
    total: int
    cached: int = 0  # of the input, read from the model's prompt cache (not counted by --max-tokens)


class EnvironmentSummary(BaseModel):
    """What the project's code ran on: its own .venv with what it declares, or l2mac's interpreter."""

    python: str
    own: bool
    installer: str = ""
    dependencies: list[str] = Field(default_factory=list)
    #: seconds spent installing over the run (0: nothing installed, or an environment reused unchanged)
    install_s: float = 0.0
    install_problem: str = ""


class ReadmeCheck(BaseModel):
    """One command of the generated README, run as written in a fresh copy with a fresh venv."""

    command: str
    outcome: str  # works | fails | still running
    detail: str = ""


class Measured(BaseModel):
    """A repository's checks at one moment: its tests one by one, and its blocking code problems."""

    tests_passed: int = 0
    tests_failing: int = 0  # failed, or in a test file that did not import
    problems: int = 0
    test_s: float = 0.0  # how long its tests took


class ChangeSummary(BaseModel):
    """A change to a repository l2mac did not write: where it was made, how to review it, and the repository's
    checks before the first step and after the last."""

    repository: str
    branch: str
    base: str  # the commit the branch began from
    base_ref: str  # the user's branch then (or the commit, when detached)
    worktree: str
    review: list[str]
    before: Measured
    after: Measured | None = None
    #: tests that passed before the change and fail after it
    broken: list[str] = Field(default_factory=list)


class JournalSummary(BaseModel):
    """Whether the run was resumed, how much of it was replayed from its journal or reused from an earlier run's
    (``answers_from``), and the first call made live while answers were left."""

    resumed: bool = False
    replayed_calls: int = 0
    reused_calls: int = 0
    diverged_at_call: int | None = None


class RunReport(BaseModel):
    """``run_report.json``: one run, typed. The summary table, the benchmarks and the tests read it."""

    status: RunStatus
    stopped_reason: str | None
    stopped_by: StopCause | None = None  # "budget" or "provider" (the provider failed after its retries)
    project: str
    workspace: str
    model: str
    strategy: str
    domain: str
    isolation: str
    files: int
    file_list: list[str]
    loc: int
    syntax_errors: int
    lint_errors: int
    import_errors: int
    type_errors: int
    tests: TestsSummary
    #: the model's own tests dropped because every independent implementation failed them (see consensus.py)
    tests_removed: list[str]
    steps: StepsSummary
    tokens: Tokens
    requests: int
    cost_usd: float | None  # None when some call had no known price
    cost_usd_priced_part: float
    unpriced_requests: int
    wall_time_s: float
    journal: JournalSummary = Field(default_factory=JournalSummary)
    environment: EnvironmentSummary | None = None  # None for a book, or a report from before it was recorded
    readme: list[ReadmeCheck] = Field(default_factory=list)  # empty: no README commands, or not verified
    change: ChangeSummary | None = None  # a change to a repository l2mac did not write (--repo)

    @property
    def ok(self) -> bool:
        return self.status == "passed"


def build_report(
    *,
    project: str,
    model: str,
    strategy: str,
    domain: Domain,
    env: ToolEnv,
    outcomes: list[StepOutcome],
    planned_steps: int,
    usage: Usage,
    wall_time_s: float,
    run_tests_enabled: bool,
    tests_required: bool,
    stopped: str | None,
    journal: JournalSummary,
    stopped_by: StopCause | None = None,
    readme: list[ReadmeCommand] | None = None,
    change: ChangeSummary | None = None,
) -> RunReport:
    files = env.store.snapshot()
    issues = find_code_issues(env.store.root, list(files)) if domain.python_checks else []
    tests = TestsSummary()
    if domain.tests and run_tests_enabled and any(p.endswith(".py") for p in files):
        env.sync()
        t = env.test_run()
        tests = TestsSummary(
            status=t.status, passed=t.passed, failed=t.failed, errors=t.errors, left_files=list(t.litter)
        )
    passed = sum(o.passed for o in outcomes)
    steps_ok = passed == planned_steps and planned_steps > 0
    tests_ok = tests.status in ("passed", "not_run") or (tests.status == "no_tests" and not tests_required)
    if change is not None:  # a repository's own failing tests are not the change's: it answers for what it broke,
        after = change.after  # and for the failing tests it added (counted: more fail than before)
        tests_ok = not change.broken and (after is None or after.tests_failing <= change.before.tests_failing)
    status: RunStatus = "stopped" if stopped else ("passed" if steps_ok and tests_ok else "failed")
    return RunReport(
        status=status,
        stopped_reason=stopped,
        stopped_by=stopped_by,
        project=project,
        workspace=str(env.store.root),
        model=model,
        strategy=strategy,
        domain=domain.name,
        isolation=env.runner.isolation,
        files=len(files),
        file_list=sorted(files),
        loc=count_loc(files),
        syntax_errors=sum(1 for i in issues if i.kind == "syntax"),
        lint_errors=sum(1 for i in issues if i.kind == "lint"),
        import_errors=sum(1 for i in issues if i.kind in ("import", "dependency") and i.blocking),
        type_errors=sum(1 for i in issues if i.kind == "type"),
        tests=tests,
        tests_removed=[t for o in outcomes for t in o.tests_removed],
        steps=StepsSummary(
            planned=planned_steps,
            run=len(outcomes),
            passed=passed,
            failed=len(outcomes) - passed,
            detail=[StepDetail.of(o) for o in outcomes],
        ),
        tokens=Tokens(
            input=usage.input_tokens,
            output=usage.output_tokens,
            total=usage.total_tokens,
            cached=usage.cache_read_tokens,
        ),
        requests=usage.requests,
        cost_usd=round(usage.cost_usd, 6) if usage.cost_known else None,
        cost_usd_priced_part=round(usage.cost_usd, 6),
        unpriced_requests=usage.unpriced_requests,
        wall_time_s=round(wall_time_s, 2),
        journal=journal,
        environment=_environment(env) if domain.python_checks else None,
        readme=[ReadmeCheck(command=c.command, outcome=c.outcome, detail=c.detail) for c in readme or []],
        change=change,
    )


def _environment(env: ToolEnv) -> EnvironmentSummary:
    current = env.environment.current if env.environment is not None else None
    if current is None:
        return EnvironmentSummary(python=env.python, own=False)
    return EnvironmentSummary(
        python=current.python,
        own=current.own,
        installer=current.installer,
        dependencies=list(current.requirements),
        install_s=round(env.environment.install_s, 2) if env.environment is not None else 0.0,
        install_problem=current.problem,
    )
