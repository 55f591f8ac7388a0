"""The ClassEval harness, offline: data checks, what the generator is shown, answer extraction, scoring a class
by its unittest suite, and a resumable run through the benchmark runner; and (marked ``index``) the real
scorer environment, which must pass the reference solutions (but the two whose tests are broken upstream)."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import sys
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from l2mac.benchmarks import classeval as ce
from l2mac.benchmarks import runner
from l2mac.benchmarks.humaneval import render
from l2mac.checks.runner import SubprocessRunner
from l2mac.checks.sandbox import choose_runner
from l2mac.errors import ConfigError
from l2mac.models.client import ModelClient
from l2mac.models.scripted import last_user_text

DATA = ce.default_data_path()

ADDER = ce.Task(
    task_id="ClassEval_x",
    class_name="Adder",
    skeleton='import math\n\nclass Adder:\n    def add(self, a, b):\n        """Return a + b."""\n',
    imports=("import math",),
    test=(
        "import unittest\n\n\nclass AdderTestAdd(unittest.TestCase):\n    def test_add_1(self):\n"
        "        self.assertEqual(Adder().add(1, 2), 3)\n\n    def test_add_2(self):\n"
        "        self.assertEqual(Adder().add(-1, 1), 0)\n\n\nclass AdderTestSqrt(unittest.TestCase):\n"
        "    def test_sqrt(self):\n        self.assertEqual(Adder().root(9), 3)\n"
    ),
)
RIGHT = (
    "class Adder:\n    def add(self, a, b):\n        return a + b\n\n    def root(self, x):\n"
    "        return math.sqrt(x)\n"
)


@pytest.fixture(scope="module")
def tasks() -> list[ce.Task]:
    return ce.load_tasks(DATA)


def test_data_is_the_development_set_and_a_changed_file_is_refused(tasks: list[ce.Task], tmp_path: Path) -> None:
    assert len(tasks) == 50 and tasks[0].task_id == "ClassEval_0" and tasks[0].class_name == "AccessGatewayFilter"
    bad = tmp_path / ce.DATA_FILE
    bad.write_bytes(DATA.read_bytes().replace(b"AccessGatewayFilter", b"AccessGatewayFiltre", 1))
    with pytest.raises(ConfigError, match="not the ClassEval development set"):
        ce.load_tasks(bad)
    assert [t.task_id for t in ce.select(tasks, None, ["3", "ClassEval_5"])] == ["ClassEval_3", "ClassEval_5"]
    with pytest.raises(ConfigError, match="unknown task ids: ClassEval_99"):
        ce.select(tasks, None, ["99"])


def test_the_generator_is_shown_the_skeleton_and_never_the_tests(tasks: list[ce.Task]) -> None:
    reference = {r["task_id"]: r["solution_code"] for r in json.loads(DATA.read_text())}
    for task in tasks:
        for prompt in (
            render("classeval_single_user", skeleton=task.skeleton),
            render("classeval_l2mac_task", skeleton=task.skeleton),
        ):
            assert task.skeleton.strip() in prompt
            assert task.test.strip()[:200] not in prompt and reference[task.task_id].strip() not in prompt


def test_single_takes_the_block_defining_the_class_and_adds_the_imports_it_left_out() -> None:
    answer = f"Here:\n```python\ndef helper():\n    pass\n```\nand\n```python\n{RIGHT}```\n"

    def reply(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        assert "class Adder:" in last_user_text(messages)
        return ModelResponse(parts=[TextPart(answer)])

    gen = asyncio.run(ce.generate_single(ModelClient(FunctionModel(reply, model_name="fake")), ADDER))
    assert gen.solution == "import math\n" + RIGHT and gen.requests == 1 and gen.error is None


def test_a_class_passes_only_when_every_test_passes() -> None:
    sandbox, python = SubprocessRunner(), sys.executable
    assert ce.score_one("import math\n" + RIGHT, ADDER, sandbox, python) == {
        "tests": 3,
        "passed": 3,
        "class_passed": True,
    }
    half = RIGHT.replace("return math.sqrt(x)", "return x")
    assert ce.score_one(half, ADDER, sandbox, python) == {"tests": 3, "passed": 2, "class_passed": False}
    assert ce.score_one("", ADDER, sandbox, python) == {"tests": 3, "passed": 0, "class_passed": False}
    broken = "class Adder(:\n"  # a solution that does not even parse fails every test
    assert ce.score_one(broken, ADDER, sandbox, python)["passed"] == 0


def test_a_method_that_never_returns_fails_only_its_own_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    # seen on ClassEval_35: a solve() looping forever on the hidden tests' boards timed the whole file out, and
    # the 14 tests of its other methods, which pass, were counted as failed with it
    monkeypatch.setattr(ce, "PER_TEST_TIMEOUT_S", 1)
    monkeypatch.setattr(ce, "TEST_TIMEOUT_S", 20)
    looping = RIGHT.replace("return math.sqrt(x)", "while True:\n            pass")
    assert ce.score_one(looping, ADDER, SubprocessRunner(), sys.executable) == {
        "tests": 3,
        "passed": 2,
        "class_passed": False,
    }


def test_a_run_through_the_benchmark_runner_is_scored_summarised_and_resumed(tmp_path: Path) -> None:
    calls: list[str] = []

    def generate(task: ce.Task) -> runner.Generation:
        calls.append(task.task_id)
        return runner.Generation("import math\n" + RIGHT, tokens=10, requests=1)

    out = tmp_path / "r.json"
    score = ce.scorer_for([ADDER], SubprocessRunner(), sys.executable)
    meta = {"data_md5": ce.DATA_MD5, "model": "fake"}
    kwargs = {"summarise": ce.summarise, "unscored": ce.UNSCORED, "out": out, "meta": meta, "say": lambda s: None}
    data = runner.run_benchmark([ADDER], strategy="single", generate=generate, score=score, **kwargs)
    assert data["tasks"]["ClassEval_x"]["class_passed"] is True
    summary = data["summary"]
    assert (summary["classes_passed"], summary["tests_passed"], summary["tests"], summary["tokens"]) == (1, 3, 3, 10)
    again = runner.run_benchmark([ADDER], strategy="single", generate=generate, score=score, **kwargs)
    assert calls == ["ClassEval_x"] and again["summary"]["classes_passed"] == 1  # resumed: not generated twice


def test_the_scorer_installs_what_the_tasks_import(tasks: list[ce.Task]) -> None:
    assert ce.scorer_packages(tasks) == [
        "Pillow",
        "beautifulsoup4",
        "gensim",
        "numpy",
        "openpyxl",
        "pandas",
        "pytest-timeout",
        "python-docx",
    ]


@pytest.mark.index
def test_the_reference_solutions_pass_in_the_scorers_own_environment(tasks: list[ce.Task], tmp_path: Path) -> None:
    python = ce.scorer_python(tasks, tmp_path / "scorer")
    reference = {r["task_id"]: r["solution_code"] for r in json.loads(DATA.read_text())}
    scores = ce.scorer_for(tasks, choose_runner("auto"), python)(reference)
    failed = sorted(tid for tid, s in scores.items() if not s["class_passed"])
    assert len(scores) == 50 and failed == list(ce.KNOWN_BROKEN), failed  # upstream: a date, a host name


def test_the_command_writes_a_results_file_with_its_conditions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from test_cli import cli, use_script

    from l2mac.models.scripted import text

    use_script(monkeypatch, [text("```python\nclass AccessGatewayFilter:\n    pass\n```")])
    monkeypatch.setattr(ce, "scorer_python", lambda tasks: sys.executable)  # the first task needs no package
    out = tmp_path / "ce.json"
    assert cli(["bench", "classeval", "--tasks", "0", "--model", "gpt-4o", "--seed", "3", "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["benchmark"] == "ClassEval (first 50 tasks)" and data["seed"] == 3 and data["engine_budget"] is None
    entry = data["tasks"]["ClassEval_0"]
    assert entry["solution"].startswith("import logging\nimport datetime\nclass AccessGatewayFilter")
    assert entry["tests"] == 19 and entry["class_passed"] is False  # a class with no methods passes no test
    assert "classes 0/1, tests" in capsys.readouterr().out


def test_a_served_model_has_a_slot_for_each_call_the_tasks_done_at_once_may_have_in_flight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seen with a slot per task: requests queued, a freed slot went to another task's request, and the prompt
    of a request l2mac stopped and continued (a given stub) was read again from the start."""
    from test_cli import cli, use_script

    from l2mac.models.scripted import text

    use_script(monkeypatch, [text("```python\nclass AccessGatewayFilter:\n    pass\n```")])
    monkeypatch.setattr(ce, "scorer_python", lambda tasks: sys.executable)
    out = tmp_path / "ce.json"
    args = ["bench", "classeval", "--tasks", "0", "--model", "gpt-4o", "--workers", "3", "--out", str(out)]
    assert cli([*args, "--llama-server", sys.executable]) == 0
    assert json.loads(out.read_text())["serving"] == "llama-server, 12 slots"  # 3 tasks, 4 calls in flight each


