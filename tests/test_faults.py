"""Provider faults, injected by a fake OpenAI-compatible server on loopback: every run completes, correctly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai import Answer, serve

from l2mac.benchmarks.runner import engine_generation
from l2mac.errors import ProviderError
from l2mac.run import run_l2mac

from conftest import make_settings

CALC = "def add(a, b):\n    return a + b\n"
CALC_TESTS = "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
PLAN = {"steps": [{"title": "Calc", "instruction": "Write calc.py with add(a, b), tests in tests/test_calc.py."}]}
WRITE = {"files": [{"path": "calc.py", "content": CALC}, {"path": "tests/test_calc.py", "content": CALC_TESTS}]}


def tool(name: str, args: dict[str, Any] | str, **kw: Any) -> Answer:
    return Answer(tool_calls=[(name, args if isinstance(args, str) else json.dumps(args))], **kw)


def run_against(tmp_path: Path, script: list[Answer | str]) -> tuple[Any, Any]:
    with serve(script) as (fake, url):
        settings = make_settings(
            tmp_path,
            llm={
                "model": "openai-compatible:fake-model",
                "base_url": url,
                "api_key": "sk-FAKE-KEY",
                "timeout_s": 1.0,
                "retry_base_delay_s": 0.05,
            },
        )
        result = run_l2mac("a calculator with tests", settings)
    return result, fake


def last_message(body: dict[str, Any]) -> str:
    return str(body["messages"][-1].get("content"))


def test_every_provider_fault_is_retried_or_answered_and_the_run_completes(tmp_path: Path) -> None:
    cut_off = json.dumps(WRITE)[:60]
    script: list[Answer | str] = [
        "429",  # rate limited: retried after the server's Retry-After
        tool("submit_plan", PLAN),
        "500",  # server errors, a dropped connection and a timeout: retried with backoff
        "drop",
        "timeout",
        "503",
        tool("write_files", cut_off, finish_reason="length"),  # cut off by the length limit: answered
        Answer(),  # an empty answer: answered
        tool("write_files", "{not json"),  # invalid tool-argument JSON: answered
        tool("write_files", WRITE),
        tool("step_complete", {"summary": "calc.py: add(a, b), tested"}),
    ]
    result, fake = run_against(tmp_path, script)

    assert not fake.script, "every scripted answer and fault was used"
    assert result.ok, result.report
    assert result.files["calc.py"] == CALC and result.report.tests.passed == 1
    served = fake.served
    whats = [s.what for s in served]
    assert whats[:6] == ["429", "answer", "500", "drop", "timeout", "503"]
    assert served[1].at - served[0].at >= 0.95  # Retry-After: 1 was honoured
    # the same request was sent again after each transient fault
    assert served[2].body["messages"] == served[6].body["messages"]
    # the cut-off, empty and malformed answers were each answered with what went wrong
    assert "cut off" in last_message(served[7].body)
    assert "without calling a tool" in last_message(served[8].body) or "empty" in last_message(served[8].body)
    assert "not valid JSON" in last_message(served[9].body) or "JSON" in last_message(served[9].body)
    # the key reached the server, and nowhere else: not the logs, the journal, the report or the project
    assert {k.lower(): v for k, v in served[1].headers.items()}["authorization"] == "Bearer sk-FAKE-KEY"
    leaks = [p for p in result.workspace.rglob("*") if p.is_file() and b"sk-FAKE-KEY" in p.read_bytes()]
    assert leaks == []
    log = [json.loads(line) for line in (result.workspace / ".l2mac" / "log.jsonl").read_text().splitlines()]
    assert [e["retries"] for e in log if e["kind"] == "model_call"][:2] == [1, 4]


def test_retries_give_up_with_a_clear_stop_and_the_work_is_kept(tmp_path: Path) -> None:
    script: list[Answer | str] = [tool("submit_plan", PLAN), tool("write_files", WRITE), *["503"] * 6]
    result, _ = run_against(tmp_path, script)
    assert result.report.status == "stopped" and result.report.stopped_by == "provider"
    assert "after 6 attempts" in result.report.stopped_reason and "l2mac resume" in result.report.stopped_reason
    assert result.files["calc.py"] == CALC


def test_a_benchmark_task_whose_run_the_provider_stopped_is_a_provider_failure_not_a_solution(tmp_path: Path) -> None:
    """The benchmark sweep makes such a task again (see test_bench_humaneval): what the run wrote before the
    provider failed is not the task's score."""
    script: list[Answer | str] = [tool("submit_plan", PLAN), tool("write_files", WRITE), *["503"] * 6]
    with serve(script) as (_, url):
        llm = {"model": "openai-compatible:fake-model", "base_url": url, "api_key": "sk-FAKE-KEY", "timeout_s": 1.0}
        settings = make_settings(tmp_path, llm={**llm, "retry_base_delay_s": 0.05})
        with pytest.raises(ProviderError, match="after 6 attempts"):
            engine_generation(
                "a calculator", "calc", settings, None, tmp_path / "ws", defines=lambda t: "def add" in t,
                what="add", solution=str,
            )  # fmt: skip
