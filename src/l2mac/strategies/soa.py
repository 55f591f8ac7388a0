"""The SoA strategy: self-organised agents on the engine's model client, tools, checks and file store."""

from __future__ import annotations

from dataclasses import dataclass, field

from l2mac.control import ControlUnit, Step, StepLimits, StepProtocol, time_share
from l2mac.errors import BudgetExceeded, ProviderError
from l2mac.settings import RunSettings
from l2mac.soa.agents import Agent, AgentLimits, AgentState
from l2mac.soa.organization import Drafter, Organization
from l2mac.spec_plan import module_steps
from l2mac.strategies.base import RunContext, StrategyResult, step_limits, stop_cause
from l2mac.types import Instruction, PromptProgram, StepOutcome, StepStatus, StopCause


@dataclass(frozen=True)
class SoAStrategy:
    """``limits``: the organisation's agents; ``step_limits``: the budgets of the control unit's step in which the
    lead drafts each module the task gives."""

    limits: AgentLimits = field(default_factory=AgentLimits)
    step_limits: StepLimits = field(default_factory=StepLimits)
    name: str = "soa"

    @classmethod
    def from_settings(cls, rs: RunSettings, protocol: StepProtocol) -> SoAStrategy:
        return cls(AgentLimits(rs.max_agents, rs.max_depth, rs.concurrency), step_limits(rs, protocol))

    async def run(self, ctx: RunContext) -> StrategyResult:
        """One outcome per agent, in creation order: the report counts agents as its steps."""
        org = Organization(
            ctx.client,
            ctx.toolbox.env,
            self.limits,
            emit=ctx.emit,
            log=ctx.record.log,
            protocol=ctx.protocol,
            recover=ctx.recoveries,
            repository=ctx.repository,
            passing_before=ctx.passing_before,
            drafter=self._drafter(ctx),
        )
        stopped: str | None = None
        cause: StopCause | None = None
        try:
            await org.run(ctx.task)
        except (BudgetExceeded, ProviderError) as e:
            stopped, cause = str(e), stop_cause(e)
        finally:  # on any exit, the agents so far are the run's steps
            ctx.history.commit(f"soa: {len(org.agents)} agents")
        outcomes = [_outcome(a) for a in org.agents]
        for outcome in outcomes:
            ctx.record.save_step(outcome)
        steps = [Instruction(title=o.title, instruction=a.owns) for o, a in zip(outcomes, org.agents, strict=True)]
        return StrategyResult(PromptProgram(task=ctx.task, steps=steps), outcomes, stopped, cause)

    def _drafter(self, ctx: RunContext) -> Drafter:
        """The lead's draft of a given module: the control unit's step that writes it, as the l2mac strategy's plan
        has it (:func:`module_steps`), with its tools, checks and tests; no step for a module the plan does not
        write, or in a change to a repository."""
        unit = ControlUnit(
            ctx.client,
            ctx.toolbox,
            ctx.domain,
            ctx.budget,
            protocol=ctx.protocol,
            limits=self.step_limits,
            run_tests=ctx.run_tests,
            record=ctx.record,
            emit=ctx.emit,
            recover=ctx.recoveries,
        )
        steps = {} if ctx.repository or not ctx.domain.python_checks else module_steps(ctx.task, tests=ctx.domain.tests)

        async def draft(path: str, index: int, total: int) -> StepOutcome | None:
            if path not in steps:
                return None
            deadline = time_share(ctx.client.deadline, total - index + 2)  # and the agents' share after them
            return await unit.run_step(Step(ctx.task, index, total, steps[path], "", deadline))

        return draft


def _outcome(agent: Agent) -> StepOutcome:
    status = StepStatus.PASSED if agent.state is AgentState.DONE else StepStatus.FAILED
    return StepOutcome(
        index=agent.id + 1,
        title=f"agent {agent.id}: {agent.owns}",
        status=status,
        summary=agent.note,
        reason="" if status is StepStatus.PASSED else agent.note or agent.state.value,
        turns=agent.calls,
    )
