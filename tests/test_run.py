"""Whole runs against scripted models: plan → steps → tools → checks → report, as a user would see them."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse

from l2mac.models.scripted import call, last_tool_return, text

from conftest import run_scripted

STORE_BUGGY = """import json
from pathlib import Path


class TodoStore:
    def __init__(self, path):
        self.path = Path(path)

    def load(self):
        if not self.path.exists():
            return []
        return json.loads(self.path.read_text())

    def add(self, title):
        items = self.load()
        items.append({"title": title, "done": False})
        self.path.write_text(json.dumps(items))
        return len(items) + 1
"""

STORE_TESTS = """from todo.store import TodoStore


def test_add_returns_id(tmp_path):
    store = TodoStore(tmp_path / "todo.json")
    assert store.add("milk") == 1
    assert store.add("eggs") == 2


def test_load_empty(tmp_path):
    assert TodoStore(tmp_path / "none.json").load() == []
"""

CLI = """import sys

from todo.store import TodoStore


def main(argv, path="todo.json"):
    store = TodoStore(path)
    if argv and argv[0] == "add":
        return f"added {store.add(' '.join(argv[1:]))}"
    return "\\n".join(item["title"] for item in store.load())


if __name__ == "__main__":
    print(main(sys.argv[1:]))
"""

CLI_TESTS = """from todo.cli import main


def test_add_and_list(tmp_path):
    path = tmp_path / "t.json"
    assert main(["add", "milk"], path) == "added 1"
    assert main([], path) == "milk"
"""

PLAN = {
    "steps": [
        {
            "title": "Todo store",
            "instruction": "Write todo/store.py with TodoStore(path): load() and add(title) "
            "returning the new item's 1-based id; tests in tests/test_store.py.",
            "requires_tests": True,
        },
        {
            "title": "Command line",
            "instruction": "Write todo/cli.py with main(argv, path) for add and list; tests in tests/test_cli.py.",
            "requires_tests": True,
        },
    ]
}


def fix_after_failure(messages: list[ModelMessage]) -> ModelResponse:
    """Plays a model that reads the failing test output it was shown and fixes the off-by-one."""
    shown = last_tool_return(messages)
    assert "checks failed" in shown and "test_add_returns_id" in shown, shown
    return call(
        "edit_file", {"path": "todo/store.py", "old_text": "return len(items) + 1", "new_text": "return len(items)"}
    )


def test_full_run_plans_builds_meets_failing_test_fixes_it_and_reports(tmp_path: Path) -> None:
    replies = [
        call("submit_plan", PLAN),
        # step 1: write a buggy store and its tests, try to finish, get the failing test back, fix it
        call(
            "write_files",
            {
                "files": [
                    {"path": "todo/__init__.py", "content": ""},
                    {"path": "todo/store.py", "content": STORE_BUGGY},
                    {"path": "tests/test_store.py", "content": STORE_TESTS},
                ]
            },
        ),
        call("step_complete", {"summary": "store written"}),
        fix_after_failure,
        call("run_tests", {}),
        call("step_complete", {"summary": "todo/store.py: TodoStore(path).load(), .add(title) -> id"}),
        # step 2: the CLI, which passes first time
        call(
            "write_files",
            {"files": [{"path": "todo/cli.py", "content": CLI}, {"path": "tests/test_cli.py", "content": CLI_TESTS}]},
        ),
        call("step_complete", {"summary": "todo/cli.py: main(argv, path)"}),
    ]
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
    assert report["status"] == "passed"
    assert report["tests"] == {"status": "passed", "passed": 3, "failed": 0, "errors": 0}
    assert report["steps"]["passed"] == 2 and report["steps"]["failed"] == 0
    assert report["files"] == 5 and report["loc"] > 30
    assert report["syntax_errors"] == report["lint_errors"] == report["import_errors"] == 0
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
        text("The step could not be finished: test_never fails."),  # the failed step's summary
        # step 2 also meets the failing tests (they run whenever tests exist) → fixes them
        call("write_files", {"files": [{"path": "tests/test_x.py", "content": "def test_ok():\n    pass\n"}]}),
        call("step_complete", {"summary": "fixed"}),
    ]
    result, _ = run_scripted(tmp_path, replies, max_check_failures=1)
    assert [o.status.value for o in result.outcomes] == ["failed", "passed"]
    assert "checks still failing" in result.outcomes[0].reason
    assert "did not pass" in result.outcomes[1].summary or result.outcomes[0].summary.startswith("(The previous")
    assert result.report["status"] == "failed"
    assert result.report["steps"]["failed"] == 1


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
    assert result.report["tests"]["status"] == "not_run"
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
    result, script = run_scripted(tmp_path, replies, max_tokens=1500)
    assert result.report["status"] == "stopped"
    assert "token budget" in result.report["stopped_reason"]
    assert (result.workspace / "a.py").exists()
    assert script.remaining > 0  # it stopped early, not at the end of the script
    assert result.report["tokens"]["total"] >= 1500


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
