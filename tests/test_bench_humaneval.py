"""The HumanEval+ harness, offline: data checks, answer extraction, resumable runs; and (slow) the real scorer,
which must give a perfect fake model the ceiling, an empty one 0 and a half-right one half."""

from __future__ import annotations

import asyncio
import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from l2mac.benchmarks import humaneval as he
from l2mac.benchmarks import scorer
from l2mac.benchmarks.scorer import TaskScore
from l2mac.errors import ConfigError, ProviderError
from l2mac.models.client import ModelClient
from l2mac.models.scripted import last_user_text

DATA = he.default_data_path()


@pytest.fixture(scope="module")
def tasks() -> list[he.Task]:
    return he.load_tasks(DATA)


def canonical() -> dict[str, str]:
    with gzip.open(DATA, "rt", encoding="utf-8") as f:
        return {r["task_id"]: r["prompt"] + r["canonical_solution"] for r in map(json.loads, f)}


def test_data_is_the_release_and_a_changed_file_is_refused(tasks: list[he.Task], tmp_path: Path) -> None:
    assert len(tasks) == 164 and tasks[0].task_id == "HumanEval/0" and tasks[0].entry_point == "has_close_elements"
    bad = tmp_path / he.DATA_FILE
    bad.write_bytes(DATA.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(ConfigError, match=r"not the HumanEval\+ v0\.1\.10 release"):
        he.load_tasks(bad)


def test_select_by_ids_and_limit(tasks: list[he.Task]) -> None:
    assert [t.task_id for t in he.select(tasks, 3, None)] == ["HumanEval/0", "HumanEval/1", "HumanEval/2"]
    assert [t.task_id for t in he.select(tasks, None, ["5", "HumanEval/7"])] == ["HumanEval/5", "HumanEval/7"]
    with pytest.raises(ConfigError, match="unknown task ids: HumanEval/999"):
        he.select(tasks, None, ["999"])


def _answer_with(text: str) -> FunctionModel:
    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=[TextPart(text)])

    return FunctionModel(answer, model_name="fake")


def test_single_takes_the_block_defining_the_function_and_keeps_the_prompts_imports(tasks: list[he.Task]) -> None:
    task = tasks[0]  # from typing import List; def has_close_elements(numbers: List[float], ...)
    body = "def has_close_elements(numbers: List[float], threshold: float) -> bool:\n    return False\n"
    answer = f"Here:\n```python\nprint('example')\n```\nSolution:\n```python\n{body}```\n"
    seen: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(last_user_text(messages))
        return ModelResponse(parts=[TextPart(answer)])

    gen = asyncio.run(he.generate_single(ModelClient(FunctionModel(model, model_name="fake")), task))
    assert gen.solution == "from typing import List\n" + body and gen.requests == 1
    # the generator saw the prompt only: not the tests or the canonical solution
    assert task.prompt.strip()[:40] in seen[0] and "canonical" not in seen[0] and "assert candidate" not in seen[0]


