"""Telling a wrong test from wrong code by agreement (CodeT): implementations sampled without the tests."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage
from test_text_protocol import fenced, make_unit

from l2mac.checks.agreement import Asked, Weigher, _used_as, outcomes_with, problems_with
from l2mac.checks.consensus import (
    callers,
    choose,
    reaching_tests,
    relevant_tests,
    remove_statement,
    remove_tests,
    weighable,
)
from l2mac.checks.demands import untested_functions, untested_modules
from l2mac.checks.env import ToolEnv
from l2mac.checks.runner import SubprocessRunner
from l2mac.checks.tests import failure_lines, failure_messages, per_test_outcomes, run_tests
from l2mac.control import Step, StepLimits
from l2mac.models.scripted import last_user_text, text
from l2mac.store import FileStore
from l2mac.types import Instruction, StepOutcome, StepStatus

STEP = Instruction(
    title="Stats",
    instruction="Write stats.py with mean(xs) returning the average of a list of numbers, and tests/test_stats.py.",
    requires_tests=True,
)
MEAN = "def mean(xs):\n    return sum(xs) / len(xs)\n"
MEAN_LOOP = "def mean(xs):\n    total = 0\n    for x in xs:\n        total += x\n    return total / len(xs)\n"
MEAN_FSUM = "import math\n\n\ndef mean(xs):\n    return math.fsum(xs) / len(xs)\n"
MEAN_BUGGY = "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n"
MEAN_OTHER_BUG = "def mean(xs):\n    return max(xs)\n"
RIGHT_TESTS = (
    "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
    "def test_one():\n    assert mean([5]) == 5\n"
)
WRONG_TEST = RIGHT_TESTS + "\n\ndef test_wrong():\n    assert mean([1, 2, 3]) == 3\n"
LIMITS = StepLimits(max_turns=10, max_check_failures=4, samples=3)


def run_step(unit: object) -> object:
    return asyncio.run(unit.run_step(Step("Statistics helpers", 1, 1, STEP, "")))  # type: ignore[attr-defined]


def test_pytest_outcomes_are_read_test_by_test(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n\n\ndef test_a():\n    pass\n\n\ndef test_b():\n    assert 1 == 2\n\n\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError\n\n\ndef test_c(broken):\n    pass\n"
    )
    run = run_tests(SubprocessRunner(), tmp_path, 60, each=True)
    assert per_test_outcomes(run.output) == {
        "test_x.py::test_a": True,
        "test_x.py::test_b": False,
        "test_x.py::test_c": False,
    }
    assert (run.passed, run.failed, run.errors) == (1, 1, 1)  # the totals are still read from the last line
    assert failure_messages(run.output) == {"test_x.py::test_b": "assert 1 == 2"}  # what the failure said
    assert per_test_outcomes("3 passed in 0.1s") == {}


def test_choose_prefers_what_independent_implementations_agree_on() -> None:
    tests = ["t::a", "t::b", "t::c"]

    def passing(*ok: str) -> dict[str, bool]:
        return {t: t in ok for t in tests}

    # the current code passes all three (one test is wrong and the code was bent to it); two samples agree
    # on passing a and b: 2 x 2 = 4 beats 1 x 3 = 3
    agreement = choose([passing("t::a", "t::b", "t::c"), passing("t::a", "t::b"), passing("t::a", "t::b")])
    assert (agreement.chosen, agreement.supporters, agreement.disputed) == (1, 2, ("t::c",))
    assert agreement.passes == {"t::a": 3, "t::b": 3, "t::c": 1}
    # a tie keeps the current code; an implementation that ran no test scores 0
    assert choose([passing("t::a"), passing("t::b"), {}]).chosen == 0
    assert choose([passing(), passing("t::a")]).chosen == 1


def test_a_wrong_test_is_named_to_the_model_and_the_right_code_is_kept(tmp_path: Path) -> None:
    prompts: list[str] = []

    def sample(content: str):
        def reply(messages: list[ModelMessage]):
            prompt = last_user_text(messages)
            prompts.append(prompt)
            return text(fenced(("stats.py", content)))

        return reply

    def fix_tests(messages: list[ModelMessage]):
        feedback = last_user_text(messages)
        assert "tests/test_stats.py::test_wrong: every one of them fails it with `assert 2.0 == 3`" in feedback
        assert "test_mean" not in feedback.split("These tests fail with most of them:")[1].split("When")[0]
        return text(fenced(("tests/test_stats.py", RIGHT_TESTS)))

    replies = [
        text(fenced(("stats.py", MEAN))),
        text(fenced(("tests/test_stats.py", WRONG_TEST))),
        sample(MEAN_LOOP),
        sample(MEAN_FSUM),
        sample(MEAN),
        fix_tests,
        text("STEP COMPLETE\nstats.py has mean; its tests pass."),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("stats.py") == MEAN  # the right code was never bent to the wrong test
    assert store.read_text("tests/test_stats.py") == RIGHT_TESTS
    # the samples were written from the step alone: neither the tests nor the file under test were shown
    assert len(prompts) == 3
    for prompt in prompts:
        assert "test_wrong" not in prompt and "sum(xs) / len(xs)" not in prompt
        assert "Write the complete file stats.py now" in prompt


def test_wrong_code_is_replaced_by_the_implementation_the_samples_agree_on(tmp_path: Path) -> None:
    def done(messages: list[ModelMessage]):
        feedback = last_user_text(messages)
        assert "replaced yours (yours passed 0)" in feedback
        assert "The checks and tests pass" in feedback
        return text("STEP COMPLETE\nstats.py has mean.")

    replies = [
        text(fenced(("stats.py", MEAN_BUGGY))),
        text(fenced(("tests/test_stats.py", RIGHT_TESTS))),
        text(fenced(("stats.py", MEAN_OTHER_BUG))),
        text(fenced(("stats.py", MEAN_LOOP))),
        text("```python\n" + MEAN + "```"),  # an unnamed block is the file asked for
        done,
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    # one of the two that agree on passing both tests (samples are answered concurrently, in any order)
    assert store.read_text("stats.py") in {MEAN_LOOP, MEAN}


def test_samples_that_give_no_code_leave_the_usual_feedback(tmp_path: Path) -> None:
    def fix(messages: list[ModelMessage]):
        feedback = last_user_text(messages)
        assert "implementations" not in feedback and "failed" in feedback
        return text(fenced(("stats.py", MEAN)))

    replies = [
        text(fenced(("stats.py", MEAN_BUGGY))),
        text(fenced(("tests/test_stats.py", RIGHT_TESTS))),
        text("I cannot."),
        text(fenced(("stats.py", "def mean(xs:\n"))),  # does not parse
        text(fenced(("stats.py", "def average(xs):\n    return 0\n"))),  # lacks mean
        fix,
        text("STEP COMPLETE\nfixed."),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("stats.py") == MEAN


def test_agreement_is_off_unless_samples_are_asked_for(tmp_path: Path) -> None:
    replies = [
        text(fenced(("stats.py", MEAN_BUGGY))),
        text(fenced(("tests/test_stats.py", RIGHT_TESTS))),
        text(fenced(("stats.py", MEAN))),  # would be taken as a sample if sampling were on
        text("STEP COMPLETE\nfixed."),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=StepLimits(max_turns=10))
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("stats.py") == MEAN


def test_only_failing_tests_are_weighed_not_missing_code() -> None:
    failing = "Tests: 2 passed, 1 failed, 0 errors\n..F"
    step = ["todo/cli.py", "tests/test_cli.py"]
    assert weighable(failing, step)
    assert weighable("Code problems:\ntests/test_core.py:52: lint: F821 Undefined name `todos`\n\n" + failing, step)
    # a problem in code the step does not own (an earlier step's module) is fixed first, not sampled around
    assert not weighable("Code problems:\ntodo/core.py:3: lint: F821 Undefined name `Path`\n\n" + failing, step)
    # one in the step's own module: samples may replace that module
    assert weighable("Code problems:\ntodo/cli.py:36: lint: F821 Undefined name `args`\n\n" + failing, step)
    two = "Code problems:\ntodo/cli.py:3: lint: F821 x\ntodo/core.py:3: lint: F821 y\n\n"
    assert not weighable(two + failing, [*step, "todo/core.py"])
    missing = "The step is not done: it must write todo/cli.py, which do not exist yet.\n\n"
    assert not weighable(missing + failing, step)
    assert not weighable("Tests: 0 passed, 0 failed, 1 errors\nImportError", step)


def test_code_with_an_undefined_name_is_replaced_by_a_sampled_implementation(tmp_path: Path) -> None:
    # Seen with the 1.5B model: helpers used main()'s local `args`; it rewrote the same code four times.
    broken = "def mean(xs):\n    return total(xs) / len(xs)\n\n\ndef total(ys):\n    return sum(xs)\n"

    def done(messages: list[ModelMessage]):
        feedback = last_user_text(messages)
        assert "replaced yours (yours passed 0)" in feedback
        return text("STEP COMPLETE\nstats.py has mean.")

    replies = [
        text(fenced(("stats.py", broken))),
        text(fenced(("tests/test_stats.py", RIGHT_TESTS))),
        text(fenced(("stats.py", MEAN))),
        text(fenced(("stats.py", MEAN_LOOP))),
        text(fenced(("stats.py", MEAN_OTHER_BUG))),
        done,
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("stats.py") in {MEAN_LOOP, MEAN}


def test_remove_tests_takes_out_whole_functions_with_their_decorators() -> None:
    source = (
        "import pytest\n\n\ndef test_keep():\n    assert True\n\n\n@pytest.mark.parametrize('x', [1, 2])\n"
        "def test_param(x):\n    assert x == 3\n\n\nclass TestA:\n    def test_m(self):\n        assert 0\n\n"
        "    def test_n(self):\n        assert 1\n"
    )
    out, removed = remove_tests(source, ["t.py::test_param[1]", "t.py::test_param[2]", "t.py::TestA::test_m"])
    assert removed == ["t.py::test_param[2]", "t.py::TestA::test_m"] or removed == [
        "t.py::test_param[1]",
        "t.py::TestA::test_m",
    ]
    assert "test_param" not in out and "parametrize" not in out and "test_m" not in out
    assert "def test_keep" in out and "def test_n" in out
    # a class left empty would not parse: then nothing is removed
    assert remove_tests("class TestB:\n    def test_x(self):\n        pass\n", ["t.py::TestB::test_x"]) == (
        "class TestB:\n    def test_x(self):\n        pass\n",
        [],
    )


def test_a_wrong_test_kept_after_it_was_pointed_out_is_removed_and_recorded(tmp_path: Path) -> None:
    def keep_it(messages: list[ModelMessage]):
        assert "test_wrong: every one of them fails it with `assert 2.0 == 3`" in last_user_text(messages)
        return text(fenced(("tests/test_stats.py", WRONG_TEST)))  # the same wrong test again

    replies = [
        text(fenced(("stats.py", MEAN))),
        text(fenced(("tests/test_stats.py", WRONG_TEST))),
        text(fenced(("stats.py", MEAN_LOOP))),
        text(fenced(("stats.py", MEAN_FSUM))),
        text(fenced(("stats.py", MEAN))),
        keep_it,
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert outcome.tests_removed == ["tests/test_stats.py::test_wrong"]
    tests = store.read_text("tests/test_stats.py")
    assert "test_wrong" not in tests and "def test_mean" in tests and "def test_one" in tests
    assert store.read_text("stats.py") == MEAN


def test_tests_of_other_modules_are_no_evidence_about_this_one(tmp_path: Path) -> None:
    """An older module's failing test fails with every implementation of the new one: it is not weighed, so
    no implementation is sampled and the test is neither doubted nor removed."""
    replies = [
        text(fenced(("stats.py", MEAN))),
        text(fenced(("tests/test_stats.py", RIGHT_TESTS))),
        text("STEP COMPLETE\nstats.py has mean."),
        text("STEP COMPLETE\nstats.py has mean."),
    ]
    # held by every test: else the older test, failing before the step began, would not hold it at all
    limits = StepLimits(max_turns=10, max_check_failures=1, samples=3, held_by_own=False)
    unit, script, store = make_unit(tmp_path, replies, limits=limits)
    store.write_text("other.py", "def f():\n    return 1\n")
    store.write_text("tests/test_other.py", "from other import f\n\n\ndef test_f():\n    assert f() == 2\n")
    outcome = run_step(unit)
    assert outcome.status is StepStatus.FAILED
    assert outcome.tests_removed == []
    assert "def test_f" in store.read_text("tests/test_other.py")
    assert len(script.requests) == 2  # the step's own answers only: no implementation was sampled


def test_samples_are_tested_in_a_scratch_copy_inside_the_sandbox(tmp_path: Path) -> None:
    """Under bubblewrap /tmp is private to the sandbox; the scratch copy under the host's /tmp is bound in."""
    from test_sandbox import _bwrap_or_skip

    from l2mac.checks.sandbox import BubblewrapRunner, interpreter_paths

    unit, _, store = make_unit(tmp_path, [], limits=LIMITS)
    # as a run builds it: the interpreter stays visible even when it lives under /tmp (a clone there)
    unit.toolbox.env.runner = BubblewrapRunner(_bwrap_or_skip(), visible=interpreter_paths())
    store.write_text("stats.py", MEAN_BUGGY)
    store.write_text("tests/test_stats.py", WRONG_TEST)
    ran = outcomes_with(unit.toolbox.env, unit.recover, store.snapshot(), "stats.py", MEAN)
    assert ran is not None
    assert ran.content == MEAN and ran.failures == {"tests/test_stats.py::test_wrong": "assert 2.0 == 3"}
    assert ran.outcomes == {
        "tests/test_stats.py::test_mean": True,
        "tests/test_stats.py::test_one": True,
        "tests/test_stats.py::test_wrong": False,
    }
    assert store.read_text("stats.py") == MEAN_BUGGY  # the project itself is untouched


