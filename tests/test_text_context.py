"""The text protocol goes beyond one context window, as the tool protocol does: a file that is not shown can be
read by range, and a step whose context fills summarises, restarts from the summary and completes."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pydantic_ai.messages import ModelMessage, ModelResponse

from l2mac.checks.demands import example_values, missing_definitions
from l2mac.checks.runner import SubprocessRunner
from l2mac.context import ContextBudget
from l2mac.control import ControlUnit, Step, StepLimits
from l2mac.control.text import TEXT
from l2mac.domains import load_domain
from l2mac.models.client import ModelClient
from l2mac.models.scripted import Reply, ScriptedModel, last_user_text, text
from l2mac.record import RunRecord
from l2mac.store import FileStore
from l2mac.tools import Toolbox, ToolEnv, tools_named
from l2mac.types import Instruction, StepStatus

BIG = "\n".join(f"LINE_{i} = {i}" for i in range(700)) + "\n"  # ~10k characters: more than the files' share
STEP = Instruction(
    title="Greeting", instruction="Write greet.py with greet(name) returning 'hi ' + name.", requires_tests=False
)
GREET = (
    "greet.py\n```python\ndef greet(name):\n    return 'hi ' + name\n```\n\nSTEP COMPLETE: greet.py has greet(name)."
)


def make_unit(tmp_path: Path, replies: list[Reply], window: int) -> tuple[ControlUnit, ScriptedModel, FileStore]:
    script = ScriptedModel(list(replies))
    store = FileStore(tmp_path / "proj")
    domain = load_domain("codebase")
    env = ToolEnv(store=store, runner=SubprocessRunner(), max_output_chars=4000)
    unit = ControlUnit(
        ModelClient(script.model),
        Toolbox(tools_named(domain.tools), env),
        domain,
        ContextBudget(window=window, reply=200, margin=0.1),
        protocol=TEXT,
        limits=StepLimits(max_turns=12),
        record=RunRecord(store.root),
    )
    return unit, script, store


def run(unit: ControlUnit, instruction: Instruction = STEP) -> object:
    return asyncio.run(unit.run_step(Step("Greet people", 1, 1, instruction, "")))


def test_a_file_that_is_not_shown_is_read_by_range_in_the_next_context(tmp_path: Path) -> None:
    def wrote_after_reading(messages: list[ModelMessage]) -> ModelResponse:
        prompt = last_user_text(messages)
        assert "LINE_650 = 650" in prompt and "LINE_600 = 600" not in prompt  # just the range asked for
        return text(GREET)

    unit, script, store = make_unit(tmp_path, [text("READ big.py:640-660"), wrote_after_reading], window=8000)
    store.write_text("big.py", BIG)
    outcome = run(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason  # type: ignore[attr-defined]
    first = last_user_text(script.requests[0])
    assert "big.py (700 lines, not shown)" in first and "LINE_650" not in first
    assert "can be read: answer with one line, READ" in first and "READ big.py:1-60" in first
    assert outcome.check_failures == 0  # type: ignore[attr-defined]  # reading is not a failed attempt


def test_a_text_step_whose_context_fills_summarises_restarts_and_completes(tmp_path: Path) -> None:
    reads = iter(["READ big.py:1-180", "READ big.py:181-360", "READ big.py:361-540", "READ big.py:541-700"])

    def player(messages: list[ModelMessage]) -> ModelResponse:
        prompt = last_user_text(messages)
        if "context is nearly full" in prompt:
            return text("Read big.py up to line 540: constants LINE_0 to LINE_539. Left: write greet.py.")
        if "Your progress so far" in prompt:  # the fresh context after the restart: the summary, no old reads
            assert "Read big.py up to line 540" in prompt and "What you asked to read" not in prompt
            return text(GREET)
        return text(next(reads))

    unit, _, store = make_unit(tmp_path, [player] * 8, window=4000)
    store.write_text("big.py", BIG)
    outcome = run(unit)
    assert outcome.status is StepStatus.PASSED, outcome.reason  # type: ignore[attr-defined]
    assert outcome.context_restarts == 1  # type: ignore[attr-defined]
    assert store.read_text("greet.py").startswith("def greet(name):")
    log = [json.loads(line) for line in (store.root / ".l2mac" / "log.jsonl").read_text().splitlines()]
    assert [e["restarts"] for e in log if e["kind"] == "context_restart"] == [1]


def test_a_step_whose_fresh_context_cannot_fit_fails_after_its_restarts_and_says_why(tmp_path: Path) -> None:
    # a window smaller than the step's own prompt: restarting cannot help, and the step must not loop
    unit, script, _ = make_unit(tmp_path, [text("what I did so far")] * 10, window=600)
    outcome = run(unit)
    assert outcome.status is StepStatus.FAILED  # type: ignore[attr-defined]
    assert outcome.reason == "context filled 4 times" and outcome.context_restarts == 3  # type: ignore[attr-defined]
    assert script.tool_names[:3] == [[], [], []]  # only summaries were asked for: no step request was sent


def test_names_a_file_imports_are_never_demanded_as_definitions() -> None:
    instruction = (
        "Write app.py with create_app() returning Flask(__name__), an index() view answering "
        "jsonify(Counter(words)) and render_template('index.html'), and add_note(text) making Note(text) "
        "from notes.py."
    )
    sources = {
        "app.py": "from collections import Counter\n\nfrom flask import Flask, jsonify, render_template\n\n"
        "from notes import Note\n\n\ndef create_app():\n    return Flask(__name__)\n\n\ndef index():\n"
        "    return jsonify(Counter('ab'))\n\n\ndef add_note(text):\n    return Note(text)\n",
        "notes.py": "class Note:\n    def __init__(self, text):\n        self.text = text\n",
    }
    assert missing_definitions(instruction, sources) == []
    # what neither a module imports nor the project defines is still the step's to write
    assert missing_definitions(instruction + " Write summary(notes).", sources) == ["summary"]


def test_a_step_whose_file_imports_the_names_it_mentions_passes(tmp_path: Path) -> None:
    step = Instruction(
        title="Report",
        instruction="Write report.py with tally(words: list[str]) -> dict[str, int] using Counter(words), and "
        "first_word(words) returning Word(words[0]) from words.py.",
        requires_tests=False,
    )
    report = (
        "report.py\n```python\nfrom collections import Counter\n\nfrom words import Word\n\n\n"
        "def tally(words: list[str]) -> dict[str, int]:\n    return dict(Counter(words))\n\n\n"
        "def first_word(words: list[str]) -> Word:\n    return Word(words[0])\n```\n\nSTEP COMPLETE: report.py."
    )
    unit, script, store = make_unit(tmp_path, [text(report)], window=16000)
    store.write_text("words.py", "class Word:\n    def __init__(self, text: str) -> None:\n        self.text = text\n")
    outcome = run(unit, step)
    assert outcome.status is StepStatus.PASSED, outcome.reason  # type: ignore[attr-defined]
    assert len(script.requests) == 1  # passed at once: Counter and Word were never asked for
    assert "READ" not in last_user_text(script.requests[0])  # every file is shown: ranged reads go unmentioned


def test_a_step_that_is_the_whole_task_shows_it_once(tmp_path: Path) -> None:
    # Seen on ClassEval: the one step of a one-skeleton task is the task, and every prompt held the class's
    # docstrings twice (472-876 of its 1,765-3,001 tokens, twice)
    task = "Write greet.py with greet(name) returning 'hi ' + name. " + "Say hi to everyone by name. " * 20
    whole = Instruction(title="Greeting", instruction=task, requires_tests=False)
    for instruction in (whole, STEP):
        unit, script, _ = make_unit(tmp_path / str(instruction is whole), [text(GREET)], window=8000)
        asyncio.run(unit.run_step(Step(task, 1, 1, instruction, "")))
        prompt = last_user_text(script.requests[0])
        assert prompt.count("Say hi to everyone by name.") == 20  # once as the step, or once as the task
        assert ("(the whole task is the current step, below)" in prompt) is (instruction is whole)


def test_the_prompts_example_of_an_import_is_a_code_files_even_when_a_test_file_is_asked_for() -> None:
    # seen on an soa draft step: asked for tests/test_solution.py, the system prompt's example of an import
    # was `from tests.test_solution import ...`
    instruction = "Write solution.py with class Stack, and tests in tests/test_solution.py."
    assert example_values(instruction, "codebase", "tests/test_solution.py") == {
        "example_path": "tests/test_solution.py",
        "example_module": "solution",
    }
    assert example_values(instruction, "codebase")["example_module"] == "solution"
    assert example_values("Write tests/test_x.py.", "codebase", "tests/test_x.py")["example_module"] == "main"
