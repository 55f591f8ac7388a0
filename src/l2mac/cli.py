"""The ``l2mac`` command: a thin typer app over the library API, with rich live progress.

``l2mac "<prompt>"`` is short for ``l2mac run "<prompt>"`` (the reference implementation's form).
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console
from rich.live import Live
from rich.table import Table
from rich.text import Text

from l2mac.checks.sandbox import isolation_line
from l2mac.cli_batch import batch_command
from l2mac.cli_bench import bench_app
from l2mac.cli_models import models_app
from l2mac.cli_report import report_command
from l2mac.errors import L2MACError
from l2mac.events import (
    AgentChanged,
    Event,
    ModelCalled,
    PlanReady,
    RunFinished,
    RunStarted,
    StepFinished,
    StepStarted,
    ToolUsed,
)
from l2mac.record import PAGE_FILE, RECORD_DIR
from l2mac.settings import default_config_path, init_config, load_settings
from l2mac.terminal import make_console, print_error

if TYPE_CHECKING:
    from l2mac.report import ChangeSummary, EnvironmentSummary, RunReport, StepsSummary
    from l2mac.run import RunResult

app = typer.Typer(add_completion=False, no_args_is_help=True, help="The LLM Automatic Computer.")
app.add_typer(models_app, name="models")
app.add_typer(bench_app, name="bench")
app.command("report")(report_command)
app.command("batch")(batch_command)
SUBCOMMANDS = {"run", "models", "resume", "bench", "report", "batch"}


@app.callback()
def _root() -> None:
    """The LLM Automatic Computer: `l2mac "<prompt>"` generates a project; `l2mac COMMAND --help` for more."""


EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_STOPPED = 0, 1, 2, 3


class Progress:
    """Renders run events as one live status block and a line per finished step."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = Live(console=console, refresh_per_second=8, transient=True)
        self.step = "planning"
        self.tool = ""
        self.usage = ""
        self.workspace = ""
        self.agents: dict[int, str] = {}

    def _render(self) -> Text:
        return Text.assemble(
            ("▶ ", "cyan"), (self.step, "bold"), (f"  {self.tool}", "magenta"), (f"  {self.usage}", "dim")
        )

    def __call__(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            self.workspace = event.workspace
            if event.note:
                self.console.print(f"[yellow]note:[/] {event.note}", highlight=False)
            self.console.print(f"[bold]l2mac[/] {event.strategy} · model [cyan]{event.model}[/] · {event.workspace}")
            if event.isolation:
                colour = "dim" if event.isolation == "bubblewrap" else "yellow"
                self.console.print(f"[{colour}]{isolation_line(event.isolation)}[/]", highlight=False)
            self.live.start()
        elif isinstance(event, PlanReady):
            self.console.print(f"Prompt program ({event.source}): {len(event.titles)} steps")
            for i, t in enumerate(event.titles, 1):
                self.console.print(f"  {i:>2}. {t}", highlight=False)
        elif isinstance(event, StepStarted):
            self.step = f"step {event.index}/{event.total}: {event.title}"
            self.tool = ""
        elif isinstance(event, ToolUsed):
            self.tool = f"{event.tool}{'' if event.ok else ' ✗'}"
        elif isinstance(event, ModelCalled):
            u = event.usage
            cost = f"${u.cost_usd:.4f}" if u.cost_known else "cost unknown"
            self.usage = f"{u.total_tokens:,} tokens · {cost}"
        elif isinstance(event, StepFinished):
            o = event.outcome
            mark = "[green]✓[/]" if o.passed else "[red]✗[/]"
            why = f" — {o.reason}" if o.reason else ""
            self.console.print(f"{mark} step {o.index}/{event.total}: {o.title}{why}", highlight=False)
        elif isinstance(event, AgentChanged):
            self.agents[event.id] = event.state
            counts = {s: list(self.agents.values()).count(s) for s in dict.fromkeys(self.agents.values())}
            self.step = f"{len(self.agents)} agents: " + ", ".join(f"{n} {s}" for s, n in counts.items())
            if event.state in ("done", "failed"):
                mark = "[green]✓[/]" if event.state == "done" else "[red]✗[/]"
                note = f" — {event.note}" if event.note else ""
                indent = "  " * event.depth
                self.console.print(
                    f"{indent}{mark} agent {event.id}: {event.owns} ({event.tokens:,} tokens){note}", highlight=False
                )
        elif isinstance(event, RunFinished):
            self.live.stop()
        self.live.update(self._render())

    def stop(self) -> None:
        self.live.stop()


def _passed_over(steps: StepsSummary) -> str:
    """The steps that passed while what failed when they began (another step's tests, code problems) still did:
    said, since a step is held only by what it made worse."""
    over = [s for s in steps.detail if s.status == "passed" and s.inherited]
    return "; ".join(f"step {s.index}: {len(s.inherited)} ({', '.join(s.inherited[:2])})" for s in over)


def _change_rows(change: ChangeSummary) -> list[tuple[str, str]]:
    """A change to a repository: where, and its checks before and after."""
    b, a = change.before, change.after or change.before
    rows = [
        ("branch", f"{change.branch} (from {change.base_ref}, {change.base[:12]})"),
        (
            "tests before → after",
            f"{b.tests_passed} passed, {b.tests_failing} failing → {a.tests_passed}, {a.tests_failing}",
        ),
        ("code problems before → after", f"{b.problems} → {a.problems}"),
    ]
    if change.broken:
        rows.append(("passed before, fail now", ", ".join(change.broken[:5])))
    return rows


def summary_table(report: RunReport) -> Table:
    t = Table(title="l2mac run", show_header=False, title_style="bold")
    tests, steps = report.tests, report.steps
    cost = "unknown" if report.cost_usd is None else f"${report.cost_usd:.4f}"
    rows = [
        ("status", report.status + (f" ({report.stopped_reason})" if report.stopped_reason else "")),
        ("project", report.workspace),
        ("model", report.model),
        ("steps", f"{steps.passed} passed, {steps.failed} failed of {steps.planned}"),
        ("files / LOC", f"{report.files} / {report.loc}"),
        (
            "syntax / lint / import / type errors",
            f"{report.syntax_errors} / {report.lint_errors} / {report.import_errors} / {report.type_errors}",
        ),
        ("tests", f"{tests.status}: {tests.passed} passed, {tests.failed} failed"),
        *(
            [("tests removed (failed by every implementation)", ", ".join(report.tests_removed))]
            if report.tests_removed
            else []
        ),
        *([("passed over earlier failures", over)] if (over := _passed_over(steps)) else []),
        *(_change_rows(report.change) if report.change is not None else []),
        *([("files the tests wrote into the project", ", ".join(tests.left_files))] if tests.left_files else []),
        ("tokens", f"{report.tokens.total:,} ({report.requests} requests)"),
        ("generated code ran in", report.isolation),
        *([("on", _environment_line(report.environment))] if report.environment else []),
        *([("README commands", _readme_line(report))] if report.readme else []),
        ("cost", cost),
        ("wall time", f"{report.wall_time_s:.1f}s"),
    ]
    for k, v in rows:
        t.add_row(k, str(v))
    return t


def _environment_line(env: EnvironmentSummary) -> str:
    if not env.own and not env.install_problem:
        return f"l2mac's interpreter ({env.python}): the project declares no third-party dependency"
    where = f"the project's .venv ({env.python})" if env.own else f"l2mac's interpreter ({env.python})"
    deps = ", ".join(env.dependencies)
    if env.install_problem:
        return f"{where}; installing {deps} with {env.installer} failed (see run_report.json)"
    return where + (f", {env.installer} installed {deps} ({env.install_s:.1f}s installing)" if deps else "")


def _readme_line(report: RunReport) -> str:
    works = sum(c.outcome == "works" for c in report.readme)
    failing = [c.command for c in report.readme if c.outcome == "fails"]
    return f"{works} of {len(report.readme)} work" + (f"; failing: {'; '.join(failing)}" if failing else "")


@app.command("run")
def run_command(
    prompt: Annotated[str, typer.Argument(help="What to build, in one line.", show_default=False)] = "",
    domain: Annotated[str, typer.Option(help="codebase, book or custom.")] = "codebase",
    steps: Annotated[int | None, typer.Option(help="Most steps in the prompt program.", min=1)] = None,
    run_tests: Annotated[
        bool, typer.Option("--run-tests/--no-run-tests", help="Check each step with the tests.")
    ] = True,
    prompt_program: Annotated[Path | None, typer.Option(help="Use this plan (YAML/JSON) instead of planning.")] = None,
    prompts_file: Annotated[Path | None, typer.Option(help="Prompt set for --domain custom.")] = None,
    answers_from: Annotated[
        Path | None,
        typer.Option(
            help="An earlier run's project folder: reuse its answers to the same requests, ask the model the rest "
            "(to see what a changed setting or version does on the same task)."
        ),
    ] = None,
    model: Annotated[str | None, typer.Option(help="Model, e.g. openai:gpt-4o or anthropic:claude-sonnet-4-5.")] = None,
    base_url: Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")] = None,
    api_key: Annotated[str | None, typer.Option(help="API key (prefer the environment or config file).")] = None,
    context_window: Annotated[int | None, typer.Option(help="Context window in tokens.", min=512)] = None,
    llama_server: Annotated[
        str | None, typer.Option(help="Serve the local model from this llama.cpp llama-server, in parallel slots.")
    ] = None,
    seed: Annotated[
        int | None, typer.Option(help="Sampling seed: same seed, same run (local models); another seed, another try.")
    ] = None,
    workspace: Annotated[Path | None, typer.Option(help="Folder for projects (default: ./workspace).")] = None,
    project_name: Annotated[str | None, typer.Option(help="Project folder name.")] = None,
    max_cost: Annotated[float | None, typer.Option(help="Stop after spending this many USD.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Stop after this many tokens.")] = None,
    max_steps: Annotated[int | None, typer.Option(help="Stop after running this many steps.", min=1)] = None,
    max_wall_time: Annotated[float | None, typer.Option(help="Stop after this many seconds.", min=1)] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into --project-name even if that folder holds files.")
    ] = False,
    repo: Annotated[
        Path | None,
        typer.Option(
            help="Change this git repository instead: the prompt is the change, made on a new branch "
            "l2mac/<slug> in a worktree under --workspace; your branch, index and files stay as they are."
        ),
    ] = None,
    allow_dirty: Annotated[
        bool, typer.Option("--allow-dirty", help="With --repo: start from the last commit despite uncommitted changes.")
    ] = False,
    reflect: Annotated[bool, typer.Option(help="Review and refine the plan once before running it.")] = False,
    strategy: Annotated[
        str | None, typer.Option(help="l2mac (plan, then steps) or soa (self-organised agents) (default: l2mac).")
    ] = None,
    max_agents: Annotated[int | None, typer.Option(help="soa: most agents.", min=1)] = None,
    max_depth: Annotated[int | None, typer.Option(help="soa: most levels below the first agent.", min=1)] = None,
    concurrency: Annotated[int | None, typer.Option(help="soa: model calls in flight at once.", min=1)] = None,
    protocol: Annotated[
        str | None, typer.Option(help="How files are written: tools, text (fenced blocks) or auto (default: auto).")
    ] = None,
    recoveries: Annotated[
        bool | None,
        typer.Option("--recoveries/--no-recoveries", help="Recover code blocks and loose JSON from small models."),
    ] = None,
    sandbox: Annotated[
        str | None,
        typer.Option(help="Where generated code runs: auto, bubblewrap or subprocess (default: auto)."),
    ] = None,
    verify_readme: Annotated[
        bool | None,
        typer.Option(
            "--verify-readme/--no-verify-readme",
            help="At the end, run the README's commands in a fresh copy and report which work (default: on).",
        ),
    ] = None,
    project_env: Annotated[
        bool | None,
        typer.Option(
            "--project-env/--no-project-env",
            help="Install what the project declares into its own .venv and run its code there (default: on).",
        ),
    ] = None,
    require_sandbox: Annotated[
        bool, typer.Option("--require-sandbox", help="Refuse to run generated code without bubblewrap.")
    ] = False,
    config: Annotated[Path | None, typer.Option(help="Config file (default: ~/.l2mac/config.yaml).")] = None,
    init_config_: Annotated[bool, typer.Option("--init-config", help="Create the config file and exit.")] = False,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks on errors.")] = False,
) -> None:
    """Generate a project (or a book) from one prompt."""
    console = make_console()
    err = make_console(stderr=True)
    try:
        if init_config_:
            path = config or default_config_path()
            if init_config(path):
                console.print(f"Created {path} (mode 600). Edit it to set your model and API key.")
            else:
                console.print(f"{path} already exists; left unchanged.")
            raise typer.Exit(EXIT_OK)
        settings = load_settings(
            config_path=config,
            llm={
                "model": model,
                "base_url": base_url,
                "api_key": api_key,
                "context_window": context_window,
                "llama_server": llama_server,
                "seed": seed,
            },
            run={
                "domain": domain,
                "steps": steps,
                "run_tests": run_tests,
                "prompt_program": prompt_program,
                "prompts_file": prompts_file,
                "answers_from": answers_from,
                "workspace": workspace,
                "project_name": project_name,
                "max_cost": max_cost,
                "max_tokens": max_tokens,
                "max_steps": max_steps,
                "max_wall_time_s": max_wall_time,
                "force": force or None,
                "repo": repo,
                "allow_dirty": allow_dirty or None,
                "reflect": reflect,
                "strategy": strategy,
                "max_agents": max_agents,
                "max_depth": max_depth,
                "concurrency": concurrency,
                "protocol": protocol,
                "recoveries": recoveries,
                "sandbox": "bubblewrap" if require_sandbox else sandbox,
                "project_env": project_env,
                "verify_readme": verify_readme,
            },
        )
        from l2mac.run import run_l2mac

        progress = Progress(console)
        _finish(console, err, progress, lambda: run_l2mac(prompt, settings, emit=progress), verbose)
    except L2MACError as e:
        _usage_error(err, e, verbose)


