"""Running a benchmark: each task generated with a strategy (several at once, every finished one saved at
once, so a rerun with the same results file goes on where it stopped), then all of them scored.

What a benchmark brings is its tasks, how a task is generated, how solutions are scored and how the scores are
summarised; the running, saving, resuming and interrupting are here, once for all of them.
"""

from __future__ import annotations

import asyncio
import importlib.metadata
import json
import os
import platform
import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from pydantic_ai.messages import ModelRequest, SystemPromptPart, UserPromptPart
from pydantic_ai.models import Model

from l2mac.errors import ConfigError
from l2mac.models.client import ModelClient
from l2mac.settings import Settings


class HasTaskId(Protocol):
    @property
    def task_id(self) -> str: ...


_Task = TypeVar("_Task", bound=HasTaskId)
_Item = TypeVar("_Item")

#: scores solutions ``{task_id: code}``: per task, the fields to add to its entry
Scorer = Callable[[dict[str, str]], Mapping[str, Mapping[str, Any]]]
#: the summary of the entries ``{task_id: entry}``
Summariser = Callable[[dict[str, dict[str, Any]]], dict[str, Any]]


@dataclass(frozen=True)
class Generation:
    solution: str
    tokens: int
    requests: int
    error: str | None = None
    cost_usd: float | None = None  # None: the model's price is unknown (local models)


def run_benchmark(
    tasks: Sequence[_Task],
    *,
    strategy: str,
    generate: Callable[[_Task], Generation],
    score: Scorer,
    summarise: Summariser,
    unscored: Mapping[str, Any],
    out: Path,
    meta: dict[str, Any],
    say: Callable[[str], None] = print,
    workers: int = 1,
) -> dict[str, Any]:
    """Generate every task not yet in ``out`` (saving after each; ``workers`` tasks at once), then score all of
    them; returns the data. A task's entry holds its solution, usage and error, then the fields ``score`` gives
    it (``unscored`` until then); ``summarise`` makes the summary from the entries. With several workers a
    task's wall time is its own, measured while others ran."""
    data: dict[str, Any] = json.loads(out.read_text(encoding="utf-8")) if out.exists() else {}
    if data and (data.get("strategy") != strategy or data.get("data_md5") != meta.get("data_md5")):
        raise ConfigError(f"{out} holds a different run ({data.get('strategy')}); pass another --out")
    data = {**meta, "strategy": strategy, **{k: v for k, v in data.items() if k in ("tasks", "sessions")}}
    done: dict[str, dict[str, Any]] = data.setdefault("tasks", {})

    def save() -> None:
        save_results(out, {**data, "summary": summarise(done)})

    generate_missing(tasks, data, generate, unscored=unscored, save=save, say=say, workers=workers)
    chosen = {t.task_id for t in tasks}
    say(f"scoring {len(chosen)} solutions")
    start = time.monotonic()
    for tid, fields in score({tid: t["solution"] for tid, t in done.items() if tid in chosen}).items():
        done[tid].update(fields)
    data["scoring_wall_time_s"] = round(time.monotonic() - start, 1)
    data["summary"] = summarise({tid: t for tid, t in done.items() if tid in chosen})
    save_results(out, data)
    return data


def generate_missing(
    tasks: Sequence[_Task],
    data: dict[str, Any],
    generate: Callable[[_Task], Generation],
    *,
    unscored: Mapping[str, Any],
    save: Callable[[], None],
    say: Callable[[str], None],
    workers: int,
) -> None:
    """Generate each of ``tasks`` not yet in ``data["tasks"]`` (``workers`` at once), adding its entry there and
    calling ``save`` as each one ends; this invocation's conditions (serving and code version from ``data``) go
    to ``data["sessions"]``, saved at once when it is interrupted."""
    done: dict[str, dict[str, Any]] = data["tasks"]
    todo = [(i, t) for i, t in enumerate(tasks, 1) if t.task_id not in done]
    saving = threading.Lock()
    session_start = time.monotonic()
    sessions: list[dict[str, Any]] = data.get("sessions", [])

    def session(finished: int, interrupted: bool = False) -> dict[str, Any]:
        """One invocation's conditions: tasks it finished, workers, elapsed time, serving, code version."""
        elapsed = round(time.monotonic() - session_start, 1)
        entry = {"tasks": finished, "workers": workers, "elapsed_s": elapsed, "serving": data.get("serving")}
        entry["l2mac"] = data.get("l2mac")
        return {**entry, "interrupted": True} if interrupted else entry

    stopping = threading.Event()

    def one(item: tuple[int, _Task]) -> None:
        i, task = item
        start = time.monotonic()
        try:
            gen = generate(task)
        except Exception as e:  # a task's failure is its outcome, not the benchmark's end
            gen = Generation("", 0, 0, error=f"{type(e).__name__}: {e}")
        entry = {
            "solution": gen.solution,
            "tokens": gen.tokens,
            "requests": gen.requests,
            "cost_usd": gen.cost_usd,
            "wall_time_s": round(time.monotonic() - start, 1),
            "workers": workers,
            "error": gen.error,
            **unscored,
        }
        with saving:
            if stopping.is_set():
                return  # interrupted: its model went away under it, so this is no outcome; a rerun generates it
            done[task.task_id] = entry
            save()
        say(f"[{i}/{len(tasks)}] {task.task_id}: {entry['wall_time_s']}s, {gen.tokens} tokens")

    try:
        run_in_threads(one, todo, workers, stopping)
    except BaseException:  # Ctrl-C: no new task starts, and those in flight are dropped (a rerun makes them)
        with saving:
            stopping.set()
            finished = sum(1 for _, t in todo if t.task_id in done)
            data["sessions"] = [*sessions, session(finished, interrupted=True)]
            save()
        raise
    if todo:
        data["sessions"] = [*sessions, session(len(todo))]


