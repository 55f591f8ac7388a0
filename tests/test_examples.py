"""The examples a task gives in its docstrings, run as a check the model cannot edit."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from pydantic_ai.messages import ModelMessage
from test_text_protocol import fenced, make_unit, run_step

from l2mac.checks.contract import given_heads
from l2mac.checks.examples import given_examples, run_examples, stated_examples
from l2mac.checks.runner import SubprocessRunner
from l2mac.control import Step
from l2mac.models.scripted import last_user_text, text
from l2mac.store import FileStore
from l2mac.types import Instruction, StepStatus

TASK_CODE = '''import math


def double(x):
    """Twice x.

    >>> double(2)
    4
    >>> double(-1.5)
    -3.0
    """


class Circle:
    """A circle."""

    def __init__(self, r):
        self.r = r

    def area(self):
        """Its area.

        >>> c = Circle(1)
        >>> round(c.area(), 4)
        3.1416
        """

    def scaled(self, k):
        """A circle k times as large.

        >>> c.scaled(2).r
        2
        """
'''
INSTRUCTION = f"Write geometry.py with these, and tests/test_geometry.py.\n\n```python\n{TASK_CODE}```\n"
RIGHT = (
    "import math\n\n\ndef double(x):\n    return 2 * x\n\n\nclass Circle:\n    def __init__(self, r):\n"
    "        self.r = r\n\n    def area(self):\n        return math.pi * self.r**2\n\n"
    "    def scaled(self, k):\n        return Circle(self.r * k)\n"
)


def test_the_examples_of_each_docstring_are_read_when_they_stand_on_their_own() -> None:
    found = {e.name: e.owner for e in given_examples(INSTRUCTION)}
    # scaled()'s example uses c, made in another docstring: left out
    assert found == {"double": "double", "Circle.area": "Circle"}
    assert given_examples("Write a function that doubles x, e.g. double(2) == 4.") == []
    assert given_examples("notes.txt\n```python\ndef f():\n    '''>>> f()\n    1\n    '''\n```\n") == []


def test_examples_run_against_the_project_module_that_defines_them(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    examples = given_examples(INSTRUCTION)

    def run() -> object:
        return run_examples(examples, store, SubprocessRunner(), sys.executable, 60)

    store.write_text("geometry.py", TASK_CODE)
    assert run() is None  # every function is still a stub: a later answer's
    store.write_text("geometry.py", RIGHT)
    result = run()
    assert result is not None and (result.tried, result.failed) == (2, ())
    store.write_text("geometry.py", RIGHT.replace("2 * x", "x + 2"))
    result = run()
    assert result is not None and [name for name, _ in result.failed] == ["double"]
    report = result.failures()
    assert report.startswith("double:") and "double(-1.5)" in report and "Expected:\n    -3.0\nGot:\n    0.5" in report
    store.write_text("geometry.py", RIGHT.replace("return 2 * x", "raise ValueError('no doubles here')"))
    result = run()
    assert result is not None
    raised = result.failures()  # doctest's own frames left out: the example, and where the project raised
    assert "double(2)" in raised and "geometry.py" in raised and "ValueError: no doubles here" in raised
    assert "doctest.py" not in raised and "exec(compile" not in raised
    store.write_text("geometry.py", RIGHT + "\nraise SystemExit(3)\n")
    result = run()
    assert result is not None and len(result.failed) == 2 and "SystemExit" in result.failures()
    store.write_text("geometry.py", RIGHT + "\nwhile True:\n    pass\n")
    result = run_examples(examples, store, SubprocessRunner(), sys.executable, 3)
    assert result is not None and len(result.failed) == 2 and "timed out" in result.failures()  # all of them


def test_a_step_whose_own_tests_pass_does_not_pass_while_the_tasks_examples_fail(tmp_path: Path) -> None:
    wrong = RIGHT.replace("2 * x", "3 * x")
    bent = "from geometry import double\n\n\ndef test_double():\n    assert double(2) == 6\n"
    right_tests = "from geometry import Circle, double\n\n\ndef test_double():\n    assert double(2) == 4\n\n\n"
    right_tests += "def test_area():\n    assert Circle(2).scaled(3).r == 6\n"

    def fix(messages: list[ModelMessage]):
        told = last_user_text(messages)
        assert "Examples the task gives, 1 of 2 failing" in told and "Expected:\n    4\nGot:\n    6" in told
        return text(fenced(("geometry.py", RIGHT), ("tests/test_geometry.py", right_tests)))

    replies = [
        text(fenced(("geometry.py", wrong), ("tests/test_geometry.py", bent)) + "\nSTEP COMPLETE: geometry."),
        fix,
        text("STEP COMPLETE\ngeometry.py has double and Circle."),
    ]
    unit, _, store = make_unit(tmp_path, replies)
    outcome = run_step(unit, Instruction(title="Geometry", instruction=INSTRUCTION, requires_tests=True))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("geometry.py") == given_heads(RIGHT, TASK_CODE)[0]  # with the task's docstrings


def test_examples_a_task_states_in_its_prose_are_read_one_doctest_per_function() -> None:
    task = (
        "Add slug(title) that makes a URL slug, e.g. slug('Hello World') == 'hello-world' and\n"
        "`slug(' A  b ') == 'a-b'`; pair(1, k='a,b') == [2, (1, 'a,b')]; count(xs) == 2.\n"
        "len('ab') == 2 is Python's.\nobj.size(1) == 2 is a method of something made elsewhere.\n"
        "area(2) == 12.57 is a rounded figure.\ntally('a') == {'a': 1} compares by ==; f(x) == 3 takes a name.\n"
        "g(1) ==> 2 is not Python.\n"
        # what is no example: a bug report, a negation, a condition, an expression, a call of nothing
        "Currently `plural('octopus') == 'octopuss'`, which is wrong.\nAnd never add(1, 2) == 4.\n"
        "join('a', 'b') == 'a' + 'b'\nexit(0 if main() == 0 else 1)\n"
    )
    found = {e.name: e.text for e in stated_examples(task)}
    assert found == {
        "slug": ">>> slug('Hello World')\n'hello-world'\n>>> slug(' A  b ')\n'a-b'",
        "pair": ">>> pair(1, k='a,b') == [2, (1, 'a,b')]\nTrue",  # numbers compare by ==: 2 == 2.0
        "tally": ">>> tally('a') == {'a': 1}\nTrue",
    }  # not count(xs) nor f(x): their arguments are names
    assert [e.name for e in stated_examples("assert add(1, 2) == 3")] == ["add"]
    assert [e.text for e in stated_examples("Sum: e.g. total([1, 6]) == 7.")] == [">>> total([1, 6]) == 7\nTrue"]
    # a negation in the clause before the example is not the example's (seen on a change to python-slugify)
    change = "with -2 appended until the slug is not in the set taken, e.g. unique('Hi', {'hi'}) == 'hi-2' and"
    assert [e.text for e in stated_examples(change)] == [">>> unique('Hi', {'hi'})\n'hi-2'"]
    for bug in ("Currently, add(2, 2) == 5.", "Bug: add(2, 2) == 5.", "Incorrect: slug('A B') == 'A B'"):
        assert stated_examples(bug) == [], bug  # a review's cases: the negation is the example's own


def test_a_tasks_stated_example_holds_a_step_whose_instruction_dropped_it(tmp_path: Path) -> None:
    """A small model's plan often drops the task's examples from the step that needs them: the task's own are
    checked too, and the model is shown what its code returned."""
    task = "Add slug(title) to text.py, e.g. slug('Hello World') == 'hello-world', with pytest tests."
    wrong = "def slug(title):\n    return title.lower()\n"
    right = "def slug(title):\n    return '-'.join(title.lower().split())\n"
    tests = "from text import slug\n\n\ndef test_slug():\n    assert slug('a') == 'a'\n"

    def fix(messages: list[ModelMessage]):
        told = last_user_text(messages)
        assert "slug('Hello World')" in told and "Expected:\n    'hello-world'\nGot:\n    'hello world'" in told
        return text(fenced(("text.py", right)))

    replies = [
        text(fenced(("text.py", wrong), ("tests/test_text.py", tests)) + "\nSTEP COMPLETE"),
        fix,
        text("STEP COMPLETE\ntext.py has slug."),
    ]
    unit, _, store = make_unit(tmp_path, replies)
    step = Instruction(title="Slug", instruction="Write slug(title) in text.py, tested in tests/test_text.py.")
    outcome = asyncio.run(unit.run_step(Step(task, 1, 1, step, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("text.py") == right


def test_an_example_whose_expected_literal_no_code_can_print_is_skipped_and_the_rest_hold(tmp_path: Path) -> None:
    # Seen on ClassEval: `{'user': {'name': 'user1'}` (a brace missing) held a step through every attempt
    code = (
        "def user(request):\n"
        '    """The request\'s user.\n\n'
        "    >>> user({'user': {'name': 'u1'}})\n"
        "    {'user': {'name': 'u1'}\n"
        "    >>> user({'user': 3})['user']\n"
        "    3\n"
        '    """\n'
        "    return request\n"
    )
    examples = given_examples(f"users.py\n```python\n{code}```\n")
    assert len(examples) == 1 and "+SKIP" in examples[0].text
    store = FileStore(tmp_path)
    store.write_text("users.py", code)
    result = run_examples(examples, store, SubprocessRunner(), sys.executable, 60)
    assert result is not None and result.failed == ()
    store.write_text("users.py", code.replace("return request", "return {'user': 0}"))
    result = run_examples(examples, store, SubprocessRunner(), sys.executable, 60)
    assert result is not None and len(result.failed) == 1  # the well-formed example still holds the code