def test_tests_no_implementation_passes_are_no_evidence_and_are_kept(tmp_path: Path) -> None:
    """When every implementation fails every test, nothing proves the tests wrong: they are not named as the
    likelier mistake, and never removed (seen in the demo: a CLI the model never got right lost its only
    test). The model is only asked to check what they expect against the step."""
    bad_tests = "from stats import mean\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 7\n"

    def unchanged(messages: list[ModelMessage]):
        told = last_user_text(messages)
        assert "likelier mistake" not in told
        if "summarise" not in told:
            assert "none of them passes these:\n- tests/test_stats.py::test_mean\nEither the test or" in told
        return text(fenced(("tests/test_stats.py", bad_tests)))

    replies = [
        text(fenced(("stats.py", MEAN_BUGGY))),
        text(fenced(("tests/test_stats.py", bad_tests))),
        *[text(fenced(("stats.py", body))) for body in (MEAN, MEAN_LOOP, MEAN_OTHER_BUG)],
        unchanged,
        unchanged,
    ]
    limits = StepLimits(max_turns=10, max_check_failures=2, samples=3)
    unit, _, store = make_unit(tmp_path, replies, limits=limits)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.FAILED
    assert outcome.tests_removed == []
    assert "def test_mean" in store.read_text("tests/test_stats.py")


