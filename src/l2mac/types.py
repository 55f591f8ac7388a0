"""Plain data that flows between the parts of a run: the prompt program, tool results, step outcomes, usage."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

#: what stops a run early: a budget spent, or the provider failing after its retries
StopCause = Literal["budget", "provider"]


class Instruction(BaseModel):
    """One step of a prompt program: what a fresh LLM context must achieve."""

    title: str = Field(description="A short name for the step, at most ten words.")
    instruction: str = Field(
        description="Everything the step must do, in detail: files, functions, behaviour, and which requirements "
        "of the task it carries. The step sees only this text, the file list and the previous step's summary."
    )
    requires_tests: bool = Field(
        default=True,
        description="True when the step must leave pytest tests that cover what it built.",
    )


class PromptProgram(BaseModel):
    """The instruction registry: an ordered list of instructions that together carry every requirement."""

    task: str
    steps: list[Instruction]
    #: where it came from: "planned", "file", or why the task itself is the one step
    source: str = "planned"


class StepStatus(str, Enum):
    PASSED = "passed"
    FAILED = "failed"


@dataclass(frozen=True)
class ToolResult:
    """What a tool answers to the model. ``ok`` is False for errors the model should correct."""

    content: str
    ok: bool = True


@dataclass
class Usage:
    """Tokens and cost accumulated over model calls. ``cost_usd`` counts only calls with a known price.
    ``cache_read_tokens`` of the input tokens were served from the model's prompt cache (a local server's slot,
    a provider's cached prefix): read again for next to nothing."""

    requests: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    unpriced_requests: int = 0
    cache_read_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def uncached_tokens(self) -> int:
        """The tokens the model had to read or write: what a token budget counts. (Seen: another answer to
        the same prompt, its 5,000 tokens served from the cache in 2 s, counted in full, and a ClassEval task
        stopped at its token budget after 800 s.)"""
        return self.total_tokens - self.cache_read_tokens

    @property
    def cost_known(self) -> bool:
        return self.unpriced_requests == 0

    def add(self, input_tokens: int, output_tokens: int, cost_usd: float | None, cache_read_tokens: int = 0) -> None:
        self.requests += 1
        self.input_tokens += input_tokens
        self.output_tokens += output_tokens
        self.cache_read_tokens += cache_read_tokens
        if cost_usd is None:
            self.unpriced_requests += 1
        else:
            self.cost_usd += cost_usd


@dataclass
class StepOutcome:
    """How one instruction ended. A step passes only when the model declared it complete and the checks passed."""

    index: int
    title: str
    status: StepStatus
    summary: str
    reason: str = ""
    turns: int = 0
    context_restarts: int = 0
    check_failures: int = 0
    files_written: list[str] = field(default_factory=list)
    #: the model's own tests removed because every implementation failed them, after it was told and kept them
    tests_removed: list[str] = field(default_factory=list)
    #: what failed when the step began, left out of its checks: tests of other files (ids, or files that did not
    #: import), and code problems the project still had when the checks last ran
    inherited: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.status is StepStatus.PASSED
