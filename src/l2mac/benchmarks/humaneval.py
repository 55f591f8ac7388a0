"""HumanEval+ at function level: generate a solution per task with a strategy, score them all with evalplus.

The generator sees only the task's prompt (signature and docstring): never its tests or canonical solution.
Runs are resumable: every finished task is written to the results file at once, and a rerun with the same
results file skips the tasks it holds.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from string import Template
from typing import Any

import yaml
from pydantic_ai.models import Model

from l2mac.benchmarks import runner
from l2mac.benchmarks.runner import Generation
from l2mac.benchmarks.scorer import CEILING, KNOWN_BROKEN, TaskScore
from l2mac.errors import ConfigError
from l2mac.models.client import ModelClient
from l2mac.settings import Settings

DATA_FILE = "HumanEvalPlus-v0.1.10.jsonl.gz"
DATA_MD5 = "924d06df44399bb3c99d9196cb43018f"
#: the engine's limits per HumanEval+ task (besides the token budget): one function is one step, 12 model calls
#: at most, and 4 failed checks before the step fails (the text protocol's default of 8 doubled the time of
#: tasks the model cannot fix, which were most of the long ones, without turning them into passes)
ENGINE_BUDGET: dict[str, int] = {"steps": 1, "max_turns": 12, "max_check_failures": 4}
CEILING_NOTE = f"ceiling {CEILING}/164: evalplus 0.3.1 fails the canonical solution of {', '.join(KNOWN_BROKEN)}"


@dataclass(frozen=True)
class Task:
    task_id: str
    prompt: str
    entry_point: str


def default_data_path() -> Path:
    """``bench/data/`` of the source checkout this package runs from."""
    return Path(__file__).resolve().parents[3] / "bench" / "data" / DATA_FILE


def load_tasks(path: Path) -> list[Task]:
    """The tasks in ``path``, after checking its md5 against the released file's."""
    if not path.is_file():
        raise ConfigError(f"no HumanEval+ data at {path}: pass --data, or run from a source checkout")
    digest = hashlib.md5(path.read_bytes()).hexdigest()
    if digest != DATA_MD5:
        raise ConfigError(f"{path} has md5 {digest}, not the HumanEval+ v0.1.10 release's {DATA_MD5}")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    return [Task(r["task_id"], r["prompt"], r["entry_point"]) for r in rows]


def select(tasks: Sequence[Task], limit: int | None, ids: Sequence[str] | None) -> list[Task]:
    chosen = list(tasks)
    if ids:
        wanted = {i if i.startswith("HumanEval/") else f"HumanEval/{i}" for i in ids}
        unknown = wanted - {t.task_id for t in tasks}
        if unknown:
            raise ConfigError(f"unknown task ids: {', '.join(sorted(unknown))}")
        chosen = [t for t in chosen if t.task_id in wanted]
    return chosen[:limit] if limit else chosen


def _prompts() -> dict[str, str]:
    text = resources.files("l2mac.benchmarks").joinpath("prompts.yaml").read_text(encoding="utf-8")
    data: dict[str, str] = yaml.safe_load(text)
    return data


def render(key: str, **values: str) -> str:
    return Template(_prompts()[key]).safe_substitute(values).strip()


_IMPORT = re.compile(r"^(?:from\s+\S+\s+import\s+.+|import\s+.+)$", re.MULTILINE)


def as_solution(code: str, task: Task) -> str:
    """Whole-module code for evalplus: the model's code, with the prompt's imports it left out."""
    missing = [line for line in _IMPORT.findall(task.prompt) if line not in code]
    return "\n".join([*missing, code]).strip() + "\n" if missing else code.strip() + "\n"


def defines_entry_point(task: Task) -> Callable[[str], bool]:
    pattern = re.compile(rf"^\s*def {re.escape(task.entry_point)}\s*\(", re.MULTILINE)
    return lambda code: pattern.search(code) is not None


async def generate_single(client: ModelClient, task: Task) -> Generation:
    """One call, no tools: the answer's code is the solution."""
    user = render("single_user", prompt=task.prompt)
    return await runner.single_generation(
        client,
        render("single_system"),
        user,
        f"single {task.task_id}",
        lambda text: as_solution(runner.defining_block(text, defines_entry_point(task)), task),
    )


def generate_engine(task: Task, settings: Settings, model: Model | None, workspace: Path) -> Generation:
    """The engine on the task; the solution is the project file that defines the entry point."""
    return runner.engine_generation(
        render("l2mac_task", prompt=task.prompt),
        task.task_id.replace("/", "_"),
        settings,
        model,
        workspace,
        defines=defines_entry_point(task),
        what=task.entry_point,
        solution=lambda code: as_solution(code, task),
    )


def summarise(tasks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    scored = [t for t in tasks.values() if t.get("base") is not None]
    n = len(scored)
    base, plus = sum(bool(t["base"]) for t in scored), sum(bool(t["plus"]) for t in scored)
    return {
        "tasks": len(tasks),
        "scored": n,
        "base_passed": base,
        "plus_passed": plus,
        "pass@1_base": round(base / n, 4) if n else None,
        "pass@1_plus": round(plus / n, 4) if n else None,
        **runner.usage_summary(tasks),
        "note": CEILING_NOTE,
    }


Generator = Callable[[Task], Generation]
Scorer = Callable[[dict[str, str]], dict[str, TaskScore]]
UNSCORED = {"base": None, "plus": None}
SUITE = runner.Suite[Task](
    name="humanevalplus",
    title="HumanEval+ v0.1.10",
    generate_single=generate_single,
    generate_engine=generate_engine,
    engine_budget=ENGINE_BUDGET,
    summarise=summarise,
    unscored=UNSCORED,
    headline=lambda s: (
        f"base {s['base_passed']}/{s['scored']} (pass@1 {s['pass@1_base']}), "
        f"plus {s['plus_passed']}/{s['scored']} (pass@1 {s['pass@1_plus']}); {s['note']}"
    ),
)


def as_fields(score: Scorer) -> runner.Scorer:
    """evalplus's scores as the fields of each task's entry: ``base`` and ``plus``."""

    def fields(solutions: dict[str, str]) -> dict[str, dict[str, Any]]:
        return {tid: {"base": s.base, "plus": s.plus} for tid, s in score(solutions).items()}

    return fields


def run_benchmark(
    tasks: Sequence[Task],
    *,
    strategy: str,
    generate: Generator,
    score: Scorer,
    out: Path,
    meta: dict[str, Any],
    say: Callable[[str], None] = print,
    workers: int = 1,
) -> dict[str, Any]:
    """HumanEval+ through the benchmark runner: each task's entry gets ``base`` and ``plus`` from evalplus."""
    return runner.run_benchmark(
        tasks,
        strategy=strategy,
        generate=generate,
        score=as_fields(score),
        summarise=summarise,
        unscored=UNSCORED,
        out=out,
        meta=meta,
        say=say,
        workers=workers,
    )


def engine_generator(
    settings: Settings, model: Model | None, workspace: Path | None = None, *, strategy: str = "l2mac"
) -> Generator:
    """Runs the engine per task with ``strategy`` (l2mac or soa), each task in its own project folder."""
    return runner.engine_generator(generate_engine, settings, model, strategy, workspace)
