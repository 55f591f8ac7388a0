"""``l2mac report``: a run's page, or several runs and benchmark results side by side."""

from __future__ import annotations

import webbrowser
from pathlib import Path
from typing import Annotated

import typer

from l2mac.terminal import make_console, print_error

COMPARISON_FILE = "l2mac-comparison.html"


def report_command(
    paths: Annotated[
        list[Path],
        typer.Argument(
            help="A project folder (its run's page), or several project folders and benchmark results files "
            "(.json) to compare.",
            show_default=False,
        ),
    ],
    out: Annotated[
        Path | None, typer.Option(help=f"Where the comparison page goes (default: ./{COMPARISON_FILE}).")
    ] = None,
    open_page: Annotated[bool, typer.Option("--open", help="Open the page in the browser.")] = False,
) -> None:
    """Write the run's report page (PROJECT/.l2mac/report.html) and print its path; with several paths, a
    page comparing them."""
    from l2mac.visual import write_comparison, write_run_report

    err = make_console(stderr=True)
    missing = [p for p in paths if not p.exists()]
    if missing:
        print_error(err, f"no such file or folder: {', '.join(map(str, missing))}")
        raise typer.Exit(2)
    try:
        if len(paths) == 1 and paths[0].is_dir():
            page = write_run_report(paths[0])
        else:
            page, skipped = write_comparison(paths, out or Path(COMPARISON_FILE))
            for p in skipped:
                err.print(f"[yellow]left out[/] {p}: not a benchmark results file with a summary", highlight=False)
    except (OSError, ValueError) as e:
        print_error(err, e)
        raise typer.Exit(2) from None
    print(page.resolve())
    if open_page:
        webbrowser.open(page.resolve().as_uri())
