"""How reliably the embedded model does the README's demo: the same run under several sampling seeds.

    .venv/bin/python bench/demo_seeds.py --seeds 0,1,2,3 [--max-wall-time 900] [--workspace DIR]

One README run passing is one trajectory: a seeded run repeats itself, so it shows what l2mac *can* do, not
how often. Each seed here is the README's main command (planning included) with ``--seed N``; seed 0 is what
the README command itself runs. Every project is then judged as its user would judge it, not only by the run
report: the project's tests run twice in a row (the second run finds whatever the first left behind), and the
command line is tried for real (``add milk``, ``add eggs``, ``done 1``, ``list``, ``remove 1``, ``list``, in a
scratch copy, through l2mac's sandboxed runner). Writes ``bench/results/demo_seeds-<UTC time>.json`` after
every seed, so a partial benchmark is kept.
"""

from __future__ import annotations

import argparse
import ast
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from l2mac.checks.runner import Runner
from l2mac.checks.sandbox import choose_runner
from l2mac.models.local.catalog import DEFAULT_LOCAL_MODEL
from l2mac.run import run_l2mac
from l2mac.settings import load_settings

DEMO_TASK = "a command-line todo app (add, list, done, remove) stored in a JSON file, with pytest tests"
RESULTS = Path(__file__).parent / "results"
#: what a user types, and what the last ``list`` must show: eggs still there, milk removed
SESSION = (["add", "milk"], ["add", "eggs"], ["done", "1"], ["list"], ["remove", "1"], ["list"])


def _cli_module(root: Path) -> str | None:
    """The project's command-line module: the non-test module that builds an argparse sub-command parser."""
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root)
        if rel.parts[0] in {"tests", ".l2mac", ".git"} or rel.name.startswith("test_"):
            continue
        source = path.read_text(encoding="utf-8", errors="replace")
        if "add_subparsers" in source or "argparse" in source:
            try:
                ast.parse(source)
            except SyntaxError:
                continue
            return ".".join(rel.with_suffix("").parts)
    return None


def try_the_cli(copy: Path, runner: Runner) -> dict[str, Any]:
    """The user's session against the project's command line (in ``copy``, a scratch copy of the project)."""
    module = _cli_module(copy)
    if module is None:
        return {"module": None, "ok": False, "why": "no command-line module"}
    transcript = []
    for argv in SESSION:
        done = runner.run([sys.executable, "-m", module, *argv], copy, 30)
        transcript.append({"argv": argv, "exit": done.returncode, "output": done.output[-400:]})
        if done.returncode != 0:
            why = f"{' '.join(argv)} exited {done.returncode}"
            return {"module": module, "ok": False, "why": why, "transcript": transcript}
    last = transcript[-1]["output"]
    ok = "eggs" in last and "milk" not in last
    return {"module": module, "ok": ok, "why": "" if ok else "the last list is not [eggs]", "transcript": transcript}


def _pytest(copy: Path, runner: Runner) -> tuple[bool, str]:
    done = runner.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], copy, 300)
    lines = done.stdout.strip().splitlines()
    return done.returncode == 0, lines[-1] if lines else done.output[-200:]


def judge(root: Path, runner: Runner) -> dict[str, Any]:
    """The project as its user finds it, in a scratch copy: its tests twice in a row (what the first run
    leaves stays for the second), then its command line."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "project"
        shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".git", ".l2mac"))
        before = _files(copy)
        first_ok, first = _pytest(copy, runner)
        second_ok, second = _pytest(copy, runner)
        left = sorted(_files(copy) - before)
        fresh = Path(tmp) / "cli"
        shutil.copytree(root, fresh, ignore=shutil.ignore_patterns(".git", ".l2mac"))
        cli = try_the_cli(fresh, runner)
    return {
        "tests_first_run": first,
        "tests_first_run_ok": first_ok,
        "tests_second_run": second,
        "tests_second_run_ok": second_ok,
        "files_left_by_tests": left,
        "cli": cli,
    }


def _files(root: Path) -> set[str]:
    """The project's files, without caches."""
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and not {"__pycache__", ".pytest_cache"} & set(p.relative_to(root).parts)
    }


def one_seed(seed: int, workspace: Path, max_wall_time: float, runner: Runner) -> dict[str, Any]:
    settings = load_settings(
        llm={"model": f"local:{DEFAULT_LOCAL_MODEL}", "seed": seed},
        run={
            "workspace": workspace,
            "project_name": f"todo-seed{seed}",
            "force": True,
            "max_wall_time_s": max_wall_time,
        },
    )
    start = time.monotonic()
    result = run_l2mac(DEMO_TASK, settings)
    wall = time.monotonic() - start
    report = result.report.model_dump(mode="json")
    return {
        "seed": seed,
        "status": report["status"],
        "stopped_reason": report.get("stopped_reason"),
        "wall_time_s": round(wall, 1),
        "tokens": report["tokens"]["total"],
        "model_calls": report["requests"],
        "steps": {k: report["steps"][k] for k in ("planned", "passed", "failed")},
        "tests": report["tests"],
        "tests_removed": report.get("tests_removed", []),
        "files": report["file_list"],
        "user_view": judge(result.workspace, runner),
        "project": str(result.workspace),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", default="0,1,2,3", help="sampling seeds, comma-separated")
    ap.add_argument("--max-wall-time", type=float, default=900, help="seconds per run before it is stopped")
    ap.add_argument("--workspace", type=Path, default=None, help="where the projects go (default: a temp dir)")
    args = ap.parse_args()
    workspace = args.workspace or Path(tempfile.mkdtemp(prefix="l2mac-seeds-"))
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=Path(__file__).parent
    ).stdout.strip()
    out: dict[str, Any] = {
        "task": DEMO_TASK,
        "model": DEFAULT_LOCAL_MODEL,
        "commit": commit,
        "when": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "machine": {"platform": platform.platform(), "python": platform.python_version()},
        "max_wall_time_s": args.max_wall_time,
        "runs": [],
    }
    RESULTS.mkdir(exist_ok=True)
    target = RESULTS / f"demo_seeds-{datetime.now(timezone.utc):%Y%m%dT%H%M%SZ}.json"
    runner = choose_runner("auto")
    for seed in (int(s) for s in args.seeds.split(",")):
        row = one_seed(seed, workspace, args.max_wall_time, runner)
        out["runs"].append(row)
        view = row["user_view"]
        print(
            f"seed {seed}: {row['status']}, steps {row['steps']['passed']}/{row['steps']['planned']}, "
            f"tests {row['tests']['passed']}p/{row['tests']['failed']}f, second run ok {view['tests_second_run_ok']}, "
            f"cli ok {view['cli']['ok']}, {row['wall_time_s']} s, {row['tokens']} tokens",
            flush=True,
        )
        runs = out["runs"]
        out["summary"] = {
            "runs": len(runs),
            "passed": sum(r["status"] == "passed" for r in runs),
            "tests_pass_twice": sum(
                r["user_view"]["tests_first_run_ok"] and r["user_view"]["tests_second_run_ok"] for r in runs
            ),
            "cli_works": sum(r["user_view"]["cli"]["ok"] for r in runs),
            "all_three": sum(
                r["status"] == "passed" and r["user_view"]["tests_second_run_ok"] and r["user_view"]["cli"]["ok"]
                for r in runs
            ),
        }
        target.write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps(out["summary"]))
    print(f"written to {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
