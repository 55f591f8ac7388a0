"""The control unit's step loop against scripted models: bad calls, repeats, context overflow, failed checks."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelMessage, ModelRequest, ModelResponse, SystemPromptPart, UserPromptPart

from l2mac.checks.runner import SubprocessRunner
from l2mac.context import ContextBudget
from l2mac.control import ControlUnit, Step, StepLimits
from l2mac.domains import load_domain
from l2mac.models.client import ModelClient
from l2mac.models.scripted import ScriptedModel, call, calls, last_tool_return, last_user_text, text
from l2mac.store import FileStore
from l2mac.tools import Toolbox, ToolEnv, tools_named
from l2mac.types import Instruction

STEP = Instruction(title="Greeting module", instruction="Write greet.py with greet(name).", requires_tests=False)
#: a step that names no file or function, for scripts that write whatever they like (a.py)
FREE = Instruction(title="Module a", instruction="Work on module a.", requires_tests=False)


def make_unit(
    tmp_path: Path, replies: list, *, window: int = 16000, limits: StepLimits | None = None, run_tests: bool = False
) -> tuple[ControlUnit, ScriptedModel, FileStore]:
    script = ScriptedModel(list(replies))
    store = FileStore(tmp_path / "proj")
    domain = load_domain("codebase")
    env = ToolEnv(store=store, runner=SubprocessRunner(), max_output_chars=4000)
    unit = ControlUnit(
        ModelClient(script.model),
        Toolbox(tools_named(domain.tools), env),
        domain,
        ContextBudget(window=window, reply=200, margin=0.1),
        limits=limits,
        run_tests=run_tests,
    )
    return unit, script, store


def run_step(unit: ControlUnit, instruction: Instruction = STEP, summary: str = "") -> object:
    return asyncio.run(unit.run_step(Step("Build a greeter", 1, 1, instruction, summary)))


def test_malformed_unknown_and_invalid_calls_are_answered_and_the_step_goes_on(tmp_path: Path) -> None:
    replies = [
        call("write_files", '{"files": [{"path": "greet.py", "content": "x"'),  # truncated JSON
        call("make_coffee", {"size": "large"}),  # unknown tool
        call("write_files", {"files": [{"path": "greet.py"}]}),  # content missing
        call("edit_file", {"path": "nope.py", "old_text": "a", "new_text": "b"}),  # no such file
        call("write_files", {"files": [{"path": "../outside.py", "content": "x = 1\n"}]}),  # escapes
        call("write_files", {"files": [{"path": "/etc/passwd", "content": "x"}]}),  # absolute
        call("write_files", {"files": [{"path": "greet.py", "content": "def greet(n):\n    return 'hi ' + n\n"}]}),
        call("step_complete", {"summary": "greet.py: greet(name)"}),
    ]
    unit, script, store = make_unit(tmp_path, replies)
    outcome = run_step(unit)
    answers = [last_tool_return(r) for r in script.requests[1:7]]
    assert "not valid JSON" in answers[0] and '"files"' in answers[0]  # the schema is shown
    assert "unknown tool 'make_coffee'" in answers[1] and "write_files" in answers[1]
    assert "files.0.content" in answers[2] and "Field required" in answers[2]
    assert "no such file" in answers[3]
    assert "'..' is refused" in answers[4]
    assert "absolute paths are refused" in answers[5]
    assert not (tmp_path / "outside.py").exists()
    assert outcome.passed and store.list_files() == ["greet.py"]
    assert outcome.files_written == ["greet.py"]


def test_edit_file_that_matches_zero_or_two_times_is_answered(tmp_path: Path) -> None:
    replies = [
        call("write_files", {"files": [{"path": "a.py", "content": "x = 1\nx = 1\n"}]}),
        call("edit_file", {"path": "a.py", "old_text": "y = 2", "new_text": "y = 3"}),
        call("edit_file", {"path": "a.py", "old_text": "x = 1", "new_text": "x = 2"}),
        call("edit_file", {"path": "a.py", "old_text": "x = 1\nx = 1", "new_text": "x = 1\nx = 2"}),
        call("step_complete", {"summary": "a.py"}),
    ]
    unit, script, store = make_unit(tmp_path, replies)
    assert run_step(unit, FREE).passed
    assert "was not found" in last_tool_return(script.requests[2])
    assert "occurs 2 times" in last_tool_return(script.requests[3])
    assert store.read_text("a.py") == "x = 1\nx = 2\n"


def test_repeated_identical_call_is_detected_until_something_changes(tmp_path: Path) -> None:
    replies = [
        call("write_files", {"files": [{"path": "a.py", "content": "A = 1\n"}]}),
        call("view_files", {"files": [{"path": "a.py"}]}),
        call("view_files", {"files": [{"path": "a.py"}]}),  # same call, nothing changed
        call("write_files", {"files": [{"path": "a.py", "content": "A = 2\n"}]}),
        call("view_files", {"files": [{"path": "a.py"}]}),  # same call, but the file changed
        call("step_complete", {"summary": "a.py"}),
    ]
    unit, script, _ = make_unit(tmp_path, replies)
    assert run_step(unit, FREE).passed
    assert "A = 1" in last_tool_return(script.requests[2])
    assert "already made this exact call" in last_tool_return(script.requests[3])
    fresh = last_tool_return(script.requests[5])
    assert "A = 2" in fresh and "already made" not in fresh


def test_answer_without_tool_call_is_nudged(tmp_path: Path) -> None:
    replies = [
        text("Sure! Here is how I would do it..."),
        call("write_files", {"files": [{"path": "greet.py", "content": "def greet(n):\n    return n\n"}]}),
        call("step_complete", {"summary": "greet"}),
    ]
    unit, script, _ = make_unit(tmp_path, replies)
    assert run_step(unit).passed
    assert "without calling a tool" in last_user_text(script.requests[1])


def test_context_overflow_summarises_and_restarts_the_step_which_then_completes(tmp_path: Path) -> None:
    big = "\n".join(f"LINE_{i} = {i}" for i in range(700))  # ~10k characters, ~3k tokens

    def summary_answer(messages: list[ModelMessage]) -> ModelResponse:
        assert "context is nearly full" in last_user_text(messages)
        return text("Wrote big.py with 700 constants. Left: write greet.py.")

    def after_restart(messages: list[ModelMessage]) -> ModelResponse:
        # a fresh context: system+step prompt holding the progress summary, no old tool output
        assert len(messages) == 1
        prompt = messages[0].parts[1].content
        assert "Wrote big.py with 700 constants" in prompt and "LINE_5 = 5" not in prompt
        return call("write_files", {"files": [{"path": "greet.py", "content": "def greet(n):\n    return n\n"}]})

    replies = [
        call("write_files", {"files": [{"path": "big.py", "content": big}]}),
        call("view_files", {"files": [{"path": "big.py"}]}),
        call("view_files", {"files": [{"path": "big.py", "start_line": 300}]}),
        summary_answer,
        after_restart,
        call("step_complete", {"summary": "big.py and greet.py"}),
    ]
    unit, script, store = make_unit(tmp_path, replies, window=6000)
    outcome = run_step(unit)
    assert outcome.passed
    assert outcome.context_restarts == 1
    assert store.list_files() == ["big.py", "greet.py"]
    assert script.tool_names[3] == []  # the summary call offers no tools


def test_step_fails_when_context_keeps_overflowing(tmp_path: Path) -> None:
    big = "x = '" + "a" * 9000 + "'\n"
    replies = [call("write_files", {"files": [{"path": f"f{i}.py", "content": big}]}) for i in range(1)]
    replies += [
        call("view_files", {"files": [{"path": "f0.py"}]}),
        text("summary 1"),
        call("view_files", {"files": [{"path": "f0.py"}]}),
        text("summary 2"),
        text("final summary"),
    ]
    unit, _, _ = make_unit(tmp_path, replies, window=3000, limits=StepLimits(max_context_restarts=1))
    outcome = run_step(unit)
    assert not outcome.passed and "context filled" in outcome.reason
    assert outcome.context_restarts == 1


def test_turn_budget_fails_the_step(tmp_path: Path) -> None:
    replies = [call("list_files", {}), call("view_files", {"files": [{"path": "x"}]})]
    unit, script, _ = make_unit(tmp_path, replies, limits=StepLimits(max_turns=2))
    outcome = run_step(unit)
    assert not outcome.passed and "turn budget" in outcome.reason and script.remaining == 0
    assert (
        outcome.summary
        == "(The previous step did not pass: turn budget spent (2 model calls).) The files it changed hold:\n(none)"
    )


def test_step_complete_is_refused_while_code_has_errors(tmp_path: Path) -> None:
    replies = [
        call("write_files", {"files": [{"path": "a.py", "content": "def f():\n    return undefined_thing\n"}]}),
        call("step_complete", {"summary": "a"}),
        call("write_files", {"files": [{"path": "a.py", "content": "def f():\n    return 1\n"}]}),
        call("step_complete", {"summary": "a"}),
    ]
    unit, script, _ = make_unit(tmp_path, replies)
    outcome = run_step(unit, FREE)
    assert "F821" in last_tool_return(script.requests[1])  # flagged right after the write
    assert "checks failed" in last_tool_return(script.requests[2])
    assert outcome.passed and outcome.check_failures == 1


def _same_problem_again(attempts: int) -> list:
    """A model that rewrites its file each time (two spellings, so no call repeats) with the same undefined name."""
    bodies = ["def f():\n    return undefined_thing\n", "def f():\n    value = undefined_thing\n    return value\n"]
    replies: list = []
    for i in range(attempts):
        replies += [
            call("write_files", {"files": [{"path": "a.py", "content": bodies[i % 2]}]}),
            call("step_complete", {"summary": "a"}),
        ]
    return [*replies, text("a.py: f, still failing")]


def test_a_step_whose_checks_come_no_closer_ends_early_with_its_best_files(tmp_path: Path) -> None:
    limits = StepLimits(max_turns=40, max_check_failures=8, max_stalled=3)
    unit, _, store = make_unit(tmp_path, _same_problem_again(9), limits=limits)
    outcome = run_step(unit, FREE)
    assert not outcome.passed and "no closer to passing in 3 attempts" in outcome.reason
    assert outcome.check_failures == 4  # the first failure, then three that came no closer
    assert "undefined_thing" in store.read_text("a.py")  # the files are the step's (kept), not lost


def test_a_stuck_step_runs_to_its_failure_limit_when_stall_detection_is_off(tmp_path: Path) -> None:
    limits = StepLimits(max_turns=40, max_check_failures=8, max_stalled=0)
    unit, _, _ = make_unit(tmp_path, _same_problem_again(9), limits=limits)
    outcome = run_step(unit, FREE)
    assert not outcome.passed and outcome.check_failures == 9 and "after 9 attempts" in outcome.reason


def test_fixing_part_of_the_problems_counts_as_progress(tmp_path: Path) -> None:
    two = "def f():\n    return undefined_a + undefined_b\n"
    one = ["def f():\n    return undefined_a\n", "def f():\n    x = undefined_a\n    return x\n"]
    replies = [
        call("write_files", {"files": [{"path": "a.py", "content": two}]}),
        call("step_complete", {"summary": "a"}),
    ]
    replies += [
        call("write_files", {"files": [{"path": "a.py", "content": two + "\n"}]}),
        call("step_complete", {"summary": "a"}),
    ]
    for i in range(4):
        replies += [
            call("write_files", {"files": [{"path": "a.py", "content": one[i % 2]}]}),
            call("step_complete", {"summary": "a"}),
        ]
    limits = StepLimits(max_turns=40, max_check_failures=8, max_stalled=3)
    unit, _, _ = make_unit(tmp_path, [*replies, text("a.py")], limits=limits)
    outcome = run_step(unit, FREE)
    # 2 problems, 2 (stalled 1), 1 (closer: the count starts again), then 3 more with 1: ended at the 6th
    assert "no closer" in outcome.reason and outcome.check_failures == 6


def test_step_requiring_tests_is_refused_when_none_are_collected(tmp_path: Path) -> None:
    needs_tests = Instruction(title="T", instruction="write code and tests", requires_tests=True)
    replies = [
        call("write_files", {"files": [{"path": "a.py", "content": "A = 1\n"}]}),
        call("step_complete", {"summary": "a"}),
        calls(
            (
                "write_files",
                {
                    "files": [
                        {
                            "path": "tests/test_a.py",
                            "content": "from a import A\n\n\ndef test_a():\n    assert A == 1\n",
                        }
                    ]
                },
            ),
            ("step_complete", {"summary": "a with tests"}),
        ),
    ]
    unit, script, _ = make_unit(tmp_path, replies, run_tests=True)
    outcome = run_step(unit, needs_tests)
    assert "No tests were collected" in last_tool_return(script.requests[2])
    assert outcome.passed and outcome.summary == "a with tests"


@pytest.mark.parametrize("margin", [0.1, 0.5])
def test_budget_limit_leaves_margin_and_reply_room(margin: float) -> None:
    b = ContextBudget(window=10000, reply=1000, margin=margin)
    assert b.limit == int(10000 * (1 - margin)) - 1000
    assert b.fits([ModelRequest(parts=[UserPromptPart("short")])])


def test_the_tool_protocols_examples_name_the_steps_own_file_not_a_fixed_one(tmp_path: Path) -> None:
    # Seen in bench/recoveries.py: with `e.g. 'app/models.py'` in the write_files schema and `from app.models
    # import User` in the system prompt, a 1.5B model wrote app/models.py in 4 of 6 tasks whose steps named
    # password.py, stack.py, ...
    step = Instruction(title="Password", instruction="Write password.py with strength(p: str) -> str.")
    replies = [
        call("write_files", {"files": [{"path": "password.py", "content": "def strength(p):\n    return 'weak'\n"}]}),
        call("step_complete", {"summary": "password.py"}),
    ]
    unit, script, _ = make_unit(tmp_path, replies)
    assert run_step(unit, step).passed
    first = script.requests[0][0]
    assert isinstance(first, ModelRequest)
    system = "\n".join(str(p.content) for p in first.parts if isinstance(p, SystemPromptPart))
    assert "from password import ..." in system
    assert "app.models" not in system and "$example" not in system
    schemas = [t.parameters_json_schema for t in unit.toolbox.definitions()]
    assert "write_files" in {t.name for t in unit.toolbox.definitions()}
    assert "app/models.py" not in json.dumps(schemas)


def test_a_rewritten_test_file_that_passes_more_counts_as_progress(tmp_path: Path) -> None:
    code = "def f(x):\n    return x + 1\n"

    def tests(*expected: int) -> str:
        body = "".join(f"\n\ndef test_{i}():\n    assert f({i}) == {e}\n" for i, e in enumerate(expected))
        return "from a import f\n" + body

    replies: list = [call("write_files", {"files": [{"path": "a.py", "content": code}]})]
    for expected in [(9, 9, 3), (1, 9, 3), (1, 2, 9), (1, 9, 9)]:  # 2 fail, 1, 1 (other tests), 2
        replies += [
            call("write_files", {"files": [{"path": "tests/test_a.py", "content": tests(*expected)}]}),
            call("step_complete", {"summary": "a"}),
        ]
    needs_tests = Instruction(title="A", instruction="Write a.py with f and its tests.", requires_tests=True)
    limits = StepLimits(max_turns=40, max_check_failures=8, max_stalled=1)
    unit, _, _ = make_unit(tmp_path, [*replies, text("a.py")], limits=limits, run_tests=True)
    outcome = run_step(unit, needs_tests)
    # other tests with fewer failing are closer; the same count with other tests again is not
    assert "no closer" in outcome.reason and outcome.check_failures == 3
