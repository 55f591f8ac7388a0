"""DevBench (Li et al., 2024) at repository level: a PRD and an architecture design in, a codebase out, scored by
the repository's hidden acceptance and unit tests.

The generator sees only the repository's ``docs/`` (PRD, architecture design, UML class and sequence diagrams):
never ``hidden/``. A codebase is scored as DevBench does it: the hidden ``acceptance_tests/`` and
``unit_tests/`` are copied beside the generated code, with the data files the tests read, and run by pytest
(``PYTHONPATH=.``) under the sandbox, in an environment of the scorer's own per repository with its
``docs/requirements.txt`` installed (lines naming standard-library modules skipped, as DevBench's own notes
say). A solution is the generated project's files, as a JSON object in the results file.
"""

from __future__ import annotations

import ast
import hashlib
import json
import shutil
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir
from pydantic_ai.models import Model

from l2mac.benchmarks import runner
from l2mac.benchmarks.humaneval import render
from l2mac.benchmarks.runner import Generation
from l2mac.checks.dependencies import REQUIREMENTS
from l2mac.checks.environment import ProjectEnvironment
from l2mac.checks.runner import Runner
from l2mac.checks.sandbox import choose_runner
from l2mac.checks.tests import TIMEOUT_PLUGIN, per_test_outcomes, run_tests
from l2mac.errors import ConfigError
from l2mac.fenced import fenced_files
from l2mac.models.client import ModelClient
from l2mac.settings import Settings
from l2mac.store import scratch_copy

#: the hidden test suites, each scored on its own
SUITES = ("acceptance_tests", "unit_tests")
#: seconds one hidden test may run (then it fails alone, and the suite's other tests still count)
PER_TEST_TIMEOUT_S = 120
#: seconds one suite may run in all
TEST_TIMEOUT_S = 600
#: how solutions are scored, as results files record it
SCORER = f"pytest, each test at most {PER_TEST_TIMEOUT_S} s (pytest-timeout), a suite at most {TEST_TIMEOUT_S} s"
UNSCORED = {"acceptance": None, "acceptance_total": None, "unit": None, "unit_total": None}
#: the engine's limits per repository (besides the token budget): the plan and steps are its own
ENGINE_BUDGET: dict[str, int] = {"max_wall_time_s": 3600}
CEILING_NOTE = (
    "ceilings here: ArXiv_digest's acceptance test queries the arXiv API (no network in the sandbox: 0/1); "
    "Hybrid_Images's reference fails 8 of 19 unit tests with today's opencv-python and numpy"
)
_DOCS = (("PRD", "PRD.md"), ("architecture", "architecture_design.md"), ("uml_class", "UML_class.md"))
_MORE_DOCS = (("uml_sequence", "UML_sequence.md"),)


@dataclass(frozen=True)
class Repo:
    task_id: str  # the repository's folder name
    root: Path
    docs: dict[str, str]  # what the generator may read: PRD, architecture, uml_class, uml_sequence
    required_files: tuple[str, ...]  # data files and folders the tests read, relative to ``root``


def default_data_path() -> Path:
    """``bench/data/devbench`` of the source checkout this package runs from."""
    return Path(__file__).resolve().parents[3] / "bench" / "data" / "devbench"


def load_repos(path: Path) -> list[Repo]:
    """The repositories under ``path``: every folder with ``docs/PRD.md`` and ``hidden/repo_config.json``."""
    if not path.is_dir():
        raise ConfigError(f"no DevBench data at {path}: pass --data, or run from a source checkout")
    repos: list[Repo] = []
    for root in sorted(p for p in path.iterdir() if (p / "docs" / "PRD.md").is_file()):
        config_file = root / "hidden" / "repo_config.json"
        if not config_file.is_file():
            raise ConfigError(f"{root.name} has no hidden/repo_config.json: it cannot be scored")
        config = json.loads(config_file.read_text(encoding="utf-8"))
        docs = {key: (root / "docs" / name).read_text(encoding="utf-8") for key, name in (*_DOCS, *_MORE_DOCS)}
        repos.append(Repo(root.name, root, docs, tuple(config.get("required_files", []))))
    if not repos:
        raise ConfigError(f"no DevBench repositories under {path}")
    return repos


