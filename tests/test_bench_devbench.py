"""The DevBench harness, offline: the repositories and what the generator is shown, one call's codebase, scoring
a codebase by hidden suites beside it (with the data files the tests read), and a run through the benchmark
runner; and (marked ``index``) the scorer's own environments from each repository's requirements."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from l2mac.benchmarks import devbench as db
from l2mac.benchmarks import runner
from l2mac.checks.runner import SubprocessRunner
from l2mac.checks.sandbox import choose_runner
from l2mac.models.client import ModelClient
from l2mac.models.scripted import last_user_text

DATA = db.default_data_path()


def tiny_repo(root: Path) -> db.Repo:
    """A repository in DevBench's layout: docs, a data file the tests read, and two hidden suites."""
    (root / "docs").mkdir(parents=True)
    for name in ("PRD.md", "architecture_design.md", "UML_class.md", "UML_sequence.md"):
        (root / "docs" / name).write_text(f"{name}: calc/ops.py with add(a, b) and scale(x)\n")
    (root / "docs" / "requirements.txt").write_text("os\npytest\n")
    (root / "data").mkdir()
    (root / "data" / "factor.txt").write_text("3\n")
    unit, acceptance = root / "hidden" / "unit_tests", root / "hidden" / "acceptance_tests"
    unit.mkdir(parents=True)
    acceptance.mkdir()
    (root / "hidden" / "repo_config.json").write_text(json.dumps({"required_files": ["data"]}))
    (unit / "test_ops.py").write_text(
        "import unittest\nfrom calc.ops import add, scale\n\n\nclass TestOps(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(1, 2), 3)\n\n"
        "    def test_scale(self):\n        self.assertEqual(scale(2), 6)\n"
    )
    (acceptance / "test_all.py").write_text(
        "from calc.ops import add, scale\n\n\ndef test_together():\n    assert scale(add(1, 1)) == 6\n"
    )
    return db.load_repos(root.parent)[0]


RIGHT = {
    "calc/__init__.py": "",
    "calc/ops.py": (
        "from pathlib import Path\n\n\ndef add(a, b):\n    return a + b\n\n\n"
        "def scale(x):\n    return x * int(Path('data/factor.txt').read_text())\n"
    ),
}


def test_the_repositories_and_what_the_generator_is_shown() -> None:
    repos = db.load_repos(DATA)
    assert [r.task_id for r in repos] == ["ArXiv_digest", "Hybrid_Images", "particle-swarm-optimization"]
    hybrid = repos[1]
    assert "resources" in hybrid.required_files
    for repo in repos:
        shown = db.prompt(repo)
        assert repo.docs["PRD"].strip() in shown and repo.docs["architecture"].strip() in shown
        for test in (repo.root / "hidden").rglob("*.py"):  # no hidden test reaches the prompt
            names = [line.split("(")[0] for line in test.read_text().splitlines() if line.strip().startswith("def ")]
            assert not any(name.strip() in shown for name in names if "test" in name)
    assert db.count_tests(repos[0].root / "hidden" / "unit_tests") == 38
    # os, csv, ... are the standard library; pytest-timeout is the scorer's, for its per-test timeout
    assert db.scorer_requirements(repos[0]) == ["pandas", "pytest-timeout"]
    assert db.scorer_requirements(hybrid) == ["numpy", "opencv-python", "pytest-timeout"]


def test_single_writes_the_codebase_as_files_in_one_answer(tmp_path: Path) -> None:
    repo = tiny_repo(tmp_path / "repos" / "calc")
    answer = "".join(f"{path}\n```python\n{text}```\n" for path, text in RIGHT.items())

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert "calc/ops.py with add(a, b)" in last_user_text(messages)
        return ModelResponse(parts=[TextPart(answer)])

    gen = asyncio.run(db.generate_single(ModelClient(FunctionModel(reply, model_name="fake")), repo))
    assert json.loads(gen.solution) == RIGHT


def test_a_codebase_is_scored_by_the_hidden_suites_with_the_data_files_beside_it(tmp_path: Path) -> None:
    repo = tiny_repo(tmp_path / "repos" / "calc")
    sandbox, python = SubprocessRunner(), sys.executable
    full = {"acceptance": 1, "acceptance_total": 1, "unit": 2, "unit_total": 2}
    assert db.score_repo(db.as_solution(RIGHT), repo, sandbox, python) == full
    wrong = {**RIGHT, "calc/ops.py": RIGHT["calc/ops.py"].replace("return a + b", "return a - b")}
    assert db.score_repo(db.as_solution(wrong), repo, sandbox, python) == {**full, "acceptance": 0, "unit": 1}
    # the generator's own unit_tests/ never stand in for the hidden ones
    cheat = {**wrong, "unit_tests/test_ops.py": "def test_add():\n    pass\n"}
    assert db.score_repo(db.as_solution(cheat), repo, sandbox, python)["unit"] == 1
    assert db.score_repo("", repo, sandbox, python) == {**full, "acceptance": 0, "unit": 0}


def test_a_run_through_the_benchmark_runner(tmp_path: Path) -> None:
    repo = tiny_repo(tmp_path / "repos" / "calc")
    out = tmp_path / "r.json"
    data = runner.run_benchmark(
        [repo],
        strategy="single",
        generate=lambda r: runner.Generation(db.as_solution(RIGHT), tokens=5, requests=1),
        score=db.scorer_for([repo], SubprocessRunner(), lambda r: sys.executable),
        summarise=db.summarise,
        unscored=db.UNSCORED,
        out=out,
        meta={"data_md5": db.data_digest([repo]), "model": "fake"},
        say=lambda s: None,
    )
    summary = data["summary"]
    assert (summary["tests_passed"], summary["tests"], summary["unit"], summary["tokens"]) == (3, 3, 2, 5)
    assert json.loads(out.read_text())["tasks"]["calc"]["acceptance"] == 1


@pytest.mark.index
def test_each_repositorys_scorer_environment_installs_and_runs_its_suites(tmp_path: Path) -> None:
    for repo in db.load_repos(DATA):
        python = db.scorer_python(repo, tmp_path / "scorer")
        scores = db.score_repo(db.as_solution({}), repo, choose_runner("auto"), python)
        assert scores["unit"] == 0 and scores["unit_total"] == db.count_tests(repo.root / "hidden" / "unit_tests")


def test_the_command_writes_a_results_file_with_its_conditions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_cli import cli, use_script

    from l2mac.models.scripted import text

    use_script(monkeypatch, [text("pso/__init__.py\n```python\n```\n")])
    monkeypatch.setattr(db, "scorer_python", lambda repo: sys.executable)
    out = tmp_path / "db.json"
    args = ["bench", "devbench", "--tasks", "particle-swarm-optimization", "--model", "gpt-4o", "--out", str(out)]
    assert cli(args) == 0
    data = json.loads(out.read_text())
    assert data["benchmark"] == "DevBench (development repositories)" and data["data_md5"]
    entry = data["tasks"]["particle-swarm-optimization"]
    assert json.loads(entry["solution"]) == {"pso/__init__.py": ""}
    assert (entry["unit"], entry["unit_total"], entry["acceptance"], entry["acceptance_total"]) == (0, 5, 0, 1)
    assert "acceptance 0/1, unit 0/5" in capsys.readouterr().out