def _usage_error(err: Console, e: L2MACError, verbose: bool) -> None:
    if verbose:
        err.print_exception()
    print_error(err, e)
    raise typer.Exit(EXIT_USAGE) from None


def _finish(console: Console, err: Console, progress: Progress, go: Callable[[], RunResult], verbose: bool) -> None:
    """Run ``go`` under live progress; print the summary; exit with the run's code (130 on Ctrl-C)."""
    try:
        try:
            result = go()
        finally:
            progress.stop()
    except L2MACError as e:
        _usage_error(err, e, verbose)
    except KeyboardInterrupt:
        where = progress.workspace
        hint = f"; resume with: l2mac resume {where}" if where else ""
        err.print(f"[yellow]interrupted[/]: the work so far is saved{hint}", highlight=False)
        raise typer.Exit(130) from None
    console.print(summary_table(result.report))
    record = result.workspace / RECORD_DIR
    console.print(f"Report: {record / 'run_report.json'}", soft_wrap=True)
    if (record / PAGE_FILE).exists():
        console.print(f"Page: {record / PAGE_FILE} (open it in a browser)", soft_wrap=True)
    if (change := result.report.change) is not None:
        console.print(
            f"The change is on branch {change.branch}, checked out in {change.worktree} (with the run's record in "
            ".l2mac/ there). Review it, merge it, then remove the worktree:",
            soft_wrap=True,
        )
        for command in change.review:
            console.print(f"  {command}", soft_wrap=True, highlight=False)
    status = result.report.status
    if status == "stopped":
        err.print(f"[yellow]stopped[/]: {result.report.stopped_reason}", highlight=False)
    raise typer.Exit(EXIT_OK if status == "passed" else EXIT_STOPPED if status == "stopped" else EXIT_FAILED)


