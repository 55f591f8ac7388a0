"""A run as its record tells it, gathered for the report page: read from ``<project>/.l2mac/`` (the log, the step
outcomes, the prompt program, and ``run_report.json`` when the run got that far) and the project's git history.

Everything here is read, never recomputed: a run that was stopped or crashed has a log and step outcomes up to
where it ended, and its page shows that much.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from l2mac.record import RECORD_DIR
from l2mac.report import RunReport
from l2mac.store import FileStore

#: what a heatmap cell can show of a file in a step: a read, unless the step also changed it; then what the file
#: came to (created: new in the step; deleted: gone at its end)
ACCESS_ORDER = ("read", "deleted", "written", "created")
#: the most of one file's text, and of one step's diff, the page holds (a project's tests can leave big files)
MAX_FILE_CHARS, MAX_DIFF_CHARS = 200_000, 100_000
#: files never put on the page: it may be shared, and these hold secrets
_PRIVATE = re.compile(r"(^|/)(\.env(\..*)?|.*\.(pem|key))$")
#: a model call's ``purpose`` names the lane it belongs to (``step 3 sample`` belongs to ``step 3``)
_LANE = re.compile(r"^(step \d+|agent \d+|plan)")


@dataclass(frozen=True)
class Header:
    task: str
    model: str
    strategy: str
    status: str
    wall_time_s: float
    tokens_in: int
    tokens_out: int
    cost: str
    isolation: str
    domain: str


@dataclass(frozen=True)
class StepRow:
    index: int
    title: str
    instruction: str
    status: str  # passed | failed | not run
    turns: int = 0
    check_failures: int = 0
    context_restarts: int = 0
    summary: str = ""
    reason: str = ""
    tests_removed: tuple[str, ...] = ()


@dataclass(frozen=True)
class Span:
    """Something that took time: a step or an agent (a bar of its own), or a model call or a check run in one."""

    lane: str
    kind: str  # step | agent | prompt (a model reading its prompt) | model (generating) | checks
    start: float  # seconds from the run's start
    end: float
    label: str = ""


@dataclass(frozen=True)
class TestsAt:
    """The tests after one run of the checks in a step (the last one of the step counts)."""

    column: str
    passed: int
    failing: int


@dataclass(frozen=True)
class ProjectFile:
    path: str
    lines: int
    text: str


@dataclass(frozen=True)
class Commit:
    subject: str
    diff: str


@dataclass
class RunView:
    project: str
    header: Header
    steps: list[StepRow]
    #: heatmap columns (``step 1`` … or ``agent 0`` …) and cells ``{(path, column): access}``
    columns: list[str] = field(default_factory=list)
    access: dict[tuple[str, str], str] = field(default_factory=dict)
    spans: list[Span] = field(default_factory=list)
    tests: list[TestsAt] = field(default_factory=list)
    removed: list[tuple[str, str]] = field(default_factory=list)  # (column, test)
    files: list[ProjectFile] = field(default_factory=list)
    commits: list[Commit] = field(default_factory=list)
    readme: list[dict[str, str]] = field(default_factory=list)

    @property
    def accessed_files(self) -> list[str]:
        return sorted({path for path, _ in self.access})


def read_run(project: Path) -> RunView:
    """The run recorded in ``project`` (a folder holding ``.l2mac/``); FileNotFoundError when there is none."""
    record = project / RECORD_DIR
    if not (record / "log.jsonl").is_file():
        raise FileNotFoundError(f"{project}: no run record ({RECORD_DIR}/log.jsonl); is this a project l2mac wrote?")
    log = _this_run(list(_jsonl(record / "log.jsonl")))
    report = _report(record / "run_report.json", since=log[0]["ts"] if log else 0.0)
    outcomes = {int(o["index"]): o for o in _jsonl(record / "steps.jsonl")}
    view = RunView(
        project=project.resolve().name,
        header=_header(log, report, record),
        steps=_steps(record / "prompt_program.yaml", outcomes, log),
        files=_files(project),
        commits=_commits(project),
        readme=[r.model_dump() for r in report.readme] if report else [],
    )
    _read_log(view, log)
    return view


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The entries of a JSONL file; a line cut off by a crash ends it."""
    if not path.is_file():
        return
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except json.JSONDecodeError:
            return
        if isinstance(entry, dict):
            yield entry