def test_an_examples_output_is_compared_as_its_reader_would_and_wrong_output_still_fails(tmp_path: Path) -> None:
    """Against ClassEval's reference solutions, doctest's exact comparison failed 36 of the 155 given docstrings,
    mostly on the form of right output; each form seen there is in this docstring, and a float the same but for
    its last digits (seen on ClassEval_31: 1.0000000000000002 where the docstring shows 0.9999999999999998)."""
    code = '''class Scalar(int):
    def __repr__(self):
        return f"np.int64({int(self)})"


class Shelf:
    """Books on a shelf.

    >>> shelf = Shelf()
    >>> shelf.add("a")
    >>> shelf.add("b")
    True
    self.books = ["a", "b"]
    >>> shelf.titles()
    ["a", "b"]
    >>> shelf.mean_length()
    1.00
    >>> shelf.share()
    0.3
    >>> shelf.count()
    2
    >>> shelf.cursor()
    <list_iterator object at 0x0000026739977C20>
    >>> shelf.is_empty()
    False
    >>> shelf.report()
    count = 2
    """

    def __init__(self):
        self.books = []

    def add(self, title):
        self.books.append(title)
        return True

    def titles(self):
        return list(self.books)

    def mean_length(self):
        return 1

    def share(self):
        return 0.1 + 0.2

    def count(self):
        return Scalar(len(self.books))

    def cursor(self):
        return iter(self.books)

    def is_empty(self):
        return not self.books

    def report(self):
        print(f"count = {len(self.books)}")
'''
    examples = given_examples(f"shelf.py\n```python\n{code}```\n")
    assert [e.name for e in examples] == ["Shelf"]
    store = FileStore(tmp_path)

    def failures(source: str) -> str:
        store.write_text("shelf.py", source)
        result = run_examples(examples, store, SubprocessRunner(), sys.executable, 60)
        assert result is not None and result.tried == 1
        return result.failures()

    assert failures(code) == ""
    wrong = {
        "return list(self.books)": "Expected:\n    [\"a\", \"b\"]\nGot:\n    ['b', 'a']",
        "return 1\n": "Expected:\n    1.00\nGot:\n    1.5",
        "return 0.1 + 0.2": "Expected:\n    0.3\nGot:\n    0.31",  # not the same to the last few digits
        "return Scalar(len(self.books))": "Expected:\n    2\nGot:\n    np.int64(3)",
        "return True": 'Expected:\n    True\n    self.books = ["a", "b"]\nGot:\n    False',
        "return iter(self.books)": "Got:\n    []",
        "return not self.books": "Expected:\n    False\nGot:\n    0",  # the same by ==, not as shown
        'print(f"count': "Expected:\n    count = 2\nGot:\n    Total: = 2",  # printed output, not a note
    }
    broken = {
        "return list(self.books)": "return list(reversed(self.books))",
        "return 1\n": "return 1.5\n",
        "return 0.1 + 0.2": "return 0.1 + 0.21",
        "return Scalar(len(self.books))": "return Scalar(len(self.books) + 1)",
        "return True": "return False",
        "return iter(self.books)": "return []",
        "return not self.books": "return len(self.books) * 0",
        'print(f"count': 'print(f"Total:',
    }
    for right, said in wrong.items():
        assert said in failures(code.replace(right, broken[right])), right