def test_a_run_is_resumable_and_a_failing_task_is_recorded_not_fatal(tasks: list[he.Task], tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    calls: list[str] = []

    def generate(task: he.Task) -> he.Generation:
        calls.append(task.task_id)
        if task.task_id == "HumanEval/1":
            raise RuntimeError("model fell over")
        return he.Generation(f"# {task.task_id}\n", tokens=10, requests=1)

    def score(solutions: dict[str, str]) -> dict[str, TaskScore]:
        return {tid: TaskScore(base=tid != "HumanEval/2", plus=tid == "HumanEval/0") for tid in solutions}

    meta = {"data_md5": he.DATA_MD5, "model": "fake"}
    first = he.run_benchmark(tasks[:3], strategy="single", generate=generate, score=score, out=out, meta=meta)
    assert first["tasks"]["HumanEval/1"]["error"] == "RuntimeError: model fell over"
    assert first["summary"]["base_passed"] == 2
    assert first["summary"]["plus_passed"] == 1 and first["summary"]["pass@1_plus"] == round(1 / 3, 4)
    assert "163/164" in first["summary"]["note"]
    calls.clear()
    second = he.run_benchmark(tasks[:5], strategy="single", generate=generate, score=score, out=out, meta=meta)
    assert calls == ["HumanEval/3", "HumanEval/4"]  # finished tasks are skipped
    assert second["summary"]["tasks"] == 5 and json.loads(out.read_text())["summary"]["scored"] == 5
    with pytest.raises(ConfigError, match="holds a different run"):
        he.run_benchmark(tasks[:1], strategy="l2mac", generate=generate, score=score, out=out, meta=meta)
    # a run reusing an earlier run's answers measures a change: it never goes on in a live run's file
    reusing = {**meta, "answers_from": "/tmp/earlier"}
    with pytest.raises(ConfigError, match="other reused answers"):
        he.run_benchmark(tasks[:6], strategy="single", generate=generate, score=score, out=out, meta=reusing)


def test_a_task_the_provider_failed_is_not_recorded_and_a_rerun_makes_it(tasks: list[he.Task], tmp_path: Path) -> None:
    """Seen on ClassEval: a llama-server paused past the client's timeout stopped two tasks' runs before any
    answer, and their skeletons were scored as their solutions. A provider's failure says nothing of the task."""
    out, calls, said = tmp_path / "r.json", [], []
    down = {"HumanEval/1"}

    def generate(task: he.Task) -> he.Generation:
        calls.append(task.task_id)
        if task.task_id in down:
            raise ProviderError("llama-server: request failed: timed out")
        return he.Generation(f"# {task.task_id}\n", tokens=10, requests=1)

    def score(solutions: dict[str, str]) -> dict[str, TaskScore]:
        return {tid: TaskScore(base=True, plus=True) for tid in solutions}

    meta = {"data_md5": he.DATA_MD5, "model": "fake"}
    run = {"strategy": "single", "generate": generate, "score": score, "out": out, "meta": meta, "say": said.append}
    first = he.run_benchmark(tasks[:3], **run)
    assert set(first["tasks"]) == {"HumanEval/0", "HumanEval/2"}
    assert any("HumanEval/1: not recorded" in s and "run again" in s for s in said), said
    down.clear()
    calls.clear()
    second = he.run_benchmark(tasks[:3], **run)
    assert calls == ["HumanEval/1"] and second["summary"]["tasks"] == 3


# -- the real scorer (slow: installs evalplus once, about 3 minutes per scoring on 2 cores) -------------------


@pytest.fixture(scope="module")
def real_score() -> Any:
    if shutil.which("pip") is None and not Path(scorer.scorer_python()).exists():
        pytest.skip("no pip to install the scorer")
    python = scorer.ensure_scorer()
    runner = scorer.scoring_runner(python)

    def score(solutions: dict[str, str]) -> dict[str, TaskScore]:
        return scorer.score(solutions, DATA, python=python, runner=runner)

    return score


def _run(tasks: list[he.Task], text_for: Any, score: Any, out: Path) -> dict[str, Any]:
    def generate(task: he.Task) -> he.Generation:
        model = _answer_with(text_for(task))
        return asyncio.run(he.generate_single(ModelClient(model), task))

    return he.run_benchmark(tasks, strategy="single", generate=generate, score=score, out=out, meta={})


@pytest.mark.slow
def test_a_perfect_model_scores_the_ceiling(tasks: list[he.Task], real_score: Any, tmp_path: Path) -> None:
    canon = canonical()
    data = _run(tasks, lambda t: f"```python\n{canon[t.task_id]}```", real_score, tmp_path / "perfect.json")
    assert data["summary"]["base_passed"] == scorer.CEILING and data["summary"]["plus_passed"] == scorer.CEILING
    assert [tid for tid, t in data["tasks"].items() if not t["plus"]] == list(scorer.KNOWN_BROKEN)


@pytest.mark.slow
def test_an_empty_model_scores_0_and_a_half_right_one_half(
    tasks: list[he.Task], real_score: Any, tmp_path: Path
) -> None:
    empty = _run(tasks[:10], lambda t: "I cannot help with that.", real_score, tmp_path / "empty.json")
    assert empty["summary"]["scored"] == 10 and empty["summary"]["base_passed"] == 0
    canon = canonical()
    half = {t.task_id for t in tasks[:20:2]}

    def half_right(t: he.Task) -> str:
        if t.task_id in half:
            return f"```python\n{canon[t.task_id]}```"
        return f"```python\n{t.prompt}    return None\n```"

    data = _run(tasks[:20], half_right, real_score, tmp_path / "half.json")
    assert data["summary"]["base_passed"] == 10 and data["summary"]["plus_passed"] == 10


def test_the_l2mac_strategy_runs_the_engine_and_takes_the_file_defining_the_function(
    tasks: list[he.Task], tmp_path: Path
) -> None:
    from l2mac.models.scripted import ScriptedModel, call

    from conftest import make_settings

    task = tasks[2]  # truncate_number(number: float) -> float
    code = "def truncate_number(number: float) -> float:\n    return number % 1.0\n"
    tests = "from solution import truncate_number\n\n\ndef test_it():\n    assert truncate_number(3.5) == 0.5\n"
    script = ScriptedModel(
        [
            call("submit_plan", {"steps": [{"title": "Solve", "instruction": "Write solution.py and its tests."}]}),
            call(
                "write_files",
                {
                    "files": [
                        {"path": "solution.py", "content": code},
                        {"path": "tests/test_solution.py", "content": tests},
                    ]
                },
            ),
            call("step_complete", {"summary": "done"}),
        ]
    )
    gen = he.engine_generator(make_settings(tmp_path), script.model, tmp_path / "runs")(task)
    assert gen.error is None and gen.requests == 3 and gen.tokens > 0
    # the function as written, with the docstring the task gives it put back (checks/contract.py)
    assert gen.solution == task.prompt.strip("\n") + "\n    return number % 1.0\n"
    assert task.prompt.strip()[:30] in last_user_text(script.requests[0])  # the planner got the task's prompt


def test_the_soa_strategy_runs_a_lead_and_a_child_and_takes_the_function_they_built(
    tasks: list[he.Task], tmp_path: Path
) -> None:
    from pydantic_ai.messages import TextPart, ToolCallPart

    from conftest import make_settings

    task = tasks[2]  # truncate_number(number: float) -> float
    stub = 'def truncate_number(number: float) -> float:\n    """The decimal part of number."""\n    ...\n'
    body = stub.replace("...", "return number % 1.0")
    tests = "from solution import truncate_number\n\n\ndef test_it():\n    assert truncate_number(3.5) == 0.5\n"
    asked: list[list[str]] = []

    def team(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        tools = [t.name for t in info.function_tools]
        asked.append(sorted(tools))
        if "write_tests" in tools:  # the lead: the task gives the function's stub, so she writes its tests
            return ModelResponse(parts=[ToolCallPart("write_tests", json.dumps({"tests": tests}))])
        if "step_complete" in tools:  # her draft of the given module, the control unit's step: nothing written,
            return ModelResponse(parts=[TextPart("The function is already implemented.")])  # as a small model does
        return ModelResponse(parts=[ToolCallPart("write_function", json.dumps({"code": body}))])

    model = FunctionModel(team, model_name="team")
    gen = he.engine_generator(make_settings(tmp_path), model, tmp_path / "runs", strategy="soa")(task)
    assert gen.error is None and "return number % 1.0" in gen.solution and gen.requests == len(asked)
    drafted = [a for a in asked if "step_complete" in a]
    assert drafted and asked[: len(drafted)] == drafted  # the draft's step first, then the lead's tests, the agent
    assert asked[len(drafted) :] == [["write_tests"], ["request_contract_change", "write_function"]]
    with pytest.raises(ConfigError, match="not 'single'"):
        he.engine_generator(make_settings(tmp_path), model, strategy="single")


def test_workers_generate_tasks_at_once_and_every_one_is_saved(tasks: list[he.Task], tmp_path: Path) -> None:
    import threading
    import time

    out = tmp_path / "w.json"
    lock = threading.Lock()
    flight = {"now": 0, "max": 0}

    def generate(task: he.Task) -> he.Generation:
        with lock:
            flight["now"] += 1
            flight["max"] = max(flight["max"], flight["now"])
        time.sleep(0.2)
        with lock:
            flight["now"] -= 1
        return he.Generation(f"# {task.task_id}\n", tokens=10, requests=1)

    def score(solutions: dict[str, str]) -> dict[str, TaskScore]:
        return {tid: TaskScore(base=True, plus=True) for tid in solutions}

    meta = {"data_md5": he.DATA_MD5, "model": "fake"}
    data = he.run_benchmark(tasks[:6], strategy="l2mac", generate=generate, score=score, out=out, meta=meta, workers=3)
    assert flight["max"] == 3 and data["summary"]["base_passed"] == 6
    saved = json.loads(out.read_text())
    assert set(saved["tasks"]) == {t.task_id for t in tasks[:6]} and saved["sessions"][0]["workers"] == 3
    assert all(t["workers"] == 3 for t in saved["tasks"].values())


def test_ctrl_c_starts_no_new_task_and_saves_no_outcome_for_the_tasks_it_cut_short(
    tasks: list[he.Task], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    import os
    import signal
    import threading
    import time

    # Ctrl-C as a terminal delivers it, even when pytest runs in a job started with SIGINT ignored (nohup ... &)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    request.addfinalizer(lambda: signal.signal(signal.SIGINT, previous))
    out = tmp_path / "c.json"
    started: list[str] = []
    release = threading.Event()

    def generate(task: he.Task) -> he.Generation:
        started.append(task.task_id)
        if task.task_id == tasks[0].task_id:
            return he.Generation("# done\n", tokens=1, requests=1)  # finished before Ctrl-C: kept
        if task.task_id == tasks[1].task_id:
            while not out.exists():
                time.sleep(0.01)
            os.kill(os.getpid(), signal.SIGINT)  # the user's Ctrl-C
        release.wait(5)  # in flight at Ctrl-C: its model goes away, so its "failure" must not be saved
        return he.Generation("", 0, 0, error="ProviderError: the server was stopped")

    meta = {"data_md5": he.DATA_MD5, "model": "fake"}
    with pytest.raises(KeyboardInterrupt):
        he.run_benchmark(tasks[:8], strategy="l2mac", generate=generate, score=dict, out=out, meta=meta, workers=2)
    release.set()
    time.sleep(0.3)
    assert set(started) <= {t.task_id for t in tasks[:3]}  # the tasks still queued never started
    saved = json.loads(out.read_text())
    assert set(saved["tasks"]) == {tasks[0].task_id}
    assert saved["sessions"] == [
        {**saved["sessions"][0], "tasks": 1, "workers": 2, "interrupted": True}
    ]  # the time it ran is kept


def test_ctrl_c_ends_the_process_while_tasks_are_still_in_flight() -> None:
    # Seen: with a thread pool, the interpreter waited at exit for every task in flight (minutes each) after
    # Ctrl-C had saved the results, so only SIGTERM stopped the benchmark.
    import subprocess
    import sys

    script = (
        "import os, signal, threading, time\n"
        "from l2mac.executors.threads import run_in_threads\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
        "threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()\n"
        "run_in_threads(lambda item: time.sleep(600), [1, 2, 3], 2, threading.Event())\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert "KeyboardInterrupt" in done.stderr and done.returncode != 0
