"""The report pages, one self-contained HTML file each (no network, no CDN: it opens from disk): a run's page
(``<project>/.l2mac/report.html``) and a page comparing several runs or benchmark result files."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from l2mac.record import PAGE_FILE, RECORD_DIR
from l2mac.visual import charts
from l2mac.visual.run_view import RunView, read_run


def _environment() -> Environment:
    env = Environment(loader=PackageLoader("l2mac.visual", "templates"), autoescape=select_autoescape(["j2"]))
    env.globals["duration"] = duration
    return env


def duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s`` or ``1 h 02 min``."""
    s = round(seconds)
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


@dataclass(frozen=True)
class TimeSpent:
    model: float
    prompt: float  # of ``model``: reading prompts, where the model told it
    checks: float
    other: float


def time_spent(view: RunView) -> TimeSpent:
    """Seconds in model calls and in checks; the rest of the wall time is ``other`` (planning's own work, git,
    installs). Calls made at once (samples, agents) each count, so the parts can exceed the wall time."""
    prompt = sum(s.end - s.start for s in view.spans if s.kind == "prompt")
    model = prompt + sum(s.end - s.start for s in view.spans if s.kind == "model")
    checks = sum(s.end - s.start for s in view.spans if s.kind == "checks")
    return TimeSpent(model, prompt, checks, max(0.0, view.header.wall_time_s - model - checks))


def render_run(view: RunView) -> str:
    pictures = {
        "heatmap": charts.heatmap(view),
        "timeline": charts.timeline(view),
        "tests": charts.tests_over_time(view),
    }
    return _environment().get_template("report.html.j2").render(run=view, charts=pictures, time=time_spent(view))


def write_run_report(project: Path) -> Path:
    """Write ``<project>/.l2mac/report.html`` from the run record; returns its path."""
    return _write(project / RECORD_DIR / PAGE_FILE, render_run(read_run(project)))


def _write(out: Path, html: str) -> Path:
    """Whole or not at all (a second Ctrl-C while it is written leaves the page before it); a file name that is
    not UTF-8 is shown with a replacement character."""
    tmp = out.with_name(f".{out.name}.tmp")
    tmp.write_text(html, encoding="utf-8", errors="replace")
    os.replace(tmp, out)
    return out


@dataclass(frozen=True)
class RunRow:
    project: str
    strategy: str
    model: str
    status: str
    steps: int
    steps_passed: int
    tests: str
    tokens: int
    wall_time_s: float
    task: str


@dataclass(frozen=True)
class BenchRow:
    strategy: str
    model: str
    fields: dict[str, Any]
    file: str


def _run_row(project: Path) -> RunRow:
    view = read_run(project)
    h = view.header
    final = view.tests[-1] if view.tests else None  # the last run of the tests (in SoA, the lead's)
    return RunRow(
        project=view.project,
        strategy=h.strategy,
        model=h.model,
        status=h.status,
        steps=len(view.steps),
        steps_passed=sum(s.status == "passed" for s in view.steps),
        tests=f"{final.passed}/{final.passed + final.failing}" if final else "none",
        tokens=h.tokens_in + h.tokens_out,
        wall_time_s=h.wall_time_s,
        task=h.task,
    )


def _bench_row(path: Path) -> tuple[str, BenchRow] | None:
    """The benchmark a results file is of, and its row; None when the file holds no benchmark summary."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        summary = data["summary"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(summary, dict):
        return None
    fields = {k: v for k, v in summary.items() if not isinstance(v, (dict, list)) and k != "note"}
    return str(data.get("benchmark", path.stem)), BenchRow(
        str(data.get("strategy", "?")), str(data.get("model", "?")), fields, path.name
    )


def write_comparison(paths: list[Path], out: Path) -> tuple[Path, list[Path]]:
    """A page with the runs (project folders) and benchmark results files (``.json``) in ``paths`` side by side:
    runs in one table, each benchmark's results in a table of its own, one row per strategy. Returns the page
    and the files left out (not benchmark results: a project run's results, a timing file); ValueError when
    nothing is left to compare."""
    runs = [_run_row(p) for p in paths if p.is_dir()]
    benchmarks: dict[str, list[BenchRow]] = {}
    skipped = []
    for p in paths:
        found = _bench_row(p) if p.is_file() else None
        if found is not None:
            benchmarks.setdefault(found[0], []).append(found[1])
        elif p.is_file():
            skipped.append(p)
    if not runs and not benchmarks:
        raise ValueError("nothing to compare: no run record and no benchmark results file with a summary")
    for rows in benchmarks.values():
        keys = list(dict.fromkeys(k for r in rows for k in r.fields))
        rows[:] = [BenchRow(r.strategy, r.model, {k: r.fields.get(k, "") for k in keys}, r.file) for r in rows]
    html = _environment().get_template("compare.html.j2").render(runs=runs, benchmarks=benchmarks)
    return _write(out, html), skipped
