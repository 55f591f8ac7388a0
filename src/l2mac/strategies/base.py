"""The seam between a run and its strategy: everything a strategy may use, built once per run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

from l2mac.context import ContextBudget
from l2mac.control import StepLimits, StepProtocol
from l2mac.control.tool_calls import TOOL_CALLS
from l2mac.domains import Domain
from l2mac.events import EventSink
from l2mac.models.client import ModelClient
from l2mac.record import RunRecord
from l2mac.soa.agents import AgentLimits
from l2mac.store import GitHistory
from l2mac.tools import Toolbox
from l2mac.types import PromptProgram, StepOutcome


@dataclass
class RunContext:
    task: str
    domain: Domain
    client: ModelClient
    toolbox: Toolbox
    budget: ContextBudget
    limits: StepLimits
    history: GitHistory
    record: RunRecord
    emit: EventSink
    run_tests: bool = True
    plan_steps: int | None = None  # most steps the planner may make
    step_budget: int | None = None  # most steps the run may execute (--max-steps)
    reflect: bool = False
    recoveries: bool = True
    protocol: StepProtocol = TOOL_CALLS
    program: PromptProgram | None = None
    outcomes: list[StepOutcome] = field(default_factory=list)  # filled as steps finish, kept if the run stops
    agent_limits: AgentLimits | None = None  # the soa strategy's limits


class Strategy(Protocol):
    name: str

    async def run(self, ctx: RunContext) -> list[StepOutcome]:
        """Do the task; return the outcome of every step, in order, even when some failed."""
        ...