def test_an_example_whose_output_varies_from_run_to_run_is_left_out_and_the_rest_hold(tmp_path: Path) -> None:
    """Seen on ClassEval_12: create_deck's example shows one shuffle of the deck; no code can print it again, and
    two rounds of resampling tried. A failing docstring is run again in a fresh process: one whose output then
    differs is left out; one that fails alike each time (wrong code, or an object's default repr, whose address
    alone differs) still fails."""
    code = '''import random


class Deck:
    def __init__(self):
        """A deck."""
        self.cards = list(range(52))

    def shuffled(self):
        """The cards in a new order.
        >>> Deck().shuffled()[:3]
        [41, 7, 19]
        """
        return random.sample(self.cards, len(self.cards))

    def top(self):
        """The top card.
        >>> Deck().top()
        0
        """
        return self.cards[1]

    def me(self):
        """The deck itself.
        >>> Deck().me()
        'a deck'
        """
        return self
'''
    store = FileStore(tmp_path)
    store.write_text("cards.py", code)
    examples = given_examples(f"```python\n{code}```")
    result = run_examples(examples, store, SubprocessRunner(), sys.executable, 60)
    assert result is not None and result.varied == ("Deck.shuffled",)
    assert [name for name, _ in result.failed] == ["Deck.top", "Deck.me"] and result.tried == 2