def _this_run(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The entries of the last run in a log (a run with --force into an earlier run's folder appends to its
    log; a resumed run starts a new one)."""
    starts = [i for i, e in enumerate(log) if e.get("kind") == "run_started"]
    return log[starts[-1] :] if starts else log


def _report(path: Path, since: float) -> RunReport | None:
    """The run's report: none when it is missing, unreadable or older than the run (an earlier run's)."""
    try:
        if path.stat().st_mtime < since:
            return None
        return RunReport.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def _header(log: list[dict[str, Any]], report: RunReport | None, record: Path) -> Header:
    started = next((e for e in log if e.get("kind") == "run_started"), {})
    calls = [e for e in log if e.get("kind") == "model_call"]
    prices = [e.get("cost_usd") for e in calls]
    status: str
    if report is not None:
        status, wall = report.status, report.wall_time_s
        tokens_in, tokens_out, cost_usd = report.tokens.input, report.tokens.output, report.cost_usd
    else:  # stopped or crashed before its report: what the log says
        kinds = {e.get("kind") for e in log}
        status = (
            "interrupted"
            if "run_interrupted" in kinds
            else "stopped"
            if "run_stopped" in kinds
            else "unfinished (no report: the run crashed or is still running)"
        )
        wall = log[-1]["ts"] - log[0]["ts"] if log else 0.0
        tokens_in = sum(int(e.get("input_tokens") or 0) for e in calls)
        tokens_out = sum(int(e.get("output_tokens") or 0) for e in calls)
        cost_usd = sum(p for p in prices if p is not None) if all(p is not None for p in prices) else None
    task = str(started.get("task") or _task_of(record))
    return Header(
        task=task,
        model=report.model if report else str(started.get("model", "unknown")),
        strategy=report.strategy if report else str(started.get("strategy", "unknown")),
        status=status,
        wall_time_s=round(float(wall), 1),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        cost="unknown" if cost_usd is None or (calls and all(p is None for p in prices)) else f"${cost_usd:.4f}",
        isolation=report.isolation if report else str(started.get("isolation", "unknown")),
        domain=report.domain if report else str(started.get("domain", "codebase")),
    )


def _task_of(record: Path) -> str:
    try:
        return str(json.loads((record / "run.json").read_text(encoding="utf-8")).get("task", ""))
    except (OSError, ValueError):
        return ""


def _steps(program: Path, outcomes: dict[int, dict[str, Any]], log: list[dict[str, Any]]) -> list[StepRow]:
    """The planned steps with how each ended; a step the run began and never ended was stopped (a budget, a
    provider that kept failing) or is unfinished (a crash, or still running)."""
    try:
        planned = (yaml.safe_load(program.read_text(encoding="utf-8")) or {}).get("steps") or []
    except (OSError, yaml.YAMLError, AttributeError):
        planned = []
    # an soa run's steps are its agents: the control unit's steps in it are its lead's drafts, not the outcomes'
    agents = any(e.get("kind") == "agent" for e in log)
    began = {e.get("step") for e in log if e.get("kind") == "step_started" and not agents}
    stopped = {e.get("step") for e in log if e.get("kind") == "step_stopped" and not agents}
    if began:  # outcomes of this run only (a run with --force appends to an earlier run's)
        ended = {e.get("step") for e in log if e.get("kind") == "step_finished"}
        outcomes = {i: o for i, o in outcomes.items() if i in ended}
    rows = []
    for i in sorted({*range(1, len(planned) + 1), *outcomes}):
        plan = planned[i - 1] if i <= len(planned) and isinstance(planned[i - 1], dict) else {}
        o = outcomes.get(i, {})
        rows.append(
            StepRow(
                index=i,
                title=str(o.get("title") or plan.get("title") or f"step {i}"),
                instruction=str(plan.get("instruction", "")),
                status=str(
                    o.get("status") or ("stopped" if i in stopped else "unfinished" if i in began else "not run")
                ),
                turns=int(o.get("turns", 0)),
                check_failures=int(o.get("check_failures", 0)),
                context_restarts=int(o.get("context_restarts", 0)),
                summary=str(o.get("summary", "")),
                reason=str(o.get("reason", "")),
                tests_removed=tuple(o.get("tests_removed") or ()),
            )
        )
    return rows


def _read_log(view: RunView, log: list[dict[str, Any]]) -> None:
    """The heatmap, the timeline and the tests over time, from the log's entries in order."""
    t0 = log[0]["ts"] if log else 0.0
    lanes: dict[str, list[float]] = {}  # lane: [first, last] second it was seen

    def seen(lane: str, start: float, end: float) -> None:
        first, last = lanes.setdefault(lane, [start, end])
        lanes[lane] = [min(first, start), max(last, end)]

    for e in log:
        kind, ts = e.get("kind"), float(e.get("ts", t0)) - t0
        column = _column(e)
        if kind in ("tool_call", "agent_files") and column:
            for path, how in (e.get("files") or {}).items():
                _touch(view, column, str(path), str(how))
        elif kind == "model_call":
            found = _LANE.match(str(e.get("purpose", "")))
            lane = found.group(1) if found else "other"
            start = ts - float(e.get("latency_s") or 0.0)
            label = f"{e.get('purpose')}: {e.get('input_tokens')} in, {e.get('output_tokens')} out"
            read = min(float(e.get("prompt_s") or 0.0), ts - start)  # the prompt's part, when the model told it
            if read > 0:
                view.spans.append(Span(lane, "prompt", start, start + read, label))
            view.spans.append(Span(lane, "model", start + read, ts, label))
            seen(lane, start, ts)
        elif kind == "checks" and column:
            start = ts - float(e.get("seconds") or 0.0)
            view.spans.append(Span(column, "checks", start, ts, "ok" if e.get("ok") else "failing"))
            seen(column, start, ts)
            view.tests.append(TestsAt(column, int(e.get("tests_passed") or 0), int(e.get("tests_failing") or 0)))
        elif kind in ("step_started", "step_finished", "step_stopped", "agent"):
            seen(column, ts, ts)
        if kind == "recovered" and e.get("recovery") == "disputed_tests_removed":
            view.removed += [(column, str(t)) for t in e.get("tests") or []]
    lanes_run = {s.lane for s in view.spans if s.lane not in ("plan", "other")}
    view.columns = sorted({c for _, c in view.access} | lanes_run, key=_order)
    bars = [Span(lane, _bar(lane), a, b, lane) for lane, (a, b) in lanes.items() if lane != "other"]
    view.spans = sorted(bars, key=lambda s: (s.start, _order(s.lane))) + view.spans


