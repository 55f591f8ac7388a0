"""The paper's system-design tasks at project level: generate a codebase per strategy, then measure it.

Measures: files, LOC, syntax errors (``pylint --disable=all --enable=E``, as in the paper, and ruff's
syntax/undefined-name rules), the project's own tests, and **Features %**, LLM-judged: a judge model is given the
whole codebase and the task's feature checklist and counts the features implemented (the paper's
``FEATURES_FUNCTIONAL=n``), at temperature 0, repeated and averaged. Generated code runs only through the
engine's runner, in the project's own folder.
"""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
from pydantic_ai.models import Model

from l2mac.benchmarks.humaneval import render
from l2mac.checks.runner import Runner
from l2mac.checks.tests import run_tests
from l2mac.errors import ConfigError
from l2mac.fenced import fenced_files, unnamed_blocks
from l2mac.models.client import ModelClient
from l2mac.report import count_loc
from l2mac.settings import Settings
from l2mac.store import FileStore

PROJECT_TASKS = ("url_shortener", "twitter", "whatsapp")
# the authors' evaluator divides the chat service's 19 checklist lines by 20 (SOURCE.txt)
FEATURE_DIVISOR = {"whatsapp": 20}
_COUNT = re.compile(r"FEATURES_FUNCTIONAL\s*=\s*(\d+)")


@dataclass(frozen=True)
class ProjectTask:
    name: str
    prompt: str
    checklist: str
    features: int


def default_data_dir() -> Path:
    return Path(__file__).resolve().parents[3] / "bench" / "data" / "l2mac"


def load_project_task(name: str, root: Path | None = None) -> ProjectTask:
    folder = (root or default_data_dir()) / name
    if name not in PROJECT_TASKS or not folder.is_dir():
        raise ConfigError(f"unknown project task {name!r}: choose one of {', '.join(PROJECT_TASKS)}")
    prompt = (folder / "description.txt").read_text(encoding="utf-8")
    checklist = (folder / "description_count.txt").read_text(encoding="utf-8")
    lines = len(re.findall(r"^\s*- \[ \]", checklist, re.MULTILINE))
    return ProjectTask(name, prompt, checklist, FEATURE_DIVISOR.get(name, lines))


async def generate_single_project(client: ModelClient, task: ProjectTask, root: Path) -> Path:
    """One call writes the whole project: each file as its path and a fenced block."""
    messages = [
        ModelRequest(
            parts=[
                SystemPromptPart(render("project_single_system")),
                UserPromptPart(render("project_single_user", prompt=task.prompt)),
            ]
        )
    ]
    response = await client.request(messages, purpose=f"single {task.name}")
    store = FileStore(root)
    text = response.text or ""
    # the raw answer, beside (not in) the project: what the model said when no file came of it
    (root.parent / f"{root.name}.single_answer.md").write_text(text, encoding="utf-8")
    files = fenced_files(text)
    if not files:  # blocks without file names: keep the code, numbered, rather than lose the answer
        files = [{"path": f"module_{i}.py", "content": b} for i, b in enumerate(unnamed_blocks(text), 1)]
    for f in files:
        try:
            store.write_text(f["path"], f["content"])
        except (OSError, ConfigError, ValueError) as e:  # a refused path is the model's loss, not the run's end
            print(f"[bench] skipped {f['path']}: {e}", file=sys.stderr)
    return root


def generate_engine_project(task: ProjectTask, settings: Settings, model: Model | None, workspace: Path) -> Path:
    """The engine with the settings' strategy (l2mac or soa) writes the project; returns its folder."""
    from l2mac.run import run_l2mac

    rs = settings.run.model_copy(update={"workspace": workspace, "project_name": task.name})
    return run_l2mac(task.prompt, settings.model_copy(update={"run": rs}), model=model).workspace


def pylint_errors(root: Path, files: Sequence[str], python: Path, runner: Runner) -> int | None:
    """``pylint --disable=all --enable=E`` error count, as in the paper (None when pylint is not available)."""
    py = [f for f in files if f.endswith(".py")]
    if not py:
        return 0
    result = runner.run([str(python), "-m", "pylint", "--disable=all", "--enable=E", "--score=n", *py], root, 600)
    if "No module named pylint" in result.output:
        return None
    return len(re.findall(r"^\S+\.py:\d+:\d+: E\d{4}", result.output, re.MULTILINE))