def data_digest(repos: Sequence[Repo]) -> str:
    """An md5 over the repositories' documents and hidden tests: a results file is resumed only on the same."""
    digest = hashlib.md5()
    for repo in repos:
        for path in sorted(p for p in repo.root.rglob("*") if p.is_file() and "__pycache__" not in p.parts):
            digest.update(path.relative_to(repo.root.parent).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def select(repos: Sequence[Repo], limit: int | None, ids: Sequence[str] | None) -> list[Repo]:
    chosen = list(repos)
    if ids:
        unknown = set(ids) - {r.task_id for r in repos}
        if unknown:
            raise ConfigError(f"unknown repositories: {', '.join(sorted(unknown))}")
        chosen = [r for r in chosen if r.task_id in ids]
    return chosen[:limit] if limit else chosen


def prompt(repo: Repo) -> str:
    """The task as the generator gets it: the repository's documents."""
    return render("devbench_task", **repo.docs)


def as_solution(files: dict[str, str]) -> str:
    return json.dumps(dict(sorted(files.items())), indent=1)


async def generate_single(client: ModelClient, repo: Repo) -> Generation:
    """One call writes the whole codebase, every file as its path and a fenced block."""

    def files(text: str) -> str:
        return as_solution({f["path"]: f["content"] for f in fenced_files(text)})

    system = render("devbench_single_system")
    return await runner.single_generation(client, system, prompt(repo), f"single {repo.task_id}", files)


def generate_engine(repo: Repo, settings: Settings, model: Model | None, workspace: Path) -> Generation:
    """The engine end to end in a fresh project folder; the solution is every file it wrote."""
    from l2mac.run import run_l2mac

    chosen = runner.task_settings(settings, workspace, repo.task_id)
    result = run_l2mac(prompt(repo), chosen, model=model)
    report = result.report
    reused = runner.reused_calls(chosen, report)
    return Generation(
        as_solution(result.files), report.tokens.total, report.requests, cost_usd=report.cost_usd, reused_calls=reused
    )


def count_tests(folder: Path) -> int:
    """The test functions and methods in the ``test*.py`` and ``*_test.py`` files under ``folder``."""
    total = 0
    for path in sorted([*folder.rglob("test*.py"), *folder.rglob("*_test.py")]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        total += sum(
            1
            for node in ast.walk(tree)
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name.startswith("test")
        )
    return total


def score_repo(solution: str, repo: Repo, sandbox: Runner, python: str) -> dict[str, Any]:
    """Run the hidden suites against the generated files ``solution`` (a JSON object of path -> text)."""
    try:
        files = {p: c for p, c in json.loads(solution or "{}").items() if p.split("/")[0] not in SUITES}
    except (json.JSONDecodeError, AttributeError):
        files = {}
    scores: dict[str, Any] = {}
    with scratch_copy(files, "l2mac-devbench-") as scratch:
        for required in repo.required_files:
            source, target = repo.root / required, scratch.root / required
            if source.is_dir():
                shutil.copytree(source, target, dirs_exist_ok=True)
            elif source.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
        for suite in SUITES:
            hidden = repo.root / "hidden" / suite
            shutil.copytree(hidden, scratch.root / suite)
            run = run_tests(
                sandbox,
                scratch.root,
                TEST_TIMEOUT_S,
                [suite],
                each=True,
                python=python,
                per_test_timeout_s=PER_TEST_TIMEOUT_S,
            )
            outcomes = per_test_outcomes(run.output)
            name = suite.removesuffix("_tests")
            scores[name] = sum(1 for test, ok in outcomes.items() if ok and test.startswith(f"{suite}/"))
            scores[f"{name}_total"] = count_tests(hidden)
    return scores


def scorer_requirements(repo: Repo) -> list[str]:
    """``docs/requirements.txt`` without the lines that name standard-library modules (or pytest), and the
    per-test timeout's plugin."""
    path = repo.root / "docs" / "requirements.txt"
    lines = path.read_text(encoding="utf-8").split() if path.is_file() else []
    provided = set(sys.stdlib_module_names) | {"pytest"}
    return [line for line in lines if line.split(".")[0] not in provided] + [TIMEOUT_PLUGIN]


def scorer_python(repo: Repo, cache: Path | None = None) -> str:
    """The interpreter a repository's hidden tests run on: an environment of the scorer's own with its
    requirements (made the first time, from the package index; kept in the user cache)."""
    root = (cache or Path(user_cache_dir("l2mac")) / "devbench-scorer") / repo.task_id
    root.mkdir(parents=True, exist_ok=True)
    (root / REQUIREMENTS).write_text("".join(f"{r}\n" for r in scorer_requirements(repo)), encoding="utf-8")
    env = ProjectEnvironment(root).sync()
    if env.problem:
        raise ConfigError(f"could not make the scorer's environment for {repo.task_id} in {root}:\n{env.problem}")
    return env.python


def scorer_for(repos: Sequence[Repo], sandbox: Runner, python_for: Callable[[Repo], str]) -> runner.Scorer:
    """Scores solutions ``{repo: files as JSON}``, each on its repository's own environment, under ``sandbox``."""
    return runner.scorer_for(repos, lambda code, repo: score_repo(code, repo, sandbox, python_for(repo)))


def default_scorer(repos: Sequence[Repo]) -> runner.Scorer:
    """The scorer ``l2mac bench devbench`` uses: each repository's environment made now (an install can fail,
    and should before anything is generated), under the sandbox."""
    pythons = {r.task_id: scorer_python(r) for r in repos}
    return scorer_for(repos, choose_runner("auto"), lambda r: pythons[r.task_id])


def summarise(repos: dict[str, dict[str, Any]]) -> dict[str, Any]:
    scored = [r for r in repos.values() if r.get("unit") is not None]
    totals = {key: sum(r[key] for r in scored) for key in ("acceptance", "acceptance_total", "unit", "unit_total")}
    return {
        "tasks": len(repos),
        "scored": len(scored),
        **totals,
        "tests_passed": totals["acceptance"] + totals["unit"],
        "tests": totals["acceptance_total"] + totals["unit_total"],
        **runner.usage_summary(repos),
        "note": CEILING_NOTE,
    }


SUITE = runner.Suite[Repo](
    name="devbench",
    title="DevBench (development repositories)",
    generate_single=generate_single,
    generate_engine=generate_engine,
    engine_budget=ENGINE_BUDGET,
    summarise=summarise,
    unscored=UNSCORED,
    headline=lambda s: (
        f"acceptance {s['acceptance']}/{s['acceptance_total']}, unit {s['unit']}/{s['unit_total']} ({s['note']})"
    ),
)
