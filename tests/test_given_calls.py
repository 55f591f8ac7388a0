"""A test calling a function the task gives with arguments it does not take is taken away (checks/given_calls.py)."""

from __future__ import annotations

from pathlib import Path

from l2mac.checks import find_code_issues
from l2mac.checks.given_calls import given_interface, miscalls
from l2mac.checks.repairs import repair_written
from l2mac.store import FileStore

SKELETON = '''import math

class AreaCalculator:
    """Areas of shapes."""

    def __init__(self, radius):
        """Keep the radius."""
        self.radius = radius

    def circle(self):
        """The circle's area."""

    def annulus(self, inner_radius, outer_radius):
        """The annulus's area."""

    @staticmethod
    def count(n, m=None):
        """Arrangements of m of n."""

    @classmethod
    def unit(cls, *, exact=False):
        """A calculator of radius 1."""


def scale(area, factor=1.0, *extra, rounding=None):
    """Scale an area."""
'''
TASK = f"Implement the code below in solution.py, and test it in tests/test_solution.py.\n\n```python\n{SKELETON}```"

OWNERS = {"AreaCalculator": "solution", "scale": "solution"}  # the project module defining each name

CODE = """import math

class AreaCalculator:
    def __init__(self, radius):
        self.radius = radius

    def circle(self):
        return math.pi * self.radius**2

    def annulus(self, inner_radius, outer_radius):
        return math.pi * (outer_radius**2 - inner_radius**2)

    @staticmethod
    def count(n, m=None):
        return n if m is None else m

    @classmethod
    def unit(cls, *, exact=False):
        return cls(1)


def scale(area, factor=1.0, *extra, rounding=None):
    return area * factor
"""

# seen on ClassEval_1 at 9e7c0bc (the constructor given two radii, the annulus none) and ClassEval_3 (a method
# called on the class): the checks reported them five times and the model never changed them
TESTS = """import math
from unittest.mock import MagicMock

import pytest
import solution
from solution import AreaCalculator, scale as scaled


@pytest.fixture
def calc():
    return AreaCalculator(2)


def test_circle():
    assert AreaCalculator(2).circle() == pytest.approx(4 * math.pi)


def test_annulus():
    c = AreaCalculator(2, 3)
    assert c.annulus() == pytest.approx(5 * math.pi)


def test_annulus_from_the_fixture(calc):
    assert calc.annulus() > 0


def test_annulus_as_given(calc):
    assert calc.annulus(1, 2) == pytest.approx(3 * math.pi)


def test_count_on_the_class():
    assert AreaCalculator.count(5) == 5 and AreaCalculator.count(5, m=2) == 2


def test_circle_on_the_class():
    assert AreaCalculator.circle() > 0


def test_unit():
    assert AreaCalculator.unit(exact=True).radius == 1


def test_unit_positional():
    assert AreaCalculator.unit(True).radius == 1


def test_scale():
    assert scaled(2, 3, 4, 5, rounding=2) == 6 and solution.scale(1) == 1


def test_scale_unknown_keyword():
    assert solution.scale(1, size=2) == 1


def test_a_wrong_call_on_purpose():
    with pytest.raises(TypeError):
        AreaCalculator(1, 2)
    try:
        scaled()
    except (ValueError, TypeError):
        pass


def test_a_third_party_function_of_a_given_name():
    import numpy as np
    from helpers import scale

    assert np.scale(1, 2, 3, size=4) and scale(1, q=2) and solution.np.scale(q=1)


def test_unpacked_arguments_are_not_weighed():
    args = (1, 2, 3)
    assert scaled(*args) and AreaCalculator(**{"radius": 1})


class TestKept:
    def setup_method(self):
        self.calc = AreaCalculator(1)

    def test_annulus(self):
        assert self.calc.annulus(outer_radius=2)

    def test_rebound(self):
        calc = AreaCalculator(1)
        calc = object()
        self.calc = MagicMock()
        assert calc.annulus() and self.calc.annulus(5)
        for calc in [MagicMock()]:
            assert calc.annulus()
"""


