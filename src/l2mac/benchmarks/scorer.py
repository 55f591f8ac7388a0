"""The official HumanEval+ scorer, evalplus 0.3.1, in an environment of its own, run through the engine's runner.

evalplus is installed without its declared dependencies (they include transformers, vllm hooks and API
clients) plus the few it imports when evaluating; it lives in ``<user cache>/l2mac/evalplus-0.3.1`` and is
never imported into the harness: samples go in a fresh temporary folder, evalplus runs there under the
runner (bubblewrap when available), and its JSON results are read back.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import venv
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_cache_dir

from l2mac.checks.runner import Runner, SubprocessRunner
from l2mac.checks.sandbox import BubblewrapRunner, bubblewrap_problem, interpreter_paths, secret_paths
from l2mac.errors import ConfigError

EVALPLUS = "evalplus==0.3.1"
# What evalplus 0.3.1's evaluate imports (datasets only for its top-level import; no GPU stack, no torch)
EVALPLUS_DEPS = (
    "numpy",
    "tqdm",
    "termcolor",
    "fire",
    "rich",
    "psutil",
    "multipledispatch",
    "appdirs",
    "wget",
    "tempdir",
    "tree-sitter>=0.22",
    "tree-sitter-python>=0.21",
    "datasets",
    "pylint",  # not evalplus's: the project-level benchmark's syntax-error count, as in the paper
)
# evalplus 0.3.1 fails HumanEval/32's canonical solution (a known upstream bug): the most any run can score
CEILING = 163
KNOWN_BROKEN = ("HumanEval/32",)


@dataclass(frozen=True)
class TaskScore:
    base: bool
    plus: bool


def scorer_dir() -> Path:
    return Path(user_cache_dir("l2mac")) / "evalplus-0.3.1"


def scorer_python(root: Path | None = None) -> Path:
    return (root or scorer_dir()) / "bin" / "python"


def ensure_scorer(root: Path | None = None, *, say: bool = True) -> Path:
    """The scorer's Python, creating its environment the first time (a few minutes; needs the package index)."""
    root = root or scorer_dir()
    python = scorer_python(root)
    wanted = hashlib.sha256(" ".join((EVALPLUS, *EVALPLUS_DEPS)).encode()).hexdigest()[:12]
    stamp = root / f".ready-{wanted}"
    if stamp.exists() and python.exists():
        return python
    if say:
        print(f"[bench] installing the scorer ({EVALPLUS}, minimal) into {root}", file=sys.stderr, flush=True)
    if not python.exists():
        venv.EnvBuilder(with_pip=True).create(root)
    pip = [str(python), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    try:
        subprocess.run([*pip, "--no-deps", EVALPLUS], check=True)
        subprocess.run([*pip, "--no-warn-conflicts", *EVALPLUS_DEPS], check=True)  # its other deps are skipped
    except subprocess.CalledProcessError as e:
        raise ConfigError(f"could not install the scorer into {root}: pip exited {e.returncode}") from e
    stamp.touch()
    return python


def scoring_runner(python: Path) -> Runner:
    """Bubblewrap (with the scorer's environment visible) when it works here, else a limited subprocess."""
    bwrap = shutil.which("bwrap")
    if bwrap and bubblewrap_problem(bwrap) is None:
        real = python.resolve()
        visible = [*interpreter_paths(), python.parent.parent, real.parent.parent]
        return BubblewrapRunner(bwrap, secret_paths(None), visible)
    return SubprocessRunner()


def score(
    solutions: Mapping[str, str],
    data: Path,
    *,
    python: Path,
    runner: Runner,
    timeout_s: float = 3600,
) -> dict[str, TaskScore]:
    """Score ``{task_id: full solution code}`` with evalplus; tasks not given are sent empty and not returned."""
    with gzip.open(data, "rt", encoding="utf-8") as f:
        all_ids = [json.loads(line)["task_id"] for line in f if line.strip()]
    with tempfile.TemporaryDirectory(prefix="l2mac-evalplus-") as tmp:
        work = Path(tmp)
        shutil.copy(data, work / data.name)
        with (work / "samples.jsonl").open("w", encoding="utf-8") as f:
            for task_id in all_ids:
                f.write(json.dumps({"task_id": task_id, "solution": solutions.get(task_id, "")}) + "\n")
        argv = [
            "/usr/bin/env",
            f"HUMANEVAL_OVERRIDE_PATH={work / data.name}",
            str(python),
            "-m",
            "evalplus.evaluate",
            "--dataset",
            "humaneval",
            "--samples",
            "samples.jsonl",
            "--i-just-wanna-run",
        ]
        result = runner.run(argv, work, timeout_s)
        out = work / "samples_eval_results.json"
        if not out.exists():
            raise RuntimeError(f"evalplus produced no results (exit {result.returncode}):\n{result.output[-3000:]}")
        evals = json.loads(out.read_text(encoding="utf-8"))["eval"]
    return {
        task_id: TaskScore(runs[0]["base_status"] == "pass", runs[0]["plus_status"] == "pass")
        for task_id, runs in evals.items()
        if task_id in solutions
    }