def test_a_results_file_is_rescored_keeping_its_generation_and_saying_what_it_scored_before(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ce, "PER_TEST_TIMEOUT_S", 1)
    spec = importlib.util.spec_from_file_location("rescore", Path(__file__).parents[1] / "bench" / "rescore.py")
    assert spec is not None and spec.loader is not None
    rescore = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rescore)
    looping = RIGHT.replace("return math.sqrt(x)", "while True:\n            pass")
    entry = {"solution": looping, "tokens": 7, "requests": 1, "cost_usd": None, "wall_time_s": 3.0}
    tasks = {"ClassEval_x": {**entry, "tests": 3, "passed": 0, "class_passed": False}}
    path = tmp_path / "results.json"
    path.write_text(
        json.dumps({"benchmark": "ClassEval (first 50 tasks)", "tasks": tasks, "summary": ce.summarise(tasks)})
    )

    def scorer(ids: list[str]) -> runner.Scorer:
        return ce.scorer_for([ADDER], SubprocessRunner(), sys.executable)

    line = rescore.rescore(path, {"ClassEval": (scorer, "per-test timeout")})
    data = json.loads(path.read_text())
    assert line.endswith("0/3 tests, 0 classes -> 2/3 tests, 0 classes")
    assert data["tasks"]["ClassEval_x"]["passed"] == 2 and data["tasks"]["ClassEval_x"]["tokens"] == 7
    assert (data["summary"]["tests_passed"], data["summary"]["tokens"], data["scorer"]) == (2, 7, "per-test timeout")
    assert "scored before: 0/3 tests, 0 classes" in data["notes"][-1]