def ruff_errors(root: Path, files: Sequence[str]) -> int:
    """Syntax errors and undefined names (ruff E9, F63, F7, F82)."""
    py = [f for f in files if f.endswith(".py")]
    if not py:
        return 0
    argv = [sys.executable, "-m", "ruff", "check", "--select", "E9,F63,F7,F82", "--output-format", "json", *py]
    out = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=300)
    try:
        return len(json.loads(out.stdout or "[]"))
    except json.JSONDecodeError:
        return 0


def codebase_text(files: dict[str, str], limit_chars: int) -> str:
    parts = [f"{path}\n```\n{text}\n```" for path, text in sorted(files.items())]
    text = "\n\n".join(parts)
    return text if len(text) <= limit_chars else text[:limit_chars] + "\n[... the rest of the codebase is cut ...]"


async def judge_features(
    client: ModelClient, task: ProjectTask, files: dict[str, str], repeats: int = 3, limit_chars: int = 200_000
) -> dict[str, Any]:
    """Features % (LLM-judged): the mean over ``repeats`` of the judge's count, over the checklist's size. An
    empty codebase implements nothing: it scores 0 without asking the judge (a small judge gave one 5 of 17)."""
    if not any(text.strip() for text in files.values()):
        return {"label": "Features % (LLM-judged)", "counts": [], "features": task.features, "features_pct": 0.0,
                "note": "no code: not sent to the judge"}  # fmt: skip
    counts: list[int | None] = []
    for i in range(repeats):
        messages = [
            ModelRequest(
                parts=[
                    SystemPromptPart(render("judge_system")),
                    UserPromptPart(
                        render("judge_user", checklist=task.checklist, codebase=codebase_text(files, limit_chars))
                    ),
                ]
            )
        ]
        response = await client.request(messages, purpose=f"judge {task.name} #{i + 1}", temperature=0.0)
        m = _COUNT.findall(response.text or "")
        counts.append(min(int(m[-1]), task.features) if m else None)
    valid = [c for c in counts if c is not None]
    mean = sum(valid) / len(valid) if valid else None
    return {
        "label": "Features % (LLM-judged)",
        "counts": counts,
        "features": task.features,
        "features_pct": round(100 * mean / task.features, 1) if mean is not None else None,
    }


def measure(
    root: Path,
    *,
    runner: Runner,
    pylint_python: Path | None,
    test_timeout_s: float = 300,
) -> dict[str, Any]:
    store = FileStore(root)
    files = store.snapshot()
    tests = run_tests(runner, root, test_timeout_s) if any(p.endswith(".py") for p in files) else None
    return {
        "files": len(files),
        "loc": count_loc(files),
        "pylint_errors": pylint_errors(root, list(files), pylint_python, runner) if pylint_python else None,
        "ruff_errors": ruff_errors(root, list(files)),
        "tests": {"status": tests.status, "passed": tests.passed, "failed": tests.failed, "errors": tests.errors}
        if tests
        else {"status": "no_code", "passed": 0, "failed": 0, "errors": 0},
    }


def run_project_benchmark(
    task: ProjectTask,
    *,
    generate: Callable[[ProjectTask], Path],
    measure_root: Callable[[Path], dict[str, Any]],
    judge: Callable[[dict[str, str]], dict[str, Any]] | None,
) -> dict[str, Any]:
    import time

    start = time.monotonic()
    root = generate(task)
    generated_s = round(time.monotonic() - start, 1)
    metrics = measure_root(root)
    features = judge(FileStore(root).snapshot()) if judge else {"label": "Features % (LLM-judged)", "skipped": True}
    return {
        "task": task.name,
        "project": str(root),
        "generation_wall_time_s": generated_s,
        **metrics,
        "features": features,
        "engine": engine_outcome(root),
    }


def engine_outcome(root: Path) -> dict[str, Any] | None:
    """What the engine's own report says of its run (status, steps, tokens); None for the single strategy."""
    path = root / ".l2mac" / "run_report.json"
    if not path.is_file():
        return None
    report = json.loads(path.read_text(encoding="utf-8"))
    keys = ("status", "stopped_reason", "steps", "tokens", "requests", "wall_time_s")
    out = {k: report.get(k) for k in keys}
    if isinstance(out["steps"], dict):
        out["steps"] = {k: v for k, v in out["steps"].items() if k != "detail"}
    return out


def judge_with(
    client_for: Callable[[], ModelClient], task: ProjectTask, repeats: int
) -> Callable[[dict[str, str]], dict[str, Any]]:
    def judge(files: dict[str, str]) -> dict[str, Any]:
        return asyncio.run(judge_features(client_for(), task, files, repeats))

    return judge
