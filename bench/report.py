"""Writes bench/RESULTS.md and its plots from the results in bench/results/ (HumanEval+, ClassEval, DevBench,
the system-design projects, SoA scaling, sweeps on Ray).

    .venv/bin/python bench/report.py          # plots with matplotlib (an l2mac dependency)

One row per results file: strategy, model, tasks scored, pass@1 base and plus, tokens, wall time, the command
that produced it. Every figure comes from the files; nothing is typed in by hand.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).parent
RESULTS = BENCH / "results"


def humaneval_rows() -> list[dict[str, Any]]:
    rows = []
    for path in sorted(RESULTS.glob("*-humanevalplus-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        s = data.get("summary", {})
        if not s.get("scored"):
            continue
        keys = ("strategy", "model", "command", "machine", "sessions", "engine_budget", "task_tokens", "notes")
        outcomes = {tid: (t.get("base"), t.get("plus")) for tid, t in data.get("tasks", {}).items()}
        rows.append({"file": path.name, **{k: data.get(k) for k in keys}, **s, "outcomes": outcomes})
    return rows


def run_conditions(r: dict[str, Any]) -> str:
    """How a run was made, beside its command: the serving of the model and the engine's limits per task."""
    parts = []
    serving = {x.get("serving") for x in r.get("sessions") or [] if x.get("serving")}
    if serving:
        parts.append("model served " + " and ".join(sorted(serving)))
    versions = [x["l2mac"] for x in r.get("sessions") or [] if x.get("l2mac")]
    if versions:
        parts.append("l2mac " + " then ".join(dict.fromkeys(versions)))
    if r.get("task_tokens"):
        parts.append(f"{r['task_tokens']:,} tokens per task")
    if r.get("engine_budget"):
        parts.append("engine limits per task " + ", ".join(f"{k} {v}" for k, v in r["engine_budget"].items()))
    return f" ({'; '.join(parts)})" if parts else ""


def time_text(r: dict[str, Any]) -> str:
    """Generation time: the tasks' own times summed; with several workers, also the elapsed time; and for a run
    that reused an earlier run's answers, that its time is not its code's."""
    summed = f"{r['generation_wall_time_s'] / 60:.0f} min"
    if r.get("reused_calls"):
        summed += f" ({r['reused_calls']:,} answers reused from an earlier run, taking no time: not this code's time)"
    parallel = [x for x in r.get("sessions") or [] if x.get("workers", 1) > 1]
    if not parallel:
        return summed
    elapsed = sum(x["elapsed_s"] for x in parallel)
    tasks = sum(x["tasks"] for x in parallel)
    workers = max(x["workers"] for x in parallel)
    return f"{summed} summed over tasks ({tasks} of them ran {workers} at once: {elapsed / 60:.0f} min elapsed)"


def shared_tasks_lines(rows: list[dict[str, Any]]) -> list[str]:
    """pass@1 of every strategy on the tasks all of them scored: the fair side-by-side."""
    if len(rows) < 2:
        return []
    common = set.intersection(*({t for t, (b, _) in r["outcomes"].items() if b is not None} for r in rows))
    if not common:
        return []
    lines = [f"On the {len(common)} tasks every strategy scored:", "", "| strategy | pass@1 base | pass@1 plus |"]
    lines.append("|---|---|---|")
    for r in rows:
        base = sum(bool(r["outcomes"][t][0]) for t in common)
        plus = sum(bool(r["outcomes"][t][1]) for t in common)
        lines.append(f"| {r['strategy']} | {base}/{len(common)} | {plus}/{len(common)} |")
    return [*lines, ""]


