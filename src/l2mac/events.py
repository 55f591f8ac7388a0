"""Progress events a run emits, for the CLI's live display or any other observer."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from l2mac.types import StepOutcome, Usage

if TYPE_CHECKING:
    from l2mac.report import RunReport


@dataclass(frozen=True)
class RunStarted:
    project: str
    workspace: str
    model: str
    strategy: str
    note: str = ""
    isolation: str = ""  # where generated code runs (a runner's ``isolation``)


@dataclass(frozen=True)
class PlanReady:
    titles: list[str]
    source: str  # "planned" | "file"


@dataclass(frozen=True)
class StepStarted:
    index: int
    total: int
    title: str


@dataclass(frozen=True)
class ToolUsed:
    index: int
    tool: str
    ok: bool


@dataclass(frozen=True)
class ModelCalled:
    purpose: str
    usage: Usage


@dataclass(frozen=True)
class StepFinished:
    outcome: StepOutcome
    total: int


@dataclass(frozen=True)
class RunFinished:
    report: RunReport


@dataclass(frozen=True)
class AgentChanged:
    """A self-organised agent changed state (waiting, writing, testing, done, failed)."""

    id: int
    parent: int | None
    depth: int
    owns: str
    state: str
    tokens: int
    note: str = ""


Event = RunStarted | PlanReady | StepStarted | ToolUsed | ModelCalled | StepFinished | RunFinished | AgentChanged
EventSink = Callable[[Event], None]


def ignore(_: Event) -> None:
    """An event sink that does nothing."""
