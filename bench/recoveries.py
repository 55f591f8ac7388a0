"""How much the small-model recoveries help: the share of steps that complete on the embedded model.

    .venv/bin/python bench/recoveries.py [--max-turns 5] [--only text,text-raw] [--tasks demo,roman]

Each task runs with a fixed prompt program (the same steps for every configuration, so planning luck does not
enter the comparison), in four configurations:

- ``tools-raw``: steps by tool calls only; no recoveries (malformed calls are still answered with the error
  and the schema, as always);
- ``tools+recoveries``: tool calls, plus the recoveries (a fenced block naming its file becomes a write;
  Python-literal arguments are re-encoded as JSON);
- ``text``: the text protocol used by default for local models (files as fenced blocks, checks after every
  answer, a fresh context per attempt), with the recoveries (the above, and the repairs of written files:
  forgotten imports, pytest fixtures, ``parse_args(argv)``, copies, shadowed imports, bare or unnamed blocks);
- ``text-raw``: the same protocol with every recovery off (``--no-recoveries``): only answers in the
  expected format are written, and nothing the model wrote is repaired. Agreement sampling and the
  regression guard stay on in both text configurations: they weigh and undo, they do not repair.

Writes ``bench/results/recoveries-<UTC time>.json`` after every run, so a partial benchmark is kept.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from l2mac.models.local.catalog import DEFAULT_LOCAL_MODEL
from l2mac.run import run_l2mac
from l2mac.settings import load_settings

RESULTS = Path(__file__).parent / "results"

CONFIGS: dict[str, dict[str, Any]] = {
    "text": {"protocol": "text", "recoveries": True},
    "text-raw": {"protocol": "text", "recoveries": False},
    "tools-raw": {"protocol": "tools", "recoveries": False},
    "tools+recoveries": {"protocol": "tools", "recoveries": True},
}


def _step(title: str, instruction: str) -> dict[str, Any]:
    return {"title": title, "instruction": instruction, "requires_tests": True}


TASKS: dict[str, dict[str, Any]] = {
    # the README's demo task, with the plan the embedded model made for it in a real run
    "demo": {
        "task": "a command-line todo app (add, list, done, remove) stored in a JSON file, with pytest tests",
        "steps": [
            _step(
                "Todo storage",
                "Write todo/core.py with a dataclass Todo(item: str, done: bool), add_todo(path: Path, item: str)"
                " -> None, load_todos(path: Path) -> list[Todo] (an empty list when the file does not exist),"
                " mark_done(path: Path, item: str) -> None and remove_todo(path: Path, item: str) -> None, storing"
                " the todos as a JSON list in the file at path. Write todo/__init__.py. Write tests/test_core.py"
                " with pytest tests of each function using files under tmp_path, including a missing file.",
            ),
            _step(
                "Command line",
                "Write todo/cli.py with main(argv: list[str]) -> int using argparse, a --file option (default"
                " todo.json) and the functions of todo/core.py: `add ITEM` adds an item; `list` prints one line"
                " per item with [x] when done; `done ITEM` marks an item as done; `remove ITEM` removes it."
                " Write tests/test_cli.py calling main() with --file under tmp_path, reading output with capsys.",
            ),
        ],
    },
    "temperature": {
        "task": "a temperature conversion module with pytest tests",
        "steps": [
            _step(
                "Conversions",
                "Write temperature.py with c_to_f(c: float) -> float, f_to_c(f: float) -> float and c_to_k(c:"
                " float) -> float (a result below absolute zero raises ValueError). Write"
                " tests/test_temperature.py with pytest tests of each function.",
            )
        ],
    },
    "wordfreq": {
        "task": "a word frequency counter with pytest tests",
        "steps": [
            _step(
                "Counting",
                "Write wordfreq.py with count_words(text: str) -> dict[str, int] (lower-case, punctuation"
                " stripped) and top_words(text: str, n: int) -> list[tuple[str, int]] (most common first, ties"
                " alphabetical). Write tests/test_wordfreq.py with pytest tests, including empty text.",
            )
        ],
    },
    "stack": {
        "task": "stack and queue data structures with pytest tests",
        "steps": [
            _step(
                "Stack and queue",
                "Write structures.py with class Stack (push(x), pop() -> value, peek() -> value, is_empty() ->"
                " bool, __len__) and class Queue (enqueue(x), dequeue() -> value, is_empty() -> bool, __len__);"
                " pop, peek and dequeue on an empty structure raise IndexError. Write tests/test_structures.py"
                " with pytest tests of every method.",
            )
        ],
    },
    "password": {
        "task": "a password strength checker with pytest tests",
        "steps": [
            _step(
                "Strength",
                "Write password.py with strength(password: str) -> str returning 'weak' when shorter than 8"
                " characters, 'strong' when at least 12 characters with a digit, an upper-case letter and a"
                " symbol, else 'medium'. Write tests/test_password.py with pytest tests of each case.",
            )
        ],
    },
    "roman": {
        "task": "a roman numeral converter with pytest tests",
        "steps": [
            _step(
                "Roman numerals",
                "Write roman.py with to_roman(n: int) -> str for 1..3999 (ValueError outside) and"
                " from_roman(s: str) -> int. Write tests/test_roman.py with pytest tests including 4, 9, 14,"
                " 1994 and 3999, and a round trip.",
            )
        ],
    },
}


def run_one(task_name: str, config: str, workspace: Path, max_turns: int) -> dict[str, Any]:
    spec = TASKS[task_name]
    plan = workspace / f"{task_name}.plan.yaml"
    plan.write_text(yaml.safe_dump({"task": spec["task"], "steps": spec["steps"]}, sort_keys=False))
    settings = load_settings(
        llm={"model": f"local:{DEFAULT_LOCAL_MODEL}"},
        run={
            "workspace": workspace,
            "project_name": f"{task_name}-{config}",
            "prompt_program": plan,
            "max_turns": max_turns,
            "max_check_failures": 3,
            **CONFIGS[config],
        },
    )
    start = time.monotonic()
    result = run_l2mac(spec["task"], settings)
    steps = result.report.steps.model_dump()
    return {
        "task": task_name,
        "config": config,
        "steps": steps["planned"],
        "steps_passed": steps["passed"],
        "tests": result.report.tests.model_dump(),
        "model_calls": result.report.requests,
        "tokens": result.report.tokens.total,
        "wall_time_s": round(time.monotonic() - start, 1),
        "workspace": str(result.workspace),
    }


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for config in CONFIGS:
        mine = [r for r in rows if r["config"] == config]
        if mine:
            steps = sum(r["steps"] for r in mine)
            passed = sum(r["steps_passed"] for r in mine)
            out[config] = {"steps": steps, "passed": passed, "share": round(passed / steps, 3) if steps else None}
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--max-turns", type=int, default=5, help="model calls per step (all configurations)")
    ap.add_argument("--only", default=",".join(CONFIGS), help="configurations to run, comma-separated")
    ap.add_argument("--tasks", default=",".join(TASKS), help="tasks to run, comma-separated")
    ap.add_argument("--workspace", type=Path, default=None, help="where the projects go (default: a temp dir)")
    ap.add_argument("--resume", type=Path, default=None, help="a results file to continue: its runs are kept")
    args = ap.parse_args()
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="l2mac-bench-"))
    workspace.mkdir(parents=True, exist_ok=True)
    RESULTS.mkdir(exist_ok=True)
    target = args.resume or RESULTS / f"recoveries-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json"
    rows: list[dict[str, Any]] = json.loads(target.read_text())["runs"] if args.resume else []
    done = {(r["task"], r["config"]) for r in rows}
    for task_name in args.tasks.split(","):  # task outer: a partial run still compares configurations
        for config in args.only.split(","):
            if (task_name, config) in done:
                continue
            row = run_one(task_name, config, workspace, args.max_turns)
            rows.append(row)
            print(json.dumps(row), flush=True)
            data = {"max_turns": args.max_turns, "max_check_failures": 3, "summary": summarise(rows), "runs": rows}
            target.write_text(json.dumps(data, indent=2) + "\n")
    print(json.dumps(summarise(rows), indent=2))
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
