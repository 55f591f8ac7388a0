"""The tool-call protocol: the model calls the file store's tools, and the conversation grows with the calls and
their results until the step ends or the context is restarted from a summary."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

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
from pydantic_ai.tools import ToolDefinition

from l2mac.checks.demands import example_values
from l2mac.control.arguments import recover_arguments, recover_tool_calls
from l2mac.control.protocol import Done, Setting, Turn, Verify, cut_off
from l2mac.control.step import Step
from l2mac.fenced import MAX_LISTED
from l2mac.repo.map import rank
from l2mac.tools import STEP_COMPLETE, Tool
from l2mac.types import ToolResult


@dataclass
class ToolConversation:
    step: Step
    setting: Setting
    tools: list[ToolDefinition] = field(default_factory=list)
    temperature: float | None = None
    _messages: list[ModelMessage] = field(default_factory=list)
    _cut: bool = False  # the last answer stopped at its length limit

    def __post_init__(self) -> None:
        self.tools = self.setting.toolbox.definitions()
        self._messages = self._fresh("")

    @property
    def given(self) -> dict[str, str]:
        return {}  # answers are tool calls: none is begun

    @property
    def verify(self) -> Verify | None:
        return None

    def _fresh(self, progress: str) -> list[ModelMessage]:
        domain = self.setting.domain
        store = self.setting.toolbox.env.store
        files = store.list_files()
        if len(files) > MAX_LISTED:  # a repository l2mac did not write: the files most relevant to the step
            files = rank(store.snapshot(), self.step.instruction.instruction)
        listing = "\n".join(f"- {f}" for f in files[:MAX_LISTED])
        listing += (
            f"\n- ... and {len(files) - MAX_LISTED} more (list_files lists them)" if len(files) > MAX_LISTED else ""
        )
        listing = listing or "(none yet)"
        shown = domain.render("progress", summary=progress) if progress else ""
        prompt = domain.render("step", **self.step.values(shown, domain.render("whole_task")), files=listing)
        system = domain.render("step_system", **example_values(self.step.instruction.instruction, domain.name))
        return [ModelRequest(parts=[SystemPromptPart(system), UserPromptPart(prompt)])]

    def messages(self) -> list[ModelMessage]:
        return self._messages

    def restart(self, progress: str) -> None:
        self._messages = self._fresh(progress)

    def read(self, response: ModelResponse) -> Turn:
        if self.setting.recover:
            response = self._recover(response)
        self._messages.append(response)
        self._cut = cut_off(response)
        return Turn(calls=list(response.tool_calls))

    def _recover(self, response: ModelResponse) -> ModelResponse:
        """Arguments written as a Python literal, re-encoded as JSON; an answer in prose whose fenced blocks name
        their files, read as the ``write_files`` call it meant."""
        log = self.setting.log
        parts: list[ModelResponsePart] = []
        for part in response.parts:
            if isinstance(part, ToolCallPart) and isinstance(part.args, str):
                args = recover_arguments(part.args)
                if args is not None:
                    part = ToolCallPart(part.tool_name, args, tool_call_id=part.tool_call_id)
                    log("recovered", recovery="literal_arguments_to_json")
            parts.append(part)
        response = replace(response, parts=parts)
        recovered = recover_tool_calls(response)
        if recovered is not None:
            log("recovered", recovery="fenced_code_to_write_files")
            return recovered
        return response

    def feed(self, done: Done) -> str | None:
        domain = self.setting.domain
        if not done.results:
            nudge = domain.render("cut_off" if self._cut else "no_tool_call")
            self._messages.append(ModelRequest(parts=[UserPromptPart(nudge)]))
            return None
        parts: list[ModelRequestPart] = []
        for call, result in done.results:
            if call.tool_name == STEP_COMPLETE and result.ok and done.verdict is not None:
                result = self._verdict(done)
            if not result.ok and self._cut:  # truncated arguments, most likely
                result = ToolResult(domain.render("cut_off") + "\n" + result.content, ok=False)
            parts.append(ToolReturnPart(call.tool_name, result.content, tool_call_id=call.tool_call_id))
        self._messages.append(ModelRequest(parts=parts))
        return None

    def _verdict(self, done: Done) -> ToolResult:
        verdict = done.verdict
        assert verdict is not None
        if verdict.ok:
            return ToolResult("All checks passed. The step is complete.")
        report = "\n\n".join(x for x in (verdict.restored, verdict.report, *verdict.notes) if x)
        text = self.setting.domain.render(
            "checks_failed", attempt=done.attempt, max_attempts=done.max_attempts, report=report
        )
        return ToolResult(text, ok=False)


@dataclass(frozen=True)
class ToolCalls:
    """Tool calls: for models that call tools well (cloud APIs, capable served models)."""

    name: str = "tools"
    check_failures: int = 4
    samples: int = 0
    prompt_variant: str = ""

    def start(self, step: Step, setting: Setting) -> ToolConversation:
        return ToolConversation(step, setting)

    def offered(self, tools: list[Tool]) -> list[ToolDefinition]:
        return [t.definition() for t in tools]

    def read_call(self, response: ModelResponse, tools: list[Tool], recover: bool) -> ToolCallPart | None:
        call = next(iter(response.tool_calls), None)
        if call is not None and recover and isinstance(call.args, str) and (args := recover_arguments(call.args)):
            call = ToolCallPart(call.tool_name, args, tool_call_id=call.tool_call_id)
        return call


TOOL_CALLS = ToolCalls()