def test_the_run_summary_names_removed_tests() -> None:
    from rich.console import Console

    from l2mac.cli import summary_table
    from l2mac.report import RunReport, StepDetail

    report = RunReport.model_validate(
        {
            "status": "passed",
            "stopped_reason": None,
            "project": "todo",
            "workspace": "/w/todo",
            "model": "local:x",
            "strategy": "l2mac",
            "domain": "codebase",
            "isolation": "bubblewrap",
            "files": 6,
            "file_list": [],
            "loc": 67,
            "syntax_errors": 0,
            "lint_errors": 0,
            "import_errors": 0,
            "type_errors": 0,
            "tests": {"status": "passed", "passed": 2, "failed": 0},
            "tests_removed": ["tests/test_cli.py::test_main"],
            "steps": {"planned": 3, "run": 3, "passed": 3, "failed": 0, "detail": []},
            "tokens": {"input": 60, "output": 40, "total": 100},
            "requests": 2,
            "cost_usd": None,
            "cost_usd_priced_part": 0.0,
            "unpriced_requests": 2,
            "wall_time_s": 1.0,
        }
    )
    console = Console(width=200, record=True)
    console.print(summary_table(report))
    assert "tests/test_cli.py::test_main" in console.export_text()
    console = Console(width=200, record=True)
    console.print(summary_table(report.model_copy(update={"tests_removed": []})))
    assert "removed" not in console.export_text() and "earlier failures" not in console.export_text()
    # a step that passed while an earlier step's test still failed says so
    step = {"index": 3, "title": "README", "status": "passed", "reason": "", "turns": 1, "context_restarts": 0}
    step |= {"check_failures": 0, "tests_removed": [], "inherited": ["tests/test_core.py::test_add"]}
    steps = report.steps.model_copy(update={"detail": [StepDetail.model_validate(step)]})
    console = Console(width=200, record=True)
    console.print(summary_table(report.model_copy(update={"steps": steps})))
    shown = console.export_text()
    assert "passed over earlier failures" in shown and "step 3: 1 (tests/test_core.py::test_add)" in shown


def test_each_module_a_step_writes_must_be_imported_by_a_test() -> None:
    sources = {
        "todo/__init__.py": "",
        "todo/core.py": "def load():\n    return []\n",
        "todo/cli.py": "def main(argv):\n    return 0\n",
        "tests/test_core.py": "from todo.core import load\n\n\ndef test_load():\n    assert load() == []\n",
        "tests/test_cli.py": "from todo.cli import main\n",  # imports it, but holds no test
    }
    paths = ["todo/__init__.py", "todo/core.py", "todo/cli.py", "tests/test_cli.py"]
    assert untested_modules(paths, sources) == ["todo/cli.py"]
    sources["tests/test_cli.py"] = "from todo import cli\n\n\ndef test_main():\n    assert cli.main([]) == 0\n"
    assert untested_modules(paths, sources) == []
    # a package whose __init__.py holds its code (a plan's links.py moved there) is a module to test
    code = {"links/__init__.py": "class Links:\n    pass\n", "tests/test_x.py": "def test_x():\n    pass\n"}
    assert untested_modules(["links/__init__.py"], code) == ["links/__init__.py"]


