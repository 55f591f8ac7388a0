"""The model a benchmark runs on, and the conditions its results file records.

One model serves a whole benchmark: the engine's settings (protocol and window fixed from the model), its
label, a fresh client per task for the single strategy, and the loaded model itself, shared by every task (and
by concurrent workers, through a llama-server's slots) and closed once at the end.
"""

from __future__ import annotations

import shlex
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic_ai.models import Model

from l2mac.benchmarks.runner import code_version, machine
from l2mac.models.client import ModelClient
from l2mac.settings import Settings, load_settings


def results_meta(
    benchmark: str, md5: str, bm: BenchModel, strategy: str, seed: int | None, task_tokens: int, budget: dict[str, int]
) -> dict[str, Any]:
    """What a results file records of the conditions it was made in."""
    slots = bm.settings.llm.local_slots
    return {
        "benchmark": benchmark,
        "data_md5": md5,
        "model": bm.label,
        "seed": seed,
        "task_tokens": task_tokens,
        "engine_budget": budget if strategy != "single" else None,
        "serving": f"llama-server, {slots} slots" if bm.settings.llm.llama_server else "in-process",
        "machine": machine(),
        "l2mac": code_version(),
        "command": "l2mac " + shlex.join(sys.argv[1:]),
    }


@dataclass
class BenchModel:
    """One model for a whole benchmark: the engine's settings (protocol and window fixed from the model), its
    label, a fresh client per task for the single strategy, and the loaded model itself, shared by every task
    (and by concurrent workers, through a llama-server's slots) and closed once at the end."""

    settings: Settings
    label: str
    client_for: Callable[[], ModelClient]
    model: Model
    close: Callable[[], None]


def bench_model(
    model: str | None,
    base_url: str | None,
    seed: int | None,
    task_tokens: int,
    llama_server: str | None = None,
    slots: int | None = None,
    run: dict[str, Any] | None = None,
) -> BenchModel:
    from l2mac.models.client import RetryPolicy
    from l2mac.models.registry import model_settings
    from l2mac.run import protocol_for, resolve_model

    settings = load_settings(
        llm={"model": model, "base_url": base_url, "llama_server": llama_server, "local_slots": slots},
        # scored by hidden tests or a judge: no README step spending a task's budget
        run={"max_tokens": task_tokens, "max_turns": 12, "readme_step": False, **(run or {})},
    )
    info, _ = resolve_model(settings, None)
    ms = model_settings(settings.llm)
    if seed is not None:
        ms["seed"] = seed

    def client_for() -> ModelClient:
        return ModelClient(
            info.model,
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
        info.model,
        info.close or (lambda: None),
    )
