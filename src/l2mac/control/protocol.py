"""The seam between the control unit and a model's way of answering.

A *protocol* turns a step into the messages a model is sent, and the model's answer into tool calls on the file
store; the control unit runs those calls, the checks, and the budgets, the same way for every protocol. Two
implement it: :mod:`l2mac.control.tool_calls` (the model calls tools, for models that do that well) and
:mod:`l2mac.control.text` (the model writes files as fenced blocks, for small models).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from pydantic_ai.messages import ModelMessage, ModelResponse, ToolCallPart
from pydantic_ai.tools import ToolDefinition

from l2mac.checks.verdict import Verdict
from l2mac.context import ContextBudget
from l2mac.control.step import Step
from l2mac.domains import Domain
from l2mac.tools import Tool, Toolbox
from l2mac.types import ToolResult

Log = Callable[..., None]


@dataclass(frozen=True)
class Turn:
    """What the control unit does with one answer: run ``calls`` (``step_complete`` among them declares the step
    done), and run the step's checks after them when ``check`` (or when the step is declared done)."""

    calls: list[ToolCallPart] = field(default_factory=list)
    check: bool = False


@dataclass(frozen=True)
class Done:
    """What the protocol's conversation learns from the control unit after a turn: each call with its result,
    and the checks' verdict when they ran."""

    results: list[tuple[ToolCallPart, ToolResult]]
    verdict: Verdict | None
    attempt: int = 0  # failed attempts so far, this one included
    max_attempts: int = 0


@dataclass(frozen=True)
class Setting:
    """What a conversation needs from the run: the prompt set, the tools, the context budget, whether the
    recoveries of small models' answers are on, where to log, and whether the model continues a begun answer."""

    domain: Domain
    toolbox: Toolbox
    budget: ContextBudget
    recover: bool
    log: Log
    continues: bool = False  # the model continues an answer the request begins (see control.continuation)


#: a check an answer is held to before it is read: whether it holds
Verify = Callable[[ModelResponse], bool]


class Conversation(Protocol):
    """One step's exchange with the model, in one protocol."""

    @property
    def tools(self) -> list[ToolDefinition]:
        """The tools offered with each request (none: the answer is read as text)."""
        ...

    @property
    def temperature(self) -> float | None:
        """The sampling temperature for the next request (None: the model's own)."""
        ...

    @property
    def given(self) -> dict[str, str]:
        """Text the next answer is given where the model would copy it (see ``ModelClient.request``)."""
        ...

    @property
    def verify(self) -> Verify | None:
        """What the next answer is held to before it is read (None: nothing). An answer that fails it is asked
        for again, sampled more freely, a few times (see ``StepLimits.resamples``)."""
        ...

    def messages(self) -> list[ModelMessage]:
        """The context to send now."""
        ...

    def restart(self, progress: str) -> None:
        """Start a fresh context that carries ``progress`` (the model's summary) instead of what it held."""
        ...

    def read(self, response: ModelResponse) -> Turn:
        """The calls an answer makes."""
        ...

    def feed(self, done: Done) -> str | None:
        """Take in what the calls did and the verdict; the next context answers them. Returns why the answer
        counts as a failed attempt (it did not write what was asked), or None."""
        ...


class StepProtocol(Protocol):
    """How a model answers: starts one conversation per step."""

    @property
    def name(self) -> str:
        """The protocol's name in settings and in the run log (``tools``, ``text``)."""
        ...

    @property
    def check_failures(self) -> int:
        """Failed attempts a step may make before it fails, unless the user sets it."""
        ...

    @property
    def samples(self) -> int:
        """Implementations sampled to weigh failing tests, unless the user sets it (:mod:`l2mac.checks.agreement`)."""
        ...

    @property
    def prompt_variant(self) -> str:
        """The suffix of an agent's prompt key written for this protocol (``""``: the prompt as it is)."""
        ...

    def start(self, step: Step, setting: Setting) -> Conversation:
        """One step's conversation."""
        ...

    def offered(self, tools: list[Tool]) -> list[ToolDefinition]:
        """The tool definitions a request for a call of one of ``tools`` carries (none: the answer is text)."""
        ...

    def read_call(self, response: ModelResponse, tools: list[Tool], recover: bool) -> ToolCallPart | None:
        """The call of one of ``tools`` an answer makes, or None (used by agents, which make one call an answer)."""
        ...


def cut_off(response: ModelResponse) -> bool:
    """Whether an answer stopped at its length limit (its last file or call is incomplete)."""
    return response.finish_reason == "length"
