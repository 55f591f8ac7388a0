"""``l2mac models``: list and pull the embedded local models."""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.progress import BarColumn, DownloadColumn, Progress, TimeRemainingColumn, TransferSpeedColumn
from rich.table import Table

from l2mac.models.local import CATALOG, DEFAULT_LOCAL_MODEL, PullError, get_spec, model_path, models_dir, pull
from l2mac.models.local.fetch import is_installed
from l2mac.terminal import make_console, print_error

models_app = typer.Typer(help="List and fetch the embedded local models.", no_args_is_help=True)


@models_app.command("list")
def list_models(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object per model, for programs.")] = False,
) -> None:
    """Show the local models: installed or not, size, context length."""
    directory = models_dir()
    if as_json:
        for spec in CATALOG.values():
            row = {"name": spec.name, "installed": is_installed(spec, directory), "bytes": spec.size}
            row |= {"context": spec.context_length, "use_as": f"local:{spec.name}", "path": str(directory)}
            print(json.dumps(row))
        return
    table = Table(title=f"Local models ({directory})")
    for col in ("name", "installed", "size", "context", "use as", "description"):
        table.add_column(col)
    for spec in CATALOG.values():
        installed = "yes" if is_installed(spec, directory) else "no"
        table.add_row(
            spec.name,
            installed,
            f"{spec.size / 1e9:.2f} GB",
            f"{spec.context_length:,}",
            f"--model local:{spec.name}",
            spec.description,
        )
    make_console().print(table)


@models_app.command("pull")
def pull_model(
    name: Annotated[str, typer.Argument(help="Model to fetch.")] = DEFAULT_LOCAL_MODEL,
) -> None:
    """Download, assemble and verify a local model (resumes after an interruption; a no-op when present)."""
    console = make_console(stderr=True)
    try:
        spec = get_spec(name)
        directory = models_dir()
        if is_installed(spec, directory) and model_path(spec, directory).with_suffix(".gguf.verified").exists():
            console.print(f"{spec.name} is already installed at {model_path(spec, directory)}")
            return
        columns = (
            "[progress.description]{task.description}",
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
        )
        with Progress(*columns, console=console, transient=False) as bar:
            task = bar.add_task(f"pulling {spec.name}", total=spec.size)
            path = pull(spec, directory, progress=lambda done, total: bar.update(task, completed=done))
        console.print(f"{spec.name} verified (sha256 {spec.sha256[:12]}…) at {path}")
    except PullError as e:
        print_error(console, e)
        raise typer.Exit(2) from None
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]; run `l2mac models pull` again to resume")
        raise typer.Exit(130) from None
