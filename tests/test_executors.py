"""Executors: choosing one, and the benchmark runner's tasks on threads in this process (the Ray executor is
in test_executors_ray.py). The scripted workers here serve the Ray tests too."""

from __future__ import annotations

import asyncio
import hashlib
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from l2mac.benchmarks import humaneval as he
from l2mac.benchmarks.runner import Generation, run_benchmark
from l2mac.benchmarks.scorer import TaskScore
from l2mac.errors import ConfigError
from l2mac.executors import Worker, make_executor
from l2mac.executors.threads import ThreadExecutor
from l2mac.models.client import ModelClient
from l2mac.models.scripted import last_user_text

TASKS = he.load_tasks(he.default_data_path())[:8]


def seeded_answer(seed: int) -> FunctionModel:
    """A scripted model whose answer depends on the prompt and the seed, as a sampling model's does."""

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        prompt = last_user_text(messages)
        name = prompt.split("def ", 1)[1].split("(", 1)[0]
        pick = int(hashlib.sha256(f"{seed}:{prompt}".encode()).hexdigest(), 16) % 3
        return ModelResponse(parts=[TextPart(f"```python\ndef {name}(*args):\n    return {pick}\n```")])

    return FunctionModel(answer, model_name="seeded")


def scripted_worker(seed: int) -> Worker[he.Task, Generation]:
    """A benchmark worker on the scripted model: one call per task, a fresh client each, like ``single``."""

    def generate(task: he.Task) -> Generation:
        return asyncio.run(he.generate_single(ModelClient(seeded_answer(seed)), task))

    return Worker(generate)


def score(solutions: dict[str, str]) -> dict[str, TaskScore]:
    return {tid: TaskScore(base="return 0" in code, plus="return 0" in code) for tid, code in solutions.items()}


def sweep(out: Path, start: Any, executor: Any) -> dict[str, Any]:
    return run_benchmark(
        TASKS,
        strategy="single",
        start=start,
        score=he.as_fields(score),
        summarise=he.summarise,
        unscored=he.UNSCORED,
        out=out,
        meta={"data_md5": he.DATA_MD5},
        say=lambda line: None,
        executor=executor,
    )


def outcomes(data: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    keep = ("solution", "tokens", "requests", "error", "base", "plus")
    return {tid: tuple(t[k] for k in keep) for tid, t in data["tasks"].items()}


def test_an_unknown_executor_or_no_workers_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="--executor must be one of threads, ray"):
        make_executor("dask", 2)
    with pytest.raises(ConfigError, match="workers must be at least 1"):
        make_executor("threads", 0)
    assert make_executor("threads", 1, address="ray://head:10001").describe.startswith("ray (ray://head:10001)")


def test_threads_make_one_worker_state_shared_by_all_and_close_it(tmp_path: Path) -> None:
    made: list[int] = []
    closed: list[bool] = []

    def start() -> Worker[he.Task, Generation]:
        made.append(1)
        inner = scripted_worker(0)
        return Worker(inner.work, lambda: closed.append(True))

    data = sweep(tmp_path / "r.json", start, ThreadExecutor(3))
    assert len(data["tasks"]) == 8 and made == [1] and closed == [True]


