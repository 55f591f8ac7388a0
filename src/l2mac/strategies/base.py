"""The seam between a run and its strategy: what every strategy may use (built once per run), and what it
returns. Each strategy owns its own settings (the sequential loop its step limits and plan size, SoA its agent
limits) and is built from the run settings by ``from_settings``."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from l2mac.context import ContextBudget
from l2mac.control import ControlUnit, StepLimits, StepProtocol
from l2mac.control.tool_calls import TOOL_CALLS
from l2mac.domains import Domain
from l2mac.errors import BudgetExceeded, ProviderError
from l2mac.events import EventSink
from l2mac.models.client import ModelClient
from l2mac.record import RunRecord
from l2mac.settings import RunSettings
from l2mac.store import GitHistory
from l2mac.tools import Toolbox
from l2mac.types import PromptProgram, StepOutcome, StopCause


@dataclass
class RunContext:
    """What a run gives its strategy: the task, the model, the tools and store, the record. No settings of a
    particular strategy, and nothing a strategy writes back."""

    task: str
    domain: Domain
    client: ModelClient
    toolbox: Toolbox
    budget: ContextBudget
    history: GitHistory
    record: RunRecord
    emit: EventSink
    run_tests: bool = True
    recoveries: bool = True
    protocol: StepProtocol = TOOL_CALLS
    program: PromptProgram | None = None  # a prompt program the user gave, instead of planning one
    #: the task is a change to a repository l2mac did not write: its map, ranked by relevance to the change
    repository: str = ""
    #: and its tests that passed before the change (a change is held by the tests it breaks, not the others)
    passing_before: frozenset[str] = frozenset()

    def control_unit(self, limits: StepLimits) -> ControlUnit:
        """The control unit on this run's model, tools, checks and record, with a strategy's step ``limits``."""
        return ControlUnit(
            self.client,
            self.toolbox,
            self.domain,
            self.budget,
            protocol=self.protocol,
            limits=limits,
            run_tests=self.run_tests,
            record=self.record,
            emit=self.emit,
            recover=self.recoveries,
        )


def step_limits(rs: RunSettings, protocol: StepProtocol) -> StepLimits:
    """The control unit's step limits the user set, and the protocol's own defaults for those left unset."""
    chosen = rs.model_fields_set
    return StepLimits(
        rs.max_turns,
        rs.max_check_failures if "max_check_failures" in chosen else protocol.check_failures,
        rs.max_context_restarts,
        samples=rs.samples if "samples" in chosen else protocol.samples,
        keep_best=rs.keep_best,
        held_by_own=rs.held_by_own,
        max_stalled=rs.max_stalled_attempts,
    )


def stop_cause(e: BudgetExceeded | ProviderError) -> StopCause:
    return "provider" if isinstance(e, ProviderError) else "budget"


@dataclass
class StrategyResult:
    """What a strategy did: the program it ran (planned, given, or one entry per agent) and each step's outcome,
    in order, failed ones included. ``stopped`` says why the run ended early (a budget, the provider), if it
    did; the outcomes before it are kept."""

    program: PromptProgram | None
    outcomes: list[StepOutcome] = field(default_factory=list)
    stopped: str | None = None
    stopped_by: StopCause | None = None  # what stopped it: a benchmark makes a task the provider stopped again


class Strategy(Protocol):
    @property
    def name(self) -> str: ...

    async def run(self, ctx: RunContext) -> StrategyResult:
        """Do the task. A budget or provider stop is returned as ``stopped``, never raised."""
        ...