def pyplot() -> Any:
    """matplotlib.pyplot drawing to files, or None (said once per plot) when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot", file=sys.stderr)
        return None
    return plt


def soa_section() -> list[str]:
    files = sorted(RESULTS.glob("soa-scaling-*.json"))
    if not files:
        return []
    data = json.loads(files[-1].read_text(encoding="utf-8"))
    lines = [
        "## Self-organised agents: scaling (fake team, `bench/soa_scaling.py`)",
        "",
        f"From `results/{files[-1].name}`. A scripted team builds a tree of functions (branching "
        f"{data['size'][0]['branching']}); tokens are what the engine counted per model call.",
        "",
        "| functions | agents | LOC | tokens per child agent (mean / max) | lead's tokens | total tokens |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["size"]:
        lines.append(
            f"| {r['functions']:,} | {r['agents']:,} | {r['loc']:,} | {r['tokens_per_child_mean']:.0f} / "
            f"{r['tokens_per_child_max']:,} | {r['tokens_lead']:,} | {r['tokens_total']:,} |"
        )
    lines += ["", "| concurrency | agents | fake latency per call | wall time |", "|---|---|---|---|"]
    for r in data["concurrency"]:
        lines.append(f"| {r['concurrency']} | {r['agents']} | {r['latency_s']} s | {r['wall_time_s']} s |")
    lines.append("")
    if (plt := pyplot()) is not None:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        xs = [r["functions"] for r in data["size"]]
        ax.plot(xs, [r["tokens_per_child_mean"] for r in data["size"]], "o-", label="tokens per child agent (mean)")
        ax.plot(xs, [r["tokens_total"] / r["agents"] for r in data["size"]], "s--", label="total tokens / agents")
        ax.plot(xs, [r["loc"] for r in data["size"]], "^-", label="total LOC")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("functions in the codebase")
        ax.legend()
        fig.tight_layout()
        fig.savefig(BENCH / "soa_scaling.png", dpi=100)
        lines += ["![SoA scaling](soa_scaling.png)", ""]
    return lines


def ray_section() -> list[str]:
    """Sweeps on Ray workers: throughput by worker count (fake model, bench/ray_scaling.py), and real sweeps on
    Ray beside the same tasks in-process (results files whose sessions ran on Ray)."""
    files = sorted(RESULTS.glob("ray-scaling-*.json"))
    if not files:
        return []
    data = json.loads(files[-1].read_text(encoding="utf-8"))
    lines = [
        "## Sweeps on Ray: throughput by worker count (fake model, `bench/ray_scaling.py`)",
        "",
        f"From `results/{files[-1].name}` (Ray {data['ray']}, local instance started in {data['ray_start_s']} s, "
        f"{data['machine']['cpus']} CPUs; load average {', '.join(f'{x:.1f}' for x in data['load'])} at the end). "
        "Each worker is a Ray actor with a fake model answering every call after a fixed latency (a sleep, so "
        "the figures measure the executor, not the cores); wall time includes starting the actors.",
        "",
        "| Ray workers | tasks | latency per call | wall time | ideal | tasks per minute | speedup |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        lines.append(
            f"| {r['workers']} | {r['done']}/{r['tasks']} | {r['latency_s']} s | {r['wall_time_s']} s | "
            f"{r['ideal_wall_time_s']} s | {r['tasks_per_minute']} | {r['speedup']}x |"
        )
    lines += ["", f"Command: `{data['command']}`", ""]
    lines += [f"- {note}" for note in data.get("notes", [])]
    if data.get("notes"):
        lines.append("")
    if (plt := pyplot()) is not None:
        fig, ax = plt.subplots(figsize=(5, 3))
        xs = [r["workers"] for r in data["rows"]]
        ax.plot(xs, [r["tasks_per_minute"] for r in data["rows"]], "o-", label="measured")
        ax.plot(xs, [60 * r["tasks"] / r["ideal_wall_time_s"] for r in data["rows"]], "--", label="ideal")
        ax.set_xticks(xs)
        ax.set_xlabel("Ray workers")
        ax.set_ylabel("tasks per minute")
        ax.legend()
        fig.tight_layout()
        fig.savefig(BENCH / "ray_scaling.png", dpi=100)
        lines += ["![Sweep throughput by Ray workers](ray_scaling.png)", ""]
    return lines + ray_sweep_lines()


def ray_sweep_lines() -> list[str]:
    """A real sweep on Ray beside the in-process runner at the same seed, and what makes their answers differ."""
    files = sorted(RESULTS.glob("ray-sweep-*.json"))
    if not files:
        return []
    data = json.loads(files[-1].read_text(encoding="utf-8"))
    lines = [
        f"### A real sweep on Ray ({data['model']}, `results/{files[-1].name}`)",
        "",
        f"{data['what'][0].upper()}{data['what'][1:]}.",
        "",
        "| configuration | base | plus | tokens | sweep time | results file |",
        "|---|---|---|---|---|---|",
    ]
    for r in data["rows"]:
        lines.append(
            f"| {r['configuration']} | {r['base']}/{r['tasks']} | {r['plus']}/{r['tasks']} | {r['tokens']:,} | "
            f"{r['elapsed_s']} s | `{r['file']}` |"
        )
    lines += ["", "| compared | identical solutions |", "|---|---|"]
    lines += [f"| `{c['a']}` and `{c['b']}` | {c['identical_solutions']} of {c['of']} |" for c in data["comparisons"]]
    lines += ["", *[f"- {note}" for note in data["notes"]], ""]
    lines += ["Commands:", "", *[f"- `{r['command']}`" for r in data["rows"]], ""]
    return lines + ray_batch_lines()


def ray_batch_lines() -> list[str]:
    """A batch of projects on Ray workers (``l2mac batch``), from its batch.json."""
    files = sorted(RESULTS.glob("ray-batch-*.json"))
    if not files:
        return []
    data = json.loads(files[-1].read_text(encoding="utf-8"))
    lines = [
        f"### A batch on Ray (`results/{files[-1].name}`)",
        "",
        f"`{data['command']}` ({data['executor']}; l2mac {data['l2mac']}):",
        "",
        "| project | prompt | status | steps | tests | files | lines | tokens | wall time |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, e in data["projects"].items():
        tests = f"{e['tests_passed']} passed, {e['tests_failed']} failed"
        lines.append(
            f"| {name} | {e['prompt']} | {e['status']} | {e['steps_passed']}/{e['steps_planned']} | {tests} | "
            f"{e['files']} | {e['loc']} | {e['tokens']:,} | {e['wall_time_s']:.0f} s |"
        )
    return [*lines, "", *[f"- {note}" for note in data.get("notes", [])], ""]


def engine_text(r: dict[str, Any]) -> str:
    """The engine's own outcome beside its generation time: status and steps passed (l2mac, soa)."""
    e = r.get("engine")
    if not e:
        return ""
    steps = e.get("steps") or {}
    # the reason without its advice ("raise --max-wall-time ...; resume with: ..."), which names a scratch folder
    reason = f", {e['stopped_reason'].split(' (')[0].split(';')[0]}" if e.get("stopped_reason") else ""
    return f" (engine: {e.get('status')}{reason}; steps passed {steps.get('passed')}/{steps.get('planned')})"