def test_nothing_but_the_ray_executor_imports_ray() -> None:
    import subprocess
    import sys

    script = (
        "import sys, pkgutil, importlib, l2mac\n"
        "for m in pkgutil.walk_packages(l2mac.__path__, 'l2mac.'):\n"
        "    if m.name != 'l2mac.executors.on_ray' and not m.name.endswith('_driver'):  # drivers are scripts\n"
        "        importlib.import_module(m.name)\n"
        "print('ray' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


def test_a_set_up_error_records_no_interrupted_session_and_saves_never_overlap(tmp_path: Path) -> None:
    from l2mac.executors.sweep import sweep as run_sweep

    def broken() -> Worker[he.Task, Generation]:
        raise ConfigError("no model file")

    out = tmp_path / "r.json"
    with pytest.raises(ConfigError):
        sweep(out, broken, ThreadExecutor(2))
    assert not out.exists()  # nothing ran: no results file claiming an interrupted session

    saving, overlaps = threading.Lock(), []

    def save() -> None:
        if not saving.acquire(blocking=False):
            overlaps.append(threading.current_thread().name)
            return
        time.sleep(0.3)
        saving.release()

    class Interrupted:
        """An executor whose worker's result arrives while Ctrl-C reaches the caller."""

        workers, describe = 1, "fake"

        def run(self, start: Any, items: Any, done: Any, stopping: Any) -> None:
            worker = start()
            thread = threading.Thread(target=lambda: done(items[0], worker.work(items[0])))
            thread.start()
            time.sleep(0.1)
            try:
                raise KeyboardInterrupt
            finally:
                thread.join()

    data: dict[str, Any] = {}
    with pytest.raises(KeyboardInterrupt):
        run_sweep(TASKS[:1], data, lambda: Worker(lambda t: 1), key=lambda t: t.task_id,
                  entry=lambda t, o: {"x": o.result}, save=save, executor=Interrupted())  # fmt: skip
    assert overlaps == [] and data["sessions"][0]["interrupted"] is True


def test_each_task_is_scored_as_it_comes_so_a_stopped_run_leaves_scores(tmp_path: Path) -> None:
    """Seen: a benchmark run stopped at a session's end held its generations unscored, to be scored by hand
    with --tasks. Each entry is scored when it is saved; a scorer that fails is left to the final pass."""
    calls: list[set[str]] = []
    stop_after = 3
    now = [0.0]  # a task takes a minute, a scoring five seconds

    def counting(solutions: dict[str, str]) -> dict[str, TaskScore]:
        calls.append(set(solutions))
        now[0] += 5
        if len(calls) == 2:
            raise RuntimeError("the scorer's environment is not ready")
        return score(solutions)

    def start() -> Worker[he.Task, Generation]:
        inner, seen = scripted_worker(0), [0]

        def work(task: he.Task) -> Generation:
            seen[0] += 1
            if seen[0] > stop_after:
                raise KeyboardInterrupt
            now[0] += 60
            return inner.work(task)

        return Worker(work)

    out = tmp_path / "r.json"
    kwargs: dict[str, Any] = dict(
        strategy="single", score=he.as_fields(counting), summarise=he.summarise, unscored=he.UNSCORED,
        out=out, meta={"data_md5": he.DATA_MD5}, say=lambda line: None, clock=lambda: now[0],
    )  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        run_benchmark(TASKS, start=start, executor=ThreadExecutor(1), **kwargs)
    saved = json.loads(out.read_text())["tasks"]
    assert len(saved) == stop_after and all(len(c) == 1 for c in calls)  # one task each time, as it came
    unscored = [tid for tid, t in saved.items() if t["base"] is None]
    assert len(unscored) == 1  # the one whose scoring failed
    calls.clear()

    def minute(task: he.Task) -> Generation:
        now[0] += 60
        return scripted_worker(0).work(task)

    data = run_benchmark(TASKS, generate=minute, **kwargs)  # resumed: the rest, then all
    assert set(unscored) < calls[0] and len(calls[0]) == 2 and calls[-1] == {t.task_id for t in TASKS}
    assert all(t["base"] is not None for t in data["tasks"].values())


def test_tasks_that_come_faster_than_they_are_scored_wait_for_the_final_pass(tmp_path: Path) -> None:
    """Seen: scored one by one as they came, 164 instant generations took evalplus 164 calls and CI its
    90 minutes. Scoring as they come takes at most a tenth of the run's time; the rest waits, then is scored."""
    calls: list[set[str]] = []
    now = [0.0]

    def slow(solutions: dict[str, str]) -> dict[str, TaskScore]:
        calls.append(set(solutions))
        now[0] += 10
        return score(solutions)

    def second(task: he.Task) -> Generation:
        now[0] += 1
        return scripted_worker(0).work(task)

    data = run_benchmark(
        TASKS, strategy="single", generate=second, score=he.as_fields(slow), summarise=he.summarise,
        unscored=he.UNSCORED, out=tmp_path / "r.json", meta={"data_md5": he.DATA_MD5}, say=lambda line: None,
        clock=lambda: now[0],
    )  # fmt: skip
    everything = {t.task_id for t in TASKS}
    assert calls[0] == {TASKS[0].task_id} and calls[-1] == everything and len(calls) < len(TASKS)
    assert set().union(*calls[:-1]) < everything  # some waited for the final pass
    assert all(t["base"] is not None for t in data["tasks"].values())


def test_an_error_message_is_printed_as_written_not_read_as_markup(capsys: pytest.CaptureFixture[str]) -> None:
    from l2mac.terminal import make_console, print_error

    print_error(make_console(stderr=True), "the ray executor needs Ray: pip install 'l2mac[ray]'")
    assert "pip install 'l2mac[ray]'" in capsys.readouterr().err