@app.command("resume")
def resume_command(
    project: Annotated[Path, typer.Argument(help="The project folder of the run to continue.", show_default=False)],
    max_cost: Annotated[float | None, typer.Option(help="New cost limit (USD) for the whole run.")] = None,
    max_tokens: Annotated[int | None, typer.Option(help="New token limit for the whole run.")] = None,
    max_steps: Annotated[int | None, typer.Option(help="New limit on steps run.", min=1)] = None,
    max_wall_time: Annotated[float | None, typer.Option(help="Seconds this invocation may take.", min=1)] = None,
    config: Annotated[Path | None, typer.Option(help="Config file (default: ~/.l2mac/config.yaml).")] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks on errors.")] = False,
) -> None:
    """Continue an interrupted or stopped run: journaled answers are replayed, no paid call is repeated."""
    from l2mac.run import resume_l2mac

    console, err = make_console(), make_console(stderr=True)
    overrides = {"max_cost": max_cost, "max_tokens": max_tokens, "max_steps": max_steps}
    overrides["max_wall_time_s"] = max_wall_time
    progress = Progress(console)
    _finish(
        console,
        err,
        progress,
        lambda: resume_l2mac(project, overrides=overrides, config_path=config, emit=progress),
        verbose,
    )


def main(argv: list[str] | None = None) -> None:
    """Entry point: ``l2mac PROMPT`` runs; ``l2mac SUBCOMMAND ...`` dispatches. SIGTERM (``kill``, a job's time
    limit) stops it as Ctrl-C does: the work so far saved, the run's record and a benchmark's session written,
    the model server stopped. Seen: a benchmark stopped with ``kill`` left its results file with no record of
    the session that made them."""
    args = list(sys.argv[1:] if argv is None else argv)
    first = next((a for a in args if not a.startswith("-")), None)
    if args and args[0] not in ("--help", "-h") and (first is None or first not in SUBCOMMANDS):
        args.insert(0, "run")
    before = signal.signal(signal.SIGTERM, _interrupted)
    try:
        app(args=args, prog_name="l2mac")
    finally:
        signal.signal(signal.SIGTERM, before)


def _interrupted(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


if __name__ == "__main__":  # pragma: no cover
    main()
