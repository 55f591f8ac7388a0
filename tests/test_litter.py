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

    # a signature l2mac does not add a parameter to (it takes *args): the code is named, the tests not blamed
    starred = HARD_CODED.replace("def add_todo(todos: list[Todo], todo: Todo)", "def add_todo(todos, *more)")
    starred = starred.replace("todos.append(todo)", "todos.extend(more)")
    answer = fenced(("todo/__init__.py", ""), ("todo/core.py", starred), ("tests/test_core.py", PERSISTENCE_TEST))
    unit, _, store = make_unit(
        tmp_path, [text(answer), look, text("core.py and its test.")], limits=StepLimits(max_turns=2, samples=0)
    )
    run_step(unit, STORE_STEP)
    assert "todo/core.py itself writes todos.json (line 24)" in seen[0]
    assert "The tests wrote" not in seen[0]
    assert store.read_text("tests/test_core.py") == PERSISTENCE_TEST  # nothing in the tests to move


DATABASE = """\
import sqlite3


class Database:
    def __init__(self):
        self.connection = sqlite3.connect("shop.db")

    def add(self, item):
        self.connection.execute("CREATE TABLE IF NOT EXISTS items (name TEXT)")
        self.connection.execute("INSERT INTO items VALUES (?)", (item,))
        self.connection.commit()

    def count(self):
        return self.connection.execute("SELECT COUNT(*) FROM items").fetchone()[0]
"""
DATABASE_TESTS = """\
from shop.db import Database


def test_add():
    db = Database()
    db.add("milk")
    assert db.count() == 1


def test_empty_at_first():
    db = Database()
    db.add("tea")
    assert db.count() == 1
"""


def test_a_file_name_the_code_writes_becomes_a_parameter_and_the_tests_pass_a_file_under_tmp_path(
    tmp_path: Path,
) -> None:
    """Seen on the URL shortener at 5c074b4: ``Database.connect()`` opened ``sqlite3.connect('url_shortener.db')``;
    told four times that the code itself wrote that file, the 1.5B model never gave it a path, and the tests
    shared one database (here the second test would see the first one's row)."""
    step = Instruction(title="db", instruction="Write shop/db.py with a class Database, and tests/test_db.py.")
    answer = fenced(("shop/__init__.py", ""), ("shop/db.py", DATABASE), ("tests/test_db.py", DATABASE_TESTS))
    unit, _, store = make_unit(
        tmp_path,
        [text(answer), text("STEP COMPLETE"), text("db.py and its tests.")],
        limits=StepLimits(max_turns=2, samples=0),
    )
    outcome = run_step(unit, step)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    code = store.read_text("shop/db.py")
    assert "def __init__(self, db_path='shop.db'):\n        self.connection = sqlite3.connect(db_path)" in code
    tests = store.read_text("tests/test_db.py")
    assert tests.count("Database(db_path=str(tmp_path / 'shop.db'))") == 2 and "def test_add(tmp_path):" in tests
    assert not store.exists("shop.db")


def test_a_path_parameter_is_kept_by_init_for_the_method_that_uses_it_and_callers_giving_it_are_left() -> None:
    from l2mac.checks.litter import pass_tmp_path, path_parameter

    source = 'class Store:\n    """Keeps notes."""\n\n'
    source += '    def __init__(self, name):\n        """Make it."""\n        self.name = name\n\n'
    source += '    def save(self):\n        open("notes.txt", "w").write(self.name)\n'
    made = path_parameter(source, 9, "notes.txt")
    assert made is not None
    fixed, owner, parameter, before = made
    assert (owner, parameter, before) == ("Store", "data_path", 1)
    assert (
        "def __init__(self, name, data_path='notes.txt'):\n"
        '        """Make it."""\n        self.data_path = data_path\n' in fixed
    )
    assert 'open(self.data_path, "w")' in fixed
    tests = "def test_a():\n    Store('x').save()\n\n\ndef test_b(tmp_path):\n    Store('y', tmp_path / 'n').save()\n"
    moved, changed = pass_tmp_path(tests, owner, parameter, "notes.txt", before)
    assert changed == ["test_a"]
    assert "def test_a(tmp_path):\n    Store('x', data_path=str(tmp_path / 'notes.txt')).save()" in moved
    assert path_parameter(source, 3, "notes.txt") is None  # no such literal on that line
    # a second method writing the same file uses the parameter the first one's repair gave __init__
    twice = fixed + '\n    def load(self):\n        return open("notes.txt").read()\n'
    line = twice.splitlines().index('        return open("notes.txt").read()') + 1
    again = path_parameter(twice, line, "notes.txt")
    assert again is not None and again[1:] == ("Store", "data_path", 1)
    assert "return open(self.data_path).read()" in again[0] and again[0].count("data_path='notes.txt'") == 1
    static = source.replace("    def save(self):", "    @staticmethod\n    def save():")
    assert path_parameter(static, 10, "notes.txt") is None  # no self to keep it on