def test_code_that_depends_on_a_sets_order_or_on_what_an_earlier_run_wrote_still_fails(tmp_path: Path) -> None:
    """A review of 02df7ce: run twice with random hash seeds, wrong code ordering by a set varied and was left
    out; run twice in the project, a table the first run made was there for the second, and wrong code failed
    otherwise. The seed is pinned in both runs, and the second runs on the files as they were."""
    code = '''import os


def unique(words):
    """The words, each once, in the order first seen.
    >>> unique(["pear", "fig", "pear", "apple", "kiwi", "plum", "lime"])
    ['pear', 'fig', 'apple', 'kiwi', 'plum', 'lime']
    """
    return list(set(words))


def create():
    """Make the table, and say so.
    >>> create()
    'made'
    """
    if os.path.exists("table.db"):
        raise FileExistsError("table.db")
    open("table.db", "w").close()
    return "made twice" if False else "done"
'''
    store = FileStore(tmp_path)
    store.write_text("words.py", code)
    result = run_examples(given_examples(f"```python\n{code}```"), store, SubprocessRunner(), sys.executable, 60)
    assert result is not None and result.varied == ()
    assert [name for name, _ in result.failed] == ["unique", "create"] and result.tried == 2


def test_a_docstring_that_reads_a_file_it_names_first_and_nothing_made_is_left_out(tmp_path: Path) -> None:
    """Seen on ClassEval_26: ``read_csv('read_test.csv')`` shows the rows of a file the task never gives. No code
    passes it, and the agents rewrote a right draft of read_csv trying. Such a docstring is left out. These still
    fail: an earlier example was to make the file (wrong code saved it elsewhere), or another docstring writes it;
    the code opens a file the examples never name, or writes one (nothing shown, a folder missing); an example
    before the read shows wrong output."""
    code = '''class Notes:
    def load(self, path):
        """The lines of the file at path.
        >>> Notes().load('notes.txt')
        ['first', 'second']
        """
        with open(path) as f:
            return f.read().splitlines()

    def save(self, lines, path):
        """Write lines to path; read back, they are the same.
        >>> Notes().save(['a'], 'saved.txt')
        >>> Notes().load('saved.txt')
        ['a']
        """
        with open(path + '.bak', 'w') as f:
            f.write('\\n'.join(lines))

    def keep(self, lines, path):
        """Write lines to path.
        >>> Notes().keep(['b'], 'kept.txt')
        """
        self.lines = lines

    def kept(self):
        """The lines kept.
        >>> Notes().load('kept.txt')
        ['b']
        """
        return self.load('kept.txt')

    def settings(self, name):
        """The settings of a name.
        >>> Notes().settings('mine')
        {}
        """
        with open(name + '.ini') as f:
            return f.read()

    def touch(self, path):
        """Make an empty file.
        >>> Notes().touch('new.txt')
        >>> Notes().touch('out/new.txt')
        True
        """
        open(path, 'r+').close()

    def count(self, xs):
        """How many; then the first line of a file.
        >>> Notes().count([1, 2])
        2
        >>> Notes().load('first.txt')[0]
        'x'
        """
        return 3
'''
    store = FileStore(tmp_path)
    store.write_text("notes.py", code)
    result = run_examples(given_examples(f"```python\n{code}```"), store, SubprocessRunner(), sys.executable, 60)
    assert result is not None and result.needs == (("Notes.load", "notes.txt"),)
    failed = [name for name, _ in result.failed]
    assert failed == ["Notes.save", "Notes.kept", "Notes.settings", "Notes.touch", "Notes.count"], failed
    assert result.tried == 6


def test_examples_run_in_a_copy_of_the_project_and_leave_nothing_in_it(tmp_path: Path) -> None:
    """Seen on ClassEval_25: save_cookies' example left cookies.json in the project, and a second run of the same
    code passed load_cookies' example on it, where the first had failed; the file went on into the project's
    commits. Run twice, the same code gets the same verdict, and the project holds only what it held."""
    code = '''import json


class Jar:
    def size(self):
        """How many, as the saved jar says.
        >>> Jar().size()
        1
        """
        with open('jar.json') as f:
            return json.load(f)['n']

    def save(self, path):
        """Save the jar.
        >>> Jar().save('jar.json')
        """
        with open(path, 'w') as f:
            json.dump({'n': 1}, f)
'''
    store = FileStore(tmp_path)
    store.write_text("jar.py", code)
    examples = given_examples(f"```python\n{code}```")
    runs = [run_examples(examples, store, SubprocessRunner(), sys.executable, 60) for _ in range(2)]
    assert [[name for name, _ in r.failed] for r in runs if r is not None] == [["Jar.size"], ["Jar.size"]]
    assert store.list_files() == ["jar.py"]