def test_a_test_of_another_module_in_the_same_file_is_no_evidence(tmp_path: Path) -> None:
    """A test of an older module copied into this step's test file fails with every implementation of this
    one: it is neither named as doubtful nor removed with the wrong test beside it (seen in the demo: core
    tests copied into tests/test_cli.py were removed because every sampled CLI failed them)."""
    copied = WRONG_TEST.replace("from stats", "from other import f\nfrom stats") + (
        "\n\ndef test_f():\n    assert f() == 2\n"
    )

    def keep_it(messages: list[ModelMessage]):
        told = last_user_text(messages)
        assert "test_wrong: every one of them fails it" in told and "test_f" not in told.partition("doubt")[2]
        return text(fenced(("tests/test_stats.py", copied)))

    replies = [
        text(fenced(("stats.py", MEAN))),
        text(fenced(("tests/test_stats.py", copied))),
        text(fenced(("stats.py", MEAN_LOOP))),
        text(fenced(("stats.py", MEAN_FSUM))),
        text(fenced(("stats.py", MEAN))),
        keep_it,
        *[text("STEP COMPLETE\nstats.py has mean.")] * 6,
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    store.write_text("other.py", "def f():\n    return 1\n")
    outcome = run_step(unit)
    assert outcome.status is StepStatus.FAILED  # test_f still fails: other.py is not this step's to fix
    assert outcome.tests_removed == ["tests/test_stats.py::test_wrong"]
    assert "def test_f" in store.read_text("tests/test_stats.py")


def test_relevant_tests_are_those_that_reach_a_module_directly_or_through_fixtures() -> None:
    source = (
        "import subprocess\nimport pytest\nfrom todo.core import Todo\nfrom todo.cli import main\n"
        "from todo import cli as c\n\n\n@pytest.fixture\ndef run(tmp_path):\n"
        "    return lambda *a: main(['--file', str(tmp_path / 't.json'), *a])\n\n\n"
        "def test_core():\n    assert Todo('a', False).done is False\n\n\n"
        "def test_fixture(run):\n    assert run('list') == 0\n\n\n"
        "def test_alias():\n    assert c.main([]) == 0\n\n\n"
        "def test_subprocess():\n    subprocess.run(['python', '-m', 'todo.cli'], check=True)\n\n\n"
        "class TestCli:\n    def test_method(self):\n        assert main([]) == 0\n"
    )
    path = "tests/test_cli.py"
    assert relevant_tests(source, path, "todo.cli") == {
        f"{path}::test_fixture",
        f"{path}::test_alias",
        f"{path}::test_subprocess",
        f"{path}::TestCli::test_method",
    }
    assert relevant_tests(source, path, "todo.core") == {f"{path}::test_core"}
    # main only imported into todo.cli (defined elsewhere): the tests of it are not about todo.cli's own code
    assert relevant_tests(source, path, "todo.cli", defined={"helper"}) == {
        f"{path}::test_alias",
        f"{path}::test_subprocess",
    }
    assert relevant_tests("def test_x(:\n", path, "todo.cli") == set()


def test_a_function_the_step_names_that_no_test_calls_is_reported() -> None:
    instruction = "Write todo/cli.py with main(argv: list[str]) -> int and helper(x: int) -> int. Write tests."
    sources = {
        "todo/cli.py": "def main(argv):\n    return 0\n\n\ndef helper(x):\n    return x\n",
        "tests/test_cli.py": "from todo.cli import helper\n\n\ndef test_helper():\n    assert helper(1) == 1\n",
    }
    assert untested_functions(instruction, ["todo/cli.py"], sources) == {"todo/cli.py": ["main"]}
    sources["tests/test_run.py"] = (
        "import subprocess\n\n\ndef test_run():\n    subprocess.run(['python', '-m', 'todo.cli'])\n"
    )
    assert untested_functions(instruction, ["todo/cli.py"], sources) == {}


def test_the_last_test_of_a_function_the_step_names_is_never_removed(tmp_path: Path) -> None:
    unit, _, store = make_unit(tmp_path, [], limits=LIMITS)
    store.write_text("stats.py", MEAN)
    store.write_text("tests/test_stats.py", WRONG_TEST)
    without_wrong, _ = remove_tests(WRONG_TEST, ["tests/test_stats.py::test_wrong"])
    without_all, _ = remove_tests(
        WRONG_TEST, [f"tests/test_stats.py::{t}" for t in ("test_wrong", "test_mean", "test_one")]
    )

    async def no_save(path: str, content: str, why: str) -> None:
        raise AssertionError("nothing is saved here")

    weigher = Weigher(
        unit.client, unit.toolbox.env, unit.domain, STEP.instruction, ask=lambda *a: Asked([]), save=no_save, log=print
    )
    assert not weigher.leaves_a_step_function_untested("tests/test_stats.py", without_wrong)
    assert weigher.leaves_a_step_function_untested("tests/test_stats.py", without_all)  # mean() untested


CLASS_STEP = Instruction(
    title="Counter",
    instruction=(
        "Implement the class below in solution.py and test it in tests/test_solution.py.\n\n```python\n"
        'class Counter:\n    def __init__(self, start):\n        """Starts at start."""\n\n'
        '    def add(self, n):\n        """Adds n; returns the total."""\n\n'
        '    def load(self, path):\n        """Reads the total from the file at path."""\n```\n'
    ),
    requires_tests=True,
)
COUNTER = (
    "class Counter:\n    def __init__(self, start):\n        self.total = start\n\n"
    "    def add(self, n):\n        self.total += n\n        return self.total\n\n"
    "    def load(self, path):\n        with open(path) as f:\n            self.total = int(f.read())\n"
)
# the only test of load() opens a file it never writes: every implementation fails it the same way
COUNTER_TESTS = (
    "from solution import Counter\n\n\ndef test_add():\n    assert Counter(1).add(2) == 3\n\n\n"
    "def test_add_again():\n    assert Counter(0).add(1) == 1\n\n\n"
    "def test_load():\n    c = Counter(0)\n    c.load('path/to/total.txt')\n    assert c.total == 5\n"
)


def test_the_last_test_of_a_method_the_step_names_is_never_removed(tmp_path: Path) -> None:
    # Seen on ClassEval_34 at ec0ff1d: the only tests of four of a class's five methods failed on a document
    # they opened and never wrote, in every sample; all four were removed and the step passed on one test.
    unit, _, store = make_unit(tmp_path, [], limits=LIMITS)
    store.write_text("solution.py", COUNTER)
    store.write_text("tests/test_solution.py", COUNTER_TESTS)

    async def no_save(path: str, content: str, why: str) -> None:
        raise AssertionError("nothing is saved here")

    weigher = Weigher(
        unit.client,
        unit.toolbox.env,
        unit.domain,
        CLASS_STEP.instruction,
        ask=lambda *a: Asked([]),
        save=no_save,
        log=print,
    )
    path = "tests/test_solution.py"
    without_load, _ = remove_tests(COUNTER_TESTS, [f"{path}::test_load"])
    without_one_add, _ = remove_tests(COUNTER_TESTS, [f"{path}::test_add"])
    without_adds, _ = remove_tests(COUNTER_TESTS, [f"{path}::test_add", f"{path}::test_add_again"])
    assert weigher.leaves_a_step_function_untested(path, without_load)
    assert weigher.leaves_a_step_function_untested(path, without_adds)
    assert not weigher.leaves_a_step_function_untested(path, without_one_add)  # add() still has a test
    sources = {"solution.py": COUNTER, path: without_load}
    assert untested_functions(CLASS_STEP.instruction, ["solution.py"], sources, methods=True) == {
        "solution.py": ["load"]  # __init__ is run by every use of the class
    }
    assert untested_functions(CLASS_STEP.instruction, ["solution.py"], sources) == {}  # methods not asked for


def test_remove_statement_takes_out_the_failing_statement_but_never_the_last_expectation() -> None:
    source = (
        "import pytest\nfrom stats import mean\n\n\ndef test_mean():\n    assert mean([2]) == 2\n"
        "    with pytest.raises(ValueError):\n        mean([-1])\n    assert mean([1, 3]) == 2\n"
    )
    test = "tests/test_stats.py::test_mean"
    cut = remove_statement(source, test, 8)  # a line inside the with block: the whole block goes
    assert cut is not None
    pruned, text = cut
    assert text == "with pytest.raises(ValueError):\n        mean([-1])"
    assert "raises" not in pruned and "mean([2]) == 2" in pruned and "mean([1, 3]) == 2" in pruned
    assert remove_statement(source, test, 2) is None  # not a line of the test
    assert remove_statement(source, "tests/test_stats.py::test_other", 6) is None
    only = "def test_one():\n    assert 1 == 2\n"
    assert remove_statement(only, "t.py::test_one", 2) is None  # the test would assert nothing
    setup = "def test_s():\n    x = f()\n    assert x == 1\n    assert x > 0\n"
    assert remove_statement(setup, "t.py::test_s", 2) is None  # only checks go, never what sets them up
    in_class = "class TestS:\n    def test_s(self):\n        x = f()\n        assert x == 1\n        assert x > 0\n"
    assert remove_statement(in_class, "t.py::TestS::test_s", 4) == (
        in_class.replace("        assert x == 1\n", ""),
        "assert x == 1",
    )


def test_failure_lines_are_the_test_files_frames_in_order_relative_or_absolute() -> None:
    output = (
        "    def test_gcd():\n>       assert gcd(-1, 1) == 1\n\ntests/test_m.py:5: \n"
        "_ _ _\nm.py:3: in gcd\n    raise ValueError\nE   ValueError\n"
        "/tmp/l2mac-prune-x/tests/test_m.py:9: AssertionError\nother/tests/test_m.py:2: in f\n"
    )
    assert failure_lines(output, "tests/test_m.py") == [5, 9]
    assert failure_lines(output, "m.py") == [3]


TWO_FUNCTIONS = Instruction(
    title="Stats",
    instruction=(
        "Write stats.py with mean(xs) returning the average of a list of numbers and total(xs) returning their "
        "sum, and tests/test_stats.py."
    ),
    requires_tests=True,
)
STATS = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef total(xs):\n    return sum(xs)\n"
# the only test of mean() asks for an exception the step never mentions, between two right expectations
OVERREACHING_TEST = (
    "import pytest\nfrom stats import mean, total\n\n\ndef test_total():\n    assert total([1, 2]) == 3\n\n\n"
    "def test_mean():\n    assert mean([1, 2, 3]) == 2\n    with pytest.raises(ValueError):\n"
    "        mean([-1, 1])\n    assert mean([4]) == 4\n"
)


def test_the_failing_statement_of_a_functions_only_test_is_dropped_and_the_rest_kept(tmp_path: Path) -> None:
    # Seen with the 1.5B model: gcd()'s only test expected ValueError for a negative number, which the step never
    # asked for; every implementation failed it, the model kept it, and removing the whole test would leave
    # gcd() untested, so it was kept and the step spent its budget on it.
    def keep_it(messages: list[ModelMessage]):
        assert "test_mean: every one of them fails it with `Failed: DID NOT RAISE" in last_user_text(messages)
        return text(fenced(("tests/test_stats.py", OVERREACHING_TEST)))

    replies = [
        text(fenced(("stats.py", STATS))),
        text(fenced(("tests/test_stats.py", OVERREACHING_TEST))),
        *[text(fenced(("stats.py", STATS)))] * 3,
        keep_it,
        text("STEP COMPLETE\nstats.py has mean and total; their tests pass."),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = asyncio.run(unit.run_step(Step("Statistics helpers", 1, 1, TWO_FUNCTIONS, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert outcome.tests_removed == ["tests/test_stats.py::test_mean: with pytest.raises(ValueError): mean([-1, 1])"]
    tests = store.read_text("tests/test_stats.py")
    assert "raises" not in tests and "mean([1, 2, 3]) == 2" in tests and "mean([4]) == 4" in tests
    assert store.read_text("stats.py") == STATS


def test_a_model_that_answers_one_request_at_a_time_gets_its_samples_in_turn_and_the_choice_repeats(
    tmp_path: Path,
) -> None:
    # Made at once, three samples raced for the in-process model and took its seeds in whatever order they
    # got it; on a tie the first agreeing sample is kept, so one seeded run kept another file than the last.
    def run(parallel: bool, where: Path) -> tuple[str, int]:
        in_flight, most = [0], [0]
        lock = threading.Lock()
        # asked at once, the three samples all get here before any is answered (however loaded the machine);
        # asked in turn, none would, and the barrier breaks the test rather than hang it
        together = threading.Barrier(3, timeout=60)

        def sample(content: str):
            def reply(messages: list[ModelMessage]):
                with lock:
                    in_flight[0] += 1
                    most[0] = max(most[0], in_flight[0])
                if parallel:
                    together.wait()
                with lock:
                    in_flight[0] -= 1
                return text(fenced(("stats.py", content)))

            return reply

        replies = [
            text(fenced(("stats.py", MEAN_BUGGY))),
            text(fenced(("tests/test_stats.py", RIGHT_TESTS))),
            sample(MEAN_OTHER_BUG),
            sample(MEAN_LOOP),
            sample(MEAN),
            text("STEP COMPLETE\nstats.py has mean."),
        ]
        unit, _, store = make_unit(where, replies, limits=LIMITS)
        unit.client.parallel = parallel
        assert run_step(unit).status is StepStatus.PASSED
        return store.read_text("stats.py"), most[0]

    assert run(True, tmp_path / "a")[1] == 3  # answered at once, as a server or a cloud API does
    assert run(False, tmp_path / "b") == (MEAN_LOOP, 1)  # the first of the two that agree, asked first
    assert run(False, tmp_path / "c") == (MEAN_LOOP, 1)


def test_a_state_as_close_to_passing_after_a_removal_is_the_best_and_the_removal_holds(tmp_path: Path) -> None:
    # the step came as close to passing after agreement removed test_wrong as before (test_f, of another
    # module, fails throughout): that state is its best, so when what followed broke stats.py, the step ends
    # with stats.py put back and test_wrong still removed (restoring the state from before the removal would
    # bring back a test agreement found wrong)
    copied = WRONG_TEST.replace("from stats", "from other import f\nfrom stats") + (
        "\n\ndef test_f():\n    assert f() == 2\n"
    )
    replies = [
        text(fenced(("stats.py", MEAN))),
        text(fenced(("tests/test_stats.py", copied))),
        text(fenced(("stats.py", MEAN_LOOP))),
        text(fenced(("stats.py", MEAN_FSUM))),
        text(fenced(("stats.py", MEAN))),
        text(fenced(("tests/test_stats.py", copied))),  # kept after it was pointed out: test_wrong is removed
        *[text(fenced(("stats.py", "def mean(xs):\n    return sum(xs\n")))] * 6,  # a syntax error
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    store.write_text("other.py", "def f():\n    return 1\n")
    outcome = run_step(unit)
    assert outcome.status is StepStatus.FAILED and "put back as they were" in outcome.reason
    assert store.read_text("stats.py") == MEAN and "def test_wrong" not in store.read_text("tests/test_stats.py")
    assert outcome.tests_removed == ["tests/test_stats.py::test_wrong"]


def test_only_tests_the_restored_files_hold_count_as_back() -> None:
    from l2mac.control.unit import _holds

    files = {"tests/test_stats.py": WRONG_TEST}
    assert _holds(files, "tests/test_stats.py::test_wrong")
    assert _holds(files, "tests/test_stats.py::test_mean: assert mean([1, 2, 3]) == 2")
    assert not _holds(files, "tests/test_stats.py::test_mean: assert mean([4]) == 4")  # a check not in it
    assert not _holds(files, "tests/test_other.py::test_wrong")  # written after the best state: gone with it
    assert not _holds(files, "tests/test_stats.py::TestX::test_gone[1]")


def test_implementations_that_all_fail_a_test_the_same_way_are_evidence_against_it(tmp_path: Path) -> None:
    # Seen on DevBench with the 1.5B model: a sum-of-squares function's only test expected 36 for [-1, -2, -3];
    # the code and three samples all returned 14, no implementation passed any test (so there was no evidence
    # by passing), the model kept its test, and the step failed on it.
    wrong = "from stats import mean\n\n\ndef test_mean():\n    assert mean([5]) == 5\n    assert mean([1, 2, 3]) == 3\n"

    def keep_it(messages: list[ModelMessage]):
        told = last_user_text(messages)
        assert "tests/test_stats.py::test_mean: every one of them fails it with `assert 2.0 == 3`" in told
        return text(fenced(("tests/test_stats.py", wrong)))

    replies = [
        text(fenced(("stats.py", MEAN))),
        text(fenced(("tests/test_stats.py", wrong))),
        *[text(fenced(("stats.py", body))) for body in (MEAN, MEAN_LOOP, MEAN_FSUM)],
        keep_it,
        text("STEP COMPLETE\nstats.py has mean; its test passes."),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert outcome.tests_removed == ["tests/test_stats.py::test_mean: assert mean([1, 2, 3]) == 3"]
    assert "mean([5]) == 5" in store.read_text("tests/test_stats.py") and store.read_text("stats.py") == MEAN


def test_failures_alike_need_every_implementation_and_an_expectation() -> None:
    passed = {"t::a": False}
    same = {"t::a": "assert 2 == 3"}
    assert choose([passed] * 3, [same] * 3).agreed == {"t::a": "assert 2 == 3"}
    assert choose([passed] * 3, [same, same, {"t::a": "assert 4 == 3"}]).agreed == {}  # two alike: too few
    assert choose([passed] * 3, [same, same]).agreed == {}  # one implementation's messages are unknown
    other = {"t::a": "TypeError: unsupported operand"}
    assert choose([passed] * 4, [same, same, other, same]).agreed == {"t::a": "assert 2 == 3"}  # 3 of 4, with it
    assert choose([passed] * 4, [other, same, same, same]).agreed == {}  # the current code fails otherwise
    error = {"t::a": "IndexError: list index out of range"}
    some_pass = {"t::a": False, "t::b": True}
    assert choose([some_pass] * 3, [error] * 3).agreed == {}  # where tests pass, an error alike may be a shared bug
    # where none passes, an error raised alike is the tests' (seen: a folder passed as a database's path)
    opened = {"t::a": "sqlite3.OperationalError: unable to open database file"}
    assert choose([passed] * 3, [opened] * 3).agreed == opened
    assert choose([passed] * 3, [{"t::a": "Failed: Timeout"}] * 3).agreed == {}  # no error with a message
    for where_it_ran in (
        "ModuleNotFoundError: No module named 'flask'",
        "requests.exceptions.ConnectionError: no network",
        "FileNotFoundError: [Errno 2] No such file or directory: 'data.csv'",
    ):  # the sandbox's, not the test's: no evidence against the test
        assert choose([passed] * 3, [{"t::a": where_it_ran}] * 3).agreed == {}, where_it_ran
    for says_nothing in ("assert 14...", "assert None == 3", "assert False"):  # cut off by pytest, or no value
        assert choose([passed] * 3, [{"t::a": says_nothing}] * 3).agreed == {}


def test_the_tasks_own_examples_outrank_the_tests_in_choosing_an_implementation(tmp_path: Path) -> None:
    # Seen on HumanEval/1: the task's example failed, and agreement never ran, since a report with failing
    # examples was not "the tests failing". Here the model's tests agree with its wrong code and so do two of
    # three samples: by the tests alone the wrong code stays; the task's example picks the right one.
    stub = 'def mean(xs):\n    """The average of xs.\n    >>> mean([1, 2, 6])\n    3.0\n    """\n'
    step = Instruction(
        title="Stats",
        instruction=f"Write stats.py with this function, and tests/test_stats.py:\n```python\n{stub}```",
        requires_tests=True,
    )
    agreeing_tests = (
        "from stats import mean\n\n\ndef test_three():\n    assert mean([1, 2, 3]) == 1.5\n\n\n"
        "def test_one():\n    assert mean([4]) == 4\n"
    )
    seen: list[str] = []

    def fixed(messages: list[ModelMessage]):
        seen.append(last_user_text(messages))
        return text(fenced(("tests/test_stats.py", RIGHT_TESTS)))

    replies = [
        text(fenced(("stats.py", MEAN_BUGGY), ("tests/test_stats.py", agreeing_tests))),
        text("```python\n" + MEAN + "```"),
        text(fenced(("stats.py", MEAN_BUGGY))),
        text(fenced(("stats.py", MEAN_BUGGY))),
        fixed,
        text("STEP COMPLETE"),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = asyncio.run(unit.run_step(Step("Statistics helpers", 1, 1, step, "")))
    assert "replaced yours" in seen[0]
    assert store.read_text("stats.py") == MEAN
    assert outcome.status is StepStatus.PASSED, outcome.reason


def test_choose_ranks_by_the_tasks_examples_before_the_tests() -> None:
    a, b = {"t1": True, "t2": False}, {"t1": False, "t2": True}
    assert choose([a, a, a, b]).chosen == 0  # three agree on a
    assert choose([a, a, a, b], rank=[(0,), (0,), (0,), (1,)]).chosen == 3  # but only b passes the example
    assert choose([a, a, b, b], rank=[(1,), (1,), (1,), (1,)]).chosen == 0  # ranked alike: the tests choose
    assert choose([a, b, b, b], rank=[(1, 0), (1, -1), (1, -1), (1, -1)]).chosen == 0  # then by problems
    # where the tests score alike, the fewest problems win; they never outweigh the tests
    assert choose([a, a, a], problems=[1, 0, 1]).chosen == 1
    both, none = {"t1": True, "t2": True}, {"t1": False, "t2": False}
    assert choose([both, none, none], problems=[1, 0, 0]).chosen == 0
    with pytest.raises(ValueError):
        choose([a, b], rank=[(1,)])
    with pytest.raises(ValueError):
        choose([a, b], problems=[1])
    assert weighable("Examples the task gives, 1 of 1 failing:\nx\n\nTests: 0 passed, 1 failed", [], "") is False
    report = "Examples the task gives, 1 of 1 failing:\nx\n\nTests: 0 passed, 1 failed"
    assert weighable(report, [], "Examples the task gives, 1 of 1 failing:\nx")


def test_a_test_is_not_doubted_while_every_implementation_fails_the_tasks_own_examples(tmp_path: Path) -> None:
    """Seen on the inflection trial: the plan gave a wrong body, every sample copied it, so the samples agreed
    with the wrong code against the model's right test, and the test was removed. The task's own example
    failed with all of them: the code was wrong, whatever the samples agreed on."""
    buggy = "def total(xs):\n    return sum(xs[1:])\n"
    right = "def total(xs):\n    return sum(xs)\n"
    tests = "from stats import total\n\n\ndef test_total():\n    assert total([1, 2, 6]) == 9\n"
    step = Instruction(
        title="Stats",
        instruction=f"Write stats.py with this function, and tests/test_stats.py:\n```python\n{buggy}```",
        requires_tests=True,
    )
    seen: list[str] = []

    def fixed(messages: list[ModelMessage]):
        seen.append(last_user_text(messages))
        return text(fenced(("stats.py", right)))

    replies = [
        text(fenced(("stats.py", buggy), ("tests/test_stats.py", tests))),
        *[text(fenced(("stats.py", buggy)))] * 3,  # the samples, copying the step's body
        fixed,
        text("STEP COMPLETE"),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    task = "Sum a list: total(xs), e.g. total([1, 2, 6]) == 9."
    outcome = asyncio.run(unit.run_step(Step(task, 1, 1, step, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "likelier mistake" not in seen[0] and "total([1, 2, 6])" in seen[0]
    assert store.read_text("tests/test_stats.py") == tests and store.read_text("stats.py") == right


def test_samples_are_not_shown_the_body_the_step_gives_a_function_failing_the_tasks_examples(tmp_path: Path) -> None:
    """Seen on the inflection trial: the plan's step gave the new function a wrong body; every agreement sample,
    written from the step, copied it, so agreement could never find the right code. A function failing the
    task's own examples is sampled from its signature and docstring, without the body the step gives it."""
    buggy = 'def total(xs):\n    """The sum of xs."""\n    return sum(xs[1:])\n'
    right = 'def total(xs):\n    """The sum of xs."""\n    return sum(xs)\n'
    tests = "from stats import total\n\n\ndef test_total():\n    assert total([1, 2, 6]) == 9\n"
    step = Instruction(
        title="Stats",
        instruction=f"Write stats.py with this function, and tests/test_stats.py:\n```python\n{buggy}```",
        requires_tests=True,
    )
    shown_to_samples: list[str] = []

    def sample(messages: list[ModelMessage]):
        shown = "\n".join(str(getattr(p, "content", "")) for m in messages for p in m.parts)
        shown_to_samples.append(shown)
        # a sample copies a body it is shown; shown none, it writes the docstring's sum
        return text(fenced(("stats.py", buggy if "sum(xs[1:])" in shown else right)))

    replies = [
        text(fenced(("stats.py", buggy), ("tests/test_stats.py", tests))),
        sample,
        sample,
        sample,
        text("STEP COMPLETE"),
        text("STEP COMPLETE"),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    task = "Sum a list: total(xs), e.g. total([1, 2, 6]) == 9."
    outcome = asyncio.run(unit.run_step(Step(task, 1, 1, step, "")))
    assert len(shown_to_samples) == 3
    assert all("sum(xs[1:])" not in s and "def total(xs):" in s for s in shown_to_samples)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("stats.py") == right and store.read_text("tests/test_stats.py") == tests


def test_a_sample_request_that_gave_nothing_usable_is_not_asked_again(tmp_path: Path) -> None:
    """Seen on ClassEval: the second sampling round of a step sent the very request of the first, whose three
    samples were all unusable, and got three unusable samples again (7 rounds in 3 tasks, none of use)."""
    asked: list[str] = []

    def sample_or_answer(reply: str):
        def answer(messages: list[ModelMessage]):
            asked.append(last_user_text(messages))
            return text(reply)

        return answer

    replies = [
        text(fenced(("stats.py", MEAN_BUGGY))),
        text(fenced(("tests/test_stats.py", RIGHT_TESTS))),
        *[sample_or_answer("I cannot.")] * 3,  # round 1: nothing usable
        sample_or_answer(fenced(("stats.py", MEAN_OTHER_BUG))),  # the model's next try, still wrong
        sample_or_answer(fenced(("stats.py", MEAN))),  # without the memory, taken as round 2's first sample
        sample_or_answer("STEP COMPLETE\nfixed."),
        sample_or_answer("STEP COMPLETE\nfixed."),
        sample_or_answer("STEP COMPLETE\nfixed."),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    samples = [a for a in asked if "It must define all of these" in a or "Write the complete file" in a]
    assert len(samples) == 3  # round 1 only
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert store.read_text("stats.py") == MEAN


def test_a_function_failing_the_tasks_examples_leaves_the_tests_of_the_others_open_to_doubt(tmp_path: Path) -> None:
    """Seen on ClassEval_1 at 9e7c0bc: the cylinder's example failed with every implementation, and so no test
    was doubted, not even those of the circle and the sphere, which all four implementations failed alike
    (``assert 12.56637 == 12.566370614359172``: the test rounded the area, then compared it unrounded). Only the
    tests that use a function failing its examples (or one calling it) are left undoubted."""
    stub = (
        'def total(xs):\n    """The sum of xs.\n    >>> total([1, 2, 6])\n    9\n    """\n\n\n'
        'def mean(xs):\n    """The average of xs.\n    >>> mean([1, 2, 6])\n    3.0\n    """\n\n\n'
        'def spread(xs):\n    """The total over the mean."""\n'
    )
    step = Instruction(
        title="Stats",
        instruction=f"Write stats.py with these functions, and tests/test_stats.py:\n```python\n{stub}```",
        requires_tests=True,
    )
    buggy = (
        "def total(xs):\n    return sum(xs[1:])\n\n\ndef mean(xs):\n    return sum(xs) / len(xs)\n\n\n"
        "def spread(xs):\n    return total(xs) / mean(xs)\n"
    )
    right = buggy.replace("sum(xs[1:])", "sum(xs)")
    tests = (
        "from stats import mean, spread, total\n\n\ndef test_mean():\n    assert mean([5]) == 5\n"
        "    assert mean([1, 2, 3]) == 3\n\n\ndef test_total():\n    assert total([1, 2, 6]) == 9\n\n\n"
        "def test_spread():\n    assert spread([2, 2]) == 2\n"
    )
    seen: list[str] = []

    def fix_the_code_keep_the_test(messages: list[ModelMessage]):
        seen.append(last_user_text(messages))
        return text(fenced(("stats.py", right)))

    replies = [
        text(fenced(("stats.py", buggy), ("tests/test_stats.py", tests))),
        *[text(fenced(("stats.py", buggy)))] * 3,  # every sample fails total's example too
        fix_the_code_keep_the_test,
        *[text(fenced(("stats.py", right)))] * 3,
        *[text("STEP COMPLETE")] * 3,
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = asyncio.run(unit.run_step(Step("Statistics helpers", 1, 1, step, "")))
    assert "tests/test_stats.py::test_mean: every one of them fails it with `assert 2.0 == 3`" in seen[0]
    assert "- tests/test_stats.py::test_total" not in seen[0]  # total fails its example: its test is not doubted
    assert "- tests/test_stats.py::test_spread" not in seen[0]  # nor is the test of spread, which calls total
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert outcome.tests_removed == ["tests/test_stats.py::test_mean: assert mean([1, 2, 3]) == 3"]
    assert store.read_text("stats.py") == right and "def test_total" in store.read_text("tests/test_stats.py")


def test_what_a_function_failing_its_examples_makes_wrong_is_every_function_and_test_reaching_it() -> None:
    code = (
        "class A:\n    def area(self):\n        return self.helper()\n\n    def helper(self):\n        return 1\n\n\n"
        "class B:\n    def area(self):\n        return 2\n\n    def total(self, xs):\n"
        "        return sum(map(self.scale, xs))\n\n    def scale(self, x):\n        return x\n"
    )
    # two classes' area are one name here: A.area's call of helper is not lost to B.area's; a method passed on
    # (map(self.scale, xs)) is used too
    assert callers(code, {"helper"}) == {"helper", "area"}
    assert callers(code, {"scale"}) == {"scale", "total"}
    assert callers("def broken(:\n", {"f"}) == {"f"}
    tests = (
        "import pytest\nfrom shapes import A, B\n\n\n@pytest.fixture\ndef made():\n    return A().area()\n\n\n"
        "def test_fixture(made):\n    assert made == 1\n\n\ndef test_other():\n    assert B().total([1]) == 1\n\n\n"
        "class TestKept:\n    def setUp(self):\n        self.value = A().helper()\n\n"
        "    def test_kept(self):\n        assert self.value == 1\n"
    )
    ids = ["t.py::test_fixture", "t.py::test_other", "t.py::TestKept::test_kept", "t.py::test_gone", "u.py::test_x"]
    files = {"t.py": tests, "u.py": "def test_x(:\n"}
    # through a fixture, through setUp, and (as they cannot be read) a test not found and a file that does not parse
    assert reaching_tests(files, ids, {"helper", "area"}) == {
        "t.py::test_fixture",
        "t.py::TestKept::test_kept",
        "t.py::test_gone",
        "u.py::test_x",
    }


def test_a_special_methods_examples_are_its_classs() -> None:
    assert _used_as("Calc.__init__") == "Calc" and _used_as("Calc.__eq__") == "Calc"
    assert _used_as("Calc.add") == "add" and _used_as("total") == "total" and _used_as("Calc") == "Calc"


def test_a_round_that_sends_an_earlier_rounds_request_weighs_its_samples_again_with_one_more(tmp_path: Path) -> None:
    """Seen on ClassEval at 9e7c0bc: every second agreement round sent its first round's very request (the step,
    the code file and the tests hidden), threw that round's samples away and drew three more: 2,839 s in 12
    rounds, 2 of which chose a new sample. Its answers are weighed again, against the tests as they are now,
    with one new one; but as many new ones as the first round's when a test the model was told of still fails,
    as it may be removed on them."""
    seen: list[str] = []

    def told(reply: str):
        def answer(messages: list[ModelMessage]):
            seen.append(" ".join(last_user_text(messages).split()))
            return text(reply)

        return answer

    replies = [
        text(fenced(("stats.py", MEAN_BUGGY), ("tests/test_stats.py", RIGHT_TESTS))),
        *[text(fenced(("stats.py", body))) for body in (MEAN, MEAN_LOOP, MEAN_FSUM)],  # one replaces the code
        told(fenced(("tests/test_stats.py", WRONG_TEST))),  # a wrong test added: round 2, the same request
        text(fenced(("stats.py", MEAN_LOOP))),  # its one new sample
        told(fenced(("tests/test_stats.py", WRONG_TEST)) + "\n\nSTEP COMPLETE"),  # told, it keeps test_wrong
    ]
    unit, script, _ = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert "replaced yours" in seen[0]
    assert "- tests/test_stats.py::test_wrong: every one of them fails it with `assert 2.0 == 3`" in seen[1]
    assert outcome.tests_removed == ["tests/test_stats.py::test_wrong"]
    # the step, 3 samples, the added test, 1 new sample (not 3), the test kept: the removal passes the checks
    assert len(script.requests) == 7


def test_a_test_the_model_was_told_of_is_removed_only_on_as_many_new_samples_as_doubted_it(tmp_path: Path) -> None:
    """A review of 0d24ea4: weighing the first round's samples again, a told test was removed after one new sample
    failed it, where three had to. When such a test still fails, the round draws as many new samples as the
    first."""
    first_wrong = "from stats import mean\n\n\ndef test_mean():\n    assert mean([5]) == 5\n"
    first_wrong += "    assert mean([1, 2, 3]) == 3\n"
    second_wrong = first_wrong.replace("== 3", "== 4")
    replies = [
        text(fenced(("stats.py", MEAN), ("tests/test_stats.py", first_wrong))),
        *[text(fenced(("stats.py", body))) for body in (MEAN, MEAN_LOOP, MEAN_FSUM)],
        text(fenced(("tests/test_stats.py", second_wrong))),  # told, the model changes the test, still wrong
        *[text(fenced(("stats.py", body))) for body in (MEAN_FSUM, MEAN, MEAN_LOOP)],  # three new samples
        text("STEP COMPLETE\nstats.py has mean; its test passes."),
    ]
    unit, script, _ = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = run_step(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason
    assert outcome.tests_removed == ["tests/test_stats.py::test_mean: assert mean([1, 2, 3]) == 4"]
    assert len(script.requests) == 9
    told = " ".join(last_user_text(script.requests[-1]).split())
    assert "removed: all 7 implementations" in told, told  # the current code, the 3 samples again and 3 new


ACCOUNT_STEP = Instruction(
    title="Account",
    instruction=(
        "Write account.py with class Account: balance starts at 0; deposit(amount) adds amount to the balance "
        "and returns the new balance; withdraw(amount) takes amount off it. Write tests/test_account.py."
    ),
    requires_tests=True,
)
ACCOUNT = (
    "class Account:\n    def __init__(self):\n        self.balance = 0\n\n"
    '    def deposit(self, amount):\n        """Add amount to the balance and return the new balance."""\n'
    "        self.balance += amount\n        return self.balance\n\n"
    "    def withdraw(self, amount):\n        self.balance -= amount\n"
)
ACCOUNT_TESTS = (
    "from account import Account\n\n\ndef test_deposit():\n    assert Account().deposit(5) == 5\n\n\n"
    "def test_balance():\n    a = Account()\n    a.deposit(5)\n    assert a.balance == 5\n\n\n"
    "def test_withdraw():\n    a = Account()\n    a.deposit(5)\n    a.withdraw(2)\n    assert a.balance == 3\n"
)


ACCOUNT_WRONG_TESTS = (
    ACCOUNT_TESTS + "\n\ndef test_wrong():\n    a = Account()\n    a.deposit(5)\n    assert a.balance == 6\n"
)


def weigh_account(tmp_path: Path, code: str, sample: str) -> tuple[str, FileStore, StepOutcome]:
    """A step that writes ``code`` and the account tests with a wrong one, then gets three samples alike
    (``sample``) and fixes the tests: what the model was told after agreement, the store, and the outcome."""
    seen: list[str] = []

    def fixed(messages: list[ModelMessage]):
        seen.append(last_user_text(messages))
        return text(fenced(("tests/test_account.py", ACCOUNT_TESTS)))

    replies = [
        text(fenced(("account.py", code))),
        text(fenced(("tests/test_account.py", ACCOUNT_WRONG_TESTS))),
        *(text(fenced(("account.py", sample))) for _ in range(3)),
        fixed,
        text("STEP COMPLETE"),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = asyncio.run(unit.run_step(Step("Bank account", 1, 1, ACCOUNT_STEP, "")))
    return (seen[0] if seen else ""), store, outcome


def test_a_sample_with_more_code_problems_than_the_code_is_not_kept_on_the_tests_alone(tmp_path: Path) -> None:
    # Seen on ClassEval_8 at 350e515: four implementations agreed on 2 of 4 tests and replaced the code passing
    # 3, though their deposit() returned nothing where its docstring says it returns the balance: a code problem
    # the step's checks fail on. Here three samples forget that return alike and so agree on the two tests of
    # the balance, over the right code passing three of four (the fourth test is wrong).
    forgetful = ACCOUNT.replace("        return self.balance\n", "")
    told, store, outcome = weigh_account(tmp_path, ACCOUNT, forgetful)
    assert "replaced yours" not in told
    assert "test_wrong" in told  # the wrong test is still the one doubted
    assert store.read_text("account.py") == ACCOUNT
    assert outcome.status is StepStatus.PASSED, outcome.reason


def test_code_with_more_code_problems_than_a_sample_gives_way_to_it_when_the_tests_tie(tmp_path: Path) -> None:
    # Seen on ClassEval_28 at 76d8de1: the code used another method's local variables (undefined names, which
    # the step's checks fail on); a sample without them passed the very tests the code passed, and the tie kept
    # the code, which the step then never mended. Here the code's statement() uses a name only withdraw() has;
    # three samples write it whole, and all four fail the same wrong test.
    statement = (
        '    def statement(self):\n        """The balance as text."""\n        return f"balance {self.balance}"\n'
    )
    clean = ACCOUNT + "\n" + statement
    broken = ACCOUNT + "\n" + statement.replace("self.balance}", "amount}")
    told, store, outcome = weigh_account(tmp_path, broken, clean)
    assert "replaced yours" in told, told
    assert store.read_text("account.py") == clean
    assert outcome.status is StepStatus.PASSED, outcome.reason


def test_the_codes_problems_are_counted_as_a_samples_are(tmp_path: Path) -> None:
    # A sample is counted after the repairs a written file gets; the code, edited in place, may never have had
    # them: its missing import would count against it in a tie that the same code as a sample would win.
    store = FileStore(tmp_path)
    env = ToolEnv(store, SubprocessRunner())
    code = "def load(text):\n    return json.loads(text)\n"
    snapshot = {"store.py": code}
    store.write_text("store.py", code)
    assert problems_with(env, False, snapshot, "store.py") == 1  # json is undefined
    assert problems_with(env, True, snapshot, "store.py") == 0  # the repairs add `import json`
    assert store.read_text("store.py") == code  # counted in a copy: the project is untouched


def test_a_sample_kept_for_one_function_leaves_the_codes_other_functions_as_they_were(tmp_path: Path) -> None:
    # seen on ClassEval_37 at 7e7b24c: a sample kept for the one method whose example it passed also replaced
    # another method that was right with one that was wrong where nothing tested it; each function a sample
    # changes stays as the code had it unless a test or example that tells the two apart reaches it
    mean_buggy = STATS.replace("sum(xs) / len(xs)", "sum(xs) / (len(xs) + 1)")
    total_other = "sum(x for x in xs)"  # passes the same test: nothing tells it from the code's
    sampled = STATS.replace("return sum(xs)\n", f"return {total_other}\n")
    tests = (
        "from stats import mean, total\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
        "def test_total():\n    assert total([1, 2]) == 3\n"
    )
    # the sample's mean, which test_mean tells apart; the code's total
    assert _weighed_once(tmp_path, TWO_FUNCTIONS, mean_buggy, tests, sampled) == STATS


def _weighed_once(tmp_path: Path, step: Instruction, code: str, tests: str, sampled: str) -> str:
    """stats.py after a step whose code fails its tests, weighed once against three samples alike."""
    replies = [
        text(fenced(("stats.py", code))),
        text(fenced(("tests/test_stats.py", tests))),
        *[text(fenced(("stats.py", sampled)))] * 3,
        text("STEP COMPLETE\nstats.py is written."),
    ]
    unit, _, store = make_unit(tmp_path, replies, limits=LIMITS)
    outcome = asyncio.run(unit.run_step(Step("Statistics helpers", 1, 1, step, "")))
    assert outcome.status is StepStatus.PASSED, outcome.reason
    return store.read_text("stats.py")


def test_only_functions_no_telling_evidence_reaches_are_kept_and_never_a_constructor() -> None:
    from l2mac.checks.consensus import unevidenced
    from l2mac.checks.repairs import with_functions_of

    before = (
        "class Cipher:\n    def __init__(self):\n        self.shift = 3\n\n"
        "    def caesar(self, s):\n        return s.upper()\n\n"
        "    def rail(self, s):\n        return s\n\n"
        "    def shout(self, s):\n        return self.caesar(s) + '!'\n"
    )
    after = before.replace("s.upper()", "s.lower()").replace("return s\n", "return s[::-1]\n")
    tests = {"t.py": "from c import Cipher\n\n\ndef test_rail():\n    assert Cipher().rail('ab') == 'ba'\n\n\n"
             "def test_shout():\n    assert Cipher().shout('a') == 'A!'\n"}  # fmt: skip
    # test_rail's outcome differs: rail is the sample's; nothing that differs reaches caesar: the code's stays
    assert unevidenced(before, after, tests, ["t.py::test_rail"], set()) == [("Cipher", "caesar")]
    # a differing test of a function that calls caesar reaches it too; so does a differing example
    assert unevidenced(before, after, tests, ["t.py::test_shout"], set()) == [("Cipher", "rail")]
    assert unevidenced(before, after, tests, [], {"caesar", "rail"}) == []
    # a changed constructor: what every method shares is the sample's, so nothing of the code is kept
    assert unevidenced(before, after.replace("= 3", "= 4"), tests, [], set()) is None
    spliced = with_functions_of(after, before, {("Cipher", "caesar")})
    assert spliced == after.replace("s.lower()", "s.upper()")
    # a stub never goes back over a body
    stubbed = before.replace("return s.upper()", "pass")
    assert with_functions_of(after, stubbed, {("Cipher", "caesar")}) is None


def test_a_function_the_checks_find_a_problem_in_is_the_samples_and_the_rest_stay_the_codes(tmp_path: Path) -> None:
    # seen on ClassEval_37 at 507476a: a sample chosen over the code for having no problem, where the code had one
    # (a name never defined, in one function), was kept whole, as nothing said which function the problem was in
    three = Instruction(
        title="Stats",
        instruction="Write stats.py with mean(xs), total(xs) and count(xs) of a list of numbers; tests/test_stats.py.",
        requires_tests=True,
    )
    code = (
        "def mean(xs):\n    return sum(xs) / (len(xs) + 1)\n\n\n"
        "def total(xs):\n    if not xs:\n        return zero\n    return sum(xs)\n\n\n"  # zero: never defined
        "def count(xs):\n    return len(xs)\n"
    )
    sampled = (
        "def mean(xs):\n    return sum(xs) / len(xs)\n\n\n"
        "def total(xs):\n    if not xs:\n        return 0\n    return sum(xs)\n\n\n"
        "def count(xs):\n    return sum(1 for _ in xs)\n"  # nothing tells it from the code's
    )
    tests = (
        "from stats import count, mean, total\n\n\ndef test_mean():\n    assert mean([1, 2, 3]) == 2\n\n\n"
        "def test_total():\n    assert total([1, 2]) == 3\n\n\ndef test_count():\n    assert count([4, 5]) == 2\n"
    )
    assert _weighed_once(tmp_path, three, code, tests, sampled) == sampled.replace("sum(1 for _ in xs)", "len(xs)")
