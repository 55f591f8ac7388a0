"""Tests that write their data files into the project are moved under tmp_path (checks/litter.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from test_text_protocol import fenced, make_unit, run_step

from l2mac.checks.litter import move_under_tmp_path
from l2mac.control import StepLimits
from l2mac.models.scripted import last_user_text, text
from l2mac.types import Instruction, StepStatus

# what the embedded model wrote in a README run: passes once, then fails on the user's second run
DEMO_TESTS = """\
from pathlib import Path
import pytest

from todo.core import Todo, load_todos, save_todos

def test_load_todos():
    path = Path('todos.json')
    assert load_todos(path) == []

def test_save_todos():
    path = Path('todos.json')
    todos = [Todo("Task 1", False)]
    save_todos(path, todos)
    assert load_todos(path) == todos
"""

CORE = """\
import json
from dataclasses import asdict, dataclass
from pathlib import Path


@dataclass
class Todo:
    task: str
    done: bool


def load_todos(path: Path) -> list[Todo]:
    if not path.exists():
        return []
    return [Todo(**d) for d in json.loads(path.read_text())]


def save_todos(path: Path, todos: list[Todo]) -> None:
    path.write_text(json.dumps([asdict(t) for t in todos]))
"""


def test_the_demos_tests_write_under_tmp_path() -> None:
    fixed, changed = move_under_tmp_path(DEMO_TESTS, ["todos.json"])
    assert changed == ["test_load_todos", "test_save_todos"]
    assert "def test_load_todos(tmp_path):\n    path = tmp_path / 'todos.json'" in fixed
    assert "Path('todos.json')" not in fixed


def test_fixtures_methods_open_and_arguments_are_moved_but_comparisons_are_not() -> None:
    source = (
        "import pytest\nfrom pathlib import Path\nfrom app import main\n\n"
        "@pytest.fixture\ndef store():\n    return Path('./data.db')\n\n"
        "class TestApp:\n    def test_a(self):\n        assert main(['--file', 'todos.json']) == 0\n"
        "        assert 'todos.json' in open('todos.json').read()\n\n"
        "def test_b(capsys):\n    with open('todos.json', 'w') as f:\n        f.write('x')\n"
    )
    fixed, changed = move_under_tmp_path(source, ["todos.json", "data.db"])
    assert changed == ["store", "test_a", "test_b"]
    assert "def store(tmp_path):\n    return tmp_path / 'data.db'" in fixed
    assert "def test_a(self, tmp_path):" in fixed
    assert "main(['--file', str(tmp_path / 'todos.json')])" in fixed
    assert "assert 'todos.json' in open(str(tmp_path / 'todos.json'))" in fixed  # the message check is kept
    assert "def test_b(tmp_path, capsys):" in fixed


def test_names_the_tests_did_not_leave_and_unusual_signatures_are_left_alone() -> None:
    source = "def test_a(*args):\n    open('todos.json', 'w')\n\n\ndef test_b():\n    open('other.json', 'w')\n"
    assert move_under_tmp_path(source, ["todos.json"]) == (source, [])
    assert move_under_tmp_path("def test_a(:\n", ["todos.json"]) == ("def test_a(:\n", [])


STORE_STEP = Instruction(
    title="Todo storage",
    instruction="Write todo/core.py with Todo, load_todos and save_todos, and tests/test_core.py.",
    requires_tests=True,
)


def _second_pytest_run(root: Path) -> subprocess.CompletedProcess[str]:
    for _ in range(2):  # as a user would run them: the second run finds what the first left
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=120,
        )
    return done


def test_a_steps_tests_that_leave_a_file_are_repaired_so_a_second_run_passes(tmp_path: Path) -> None:
    answer = fenced(("todo/__init__.py", ""), ("todo/core.py", CORE), ("tests/test_core.py", DEMO_TESTS))
    unit, _, store = make_unit(tmp_path, [text(answer), text("STEP COMPLETE: storage and its tests.")])
    outcome = run_step(unit, STORE_STEP)
    assert outcome.status is StepStatus.PASSED
    assert "tmp_path / 'todos.json'" in store.read_text("tests/test_core.py")
    assert not (store.root / "todos.json").exists()
    assert _second_pytest_run(store.root).returncode == 0


def test_without_recoveries_the_same_tests_pass_once_and_fail_the_users_second_run(tmp_path: Path) -> None:
    answer = fenced(("todo/__init__.py", ""), ("todo/core.py", CORE), ("tests/test_core.py", DEMO_TESTS))
    unit, _, store = make_unit(tmp_path, [text(answer), text("STEP COMPLETE: storage and its tests.")], recover=False)
    assert run_step(unit, STORE_STEP).status is StepStatus.PASSED
    assert store.read_text("tests/test_core.py") == DEMO_TESTS
    second = _second_pytest_run(store.root)
    assert second.returncode == 1 and "test_load_todos" in second.stdout


HARD_CODED = CORE + (
    "\n\ndef add_todo(todos: list[Todo], todo: Todo) -> list[Todo]:\n"
    "    todos.append(todo)\n    save_todos(Path('todos.json'), todos)\n    return todos\n"
)
PERSISTENCE_TEST = (
    "from todo.core import Todo, add_todo, load_todos\n\n\n"
    "def test_add_todo_saves(tmp_path):\n"
    "    add_todo([], Todo('milk', False))\n"
    "    assert load_todos(tmp_path / 'todos.json') == [Todo('milk', False)]\n"
)


def test_code_that_writes_the_file_itself_is_named_and_the_tests_are_not_blamed(tmp_path: Path) -> None:
    from l2mac.checks.litter import hard_coded

    assert hard_coded({"todo/core.py": HARD_CODED, "tests/test_core.py": DEMO_TESTS}, ["todos.json"]) == [
        ("todo/core.py", 24, "todos.json")
    ]
    cli = 'import argparse\n\nargparse.ArgumentParser().add_argument("--file", default="todos.json")\n'
    assert hard_coded({"todo/cli.py": cli}, ["todos.json"]) == []  # a default the tests can override

    seen: list[str] = []

    def look(messages: list) -> object:
        seen.append(last_user_text(messages))
        return text("STEP COMPLETE")

    answer = fenced(("todo/__init__.py", ""), ("todo/core.py", HARD_CODED), ("tests/test_core.py", PERSISTENCE_TEST))
    unit, _, store = make_unit(
        tmp_path, [text(answer), look, text("core.py and its test.")], limits=StepLimits(max_turns=2, samples=0)
    )
    run_step(unit, STORE_STEP)
    assert "todo/core.py itself writes todos.json (line 24)" in seen[0]
    assert "The tests wrote" not in seen[0]
    assert store.read_text("tests/test_core.py") == PERSISTENCE_TEST  # nothing in the tests to move
