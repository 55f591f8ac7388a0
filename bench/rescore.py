"""Scores the solutions kept in results files again with today's scorer, when the scorer changed (ClassEval and
DevBench; HumanEval+'s is evalplus, unchanged): each task's score fields and the summary are made anew, the
generation's figures (tokens, wall time, the command) are kept, the file records the scorer, and where a figure
changed a note says what it was before.

    .venv/bin/python bench/rescore.py bench/results/2026-11-25-classeval-...json [more files]
    .venv/bin/python bench/report.py

The scorer is the benchmark's own (``l2mac.benchmarks``), in its own environment under the sandbox, as
``l2mac bench`` scores; nothing is generated.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from l2mac.benchmarks import classeval as ce
from l2mac.benchmarks import devbench as db
from l2mac.benchmarks import runner

#: a benchmark's scorer for the given task ids
MakeScorer = Callable[[list[str]], runner.Scorer]


def classeval_scorer(ids: list[str]) -> runner.Scorer:
    return ce.default_scorer(ce.load_tasks(ce.default_data_path()))


def devbench_scorer(ids: list[str]) -> runner.Scorer:
    return db.default_scorer(db.select(db.load_repos(db.default_data_path()), None, ids))


#: per benchmark, as results files name it (first word): its scorer and how it scores
SCORERS: dict[str, tuple[MakeScorer, str]] = {
    "ClassEval": (classeval_scorer, ce.SCORER),
    "DevBench": (devbench_scorer, db.SCORER),
}
#: per benchmark, its summary of the tasks' entries
SUMMARIES: dict[str, runner.Summariser] = {"ClassEval": ce.summarise, "DevBench": db.summarise}


def headline(summary: Mapping[str, Any]) -> str:
    if "classes_passed" in summary:
        return f"{summary['tests_passed']}/{summary['tests']} tests, {summary['classes_passed']} classes"
    return f"{summary['tests_passed']}/{summary['tests']} hidden tests"


def rescore(path: Path, scorers: Mapping[str, tuple[MakeScorer, str]] = SCORERS) -> str:
    data = json.loads(path.read_text(encoding="utf-8"))
    kind = next((k for k in scorers if str(data.get("benchmark", "")).startswith(k)), None)
    if kind is None:
        return f"{path.name}: not a ClassEval or DevBench results file; left as it is"
    make, scorer = scorers[kind]
    tasks: dict[str, dict[str, Any]] = data["tasks"]
    ids = sorted(tid for tid, t in tasks.items() if "solution" in t)
    before = dict(data.get("summary", {}))
    for tid, fields in make(ids)({tid: tasks[tid]["solution"] for tid in ids}).items():
        tasks[tid].update(fields)
    data["summary"] = SUMMARIES[kind](tasks)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    day = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    data["scorer"] = scorer
    was = headline(before) if before else "not scored"
    if was != headline(data["summary"]):  # the same scores need no note: ``scorer`` says how they were made
        data.setdefault("notes", []).append(
            f"Re-scored on {day} at {commit or 'this checkout'} by bench/rescore.py ({scorer}); scored before: {was}."
        )
    runner.save_results(path, data)
    return f"{path.name}: {was} -> {headline(data['summary'])}"


def main(paths: list[str]) -> int:
    if not paths:
        print(__doc__, file=sys.stderr)
        return 2
    for p in paths:
        print(rescore(Path(p)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
