"""The control unit: runs one instruction in a fresh context, as in the L2MAC paper.

Each step starts from the system prompt, the instruction, the file list and the previous step's summary. The
tool loop runs until the model calls ``step_complete`` *and* the checks pass. Before the context fills, the model
summarises its progress and the step restarts from that summary. A step that spends its budget of turns, check
failures or restarts is recorded as failed, never as passed.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field, replace
from functools import partial

from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    SystemPromptPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from l2mac.checks.litter import hard_coded, move_under_tmp_path
from l2mac.checks.output import trim_output
from l2mac.checks.python import is_test_file, module_name
from l2mac.checks.repairs import python_files, rewrite
from l2mac.checks.tests import TestRun, run_tests
from l2mac.context import ContextBudget
from l2mac.demands import example_path
from l2mac.domains import Domain
from l2mac.events import EventSink, ToolUsed, ignore
from l2mac.models.client import ContextOverflow, ModelClient
from l2mac.record import RunRecord
from l2mac.recovery import recover_arguments, recover_tool_calls
from l2mac.tools import STEP_COMPLETE, Toolbox
from l2mac.tools.complete import StepCompleteArgs
from l2mac.types import Instruction, StepOutcome, StepStatus, ToolResult


@dataclass(frozen=True)
class StepLimits:
    max_turns: int = 40
    max_check_failures: int = 4
    max_context_restarts: int = 3
    #: text protocol: implementations sampled, when the tests fail, to tell a wrong test from wrong code (0: off)
    samples: int = 0
    #: text protocol: such agreement rounds per step
    max_agreement_rounds: int = 2


@dataclass(frozen=True)
class Step:
    """One instruction with what its fresh context needs from outside."""

    task: str
    index: int
    total: int
    instruction: Instruction
    previous_summary: str


@dataclass
class _State:
    messages: list[ModelMessage]
    turns: int = 0
    restarts: int = 0
    check_failures: int = 0
    reported_input: int = 0
    start_revision: int = 0
    seen: dict[tuple[str, str, int], str] = field(default_factory=dict)
    tests_removed: list[str] = field(default_factory=list)


class ControlUnit:
    def __init__(
        self,
        client: ModelClient,
        toolbox: Toolbox,
        domain: Domain,
        budget: ContextBudget,
        *,
        limits: StepLimits | None = None,
        run_tests: bool = True,
        record: RunRecord | None = None,
        emit: EventSink = ignore,
        recover: bool = True,
    ) -> None:
        self.client = client
        self.toolbox = toolbox
        self.domain = domain
        self.budget = budget
        self.limits = limits or StepLimits()
        self.run_tests = run_tests and domain.tests
        self.record = record
        self.emit = emit
        self.recover = recover

    # -- context -----------------------------------------------------------------------------------------
    def step_values(self, step: Step, progress: str = "") -> dict[str, object]:
        """What every step prompt is filled with: the task, the step, the previous summary, any progress."""
        return {
            "task": step.task,
            "index": step.index,
            "total": step.total,
            "title": step.instruction.title,
            "instruction": step.instruction.instruction,
            "previous_summary": step.previous_summary or "(this is the first step)",
            "progress": self.domain.render("progress", summary=progress) if progress else "",
        }

    def fresh_context(self, step: Step, progress: str = "") -> list[ModelMessage]:
        files = self.toolbox.env.store.list_files()
        listing = "\n".join(f"- {f}" for f in files[:300]) or "(none yet)"
        prompt = self.domain.render("step", **self.step_values(step, progress), files=listing)
        system = self.domain.render("step_system", **self.example_values(step))
        return [ModelRequest(parts=[SystemPromptPart(system), UserPromptPart(prompt)])]

    def example_values(self, step: Step, focus: str | None = None) -> dict[str, str]:
        """What the prompts' examples show: ``focus`` (the file asked for) or else a file the step names, since
        a small model writes whatever path an example shows."""
        example = focus or example_path(step.instruction.instruction, self.domain.name)
        return {"example_path": example, "example_module": module_name(example) if example.endswith(".py") else "main"}

    async def _plain_answer(self, messages: list[ModelMessage], prompt_key: str, purpose: str) -> str:
        """Ask for a text answer (no tools) after ``messages``; used for summaries."""
        request = [*messages, ModelRequest(parts=[UserPromptPart(self.domain.render(prompt_key))])]
        while len(request) > 2 and not self.budget.fits(request):
            # drop the oldest exchange after the step prompt so the question itself fits
            # (a response and the request answering it, so tool calls and their returns stay paired)
            del request[1:3]
        response = await self.client.request(request, [], purpose=purpose)
        return (response.text or "").strip()

    async def _restart(self, step: Step, state: _State) -> None:
        try:
            summary = await self._plain_answer(state.messages, "summarise", f"step {step.index}: summarise")
        except ContextOverflow:
            summary = ""
        state.restarts += 1
        state.messages = self.fresh_context(step, summary or "(no summary could be made; check the files)")
        state.seen.clear()
        state.reported_input = 0
        self.log("context_restart", step=step.index, restarts=state.restarts)

    # -- checks ------------------------------------------------------------------------------------------
    def _run_checks(self, step: Step) -> tuple[bool, str]:
        env = self.toolbox.env
        problems: list[str] = []
        if env.python_checks:
            issues = [i for i in env.check_files(env.store.list_files()) if i.blocking]
            if issues:
                problems.append("Code problems:\n" + "\n".join(str(i) for i in issues[:30]))
        has_tests = any(is_test_file(f) and not f.endswith("conftest.py") for f in env.store.list_files())
        if self.run_tests and (step.instruction.requires_tests or has_tests):
            outcome = run_tests(env.runner, env.store.root, env.test_timeout_s)
            if outcome.litter and self.recover and self._move_litter_under_tmp_path(step, list(outcome.litter)):
                outcome = run_tests(env.runner, env.store.root, env.test_timeout_s)
            if outcome.status == "no_tests":
                problems.append(
                    "No tests were collected, but this step must leave pytest tests "
                    "(files named tests/test_*.py with functions named test_*)."
                )
            elif not outcome.ok:
                blame, outcome = self._blame_hard_coded_files(outcome)
                problems.append(blame + outcome.report(env.max_output_chars))
        return not problems, "\n\n".join(problems)

    def _move_litter_under_tmp_path(self, step: Step, left: list[str]) -> bool:
        """Tests that left ``left`` in the project write them under tmp_path instead; whether any changed."""
        store = self.toolbox.env.store
        changed = False
        for path in [p for p in store.list_files() if is_test_file(p) and p.endswith(".py")]:
            if rewrite(store, path, partial(move_under_tmp_path, left=left)):
                self.log("recovered", step=step.index, recovery="test_files_moved_to_tmp_path", path=path, files=left)
                changed = True
        return changed

    def _blame_hard_coded_files(self, outcome: TestRun) -> tuple[str, TestRun]:
        """When the code itself writes a file the tests left (``save("todos.json")``), say so, and drop that
        file from the report's note blaming the tests (seen: eight reports told the model its tests wrote
        todos.json while the tests used tmp_path and core.py wrote it)."""
        if not outcome.litter or "hard_coded_data_file" not in self.domain.prompts:
            return "", outcome
        found = hard_coded(python_files(self.toolbox.env.store), list(outcome.litter))
        if not found:
            return "", outcome
        notes = [self.domain.render("hard_coded_data_file", path=p, line=n, name=f) for p, n, f in found[:3]]
        by_code = {f for _, _, f in found}
        return "\n".join(notes) + "\n", replace(outcome, litter=tuple(f for f in outcome.litter if f not in by_code))

    # -- the step ----------------------------------------------------------------------------------------
    async def run_step(self, step: Step) -> StepOutcome:
        state = _State(messages=self.fresh_context(step), start_revision=self.toolbox.env.store.revision)
        tools = self.toolbox.definitions()
        while True:
            if state.turns >= self.limits.max_turns:
                return await self._fail(step, state, f"turn budget spent ({self.limits.max_turns} model calls)")
            if not self.budget.fits(state.messages, state.reported_input):
                if state.restarts >= self.limits.max_context_restarts:
                    return await self._fail(step, state, f"context filled {state.restarts + 1} times")
                await self._restart(step, state)
                continue
            try:
                response = await self.client.request(state.messages, tools, purpose=f"step {step.index}")
            except ContextOverflow:
                if state.restarts >= self.limits.max_context_restarts:
                    return await self._fail(step, state, "the provider reported a context overflow")
                await self._restart(step, state)
                continue
            state.turns += 1
            state.reported_input = response.usage.input_tokens + response.usage.output_tokens
            state.messages.append(response)
            if self.recover:
                response = state.messages[-1] = self._recover_arguments(step, response)
            if not response.tool_calls and self.recover:
                recovered = recover_tool_calls(response)
                if recovered is not None:
                    self.log("recovered", step=step.index, recovery="fenced_code_to_write_files")
                    response = state.messages[-1] = recovered
            if not response.tool_calls:
                nudge = self.domain.render("cut_off" if response.finish_reason == "length" else "no_tool_call")
                state.messages.append(ModelRequest(parts=[UserPromptPart(nudge)]))
                continue
            parts, completed_with = await self._answer_calls(step, state, response)
            state.messages.append(ModelRequest(parts=parts))
            if completed_with is not None:
                return self._outcome(step, state, StepStatus.PASSED, completed_with)
            if state.check_failures > self.limits.max_check_failures:
                return await self._fail(
                    step, state, f"checks still failing after {state.check_failures} attempts to complete"
                )

    def _recover_arguments(self, step: Step, response: ModelResponse) -> ModelResponse:
        """Tool calls whose arguments are a Python-style literal instead of JSON, re-encoded as JSON."""
        fixed = False
        parts: list[ModelResponsePart] = []
        for part in response.parts:
            if isinstance(part, ToolCallPart) and isinstance(part.args, str):
                args = recover_arguments(part.args)
                if args is not None:
                    part = ToolCallPart(part.tool_name, args, tool_call_id=part.tool_call_id)
                    fixed = True
                    self.log("recovered", step=step.index, recovery="literal_arguments_to_json")
            parts.append(part)
        return replace(response, parts=parts) if fixed else response

    async def _answer_calls(
        self, step: Step, state: _State, response: ModelResponse
    ) -> tuple[list[ModelRequestPart], str | None]:
        parts: list[ModelRequestPart] = []
        completed_with: str | None = None
        for call in response.tool_calls:
            if call.tool_name == STEP_COMPLETE:
                result, summary = await self._complete(step, state, call)
                if summary is not None:
                    completed_with = summary
            else:
                result = await self._call_tool(state, call)
            if not result.ok and response.finish_reason == "length":  # truncated arguments, most likely
                result = ToolResult(self.domain.render("cut_off") + "\n" + result.content, ok=False)
            self.emit(ToolUsed(step.index, call.tool_name, result.ok))
            self.log(
                "tool_call",
                step=step.index,
                tool=call.tool_name,
                ok=result.ok,
                args=_short(call.args),
                result=result.content[:300],
            )
            parts.append(ToolReturnPart(call.tool_name, result.content, tool_call_id=call.tool_call_id))
        return parts, completed_with

    async def _call_tool(self, state: _State, call: ToolCallPart) -> ToolResult:
        store = self.toolbox.env.store
        key = (call.tool_name, _canonical(call.args), store.revision)
        if key in state.seen:
            return ToolResult(self.domain.render("repeated_call", result=state.seen[key][:800]), ok=False)
        result = await asyncio.to_thread(self.toolbox.call, call.tool_name, call.args)
        result = ToolResult(trim_output(result.content, self.toolbox.env.max_output_chars), result.ok)
        state.seen[(call.tool_name, _canonical(call.args), store.revision)] = result.content
        return result

    async def _complete(self, step: Step, state: _State, call: ToolCallPart) -> tuple[ToolResult, str | None]:
        args = self.toolbox.validate(STEP_COMPLETE, call.args)
        if isinstance(args, ToolResult):
            return args, None
        assert isinstance(args, StepCompleteArgs)
        ok, report = await asyncio.to_thread(self._run_checks, step)
        self.log("checks", step=step.index, ok=ok, report=report[:2000])
        if ok:
            return ToolResult("All checks passed. The step is complete."), args.summary
        state.check_failures += 1
        text = self.domain.render(
            "checks_failed",
            attempt=state.check_failures,
            max_attempts=self.limits.max_check_failures + 1,
            report=report,
        )
        return ToolResult(text, ok=False), None

    # -- endings -----------------------------------------------------------------------------------------
    def _outcome(self, step: Step, state: _State, status: StepStatus, summary: str, reason: str = "") -> StepOutcome:
        return StepOutcome(
            index=step.index,
            title=step.instruction.title,
            status=status,
            summary=summary,
            reason=reason,
            turns=state.turns,
            context_restarts=state.restarts,
            check_failures=state.check_failures,
            files_written=self.toolbox.env.store.changed_since(state.start_revision),
            tests_removed=list(state.tests_removed),
        )

    async def _fail(self, step: Step, state: _State, reason: str) -> StepOutcome:
        try:
            summary = await self._plain_answer(state.messages, "step_summary", f"step {step.index}: summary")
        except ContextOverflow:
            summary = ""
        summary = f"(The previous step did not pass: {reason}.) {summary}".strip()
        return self._outcome(step, state, StepStatus.FAILED, summary, reason)

    def log(self, kind: str, **data: object) -> None:
        """Record an event in the run log (`.l2mac/log.jsonl`), when the run has one."""
        if self.record is not None:
            self.record.log(kind, **data)


def _args_dict(args: str | dict[str, object] | None) -> dict[str, object]:
    if isinstance(args, dict):
        return args
    try:
        value = json.loads(args or "{}")
    except json.JSONDecodeError:
        return {}
    return value if isinstance(value, dict) else {}


def _canonical(args: str | dict[str, object] | None) -> str:
    value = _args_dict(args)
    return json.dumps(value, sort_keys=True) if value else str(args or "")


def _short(args: str | dict[str, object] | None) -> str:
    text = args if isinstance(args, str) else json.dumps(args or {})
    return text if len(text) <= 300 else text[:300] + "..."
