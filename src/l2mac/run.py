"""Assembles a run: settings → model → file store → strategy → report. The CLI and the library API call this."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic_ai.models import Model

from l2mac.checks.environment import ProjectEnvironment
from l2mac.checks.readme import verify_readme
from l2mac.checks.runner import Runner
from l2mac.checks.sandbox import BubblewrapRunner, choose_runner
from l2mac.context import CHARS_PER_TOKEN, ContextBudget, estimate_tokens
from l2mac.control import protocol_named
from l2mac.domains import Domain, load_domain
from l2mac.errors import ConfigError, L2MACError, WorkspaceError
from l2mac.events import EventSink, ModelCalled, RunFinished, RunStarted, ignore
from l2mac.journal import JOURNAL_FILE, Journal, JournaledCall, load_journal
from l2mac.models.client import CallRecord, ModelClient, RetryPolicy
from l2mac.models.local.catalog import DEFAULT_LOCAL_MODEL
from l2mac.models.registry import DEFAULT_WINDOW, ModelInfo, build_model, given_model_info, model_settings
from l2mac.planner import load_prompt_program
from l2mac.record import RECORD_DIR, RunRecord
from l2mac.repo.map import repository_map
from l2mac.repo.protected import is_secret, refusal
from l2mac.repo.state import measure
from l2mac.repo.worktree import Worktree, open_worktree
from l2mac.report import ChangeSummary, JournalSummary, RunReport, build_report
from l2mac.settings import RunSettings, Settings, load_settings, server_slots
from l2mac.store import FileStore, GitHistory
from l2mac.strategies import RunContext, StrategyResult, strategy_for
from l2mac.tools import Toolbox, ToolEnv, tools_named
from l2mac.types import PromptProgram, StepOutcome
from l2mac.visual import write_run_report
from l2mac.workspace import (
    earlier_answers,
    load_run,
    project_dir,
    project_name_for,
    save_run_file,
    set_aside_for_resume,
)

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
    report: RunReport
    workspace: Path
    outcomes: list[StepOutcome] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.report.ok


def resolve_model(settings: Settings, model: Model | None) -> tuple[ModelInfo, str]:
    """The model to use, and a one-line note for the user when it was chosen for them."""
    if model is not None:
        window = settings.llm.context_window or DEFAULT_WINDOW
        return given_model_info(model, window), ""
    # a llama-server child has a slot for each call the run may have in flight
    slots = max(settings.llm.local_slots, server_slots(1, settings.run))
    llm = settings.llm.model_copy(update={"local_slots": slots})
    if llm.configured:
        return build_model(llm), ""
    local = llm.model_copy(update={"model": f"local:{DEFAULT_LOCAL_MODEL}"})
    try:
        return build_model(local), LOCAL_NOTE.format(name=DEFAULT_LOCAL_MODEL)
    except ConfigError as e:
        raise ConfigError(NO_MODEL_HINT) from e


def protocol_for(setting: str, info: ModelInfo) -> str:
    """``text`` (fenced blocks) for the embedded and GGUF models, which write code far better that way."""
    if setting != "auto":
        return setting
    return "text" if info.provider in {"local", "gguf"} else "tools"


RESUME_HINT = "resume with: l2mac resume {path}"


@dataclass
class _Start:
    """Where a run starts: a new project folder, or an interrupted run's folder and its journal."""

    root: Path
    program: PromptProgram | None
    reuse: list[JournaledCall] = field(default_factory=list)  # an earlier run's answers (``answers_from``)
    replay: list[JournaledCall] = field(default_factory=list)
    resumed: bool = False
    worktree: Worktree | None = None  # the task is a change to this repository, made here


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
        raise ConfigError('the prompt is empty: say what to build, e.g. l2mac "a unit converter library with tests"')
    settings = settings or load_settings()
    rs = settings.run
    program = load_prompt_program(rs.prompt_program, task) if rs.prompt_program else None
    if rs.strategy == "soa" and rs.domain != "codebase":  # its agents own functions, its prompts are code's
        raise ConfigError(
            f"--strategy soa builds codebases (its agents own functions); write the {rs.domain} domain with "
            "--strategy l2mac"
        )
    reuse = earlier_answers(rs.answers_from, settings.llm) if rs.answers_from else []  # before any folder is made
    if rs.repo is not None:
        if rs.domain not in ("codebase", "book"):
            raise ConfigError(
                "--repo changes a codebase (with the l2mac or soa strategy) or a book (with the l2mac strategy)"
            )
        worktree = open_worktree(rs.repo, task, rs.workspace, allow_dirty=rs.allow_dirty)
        start = _Start(worktree.path, program, reuse=reuse, worktree=worktree)
        try:
            return await _execute(task.strip(), settings, start, model=model, runner=runner, emit=emit)
        except L2MACError:  # e.g. a prompt too long for the model, found before any step: no branch left over
            worktree.discard_if_unused()
            raise
    try:
        root = project_dir(rs.workspace, rs.project_name or project_name_for(task), force=rs.force)
    except OSError as e:
        raise WorkspaceError(f"cannot use the workspace {rs.workspace}: {e.strerror}") from e
    return await _execute(task.strip(), settings, _Start(root, program, reuse), model=model, runner=runner, emit=emit)