def _column(entry: dict[str, Any]) -> str:
    """The step (``step 3``) or agent (``agent 2``) an entry belongs to; empty when neither."""
    if entry.get("kind") in ("agent", "agent_files"):
        return f"agent {entry['id']}"
    if entry.get("agent") is not None:
        return f"agent {entry['agent']}"
    return f"step {entry['step']}" if entry.get("step") is not None else ""


def _touch(view: RunView, column: str, path: str, how: str) -> None:
    """Add one access to a cell: a read shows only where nothing else happened; a file created in the step stays
    created while it exists; a deletion shows when it came last."""
    if how not in ACCESS_ORDER:
        return
    now = view.access.get((path, column))
    if how == "read":
        view.access.setdefault((path, column), how)
    elif how == "written" and now == "created":
        return
    elif how == "created" and now == "deleted":
        view.access[(path, column)] = "written"  # it was there before the step: deleted, then written again
    else:
        view.access[(path, column)] = how


def _bar(lane: str) -> str:
    return "agent" if lane.startswith("agent") else "step"


def _order(lane: str) -> tuple[int, int]:
    """``plan`` first, then steps and agents by number."""
    kind, _, number = lane.partition(" ")
    return (0 if kind == "plan" else 1, int(number) if number.isdigit() else 0)


def _files(project: Path) -> list[ProjectFile]:
    """The project's text files (not those that may hold secrets), each cut at MAX_FILE_CHARS."""
    try:
        files = FileStore(project).snapshot()
    except OSError:
        return []
    return [
        ProjectFile(path, len(text.splitlines()), _cut(text, MAX_FILE_CHARS))
        for path, text in sorted(files.items())
        if not _PRIVATE.search(path)
    ]


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n[… {len(text) - limit:,} more characters not shown]"


def _commits(project: Path) -> list[Commit]:
    """Each commit of the project's history (a step each), oldest first, with its diff."""
    if not (project / ".git").exists():
        return []
    try:
        run = subprocess.run(
            ["git", "log", "--reverse", "-p", "--format=%x00%s", "--no-color", "--no-ext-diff"],
            cwd=project,
            capture_output=True,
            text=True,
            errors="replace",
            check=False,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return []
    if run.returncode != 0:
        return []
    commits = []
    for chunk in run.stdout.split("\x00")[1:]:
        subject, _, diff = chunk.partition("\n")
        commits.append(Commit(subject.strip(), _cut(diff.strip(), MAX_DIFF_CHARS)))
    return commits
