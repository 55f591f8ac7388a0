"""``l2mac batch``: many projects from a file of prompts, several at once (threads here, or a Ray cluster)."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from l2mac.cli_bench import CpusOpt, ExecutorOpt, RayAddressOpt, SlotsOpt
from l2mac.errors import L2MACError
from l2mac.terminal import make_console, print_error


def batch_command(
    prompts: Annotated[
        Path, typer.Argument(help='JSON Lines: {"prompt": "...", "name": "folder"} per line.', show_default=False)
    ],
    out: Annotated[Path, typer.Option(help="The batch's folder: a project folder each, and batch.json.")],
    workers: Annotated[int, typer.Option(help="Projects generated at once (threads, or Ray actors).", min=1)] = 1,
    executor: ExecutorOpt = "threads",
    ray_address: RayAddressOpt = None,
    cpus_per_worker: CpusOpt = 1.0,
    slots_per_worker: SlotsOpt = 1,
    strategy: Annotated[str | None, typer.Option(help="l2mac or soa (default: as configured, else l2mac).")] = None,
    domain: Annotated[str | None, typer.Option(help="codebase or book (default: codebase).")] = None,
    model: Annotated[str | None, typer.Option(help="Model (default: as configured; else the local model).")] = None,
    base_url: Annotated[str | None, typer.Option(help="Base URL of an OpenAI-compatible server.")] = None,
    llama_server: Annotated[
        str | None, typer.Option(help="Serve the local model from this llama.cpp llama-server (one per worker).")
    ] = None,
    seed: Annotated[int | None, typer.Option(help="Sampling seed, where the model supports one.")] = None,
    max_wall_time: Annotated[
        float | None, typer.Option(help="Per project: stop after this many seconds.", min=1)
    ] = None,
    max_tokens: Annotated[int | None, typer.Option(help="Per project: stop after this many tokens.", min=1)] = None,
) -> None:
    """Generate a project for every prompt in PROMPTS into OUT/<name>/; resumable (run it again to go on), with
    a progress bar and a summary table; each project's figures in OUT/batch.json."""
    from l2mac.batch import RESULTS_FILE, BatchSettings, load_results, read_prompts, run_batch
    from l2mac.benchmarks.runner import code_version, machine
    from l2mac.executors import make_executor
    from l2mac.executors.threads import ThreadExecutor
    from l2mac.settings import load_settings, server_slots

    console, err = make_console(), make_console(stderr=True)
    try:
        projects = read_prompts(prompts)
        chosen = make_executor(
            executor, workers, address=ray_address, cpus_per_worker=cpus_per_worker, slots_per_worker=slots_per_worker
        )
        local = isinstance(chosen, ThreadExecutor)
        llm: dict[str, Any] = {"model": model, "base_url": base_url, "llama_server": llama_server, "seed": seed}
        # in this process the threads share one model (a llama-server's slots); a Ray worker serves its own
        run = {"strategy": strategy, "domain": domain, "max_wall_time_s": max_wall_time, "max_tokens": max_tokens}
        configured = load_settings(run={k: v for k, v in run.items() if v}).run
        threads = max(1, round(cpus_per_worker))
        own = {"local_slots": server_slots(slots_per_worker, configured), "local_threads": threads}
        llm |= {"local_slots": server_slots(workers, configured)} if local else own
        batch = BatchSettings(
            out.resolve(), {k: v for k, v in llm.items() if v is not None}, {k: v for k, v in run.items() if v}
        )
        meta = {
            "prompts": str(prompts),
            "executor": chosen.describe,
            "machine": machine(),
            "l2mac": code_version(),
            "command": "l2mac " + shlex.join(sys.argv[1:]),
        }
        with Progress(
            TextColumn("[bold]batch"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("{task.description}"),
            console=console,
        ) as progress:
            already = load_results(out).get("projects", {})
            bar = progress.add_task("", total=len(projects), completed=sum(p.name in already for p in projects))

            def said(project: Any, entry: Mapping[str, Any]) -> None:
                progress.advance(bar)
                progress.console.print(_line(project.name, entry), highlight=False)

            data = run_batch(projects, batch, executor=chosen, meta=meta, said=said)
        console.print(summary_table({p.name: data["projects"][p.name] for p in projects if p.name in data["projects"]}))
        console.print(f"Results: {out / RESULTS_FILE}")
    except L2MACError as e:
        print_error(err, e)
        raise typer.Exit(2) from None


def _line(name: str, entry: Mapping[str, Any]) -> str:
    if entry.get("error"):
        return f"{name}: error: {entry['error']}"
    steps = f"{entry['steps_passed']}/{entry['steps_planned']} steps"
    return f"{name}: {entry['status']}, {steps}, tests {entry['tests']}, {entry['wall_time_s']:.0f}s"


def summary_table(projects: Mapping[str, Mapping[str, Any]]) -> Table:
    """One row per project: status, steps passed, tests, files, lines, tokens, wall time."""
    table = Table(title="batch")
    for column in ("project", "status", "steps", "tests", "files", "lines", "tokens", "wall time"):
        table.add_column(column, justify="right" if column not in ("project", "status") else "left")
    for name, e in projects.items():
        if e.get("error"):
            table.add_row(name, f"[red]error[/]: {e['error'][:60]}", "", "", "", "", "", f"{e['wall_time_s']:.0f}s")
            continue
        tests = f"{e['tests_passed']} passed, {e['tests_failed']} failed" if e["tests"] != "not_run" else "not run"
        table.add_row(
            name,
            e["status"],
            f"{e['steps_passed']}/{e['steps_planned']}",
            tests,
            str(e["files"]),
            str(e["loc"]),
            f"{e['tokens']:,}",
            f"{e['wall_time_s']:.0f}s",
        )
    return table
