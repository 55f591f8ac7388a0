"""Whole runs against scripted models: plan → steps → tools → checks → report, as a user would see them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from scenario import full_run_replies

from l2mac.models.scripted import call, last_tool_return
from l2mac.report import RunReport

from conftest import run_scripted


def test_full_run_plans_builds_meets_failing_test_fixes_it_and_reports(tmp_path: Path) -> None:
    replies = full_run_replies()
    result, script = run_scripted(tmp_path, replies)

    assert script.remaining == 0
    assert result.ok, result.report
    assert set(result.files) == {
        "todo/__init__.py",
        "todo/store.py",
        "todo/cli.py",
        "tests/test_store.py",
        "tests/test_cli.py",
    }
    assert "return len(items)\n" in result.files["todo/store.py"]
    # the step had to meet its failing test before it could pass
    assert [o.check_failures for o in result.outcomes] == [1, 0]
    assert [o.status.value for o in result.outcomes] == ["passed", "passed"]
    # the second step's fresh context carried the first step's summary, and only that
    step2_prompt = script.requests[6][0].parts[1].content
    assert "TodoStore(path).load()" in step2_prompt and "STORE_BUGGY" not in step2_prompt
    assert len(script.requests[6]) == 1  # a fresh context: one request, no history

    report = json.loads((result.workspace / ".l2mac" / "run_report.json").read_text())
    assert RunReport.model_validate(report) == result.report  # the file is the typed report, whole
    assert report["status"] == "passed"
    assert report["tests"] == {"status": "passed", "passed": 3, "failed": 0, "errors": 0, "left_files": []}
    assert report["steps"]["passed"] == 2 and report["steps"]["failed"] == 0
    assert report["files"] == 5 and report["loc"] > 30
    assert report["syntax_errors"] == report["lint_errors"] == report["import_errors"] == report["type_errors"] == 0
    assert report["tokens"]["total"] > 0 and report["requests"] == 8
    assert report["cost_usd"] is None and report["unpriced_requests"] == 8  # a scripted model has no price
    assert report["wall_time_s"] > 0

    log = subprocess.run(["git", "log", "--format=%s"], cwd=result.workspace, capture_output=True, text=True)
    assert log.stdout.splitlines() == ["step 2/2: Command line [passed]", "step 1/2: Todo store [passed]"]
    lines = (result.workspace / ".l2mac" / "log.jsonl").read_text().splitlines()
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds.count("model_call") == 8 and "tool_call" in kinds and "checks" in kinds
    assert (result.workspace / ".l2mac" / "prompt_program.yaml").exists()
    assert len((result.workspace / ".l2mac" / "steps.jsonl").read_text().splitlines()) == 2


def test_step_that_never_passes_is_recorded_failed_and_run_continues(tmp_path: Path) -> None:
    failing_test = "def test_never():\n    assert 1 == 2\n"
    replies = [
        call(
            "submit_plan",
            {
                "steps": [
                    {"title": "Broken", "instruction": "x"},
                    {"title": "Docs", "instruction": "y", "requires_tests": False},
                ]
            },
        ),
        call("write_files", {"files": [{"path": "tests/test_x.py", "content": failing_test}]}),
        call("step_complete", {"summary": "done"}),
        call("step_complete", {"summary": "done, really"}),
        # step 2 also meets the failing tests (they run whenever tests exist) → fixes them
        call("write_files", {"files": [{"path": "tests/test_x.py", "content": "def test_ok():\n    pass\n"}]}),
        call("step_complete", {"summary": "fixed"}),
    ]
    result, _ = run_scripted(tmp_path, replies, max_check_failures=1)
    assert [o.status.value for o in result.outcomes] == ["failed", "passed"]
    assert "checks still failing" in result.outcomes[0].reason
    assert "did not pass" in result.outcomes[1].summary or result.outcomes[0].summary.startswith("(The previous")
    assert result.report.status == "failed"
    assert result.report.steps.failed == 1


def test_book_domain_writes_chapters_without_code_checks(tmp_path: Path) -> None:
    replies = [
        call(
            "submit_plan",
            {
                "steps": [
                    {"title": "Outline", "instruction": "Write outline.md", "requires_tests": True},
                    {"title": "Chapter 1", "instruction": "Write chapters/01-dough.md"},
                ]
            },
        ),
        call("write_files", {"files": [{"path": "outline.md", "content": "# Twirls\n1. Dough"}]}),
        call("step_complete", {"summary": "outline"}),
        call("view_files", {"files": [{"path": "outline.md"}]}),
        call("write_files", {"files": [{"path": "chapters/01-dough.md", "content": "# Dough\nFlour and eggs."}]}),
        call("step_complete", {"summary": "chapter 1"}),
    ]
    result, script = run_scripted(tmp_path, replies, task="Write a pasta book", domain="book")
    assert result.ok
    assert set(result.files) == {"outline.md", "chapters/01-dough.md"}
    assert "run_tests" not in script.tool_names[1] and "run_python" not in script.tool_names[1]
    assert result.report.tests.status == "not_run"
    assert "author" in script.requests[1][0].parts[0].content  # the book prompt set, not the code one


def test_user_prompt_program_skips_planning(tmp_path: Path) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text(
        "steps:\n  - title: Hello\n    instruction: write hello.py printing hi\n    requires_tests: false\n"
    )
    replies = [
        call("write_files", {"files": [{"path": "hello.py", "content": "print('hi')\n"}]}),
        call("run_python", {"path": "hello.py"}),
        call("step_complete", {"summary": "hello.py prints hi"}),
    ]
    result, script = run_scripted(tmp_path, replies, prompt_program=plan)
    assert result.ok
    assert "submit_plan" not in script.tool_names[0]
    assert "write hello.py printing hi" in script.requests[0][0].parts[1].content
    assert "hi" in last_tool_return(script.requests[2])


def test_token_budget_stops_the_run_cleanly_with_work_saved(tmp_path: Path) -> None:
    replies = [
        call(
            "submit_plan",
            {
                "steps": [
                    {"title": "A", "instruction": "a", "requires_tests": False},
                    {"title": "B", "instruction": "b", "requires_tests": False},
                ]
            },
        ),
        call("write_files", {"files": [{"path": "a.py", "content": "A = 1\n" * 400}]}),
    ] + [call("list_files", {}) for _ in range(10)]
    result, script = run_scripted(tmp_path, replies, max_tokens=7000)  # each call reserves 4,096 of answer
    assert result.report.status == "stopped"
    assert "token budget" in result.report.stopped_reason
    assert (result.workspace / "a.py").exists()
    assert script.remaining > 0  # it stopped early, not at the end of the script
    assert 0 < result.report.tokens.total <= 7000  # the budget binds: never crossed


def test_existing_project_folder_is_never_overwritten(tmp_path: Path) -> None:
    existing = tmp_path / "ws" / "proj"
    existing.mkdir(parents=True)
    (existing / "keep.txt").write_text("mine")
    replies = [
        call("submit_plan", {"steps": [{"title": "A", "instruction": "a", "requires_tests": False}]}),
        call("step_complete", {"summary": "nothing to do"}),
    ]
    result, _ = run_scripted(tmp_path, replies)
    assert result.workspace.name == "proj-2"
    assert (existing / "keep.txt").read_text() == "mine"


def test_an_in_process_model_is_freed_when_its_run_ends_even_on_ctrl_c(tmp_path: Path, monkeypatch) -> None:
    import pytest

    import l2mac.run
    from l2mac.models.registry import ModelInfo
    from l2mac.models.scripted import ScriptedModel
    from l2mac.run import run_l2mac

    from conftest import make_settings

    closed: list[str] = []

    def interrupt(_messages):
        raise KeyboardInterrupt

    for name, replies in (("ok", full_run_replies()), ("interrupted", [interrupt])):
        script = ScriptedModel(list(replies))
        info = ModelInfo(script.model, "local", "fake", 16000, close=lambda n=name: closed.append(n))
        monkeypatch.setattr(l2mac.run, "build_model", lambda llm, info=info: info)
        settings = make_settings(tmp_path / name, llm={"model": "local:fake"}, protocol="tools")
        if name == "ok":
            assert run_l2mac("Build a todo app", settings).ok
        else:
            with pytest.raises(KeyboardInterrupt):
                run_l2mac("Build a todo app", settings)
    assert closed == ["ok", "interrupted"]