def run_in_threads(work: Callable[[_Item], None], items: list[_Item], workers: int, stopping: threading.Event) -> None:
    """``work`` on each of ``items``, ``workers`` at once, in order; the first error is raised once the others
    end. The threads are daemons and the wait wakes twice a second, so Ctrl-C ends the process at once: with
    a thread pool, the interpreter waited at exit for every task in flight to finish its minutes of work. What
    the tasks in flight leave behind (a scratch folder, a child process) goes with the process."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    queue = list(reversed(items))
    lock = threading.Lock()
    errors: list[BaseException] = []

    def worker() -> None:
        while not stopping.is_set() and not errors:
            with lock:
                if not queue:
                    return
                item = queue.pop()
            try:
                work(item)
            except BaseException as e:  # raised in the caller's thread
                errors.append(e)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(workers, len(items)))]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            while thread.is_alive():
                thread.join(0.5)
    except BaseException:
        stopping.set()  # no worker takes another item
        raise
    if errors:
        raise errors[0]


def save_results(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` to ``path`` whole or not at all (a temporary file, then renamed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def results_path(results_dir: Path, benchmark: str, model_label: str, strategy: str, day: str | None = None) -> Path:
    """``<results_dir>/<day>-<benchmark>-<model>-<strategy>.json``."""
    day = day or datetime.now(timezone.utc).strftime("%Y-%m-%d")
    model = re.sub(r"[^A-Za-z0-9._-]+", "_", model_label)
    return results_dir / f"{day}-{benchmark}-{model}-{strategy}.json"


def code_version() -> str:
    """This l2mac's version and, in a git checkout, its commit (``+changes`` when its sources are modified), so
    a results file says which code made each session."""
    try:
        version = importlib.metadata.version("l2mac")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    package = Path(__file__).resolve().parents[1]

    def git(*args: str) -> str:
        try:
            done = subprocess.run(["git", "-C", str(package), *args], capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return ""
        return done.stdout.strip() if done.returncode == 0 else ""

    commit = git("rev-parse", "--short", "HEAD")
    if not commit:
        return version
    changed = git("status", "--porcelain", "--untracked-files=no", "--", ".")
    return f"{version} ({commit}{'+changes' if changed else ''})"


def machine() -> dict[str, Any]:
    return {"platform": platform.platform(), "python": platform.python_version(), "cpus": os.cpu_count()}


async def single_generation(
    client: ModelClient, system: str, user: str, purpose: str, solution: Callable[[str], str]
) -> Generation:
    """One call, no tools: ``solution`` makes the solution from the answer's text."""
    messages = [ModelRequest(parts=[SystemPromptPart(system), UserPromptPart(user)])]
    response = await client.request(messages, purpose=purpose)
    usage = client.usage
    cost = usage.cost_usd if usage.cost_known else None
    return Generation(solution(response.text or ""), usage.total_tokens, usage.requests, cost_usd=cost)