async def aresume_l2mac(
    project: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    config_path: Path | None = None,
    model: Model | None = None,
    runner: Runner | None = None,
    emit: EventSink = ignore,
) -> RunResult:
    """Continue the interrupted (or stopped) run in ``project``: journaled answers are replayed without calling
    the model, the files are rebuilt from them, and the run goes on live from where it stopped. ``overrides``
    change run settings (e.g. a larger ``max_tokens``)."""
    root = project.resolve()
    task, llm, run, program, saved_worktree = load_run(root)
    replay = load_journal(root / RECORD_DIR / JOURNAL_FILE)  # before anything moves: a damaged journal stops here
    run.update({k: v for k, v in (overrides or {}).items() if v is not None})
    settings = load_settings(config_path=config_path, llm=llm, run=run)
    worktree = Worktree.from_dict(saved_worktree) if saved_worktree else None
    if worktree is not None:  # a change to a repository: its files are put back at the base commit, kept in git
        worktree.set_aside_for_resume()
    set_aside_for_resume(root, files=worktree is None)
    start = _Start(root, program, replay=replay, resumed=True, worktree=worktree)
    return await _execute(task, settings, start, model=model, runner=runner, emit=emit)


async def _execute(
    task: str,
    settings: Settings,
    start: _Start,
    *,
    model: Model | None,
    runner: Runner | None,
    emit: EventSink,
) -> RunResult:
    domain = load_domain(settings.run.domain, settings.run.prompts_file)  # a bad domain fails before a model loads
    info, note = resolve_model(settings, model)
    try:
        return await _execute_with(task, settings, start, domain, info, note, runner=runner, emit=emit)
    finally:
        if info.close is not None:  # the embedded model: free its memory, so runs in one process do not pile up
            info.close()


def _check_prompt_fits(task: str, info: ModelInfo) -> None:
    prompt_tokens, room = estimate_tokens(task), info.context_window // 4
    if prompt_tokens > room:
        raise ConfigError(
            f"the prompt is about {prompt_tokens:,} tokens, more than a quarter of {info.label}'s "
            f"{info.context_window:,}-token context window, which every step must also hold. Shorten it, or "
            "give the details as a prompt program (--prompt-program) whose steps each carry their part."
        )


def _model_client(
    settings: Settings, info: ModelInfo, journal: Journal, record: RunRecord, emit: EventSink
) -> ModelClient:
    """The run's one model client: its budgets, retries and journal; every call logged and announced."""
    rs = settings.run
    client = ModelClient(
        info.model,
        settings=model_settings(settings.llm),
        retry=RetryPolicy(max_retries=settings.llm.max_retries, base_delay_s=settings.llm.retry_base_delay_s),
        max_tokens=rs.max_tokens,
        max_cost=rs.max_cost,
        max_output_tokens=settings.llm.max_output_tokens,
        deadline=time.monotonic() + rs.max_wall_time_s if rs.max_wall_time_s else None,
        journal=journal,
        parallel=info.parallel,
        continues=info.continues,
    )

    def on_call(call: CallRecord) -> None:
        record.log_call(call)
        emit(ModelCalled(call.purpose, client.usage))

    client.on_call = on_call
    return client


async def _execute_with(
    task: str,
    settings: Settings,
    start: _Start,
    domain: Domain,
    info: ModelInfo,
    note: str,
    *,
    runner: Runner | None,
    emit: EventSink,
) -> RunResult:
    rs = settings.run
    _check_prompt_fits(task, info)
    runner = runner or choose_runner(rs.sandbox, config_path=settings.config_path)
    if start.worktree is not None and isinstance(runner, BubblewrapRunner):
        runner = runner.hiding(is_secret)  # the code the model writes reads the repository's secrets as empty
    try:
        store = FileStore(start.root, guard=refusal if start.worktree is not None else None)
        record = RunRecord(store.root)
    except OSError as e:
        raise WorkspaceError(f"cannot write to the project folder {start.root}: {e.strerror}") from e
    save_run_file(store.root, task, settings, start.program, start.worktree.as_dict() if start.worktree else None)
    journal = Journal(record.dir / JOURNAL_FILE, start.replay, start.reuse)
    history = GitHistory(store.root)
    if not start.resumed and not start.worktree and store.list_files():  # --force into a folder with files
        history.commit("files present before the run")  # kept in the history
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
        environment=ProjectEnvironment(store.root) if rs.project_env and domain.python_checks else None,
        own_pytest_options=start.worktree is not None,
    )
    protocol = protocol_named(protocol_for(rs.protocol, info))
    strategy = strategy_for(rs, protocol)
    change, passing = _change_before(start.worktree, env, rs.run_tests and domain.tests)
    ctx = RunContext(
        task=task,
        domain=domain,
        client=_model_client(settings, info, journal, record, emit),
        toolbox=Toolbox(tools_named(domain.tools), env),
        budget=budget,
        history=history,
        record=record,
        emit=emit,
        run_tests=rs.run_tests,
        recoveries=rs.recoveries,
        protocol=protocol,
        program=start.program,
        repository=repository_map(store.snapshot(), task, int(budget.limit * CHARS_PER_TOKEN * 0.4))
        if start.worktree
        else "",
        passing_before=passing,
    )
    if change is not None:
        record.log("repository_before", **change.model_dump(mode="json"))
    emit(RunStarted(store.root.name, str(store.root), info.label, strategy.name, note, env.runner.isolation))
    record.log(
        "run_started",
        task=task,
        model=info.label,
        strategy=strategy.name,
        domain=domain.name,
        isolation=env.runner.isolation,
        context_window=info.context_window,
        protocol=protocol.name,
        resumed=start.resumed,
        journaled_calls=len(start.replay),
    )
    began = time.monotonic()
    try:
        done = await strategy.run(ctx)
    except (KeyboardInterrupt, asyncio.CancelledError):
        record.log("run_interrupted", hint=RESUME_HINT.format(path=store.root))
        if rs.report_page:
            write_page(store.root, record)
        raise
    report = _finish(ctx, done, env, info, rs, start, journal, time.monotonic() - began, (change, passing))
    if rs.report_page:
        write_page(store.root, record)
    emit(RunFinished(report))
    return RunResult(files=store.snapshot(), report=report, workspace=store.root, outcomes=done.outcomes)