def test_a_test_calling_a_given_function_with_arguments_it_does_not_take_is_found_with_its_call() -> None:
    found = miscalls(TESTS, given_interface(TASK), OWNERS)
    assert found == {
        ("test_annulus",): "`AreaCalculator(2, 3)`: too many positional arguments; the task gives "
        "AreaCalculator(radius)",
        ("test_annulus_from_the_fixture",): "`calc.annulus()`: missing a required argument: 'inner_radius'; the "
        "task gives AreaCalculator.annulus(self, inner_radius, outer_radius)",
        ("test_circle_on_the_class",): "`AreaCalculator.circle()`: missing a required argument: 'self'; the task "
        "gives AreaCalculator.circle(self)",
        ("test_unit_positional",): "`AreaCalculator.unit(True)`: too many positional arguments; the task gives "
        "AreaCalculator.unit(cls, *, exact=False)",
        ("test_scale_unknown_keyword",): "`solution.scale(1, size=2)`: got an unexpected keyword argument 'size'; "
        "the task gives scale(area, factor=1.0, *extra, rounding=None)",
        ("TestKept", "test_annulus"): "`self.calc.annulus(outer_radius=2)`: missing a required argument: "
        "'inner_radius'; the task gives AreaCalculator.annulus(self, inner_radius, outer_radius)",
    }


def test_names_the_test_file_defines_itself_or_imports_from_elsewhere_are_not_the_tasks() -> None:
    own = "from solution import scale\n\ndef scale(x):\n    return x\n\ndef test_own():\n    assert scale(1, 2, q=1)\n"
    stdlib = "from math import AreaCalculator\n\n\ndef test_std():\n    assert AreaCalculator(1, 2, 3)\n"
    assert miscalls(own, given_interface(TASK), OWNERS) == {}
    assert miscalls(stdlib, given_interface(TASK), OWNERS) == {}
    assert miscalls("def test_broken(:\n", given_interface(TASK), OWNERS) == {}
    elsewhere = "from solution import scale\n\n\ndef test_it():\n    assert scale(1, q=2)\n"
    assert miscalls(elsewhere, given_interface(TASK), {"scale": "helpers"}) == {}  # not the module giving it


def test_a_task_without_stubs_gives_nothing_to_weigh_calls_against() -> None:
    usage = "```python\nfrom solution import scale\nprint(scale(1))\n```"
    assert not given_interface(usage)
    twice = f"{TASK}\n\n```python\ndef scale(area):\n    '''Scale.'''\n```"
    assert "scale" not in given_interface(twice).functions  # given twice, differently: which one is meant?
    one_line = "```python\ndef scale(area): ...\n\n\ndef grow(area):\n    'Grow.'\n```"
    assert list(given_interface(one_line).functions) == ["grow"]  # a one-line head is not put back: not weighed


def test_a_written_test_file_loses_the_tests_that_miscall_and_the_model_is_told_which_and_why(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.write_text("solution.py", CODE)
    store.write_text("tests/test_solution.py", TESTS)
    logged: list[tuple[str, dict[str, object]]] = []
    check = lambda paths: find_code_issues(store.root, store.list_files(), only=paths)  # noqa: E731
    notes = repair_written(store, check, ["tests/test_solution.py"], lambda r, **f: logged.append((r, f)), TASK)
    kept = store.read_text("tests/test_solution.py")
    assert "def test_annulus_as_given(calc):" in kept and "def test_circle():" in kept
    assert "AreaCalculator(2, 3)" not in kept and "def test_unit_positional" not in kept
    assert "    def test_rebound(self):" in kept and "    def test_annulus(self):" not in kept
    note = next(n for n in notes if n.startswith("Took out the tests that call a function the task gives"))
    assert "tests/test_solution.py::test_annulus: `AreaCalculator(2, 3)`: too many positional arguments" in note
    recorded = next(f for r, f in logged if r == "miscalling_tests_removed")
    assert recorded["path"] == "tests/test_solution.py" and len(recorded["tests"]) == 6  # type: ignore[arg-type]
    before = store.read_text("tests/test_solution.py")
    assert repair_written(store, check, ["tests/test_solution.py"], lambda r, **f: None, TASK) == []
    assert store.read_text("tests/test_solution.py") == before  # what is left calls as given


def test_without_the_steps_text_no_test_is_taken_away(tmp_path: Path) -> None:
    store = FileStore(tmp_path)
    store.write_text("solution.py", CODE)
    store.write_text("tests/test_solution.py", TESTS)
    check = lambda paths: find_code_issues(store.root, store.list_files(), only=paths)  # noqa: E731
    repair_written(store, check, ["tests/test_solution.py"], lambda r, **f: None)
    assert store.read_text("tests/test_solution.py") == TESTS