def engine_generation(
    prompt: str,
    project: str,
    settings: Settings,
    model: Model | None,
    workspace: Path,
    *,
    defines: Callable[[str], bool],
    what: str,
    solution: Callable[[str], str],
) -> Generation:
    """The engine end to end with the settings' strategy (l2mac: plan, steps, tools, checks, its own tests; soa:
    a lead agent's skeleton and tests, child agents per function) in a fresh project folder ``project``; the
    solution is made by ``solution`` from the project's code file that ``defines`` what is asked for (solution.py
    first), and is an error naming ``what`` when none does."""
    from l2mac.run import run_l2mac

    # no page per task: drawing it would count in the task's wall time
    rs = settings.run.model_copy(update={"workspace": workspace, "project_name": project, "report_page": False})
    result = run_l2mac(prompt, settings.model_copy(update={"run": rs}), model=model)
    candidates = sorted(
        (p for p, text in result.files.items() if p.endswith(".py") and "test" not in p and defines(text)),
        key=lambda p: (p != "solution.py", len(p)),
    )
    tokens, requests, cost = result.report.tokens.total, result.report.requests, result.report.cost_usd
    if not candidates:
        return Generation("", tokens, requests, error=f"no file defines {what}", cost_usd=cost)
    return Generation(solution(result.files[candidates[0]]), tokens, requests, cost_usd=cost)


def usage_summary(tasks: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """What generating the tasks took: tokens, requests, cost (None when a price is unknown) and wall time."""
    costs = [t.get("cost_usd") for t in tasks.values()]
    return {
        "tokens": sum(t["tokens"] for t in tasks.values()),
        "requests": sum(t["requests"] for t in tasks.values()),
        "cost_usd": None if any(c is None for c in costs) else round(sum(c for c in costs if c is not None), 4),
        "generation_wall_time_s": round(sum(t["wall_time_s"] for t in tasks.values()), 1),
    }


#: the engine's strategies (``single`` is one call, no engine)
ENGINE_STRATEGIES = ("l2mac", "soa")
#: every strategy a benchmark compares
STRATEGIES = ("single", *ENGINE_STRATEGIES)


def scorer_for(tasks: Sequence[_Task], score_one: Callable[[str, _Task], Mapping[str, Any]]) -> Scorer:
    """Scores solutions ``{task_id: solution}`` of ``tasks`` one by one with ``score_one`` (others are ignored)."""
    by_id = {t.task_id: t for t in tasks}

    def score(solutions: dict[str, str]) -> dict[str, Mapping[str, Any]]:
        return {tid: score_one(code, by_id[tid]) for tid, code in solutions.items() if tid in by_id}

    return score


@dataclass(frozen=True)
class Suite(Generic[_Task]):
    """What one benchmark brings to the runner: how a task is generated by one call and by the engine, the
    engine's limits per task, how scores are summarised, and the one line that tells the summary."""

    name: str  # in results file names: ``<day>-<name>-<model>-<strategy>.json``
    title: str  # in results files
    generate_single: Callable[[ModelClient, _Task], Coroutine[Any, Any, Generation]]
    generate_engine: Callable[[_Task, Settings, Model | None, Path], Generation]
    engine_budget: dict[str, int]
    summarise: Summariser
    unscored: Mapping[str, Any]
    headline: Callable[[dict[str, Any]], str]

    def generator(
        self,
        strategy: str,
        settings: Settings,
        model: Model | None,
        client_for: Callable[[], ModelClient],
        workspace: Path | None = None,
    ) -> Callable[[_Task], Generation]:
        """Generates a task with ``strategy``: one call with a fresh client, or the engine in a project folder."""
        if strategy == "single":
            return single_generator(self.generate_single, client_for)
        return engine_generator(self.generate_engine, settings, model, strategy, workspace)


def single_generator(
    generate: Callable[[ModelClient, _Task], Coroutine[Any, Any, Generation]], client_for: Callable[[], ModelClient]
) -> Callable[[_Task], Generation]:
    """One call per task, each with a fresh client (its usage is the task's)."""

    def one(task: _Task) -> Generation:
        return asyncio.run(generate(client_for(), task))

    return one


def engine_generator(
    generate: Callable[[_Task, Settings, Model | None, Path], Generation],
    settings: Settings,
    model: Model | None,
    strategy: str,
    workspace: Path | None = None,
) -> Callable[[_Task], Generation]:
    """The engine per task with ``strategy`` (l2mac or soa), each task in its own project folder under
    ``workspace`` (a new temporary folder by default)."""
    if strategy not in ENGINE_STRATEGIES:
        raise ConfigError(f"the engine's strategies are {', '.join(ENGINE_STRATEGIES)}, not {strategy!r}")
    root = workspace or Path(tempfile.mkdtemp(prefix=f"l2mac-bench-{strategy}-"))
    chosen = settings.model_copy(update={"run": settings.run.model_copy(update={"strategy": strategy})})

    def one(task: _Task) -> Generation:
        return generate(task, chosen, model, root)

    return one