def write_page(project: Path, record: RunRecord) -> Path | None:
    """The run's page (``.l2mac/report.html``); one that cannot be drawn is logged and never fails the run: the
    page is a view of the record, and the record is what matters."""
    try:
        return write_run_report(project)
    except Exception as e:
        record.log("report_page_failed", error=f"{type(e).__name__}: {e}")
        return None


def _finish(
    ctx: RunContext,
    done: StrategyResult,
    env: ToolEnv,
    info: ModelInfo,
    rs: RunSettings,
    start: _Start,
    journal: Journal,
    wall_time_s: float,
    before: tuple[ChangeSummary | None, frozenset[str]] = (None, frozenset()),
) -> RunReport:
    """Record a stop (with how to resume), then build and save the report; for a change to a repository, with
    its checks after the last step beside ``before`` (and the tests that passed then)."""
    change, passing = before
    stopped = f"{done.stopped}; {RESUME_HINT.format(path=env.store.root)}" if done.stopped else None
    if done.stopped:
        ctx.history.commit(f"stopped: {done.stopped}")
        ctx.record.log("run_stopped", reason=done.stopped)
    if ctx.history.failed:
        ctx.record.log("commits_failed", failures=ctx.history.failed)
    if change is not None:
        after, passing_now = measure(env, with_tests=rs.run_tests and ctx.domain.tests)
        change = change.model_copy(update={"after": after, "broken": sorted(passing - passing_now)})
    # a repository's README is its authors': its commands are theirs to vouch for
    verify = rs.verify_readme and ctx.domain.python_checks and rs.run_tests and change is None
    readme = verify_readme(env.runner, env.store.snapshot(), rs.command_timeout_s) if verify else []
    if readme:
        ctx.record.log("readme", commands=[asdict(c) for c in readme])
    report = build_report(
        project=env.store.root.name,
        model=info.label,
        strategy=rs.strategy,
        domain=ctx.domain,
        env=env,
        outcomes=done.outcomes,
        planned_steps=len(done.program.steps) if done.program else 0,
        usage=ctx.client.usage,
        wall_time_s=wall_time_s,
        run_tests_enabled=rs.run_tests,
        stopped=stopped,
        stopped_by=done.stopped_by,
        tests_required=bool(done.program and any(s.requires_tests for s in done.program.steps)),
        journal=JournalSummary(
            resumed=start.resumed,
            replayed_calls=journal.replayed,
            reused_calls=journal.reused,
            diverged_at_call=journal.diverged_at,
        ),
        readme=readme,
        change=change,
    )
    ctx.record.save_report(report)
    return report


def _change_before(
    worktree: Worktree | None, env: ToolEnv, with_tests: bool
) -> tuple[ChangeSummary | None, frozenset[str]]:
    """For a change to a repository: where it is made, the repository's checks before the first step, and the
    tests that passed then."""
    if worktree is None:
        return None, frozenset()
    before, passing = measure(env, with_tests=with_tests)
    change = ChangeSummary(
        repository=str(worktree.repo),
        branch=worktree.branch,
        base=worktree.base,
        base_ref=worktree.base_ref,
        worktree=str(worktree.path),
        review=worktree.review_commands(),
        before=before,
    )
    return change, passing


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


def resume_l2mac(
    project: Path,
    *,
    overrides: Mapping[str, Any] | None = None,
    config_path: Path | None = None,
    model: Model | None = None,
    runner: Runner | None = None,
    emit: EventSink = ignore,
) -> RunResult:
    """Synchronous ``aresume_l2mac``."""
    return asyncio.run(
        aresume_l2mac(project, overrides=overrides, config_path=config_path, model=model, runner=runner, emit=emit)
    )
