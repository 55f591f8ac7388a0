"""The run report: what was produced and how well it holds up, written to ``.l2mac/run_report.json``."""

from __future__ import annotations

from typing import Any

from l2mac.checks.python import find_code_issues
from l2mac.checks.tests import run_tests
from l2mac.domains import Domain
from l2mac.tools import ToolEnv
from l2mac.types import StepOutcome, Usage

CODE_SUFFIXES = (".py", ".js", ".ts", ".html", ".css", ".sql", ".sh", ".toml", ".cfg", ".ini", ".yaml", ".yml")


def count_loc(files: dict[str, str]) -> int:
    """Non-blank lines in code files."""
    return sum(
        sum(1 for line in text.splitlines() if line.strip())
        for path, text in files.items()
        if path.endswith(CODE_SUFFIXES)
    )


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
) -> dict[str, Any]:
    files = env.store.snapshot()
    issues = find_code_issues(env.store.root, list(files)) if domain.python_checks else []
    tests: dict[str, Any] = {"status": "not_run", "passed": 0, "failed": 0, "errors": 0}
    if domain.tests and run_tests_enabled and any(p.endswith(".py") for p in files):
        t = run_tests(env.runner, env.store.root, env.test_timeout_s)
        tests = {"status": t.status, "passed": t.passed, "failed": t.failed, "errors": t.errors}
        if t.litter:  # the project's tests write into it: a user's next run finds these files (removed here)
            tests["left_files"] = list(t.litter)
    passed = sum(o.passed for o in outcomes)
    steps_ok = passed == planned_steps and planned_steps > 0
    tests_ok = tests["status"] in ("passed", "not_run") or (tests["status"] == "no_tests" and not tests_required)
    status = "stopped" if stopped else ("passed" if steps_ok and tests_ok else "failed")
    return {
        "status": status,
        "stopped_reason": stopped,
        "project": project,
        "workspace": str(env.store.root),
        "model": model,
        "strategy": strategy,
        "domain": domain.name,
        "isolation": env.runner.isolation,
        "files": len(files),
        "file_list": sorted(files),
        "loc": count_loc(files),
        "syntax_errors": sum(1 for i in issues if i.kind == "syntax"),
        "lint_errors": sum(1 for i in issues if i.kind == "lint"),
        "import_errors": sum(1 for i in issues if i.kind == "import" and i.blocking),
        "type_errors": sum(1 for i in issues if i.kind == "type"),
        "tests": tests,
        # the model's own tests dropped because every independent implementation failed them (see consensus.py)
        "tests_removed": [t for o in outcomes for t in o.tests_removed],
        "steps": {
            "planned": planned_steps,
            "run": len(outcomes),
            "passed": passed,
            "failed": len(outcomes) - passed,
            "detail": [
                {
                    "index": o.index,
                    "title": o.title,
                    "status": o.status.value,
                    "reason": o.reason,
                    "turns": o.turns,
                    "context_restarts": o.context_restarts,
                    "check_failures": o.check_failures,
                    "tests_removed": o.tests_removed,
                }
                for o in outcomes
            ],
        },
        "tokens": {"input": usage.input_tokens, "output": usage.output_tokens, "total": usage.total_tokens},
        "requests": usage.requests,
        "cost_usd": round(usage.cost_usd, 6) if usage.cost_known else None,
        "cost_usd_priced_part": round(usage.cost_usd, 6),
        "unpriced_requests": usage.unpriced_requests,
        "wall_time_s": round(wall_time_s, 2),
    }
