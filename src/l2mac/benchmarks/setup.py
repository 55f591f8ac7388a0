"""The model a benchmark runs on, and the conditions its results file records.

One model serves a whole benchmark: the engine's settings (protocol and window fixed from the model), its
label, a fresh client per task for the single strategy, and the loaded model itself, shared by every task (and
by concurrent workers, through a llama-server's slots) and closed once at the end.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from pydantic_ai.models import Model

from l2mac.benchmarks.runner import Generation, HasTaskId, Suite, code_version, machine
from l2mac.executors.base import Executor, Worker
from l2mac.executors.threads import ThreadExecutor
from l2mac.models.client import ModelClient
from l2mac.settings import Settings, load_settings

_Task = TypeVar("_Task", bound=HasTaskId)


def results_meta(
    benchmark: str, md5: str, spec: ModelSpec, strategy: str, budget: dict[str, int], executor: Executor
) -> dict[str, Any]:
    """What a results file records of the conditions it was made in."""
    return {
        "benchmark": benchmark,
        "data_md5": md5,
        "model": spec.label(),
        "seed": spec.seed,
        "task_tokens": spec.task_tokens,
        "engine_budget": budget if strategy != "single" else None,
        "serving": spec.serving(executor),
        "machine": machine(),
        "l2mac": code_version(),
        "command": "l2mac " + shlex.join(sys.argv[1:]),
    }


@dataclass
class BenchModel:
    """One model for a whole benchmark: the engine's settings (protocol and window fixed from the model), its
    label, a fresh client per task for the single strategy, and the model every run shares: a local model,
    loaded once (shared by concurrent workers through a llama-server's slots) and closed once at the end. A
    model behind an API is no model to share (``None``: each run builds its own), as its async HTTP client is
    bound to the event loop of the run that first used it."""

    settings: Settings
    label: str
    client_for: Callable[[], ModelClient]
    model: Model | None
    close: Callable[[], None]


@dataclass(frozen=True)
class ModelSpec:
    """The model a benchmark's workers load, said in plain values, so a worker on another machine (a Ray
    actor) loads it from this; ``threads`` are the local model's CPU threads (default: all cores)."""

    model: str | None = None
    base_url: str | None = None
    seed: int | None = None
    task_tokens: int = 40_000
    llama_server: str | None = None
    slots: int | None = None
    run: dict[str, Any] = field(default_factory=dict)
    threads: int | None = None

    def load(self) -> BenchModel:
        return bench_model(
            self.model,
            self.base_url,
            self.seed,
            self.task_tokens,
            self.llama_server,
            slots=self.slots,
            run=self.run,
            threads=self.threads,
        )

    def label(self) -> str:
        """``provider:name`` without loading the model (the local model when none is configured)."""
        from l2mac.models.local.catalog import DEFAULT_LOCAL_MODEL
        from l2mac.models.registry import split_model_spec

        llm = load_settings(llm={"model": self.model, "base_url": self.base_url}).llm
        provider, name = split_model_spec(llm) if llm.configured else ("local", DEFAULT_LOCAL_MODEL)
        return f"{provider}:{name}"

    def serving(self, executor: Executor) -> str:
        """How the workers reach the model: a llama-server's slots each, a shared endpoint, or in-process."""
        if self.llama_server:
            served = f"llama-server, {self.slots} slots"
        else:
            served = f"endpoint {self.base_url}" if self.base_url else "in-process"
        return served if isinstance(executor, ThreadExecutor) else f"{executor.describe}; each: {served}"


def suite_worker(
    suite: Suite[_Task], strategy: str, spec: ModelSpec, workspace: Path | None = None
) -> Worker[_Task, Generation]:
    """A benchmark worker: ``spec``'s model loaded where the worker runs, generating ``suite``'s tasks with
    ``strategy`` until the executor closes it."""
    bm = spec.load()
    try:
        return Worker(suite.generator(strategy, bm.settings, bm.model, bm.client_for, workspace), bm.close)
    except BaseException:
        bm.close()
        raise


def bench_model(
    model: str | None,
    base_url: str | None,
    seed: int | None,
    task_tokens: int,
    llama_server: str | None = None,
    slots: int | None = None,
    run: dict[str, Any] | None = None,
    threads: int | None = None,
) -> BenchModel:
    """The model of a benchmark (its tasks scored by hidden tests or a judge), with the engine's limits per
    task from ``run``."""
    settings = load_settings(
        llm={
            "model": model,
            "base_url": base_url,
            "llama_server": llama_server,
            "local_slots": slots,
            "local_threads": threads,
        },
        # scored by hidden tests or a judge: no README step spending a task's budget
        run={"max_tokens": task_tokens, "max_turns": 12, "readme_step": False, **(run or {})},
    )
    return loaded_model(settings, task_tokens, seed)


def loaded_model(settings: Settings, task_tokens: int | None = None, seed: int | None = None) -> BenchModel:
    """``settings``' model loaded once to serve many runs: the settings fixed from what the model is (its
    label, window and protocol), with a client maker for single calls of ``task_tokens`` at most."""
    from l2mac.models.client import RetryPolicy
    from l2mac.models.registry import model_settings
    from l2mac.run import protocol_for, resolve_model

    info, _ = resolve_model(settings, None)
    ms = model_settings(settings.llm)
    if seed is not None:
        ms["seed"] = seed
    shared = info.close is not None  # loaded here (the local model), not a client of an API

    def client_for() -> ModelClient:
        return ModelClient(
            info.model if shared else resolve_model(settings, None)[0].model,
            settings=ms,
            retry=RetryPolicy(max_retries=settings.llm.max_retries),
            max_tokens=task_tokens,
            max_output_tokens=settings.llm.max_output_tokens,
        )

    llm = settings.llm.model_copy(
        update={"model": f"{info.provider}:{info.name}", "context_window": info.context_window}
    )
    run_settings = settings.run.model_copy(update={"protocol": protocol_for(settings.run.protocol, info)})
    return BenchModel(
        settings.model_copy(update={"llm": llm, "run": run_settings}),
        info.label,
        client_for,
        info.model if shared else None,
        info.close or (lambda: None),
    )
