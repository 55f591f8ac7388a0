"""A realistic scripted run shared by tests: plan two steps, write a buggy store, meet its failing test, fix it,
write a CLI. Plain functions, so a child process (the kill -9 test) can play it too."""

from __future__ import annotations

from pydantic_ai.messages import ModelMessage, ModelResponse

from l2mac.models.scripted import Reply, call, last_tool_return

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


def full_run_replies() -> list[Reply]:
    """The model's side of the whole run, in order (8 calls)."""
    return [
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