def project_plot(runs: list[dict[str, Any]], target: Path) -> bool:
    """Per task and strategy: Features % (LLM-judged), the share of its own tests that pass, pylint errors."""
    plt = pyplot()
    if plt is None:
        return False
    labels = [f"{r['task']}\n{r['strategy']}" for r in runs]
    features = [r["features"].get("features_pct") or 0 for r in runs]
    own = [100 * r["tests"]["passed"] / max(1, r["tests"]["passed"] + r["tests"]["failed"]) for r in runs]
    errors = [r["pylint_errors"] for r in runs]
    x = range(len(runs))
    fig, ax = plt.subplots(figsize=(max(6, 2 * len(runs)), 3.5))
    ax.bar([i - 0.2 for i in x], features, width=0.4, label="Features % (LLM-judged)")
    ax.bar([i + 0.2 for i in x], own, width=0.4, label="own tests passing (%)")
    for i, e in enumerate(errors):
        ax.annotate(f"pylint E: {e}", (i, 102), ha="center", fontsize=8)
    ax.set_xticks(list(x), labels)
    ax.set_ylim(0, 112)
    ax.set_ylabel("%")
    ax.set_title(f"System-design tasks with {runs[0]['model']}")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(target, dpi=100)
    return True


def project_section() -> list[str]:
    files = sorted(RESULTS.glob("????-??-??-l2mac-*.json"))  # the paper's tasks, not a benchmark run named l2mac-…
    if not files:
        return []
    lines = [
        "## The paper's system-design tasks (project level)",
        "",
        "Features % is **LLM-judged**: a judge model counts the checklist features it finds in the whole codebase",
        "(temperature 0, the counts of each repeat are given). With only the 1.5B model on this machine, the judge",
        "is the generator itself, and it is not a credible judge: read that column with the pylint count beside it.",
        "",
        "| date | task | strategy | model | judge | files | LOC | pylint E | ruff | own tests "
        "| Features % (LLM-judged) | judge counts | generation time | command |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    runs = [json.loads(path.read_text(encoding="utf-8")) for path in files]
    for path, r in zip(files, runs, strict=True):
        t, f = r["tests"], r["features"]
        notes += [f"- {r['task']}, {r['strategy']}: {n}" for n in r.get("notes", [])]
        lines.append(
            f"| {path.name[:10]} | {r['task']} | {r['strategy']} | {r['model']} | {r.get('judge')} | {r['files']} | "
            f"{r['loc']} | "
            f"{r['pylint_errors']} | {r['ruff_errors']} | {t['status']} ({t['passed']} passed, {t['failed']} failed"
            f"{f', {e} errors' if (e := t.get('errors')) else ''}) | "
            f"{f.get('features_pct')}% of {f.get('features')} features | {f.get('counts')} | "
            f"{r['generation_wall_time_s']} s{engine_text(r)} | "
            f"`{r['command']}` |"
        )
    lines.append("")
    if project_plot(runs, BENCH / "projects.png"):
        lines += ["![Project tasks by strategy](projects.png)", ""]
    if notes:  # what the person who ran it saw and the numbers cannot show (e.g. other load on the machine)
        lines += ["Notes on these runs:", "", *notes, ""]
    l2mac_runs = [
        f"{r['task']} {r['strategy']} ran l2mac {r.get('l2mac')}"
        for r in runs
        if r.get("l2mac") and r["strategy"] != "single"
    ]
    if l2mac_runs:
        lines += ["Versions: " + "; ".join(l2mac_runs) + ".", ""]
    return lines


def runs_section() -> list[str]:
    """Runs of the README's run command on a task, each saved with its run report (``*-run-*.json``)."""
    files = sorted(RESULTS.glob("*-run-*.json"))
    if not files:
        return []
    lines = [
        "## Runs of the README's command (project level)",
        "",
        "| date | l2mac | task | model | steps passed | own tests | dependencies installed | install time | wall time "
        "| status | command |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    for path in files:
        r = json.loads(path.read_text(encoding="utf-8"))
        rep, steps, t, env = r["report"], r["report"]["steps"], r["report"]["tests"], r["report"]["environment"]
        version = r.get("l2mac", "")  # "0.1.0 (<commit>)": the commit says which code ran
        commit = version[version.find("(") + 1 : version.find(")")] if "(" in version else version or "?"
        notes += [f"- {r['task']} ({commit}): {n}" for n in r.get("notes", [])]
        lines.append(
            f"| {path.name[:10]} | {commit} | {r['task']} | {rep['model']} | {steps['passed']} of {steps['planned']} | "
            f"{t['status']} ({t['passed']} passed, {t['failed']} failed, {t.get('errors', 0)} errors) | "
            f"{', '.join(env['dependencies']) or 'none'} | {env['install_s']} s | {rep['wall_time_s']} s | "
            f"{rep['status']} | `{r['command']}` |"
        )
    lines.append("")
    if notes:
        lines += ["Notes on these runs:", "", *notes, ""]
    return lines


def changes_section() -> list[str]:
    """Changes to an existing repository (``--repo``), each saved with its run report (``*-change-*.json``)."""
    files = sorted(RESULTS.glob("*-change-*.json"))
    if not files:
        return []
    lines = [
        "## Changes to an existing repository (`--repo`)",
        "",
        "| date | repository | change | l2mac | steps passed | tests before -> after (passed, failing) | broken "
        "| diff | tokens | wall time | status |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    for path in files:
        r = json.loads(path.read_text(encoding="utf-8"))
        rep, steps, change = r["report"], r["report"]["steps"], r["report"]["change"]
        before, after = change["before"], change["after"] or {}
        diff = ", ".join(f"{f} {n}" for f, n in r["diff"]["files"].items())
        notes += [f"- {path.name[:10]} ({r['l2mac']}): {n}" for n in r.get("notes", [])]
        lines.append(
            f"| {path.name[:10]} | {r['repository']} | {r['task']} | {r['l2mac']} | {steps['passed']} of "
            f"{steps['planned']} | {before['tests_passed']}, {before['tests_failing']} -> "
            f"{after.get('tests_passed')}, {after.get('tests_failing')} | {len(change['broken'])} | {diff} | "
            f"{rep['tokens']['total']:,} | {rep['wall_time_s']:.0f} s | {rep['status']} |"
        )
    lines.append("")
    lines += ["Command: " + ", ".join(dict.fromkeys(f"`{json.loads(p.read_text())['command']}`" for p in files)), ""]
    if notes:
        lines += ["Notes on these runs:", "", *notes, ""]
    return lines


def result_rows(benchmark: str) -> list[dict[str, Any]]:
    """The scored results files of ``benchmark`` (classeval, devbench), with their conditions and summary."""
    rows = []
    for path in sorted(RESULTS.glob(f"*-{benchmark}-*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        s = data.get("summary", {})
        if s.get("scored"):
            keys = ("strategy", "model", "command", "sessions", "engine_budget", "task_tokens", "notes")
            rows.append({"file": path.name, **{k: data.get(k) for k in keys}, **s})
    return rows


def full_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per strategy, the row of its latest code over the most tasks any row scored (a partial run, or one that
    reused an earlier run's answers, is a table row only), in the order the strategies first appear."""
    rows = [r for r in rows if not r.get("reused_calls")]  # a change measured on an earlier run's answers
    most = max((r["scored"] for r in rows), default=0)
    latest: dict[str, dict[str, Any]] = {}
    for r in sorted((r for r in rows if r["scored"] == most), key=lambda r: (commit_time(commit_of(r)), r["file"])):
        latest[r["strategy"]] = r
    order = list(dict.fromkeys(r["strategy"] for r in rows))
    return sorted(latest.values(), key=lambda r: order.index(r["strategy"]))


def commit_time(commit: str) -> int:
    """When ``commit`` was made (0 when git does not know it)."""
    if not commit:
        return 0
    done = subprocess.run(
        ["git", "-C", str(BENCH), "log", "-1", "--format=%ct", commit], capture_output=True, text=True
    )
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def commit_of(r: dict[str, Any]) -> str:
    """The commit a row's last session ran ("0.1.0 (7ad634d)" -> "7ad634d"), or ""."""
    sessions = r.get("sessions") or [{}]
    return str(sessions[-1].get("l2mac") or "").partition("(")[2].rstrip(")")


def bars(rows: list[dict[str, Any]], series: dict[str, str], title: str, target: Path) -> bool:
    """A bar per strategy for each of ``series`` (summary key -> label), in percent: each strategy's latest row
    over all the tasks (see ``full_rows``), labelled with its commit."""
    plt = pyplot()
    rows = full_rows(rows)
    if plt is None or not rows:
        return False
    x = range(len(rows))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for n, (key, label) in enumerate(series.items()):
        ax.bar([i - 0.4 + width * (n + 0.5) for i in x], [100 * (r[key] or 0) for r in rows], width, label=label)
    labels = [f"{r['strategy']}\n{commit_of(r)}".rstrip() for r in rows]
    ax.set_xticks(list(x), labels)
    ax.set_ylabel("%")
    ax.set_ylim(0, 100)
    ax.set_title(f"{title} with {rows[0]['model']}, {rows[0]['scored']} tasks")
    ax.legend()
    fig.tight_layout()
    fig.savefig(target, dpi=100)
    return True


def scored_section(
    benchmark: str,
    rows: list[dict[str, Any]],
    heading: str,
    columns: dict[str, Callable[[dict[str, Any]], str]],
    series: dict[str, str],
    title: str,
) -> list[str]:
    """A benchmark's section: a row per results file of ``rows`` (strategy, model, then ``columns``: header ->
    cell), the note, the commands, and bars of ``series`` (summary key -> label) by strategy."""
    lines = [f"## {heading}", ""]
    if not rows:
        return [*lines, f"No runs yet: `l2mac bench {benchmark} --strategy single` (see bench/README.md).", ""]
    headers = ["strategy", "model", *columns, "tokens", "generation time", "file"]
    lines += ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    for r in rows:
        cells = [str(r["strategy"]), str(r["model"]), *(cell(r) for cell in columns.values())]
        lines.append("| " + " | ".join([*cells, f"{r['tokens']:,}", time_text(r), f"`{r['file']}`"]) + " |")
    lines += ["", f"{rows[0]['note']}.", "", "Commands:", ""]
    lines += [f"- `{r['command']}`{run_conditions(r)}" for r in rows]
    lines.append("")
    lines += notes_lines(rows)
    if bars(rows, series, title, BENCH / f"{benchmark}.png"):
        lines += [f"![{title} by strategy]({benchmark}.png)", ""]
    return lines


def notes_lines(rows: list[dict[str, Any]]) -> list[str]:
    """What the person who ran each run saw and its numbers cannot show, by strategy and file."""
    notes = [f"- {r['strategy']} (`{r['file']}`): {n}" for r in rows for n in r.get("notes") or []]
    return ["Notes on these runs:", "", *notes, ""] if notes else []


def ratio(r: dict[str, Any], part: str, whole: str) -> float:
    return r[part] / r[whole] if r[whole] else 0.0


def classeval_section() -> list[str]:
    columns: dict[str, Callable[[dict[str, Any]], str]] = {
        "classes": lambda r: str(r["scored"]),
        "classes fully passing": lambda r: f"{r['classes_passed']} ({r['class_pass_rate']:.1%})",
        "tests passed": lambda r: f"{r['tests_passed']}/{r['tests']} ({r['test_pass_rate']:.1%})",
    }
    series = {"class_pass_rate": "classes fully passing", "test_pass_rate": "tests passed"}
    heading = "ClassEval (class level, first 50 tasks)"
    return scored_section("classeval", result_rows("classeval"), heading, columns, series, "ClassEval")


def devbench_section() -> list[str]:
    for r in (rows := result_rows("devbench")):
        r["acceptance_rate"] = ratio(r, "acceptance", "acceptance_total")
        r["unit_rate"] = ratio(r, "unit", "unit_total")
    columns: dict[str, Callable[[dict[str, Any]], str]] = {
        "repositories": lambda r: str(r["scored"]),
        "acceptance tests": lambda r: f"{r['acceptance']}/{r['acceptance_total']}",
        "unit tests": lambda r: f"{r['unit']}/{r['unit_total']}",
    }
    series = {"acceptance_rate": "acceptance tests passed", "unit_rate": "unit tests passed"}
    return scored_section("devbench", rows, "DevBench (repository level, hidden tests)", columns, series, "DevBench")


def main() -> int:
    rows = humaneval_rows()
    lines = [
        "# Benchmark results",
        "",
        "Written by `bench/report.py` from `bench/results/`. Scores are evalplus 0.3.1's; its ceiling is 163/164",
        "(it fails the canonical solution of HumanEval/32, a known upstream bug).",
        "",
        "## HumanEval+ (function level)",
        "",
        "| strategy | model | tasks | pass@1 base | pass@1 plus | tokens | generation time | results file |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append(
            f"| {r['strategy']} | {r['model']} | {r['scored']} | {r['base_passed']}/{r['scored']} "
            f"({r['pass@1_base']:.1%}) | {r['plus_passed']}/{r['scored']} ({r['pass@1_plus']:.1%}) | "
            f"{r['tokens']:,} | {time_text(r)} | `{r['file']}` |"
        )
    lines.append("")
    lines += shared_tasks_lines(rows)
    if rows:
        m = rows[0].get("machine") or {}
        lines.append(f"Machine: {m.get('cpus')} CPUs, {m.get('platform')}, Python {m.get('python')}.")
        lines.append("")
        lines.append("Commands:")
        lines.append("")
        lines += [f"- `{r['command']}`{run_conditions(r)}" for r in rows]
        lines.append("")
        lines += notes_lines(rows)
        series = {"pass@1_base": "HumanEval (base)", "pass@1_plus": "HumanEval+ (plus)"}
        if bars(rows, series, "HumanEval+ pass@1", BENCH / "humanevalplus.png"):
            lines += ["![HumanEval+ pass@1 by strategy](humanevalplus.png)", ""]
    lines += classeval_section()
    lines += devbench_section()
    lines += runs_section()
    lines += changes_section()
    lines += project_section()
    lines += soa_section()
    lines += ray_section()
    (BENCH / "RESULTS.md").write_text("\n".join(lines), encoding="utf-8")
    print(f"wrote {BENCH / 'RESULTS.md'} ({len(rows)} runs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
